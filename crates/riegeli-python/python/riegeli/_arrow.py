"""Python helpers of the Arrow methods (`arrow_batches()`, `to_arrow()`): pyarrow imported lazily."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google.protobuf import descriptor_pb2
from google.protobuf.message import Message

if TYPE_CHECKING:
    from riegeli._riegeli import ArrowBatches

__all__ = ('file_descriptor_set', 'import_pyarrow', 'to_table')


def file_descriptor_set(message_type: type[Message]) -> bytes:
    """The serialized FileDescriptorSet of a message class: its file after its dependencies."""
    files = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add_file(file_descriptor: Any) -> None:
        if file_descriptor.name in seen:
            return
        seen.add(file_descriptor.name)
        for dependency in file_descriptor.dependencies:
            add_file(dependency)
        file_descriptor.CopyToProto(files.file.add())

    add_file(message_type.DESCRIPTOR.file)
    return files.SerializeToString()


def import_pyarrow(what: str) -> Any:
    """The pyarrow module, or an ImportError saying that `what` needs it."""
    try:
        import pyarrow
    except ImportError as e:
        raise ImportError(f'{what} needs pyarrow (pip install pyarrow)') from e
    return pyarrow


def to_table(batches: ArrowBatches) -> Any:
    """Reads `batches` into a `pyarrow.Table` (pyarrow releases the GIL while they are decoded).

    An error that ended the stream is raised as the riegeli exception it is.
    """
    pa = import_pyarrow('to_arrow()')
    reader = pa.RecordBatchReader.from_stream(batches)
    try:
        return reader.read_all()
    except Exception:
        error = batches._take_error()
        if error is None:
            raise
        raise error from None
