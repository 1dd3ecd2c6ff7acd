"""The exceptions raised by riegeli, one per canonical status code (as Google's riegeli)."""

from __future__ import annotations

__all__ = (
    'RiegeliError',
    'CancelledError',
    'UnknownError',
    'InvalidArgumentError',
    'DeadlineExceededError',
    'NotFoundError',
    'AlreadyExistsError',
    'PermissionDeniedError',
    'UnauthenticatedError',
    'ResourceExhaustedError',
    'FailedPreconditionError',
    'AbortedError',
    'OutOfRangeError',
    'UnimplementedError',
    'InternalError',
    'UnavailableError',
    'DataLossError',
    'CorruptedFileError',
)


class RiegeliError(Exception):
    """Base class of the errors riegeli raises.

    Attributes:
      code: The canonical status code (as C++ absl::StatusCode) of the error.
    """

    code: int


class CancelledError(RiegeliError):
    """The operation was cancelled."""

    code = 1


class UnknownError(RiegeliError):
    """An error without more specific information."""

    code = 2


class InvalidArgumentError(RiegeliError):
    """An argument is invalid whatever the state of the system (e.g. malformed options)."""

    code = 3


class DeadlineExceededError(RiegeliError):
    """The deadline expired before the operation could complete."""

    code = 4


class NotFoundError(RiegeliError):
    """A requested entity (e.g. a file) was not found."""

    code = 5


class AlreadyExistsError(RiegeliError):
    """The entity to create already exists."""

    code = 6


class PermissionDeniedError(RiegeliError):
    """The caller may not execute the operation."""

    code = 7


class UnauthenticatedError(RiegeliError):
    """No valid authentication credentials for the operation."""

    code = 16


class ResourceExhaustedError(RiegeliError):
    """A resource (e.g. the largest file size) has been exhausted."""

    code = 8


class FailedPreconditionError(RiegeliError):
    """The system is not in the state the operation requires (e.g. the object is closed)."""

    code = 9


class AbortedError(RiegeliError):
    """The operation was aborted."""

    code = 10


class OutOfRangeError(RiegeliError):
    """The operation was attempted past the valid range."""

    code = 11


class UnimplementedError(RiegeliError):
    """The operation is not implemented or not supported."""

    code = 12


class InternalError(RiegeliError):
    """An internal invariant is broken: a bug."""

    code = 13


class UnavailableError(RiegeliError):
    """The service is unavailable; retrying may help."""

    code = 14


class DataLossError(RiegeliError):
    """Unrecoverable data loss or corruption: the file is damaged."""

    code = 15


class CorruptedFileError(InvalidArgumentError, DataLossError):
    """A damaged file (a hash mismatch, a chunk cut short, ...).

    C++ reports damage as InvalidArgument, so this is an InvalidArgumentError (code 3) as
    Google's module raises; it is a DataLossError too, the class this package raised for
    damage before, so that code catching either keeps working.
    """

    code = 3
