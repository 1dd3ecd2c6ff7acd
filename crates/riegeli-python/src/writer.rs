//! `RecordWriter`: Google's Python `RecordWriter` on `riegeli_records::RecordWriter`.

use std::sync::Mutex;

use pyo3::exceptions::{PyBaseException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};
use pyo3::{PyTraverseError, PyVisit};
use riegeli_records::{Error, ParseOptionsError, PerProcess, RecordWriterOptions};

use crate::errors::{closed, internal, io_to_py, riegeli_error, to_py};
use crate::position::RecordPosition;
use crate::pyio::{Dest, PyFile, as_path};

type Inner = riegeli_records::RecordWriter<Dest>;

/// `errno` of a descriptor that cannot be synced (`fsync` of a pipe or a socket).
const EINVAL: i32 = 22;

/// `FlushType.FROM_MACHINE`: data durable in case of an operating system crash.
const FROM_MACHINE: i64 = 2;

/// Records collected from an iterable before they are written without the GIL.
const BATCH_RECORDS: usize = 1024;
/// Bytes of records collected before they are written without the GIL.
const BATCH_BYTES: usize = 1 << 20;

#[derive(Debug)]
struct State {
    /// `None` once closed.
    writer: Option<Inner>,
    /// The `dest` argument (a file object or a path).
    dest: Py<PyAny>,
    /// The file object to close on `close()`, if owned; not closed by a forked child (closing
    /// could write what the parent left in its buffer).
    owned_file: Option<PerProcess<Py<PyAny>>>,
    /// For a path or a URL: the counters of the upload (`io_stats()`), and whether
    /// `FlushType.FROM_MACHINE` syncs through the destination (else through `fileno()`).
    counters: Option<riegeli_object_store::UploadCounters>,
    /// Whether `dest` is an object's URL: leaving a `with` block by an exception then
    /// abandons the upload (no object appears) rather than finishing it.
    object: bool,
    /// Once closed: `pos` and `last_pos` then (Google's answer them after `close()`).
    closed_at: Option<Positions>,
    /// What writing raised (as C++, the writer has failed): later writes and every
    /// `close()` raise it again.
    failure: Option<Py<PyBaseException>>,
}

impl State {
    /// The exception that failed the writer, to raise again, if one did.
    fn raise_failure(&self, py: Python<'_>) -> Option<PyErr> {
        self.failure.as_ref().map(|failure| PyErr::from_value(failure.bind(py).clone().into_any()))
    }

    /// `error` raised by the writer as Python's exception, kept as what failed it.
    fn fail(&mut self, py: Python<'_>, error: &Error) -> PyErr {
        let failure = to_py(py, error);
        self.failure = Some(failure.value(py).clone().unbind());
        failure
    }
}

/// `pos` and `last_pos` of a writer.
type Positions = (riegeli_records::RecordPosition, Option<riegeli_records::RecordPosition>);

/// Writes records to a Riegeli/records file (see the stub for the full documentation).
#[pyclass(module = "riegeli.records.record_writer", name = "RecordWriter")]
#[derive(Debug)]
pub(crate) struct RecordWriter {
    state: Mutex<State>,
}

/// A record given as a bytes-like object (`bytes`, `bytearray`, `memoryview`, any object
/// with the buffer protocol), as Python `bytes`. Anything else raises `TypeError`, with
/// CPython's words, as Google's module (which takes the buffer): `str` too, and objects that
/// `bytes()` would accept otherwise (an `int` would make that many zero bytes, a list of
/// ints their bytes).
pub(crate) fn record_bytes<'py>(record: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(bytes) = record.cast::<PyBytes>() {
        return Ok(bytes.clone());
    }
    if let Ok(array) = record.cast::<PyByteArray>() {
        return Ok(PyBytes::new(record.py(), &array.to_vec()));
    }
    match PyMemoryView::from(record) {
        Ok(view) => Ok(view.call_method0("tobytes")?.cast_into::<PyBytes>()?),
        Err(e) if e.is_instance_of::<PyTypeError>(record.py()) => {
            Err(PyTypeError::new_err(format!("a bytes-like object is required, not '{}'", record.get_type().name()?)))
        }
        Err(e) => Err(e),
    }
}

/// A message serialized by the protobuf package.
fn serialize_message<'py>(message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    Ok(message.call_method0("SerializeToString")?.cast_into::<PyBytes>()?)
}

