//! `ArrayRecordWriter`: array_record's Python `ArrayRecordWriter` (`array_record_module`) on
//! `riegeli_records::ArrayRecordWriter`, writing a native file on its I/O thread.
//!
//! Exceptions are C++'s: `ValueError` for a bad option string, `RuntimeError` for everything
//! else. As in C++, a file that cannot be created does not make the constructor fail: `ok()`
//! is `False` and `write()` and `close()` raise `RuntimeError` with the reason.

use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use riegeli_records::{ArrayRecordWriterOptions, ParseOptionsError};

use crate::pyio::{Dest, PyFile, as_path};

type Inner = riegeli_records::ArrayRecordWriter<Dest>;

/// Records kept (as Python bytes) before they are written together without the GIL.
const BATCH_RECORDS: usize = 64;
/// Bytes of records kept before they are written together without the GIL.
const BATCH_BYTES: usize = 1 << 20;

#[derive(Debug)]
struct State {
    /// `None` once closed or failed.
    writer: Option<Inner>,
    /// Records not yet given to `writer`.
    pending: Vec<Py<PyBytes>>,
    pending_bytes: usize,
    /// Why writing failed: every later operation raises it (as C++'s failed status).
    failure: Option<String>,
    /// `False` after `close()`.
    open: bool,
    /// The upload's counters, for a path or URL.
    counters: Option<riegeli_object_store::UploadCounters>,
}

impl State {
    /// The exception C++ raises when the writer cannot write.
    fn unusable(&self) -> PyErr {
        PyRuntimeError::new_err(self.failure.clone().unwrap_or_else(|| "Object closed".to_owned()))
    }

    /// Writes the pending records without the GIL; a failure is kept.
    fn flush_pending(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(writer) = self.writer.as_mut() else { return Err(self.unusable()) };
        let pending = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        let slices: Vec<&[u8]> = pending.iter().map(|record| record.as_bytes(py)).collect();
        let written = py.detach(|| slices.iter().try_for_each(|record| writer.write_record(record)));
        drop(slices);
        drop(pending);
        if let Err(e) = written {
            self.failure = Some(e.to_string());
            self.writer = None;
            return Err(self.unusable());
        }
        Ok(())
    }
}

/// array_record's `ArrayRecordWriter` (see the stub for the full documentation).
#[pyclass(module = "riegeli.array_record.array_record_module", name = "ArrayRecordWriter")]
#[derive(Debug)]
pub(crate) struct ArrayRecordWriter {
    /// Behind a mutex only to be `Sync` (the file's I/O thread channel is not): methods
    /// take `&mut self`, so it is never contended.
    state: Mutex<State>,
}

impl Drop for ArrayRecordWriter {
    /// Finishes the file of a writer never closed (C++ leaves it unfinished; errors can
    /// only be reported by `close`).
    fn drop(&mut self) {
        if self.state().writer.is_none() {
            return;
        }
        Python::attach(|py| {
            let pending = PyErr::take(py);
            if self.state().flush_pending(py).is_ok()
                && let Some(writer) = self.state().writer.take()
            {
                py.detach(|| drop(writer.close()));
            }
            if let Some(pending) = pending {
                pending.restore(py);
            }
        });
    }
}

impl ArrayRecordWriter {
    fn state(&mut self) -> &mut State {
        self.state.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl ArrayRecordWriter {
    #[new]
    #[pyo3(signature = (path, options = "", **kwargs))]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        options: &str,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        // C++ accepts and ignores other keyword arguments.
        let _ = kwargs;
        let options: ArrayRecordWriterOptions =
            options.parse().map_err(|e: ParseOptionsError| PyValueError::new_err(e.message.to_owned()))?;
        // The Python module of array_record writes without a thread pool, and its files say
        // `max_parallelism:1`; these say the same.
        let options = ArrayRecordWriterOptions { parallelism: Some(0), ..options };
        let created = match as_path(path)? {
            Some(path) => py.detach(|| {
                let dest = Dest::create(&path).map_err(|e| e.to_string())?;
                let counters = match &dest {
                    Dest::Path(dest) => Some(dest.counters()),
                    Dest::Py(_) => None,
                };
                Ok((Inner::with_io_thread(dest, options).map_err(|e| e.to_string())?, counters))
            }),
            // riegeli-rs: a binary file object (write and flush; not closed), positioned
            // where the file begins, e.g. a file of Beam's filesystems.
            None if path.hasattr("write")? => {
                let dest = Dest::Py(PyFile::new(path.clone().unbind()));
                py.detach(|| Inner::new(dest, options)).map(|writer| (writer, None)).map_err(|e| e.to_string())
            }
            None => {
                return Err(PyTypeError::new_err(format!(
                    "path must be str, os.PathLike or a binary file object, not {}",
                    path.get_type()
                )));
            }
        };
        let (writer, counters, failure) = match created {
            Ok((writer, counters)) => (Some(writer), counters, None),
            Err(e) => (None, None, Some(e)),
        };
        let state = State { writer, pending: Vec::new(), pending_bytes: 0, failure, open: true, counters };
        Ok(Self { state: Mutex::new(state) })
    }

    /// `True` while open and not failed.
    fn ok(&mut self) -> bool {
        let state = self.state();
        state.open && state.failure.is_none()
    }

    /// `False` after `close()`.
    fn is_open(&mut self) -> bool {
        self.state().open
    }

    /// Writes one record (`bytes`, as C++; `str` is not accepted).
    fn write(&mut self, py: Python<'_>, record: Bound<'_, PyBytes>) -> PyResult<()> {
        if self.state().writer.is_none() {
            return Err(self.state().unusable());
        }
        self.state().pending_bytes += record.as_bytes().len();
        self.state().pending.push(record.unbind());
        if self.state().pending.len() >= BATCH_RECORDS || self.state().pending_bytes >= BATCH_BYTES {
            self.state().flush_pending(py)?;
        }
        Ok(())
    }

    /// riegeli-rs: the requests made and bytes uploaded writing an object (a dict; zeros
    /// for a file).
    fn io_stats(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        crate::pyio::upload_stats(py, self.state().counters.as_ref())
    }

    /// Finishes the file (footer and postscript) and closes it.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let state = self.state();
        state.open = false;
        if state.writer.is_none() {
            return state.failure.as_ref().map_or(Ok(()), |_| Err(state.unusable()));
        }
        state.flush_pending(py)?;
        let Some(writer) = state.writer.take() else { return Err(state.unusable()) };
        if let Err(e) = py.detach(|| writer.close().and_then(|dest| dest.finish().map_err(Into::into))) {
            state.failure = Some(e.to_string());
            return Err(state.unusable());
        }
        Ok(())
    }
}
