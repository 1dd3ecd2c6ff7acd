//! Rust errors as Python exceptions: the classes of `riegeli.base.riegeli_error`.
//!
//! A leaf: it imports no other module of this crate.

use std::fmt;

use pyo3::prelude::*;
use pyo3::types::PyType;
use riegeli_records::{Error, ErrorKind};

/// The Python module that defines `RiegeliError` and its subclasses.
const ERROR_MODULE: &str = "riegeli.base.riegeli_error";

/// An exception raised by a method of a Python file object, carried through a Rust
/// `io::Error` so that it reaches the caller unchanged (as in Google's `PythonReader`).
#[derive(Debug)]
pub(crate) struct PythonIoError(pub(crate) PyErr);

impl fmt::Display for PythonIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "python file object: {}", self.0)
    }
}

impl std::error::Error for PythonIoError {}

/// A seek asked of a Python file object that is not asked to seek (see `PyFile::open`);
/// raised as Google's module raises it, `UnimplementedError` with the reason.
#[derive(Debug)]
pub(crate) struct NoRandomAccess(pub(crate) &'static str);

impl fmt::Display for NoRandomAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for NoRandomAccess {}

/// A new exception of class `class` (`"CorruptedFileError"`, ...) of `riegeli.base.riegeli_error`.
pub(crate) fn riegeli_error(py: Python<'_>, class: &str, message: String) -> PyErr {
    let class = py.import(ERROR_MODULE).and_then(|module| module.getattr(class));
    match class {
        Ok(class) => match class.cast_into::<PyType>() {
            Ok(class) => PyErr::from_type(class, message),
            Err(e) => PyErr::from(e),
        },
        Err(e) => e,
    }
}

/// `FailedPreconditionError("Object closed")`: a reader or writer used after `close()`.
pub(crate) fn closed(py: Python<'_>) -> PyErr {
    riegeli_error(py, "FailedPreconditionError", "Object closed".to_owned())
}

/// An `io::Error` as the Python exception to raise: the file object's own exception if it
/// came from one, else the `OSError` subclass of its errno.
pub(crate) fn io_to_py(py: Python<'_>, error: &std::io::Error) -> PyErr {
    if let Some(python) = error.get_ref().and_then(|inner| inner.downcast_ref::<PythonIoError>()) {
        return python.0.clone_ref(py);
    }
    if let Some(NoRandomAccess(reason)) = error.get_ref().and_then(|inner| inner.downcast_ref::<NoRandomAccess>()) {
        return riegeli_error(py, "UnimplementedError", (*reason).to_owned());
    }
    PyErr::from(std::io::Error::new(error.kind(), error.to_string()))
}

/// A riegeli-records error as the Python exception Google's module raises for it.
pub(crate) fn to_py(py: Python<'_>, error: &Error) -> PyErr {
    let class = match error.kind() {
        ErrorKind::Io(e) => return io_to_py(py, e),
        // Both C++'s class (`InvalidArgument`) and the `DataLossError` this package raised.
        ErrorKind::Corrupt { .. } => "CorruptedFileError",
        ErrorKind::Encode { .. } => "ResourceExhaustedError",
        // The class says it: the message alone, as C++'s (`Position P exceeds file size: S`).
        ErrorKind::InvalidArgument(message) => return riegeli_error(py, "InvalidArgumentError", message.clone()),
        ErrorKind::Usage(_) => "FailedPreconditionError",
        ErrorKind::Internal(_) => "InternalError",
        _ => "UnknownError",
    };
    riegeli_error(py, class, error.to_string())
}

/// An internal error of this module (a lock poisoned by a panic).
pub(crate) fn internal(py: Python<'_>, what: &str) -> PyErr {
    riegeli_error(py, "InternalError", what.to_owned())
}

/// What `__exit__` returns after closing: the error of `close` unless an
/// exception is already leaving the `with` block (that one wins); never
/// suppresses it.
pub(crate) fn closed_on_exit(closed: PyResult<()>, exc_type: &Bound<'_, PyAny>) -> PyResult<bool> {
    if exc_type.is_none() {
        closed?;
    }
    Ok(false)
}