/// Writer options from `options` (str or bytes) and the metadata arguments. Metadata is
/// written as given, as Google's writer does: bytes that do not parse as a
/// `RecordsMetadata` make a file whose `read_metadata()` raises `DecodeError`.
fn writer_options(
    py: Python<'_>,
    options: &Bound<'_, PyAny>,
    metadata: Option<&Bound<'_, PyAny>>,
    serialized_metadata: Option<&Bound<'_, PyAny>>,
) -> PyResult<RecordWriterOptions> {
    let text: String = match options.cast::<PyBytes>() {
        Ok(bytes) => String::from_utf8_lossy(bytes.as_bytes()).into_owned(),
        Err(_) => options.extract()?,
    };
    let parsed: RecordWriterOptions =
        text.parse().map_err(|e: ParseOptionsError| riegeli_error(py, "InvalidArgumentError", e.message.to_owned()))?;
    let serialized = match (metadata, serialized_metadata) {
        (Some(_), Some(_)) => {
            return Err(PyTypeError::new_err(
                "RecordWriter() got conflicting keyword arguments 'metadata' and 'serialized_metadata'",
            ));
        }
        (Some(metadata), None) => serialize_message(metadata)?,
        (None, Some(serialized)) => record_bytes(serialized)?,
        (None, None) => return Ok(parsed),
    };
    Ok(RecordWriterOptions { metadata: Some(serialized.as_bytes().to_vec()), ..parsed })
}

/// `flush_type` as its integer value (a `FlushType` member or an int).
fn flush_type_value(flush_type: Option<&Bound<'_, PyAny>>) -> PyResult<i64> {
    let Some(flush_type) = flush_type.filter(|f| !f.is_none()) else { return Ok(1) };
    let value = if flush_type.hasattr("value")? { flush_type.getattr("value")? } else { flush_type.clone() };
    let value: i64 = value.extract()?;
    if !(0..=FROM_MACHINE).contains(&value) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("invalid FlushType {value}")));
    }
    Ok(value)
}

impl RecordWriter {
    fn state(&mut self, py: Python<'_>) -> PyResult<&mut State> {
        self.state.get_mut().map_err(|_| internal(py, "RecordWriter state poisoned by a panic"))
    }

    /// Runs `f` on the open writer without the GIL.
    fn run<T: Send>(&mut self, py: Python<'_>, f: impl FnOnce(&mut Inner) -> Result<T, Error> + Send) -> PyResult<T> {
        let state = self.state(py)?;
        if let Some(failure) = state.raise_failure(py) {
            return Err(failure);
        }
        let writer = state.writer.as_mut().ok_or_else(|| closed(py))?;
        py.detach(|| f(writer)).map_err(|e| state.fail(py, &e))
    }

    /// Writes `records` (each converted by `convert`) in batches, each without the GIL.
    fn write_all<'py>(
        &mut self,
        py: Python<'py>,
        records: &Bound<'py, PyAny>,
        convert: fn(&Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>>,
    ) -> PyResult<()> {
        let mut batch: Vec<Bound<'py, PyBytes>> = Vec::with_capacity(BATCH_RECORDS);
        let mut batch_bytes = 0;
        let mut iter = records.try_iter()?;
        loop {
            // A record that cannot be converted, or an exception of the iterable, is raised
            // after the records before it are written (as Google's, which writes them one by one).
            let next = iter.next().transpose().and_then(|record| record.as_ref().map(convert).transpose());
            let (done, failure) = match next {
                Ok(Some(record)) => {
                    batch_bytes += record.as_bytes().len();
                    batch.push(record);
                    if batch.len() < BATCH_RECORDS && batch_bytes < BATCH_BYTES {
                        continue;
                    }
                    (false, None)
                }
                Ok(None) => (true, None),
                Err(e) => (true, Some(e)),
            };
            let slices: Vec<&[u8]> = batch.iter().map(|record| record.as_bytes()).collect();
            self.run(py, |writer| slices.iter().try_for_each(|record| writer.write_record(record)))?;
            batch.clear();
            batch_bytes = 0;
            if let Some(failure) = failure {
                return Err(failure);
            }
            if done {
                return Ok(());
            }
        }
    }
}

impl Drop for RecordWriter {
    /// Finishes the file of a writer never closed (errors can only be reported by `close`).
    fn drop(&mut self) {
        let Ok(state) = self.state.get_mut() else { return };
        let Some(writer) = state.writer.take() else { return };
        Python::attach(|py| {
            // The interpreter may be propagating an exception: keep it across the final writes
            // to a file object, which call into Python.
            let pending = PyErr::take(py);
            py.detach(|| drop(writer));
            if let Some(pending) = pending {
                pending.restore(py);
            }
        });
    }
}

#[pymethods]
impl RecordWriter {
    #[new]
    #[pyo3(signature = (
        dest, *, owns_dest = true, assumed_pos = None, min_buffer_size = 4 << 10, max_buffer_size = 64 << 10,
        buffer_size = None, options = None, metadata = None, serialized_metadata = None,
    ), text_signature = "(dest, *, owns_dest=True, assumed_pos=None, min_buffer_size=4096, max_buffer_size=65536, \
        buffer_size=None, options='', metadata=None, serialized_metadata=None)")]
    #[allow(clippy::too_many_arguments, reason = "Google's signature, keyword arguments in Python")]
    fn new(
        py: Python<'_>,
        dest: &Bound<'_, PyAny>,
        owns_dest: bool,
        assumed_pos: Option<u64>,
        min_buffer_size: u64,
        max_buffer_size: u64,
        buffer_size: Option<u64>,
        options: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        serialized_metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // Chunks are written whole whatever the buffer sizes; they are checked only.
        if buffer_size.is_none() && min_buffer_size > max_buffer_size {
            return Err(riegeli_error(
                py,
                "InvalidArgumentError",
                format!("min_buffer_size {min_buffer_size} > max_buffer_size {max_buffer_size}"),
            ));
        }
        let no_options = PyString::new(py, "").into_any();
        let options = writer_options(
            py,
            options.unwrap_or(&no_options),
            metadata.filter(|m| !m.is_none()),
            serialized_metadata.filter(|s| !s.is_none()),
        )?;
        let state = match as_path(dest)? {
            Some(path) => {
                if assumed_pos.is_some() {
                    return Err(riegeli_error(
                        py,
                        "InvalidArgumentError",
                        "assumed_pos applies to file objects, not paths".to_owned(),
                    ));
                }
                let created = py.detach(|| Dest::create(&path)).map_err(|e| io_to_py(py, &e))?;
                let counters = match &created {
                    Dest::Path(created) => created.counters(),
                    Dest::Py(_) => riegeli_object_store::UploadCounters::default(),
                };
                let object = matches!(&created, Dest::Path(riegeli_object_store::Destination::Object(_)));
                let writer = py.detach(|| Inner::with_io_thread(created, options)).map_err(|e| to_py(py, &e))?;
                State {
                    writer: Some(writer),
                    dest: dest.clone().unbind(),
                    owned_file: None,
                    counters: Some(counters),
                    object,
                    closed_at: None,
                    failure: None,
                }
            }
            None => {
                let (file, pos) = PyFile::open(dest, assumed_pos)?;
                let writer = py
                    .detach(|| {
                        if pos == 0 {
                            Inner::new(Dest::Py(file), options)
                        } else {
                            Inner::append(Dest::Py(file), pos, options)
                        }
                    })
                    .map_err(|e| to_py(py, &e))?;
                State {
                    writer: Some(writer),
                    dest: dest.clone().unbind(),
                    owned_file: owns_dest.then(|| PerProcess::from(dest.clone().unbind())),
                    counters: None,
                    object: false,
                    closed_at: None,
                    failure: None,
                }
            }
        };
        Ok(Self { state: Mutex::new(state) })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type, exc_value, traceback))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let _ = (exc_value, traceback);
        if !exc_type.is_none() {
            // An object appears only when its writer closes: a block that failed leaves none
            // (a local file is finished with what was written, as Google's writer does).
            let state = self.state(py)?;
            if state.object
                && let Some(writer) = state.writer.take()
            {
                py.detach(|| drop(writer));
                return Ok(false);
            }
        }
        crate::errors::closed_on_exit(self.close(py), exc_type)
    }

    /// What the garbage collector needs to see: the exception kept (its traceback's frames
    /// often hold this writer) and the Python objects given. If a thread is inside a write
    /// (the state is locked), nothing is reported, which only keeps the objects alive longer.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let Ok(state) = self.state.try_lock() else { return Ok(()) };
        visit.call(&state.failure)?;
        visit.call(state.owned_file.as_ref().and_then(PerProcess::get))?;
        visit.call(&state.dest)
    }

    /// Breaks the reference cycles found through `__traverse__`.
    fn __clear__(&mut self) {
        if let Ok(state) = self.state.get_mut() {
            state.failure = None;
            state.owned_file = None;
        }
    }

    /// Writes buffered data, finishes the file and closes `dest` if owned.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let state = self.state(py)?;
        if let Some(mut writer) = state.writer.take() {
            // Finished (open chunk, final padding, flush) before it is closed, so that its
            // positions are those of the finished file. A writer that failed writes nothing.
            let closed = py.detach(|| {
                writer.flush()?;
                let positions = (writer.pos()?, writer.last_pos()?);
                writer.close()?.finish()?;
                Ok::<_, Error>(positions)
            });
            match closed {
                Ok(positions) => state.closed_at = Some(positions),
                Err(e) if state.failure.is_none() => drop(state.fail(py, &e)),
                Err(_) => {}
            }
            // Only the process that opened the file closes it (a forked child's copy is leaked).
            if let Some(file) = state.owned_file.take()
                && let Some(file) = file.get()
            {
                file.call_method0(py, "close")?;
            }
        }
        state.raise_failure(py).map_or(Ok(()), Err)
    }

    /// The `dest` argument.
    #[getter]
    fn dest(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.state(py)?.dest.clone_ref(py))
    }

    /// Writes one record (bytes, bytearray or memoryview).
    #[pyo3(signature = (record))]
    fn write_record(&mut self, py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<()> {
        let record = record_bytes(record)?;
        let record = record.as_bytes();
        self.run(py, |writer| writer.write_record(record))
    }

    /// Writes one proto message as a record.
    #[pyo3(signature = (record))]
    fn write_message(&mut self, py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<()> {
        let record = serialize_message(record)?;
        let record = record.as_bytes();
        self.run(py, |writer| writer.write_record(record))
    }

    /// Writes every record of an iterable of bytes-like objects.
    #[pyo3(signature = (records))]
    fn write_records(&mut self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_all(py, records, record_bytes)
    }

    /// Writes every message of an iterable of proto messages.
    #[pyo3(signature = (records))]
    fn write_messages(&mut self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_all(py, records, serialize_message)
    }

    /// Finishes the open chunk and pushes data to `dest`; `FlushType.FROM_MACHINE` also
    /// syncs it to the device.
    #[pyo3(signature = (flush_type = None))]
    fn flush(&mut self, py: Python<'_>, flush_type: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let flush_type = flush_type_value(flush_type)?;
        if flush_type >= FROM_MACHINE && self.state(py)?.counters.is_some() {
            // A path or a URL: the destination syncs (a file) or refuses (an object).
            let state = self.state(py)?;
            if let Some(failure) = state.raise_failure(py) {
                return Err(failure);
            }
            let writer = state.writer.as_mut().ok_or_else(|| closed(py))?;
            return match py.detach(|| writer.flush_with(riegeli_records::FlushType::FromMachine)) {
                Ok(()) => Ok(()),
                // Refused (an object): the writer goes on.
                Err(e) if matches!(e.kind(), riegeli_records::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::Unsupported) => {
                    Err(to_py(py, &e))
                }
                Err(e) => Err(state.fail(py, &e)),
            };
        }
        self.run(py, |writer| writer.flush())?;
        if flush_type < FROM_MACHINE {
            return Ok(());
        }
        let state = self.state(py)?;
        // A file object: fsync its descriptor if it has one that can be synced (a pipe's
        // cannot: EINVAL, and has nothing to make durable).
        let dest = state.dest.bind(py);
        if let Ok(fd) = dest.call_method0("fileno") {
            let synced = py.import("os")?.call_method1("fsync", (fd,));
            if let Err(e) = synced {
                let errno = e.value(py).getattr("errno").ok().and_then(|errno| errno.extract::<i32>().ok());
                if !e.is_instance_of::<pyo3::exceptions::PyOSError>(py) || errno != Some(EINVAL) {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// riegeli-rs: the requests made and bytes uploaded writing an object (a dict; zeros
    /// for a file).
    fn io_stats(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let counters = self.state(py)?.counters.clone();
        crate::pyio::upload_stats(py, counters.as_ref())
    }

    /// An estimation of the file size if no more data is written.
    fn estimated_size(&mut self, py: Python<'_>) -> PyResult<u64> {
        self.run(py, |writer| Ok(writer.estimated_size()))
    }

    /// A position of the next record (after `close()`: the end of the file).
    #[getter]
    fn pos(&mut self, py: Python<'_>) -> PyResult<RecordPosition> {
        if let Some((pos, _)) = self.state(py)?.closed_at {
            return Ok(RecordPosition(pos));
        }
        self.run(py, |writer| writer.pos()).map(RecordPosition)
    }

    /// The position of the last record written.
    #[getter]
    fn last_pos(&mut self, py: Python<'_>) -> PyResult<RecordPosition> {
        let last = match self.state(py)?.closed_at {
            Some((_, last)) => last,
            None => self.run(py, |writer| writer.last_pos())?,
        };
        last.map(RecordPosition)
            .ok_or_else(|| riegeli_error(py, "FailedPreconditionError", "No record was written".to_owned()))
    }
}
