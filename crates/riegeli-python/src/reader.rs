//! `RecordReader`: Google's Python `RecordReader` on `riegeli_records::RecordReader`.

use std::cmp::Ordering;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyBaseException, PyStopIteration, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::{PyTraverseError, PyVisit};
use riegeli_object_store::{FetchConfig, Location};
use riegeli_records::{Corruption, Error, ErrorKind, FieldProjection, RecordReaderOptions};

use riegeli_arrow::{ArrowReader, ArrowStream};

use crate::arrow::{self, ArrowBatches, Reporting};
use crate::errors::{closed, internal, io_to_py, riegeli_error, to_py};
use crate::position::RecordPosition;
use crate::pyio::{PyFile, Src, as_path};

type Inner = riegeli_records::RecordReader<Src>;

/// A search's judgement of one record, in Python, given the record and where it begins and
/// ends (numeric positions: `last_pos` and `pos` of the reader after reading it).
type SearchTest<'a> = dyn Fn(Python<'_>, &[u8], (u64, u64)) -> PyResult<Option<Ordering>> + Sync + 'a;

/// What the recovery function left for the caller when it did not return normally.
#[derive(Debug, Default)]
struct RecoveryOutcome {
    /// It raised this exception: the read that called it raises it.
    exception: Option<PyErr>,
    /// It raised `StopIteration`: reading ends.
    stopped: bool,
}

#[derive(Debug)]
struct State {
    /// `None` once closed.
    reader: Option<Inner>,
    /// The `src` argument (a file object or a path).
    src: Py<PyAny>,
    /// The file object to close on `close()`, if owned.
    owned_file: Option<Py<PyAny>>,
    /// The file position where reading started.
    start: u64,
    outcome: Arc<Mutex<RecoveryOutcome>>,
    /// The recovery function raised `StopIteration`: every read returns the end.
    ended: bool,
    /// The recovery function, also called for records that do not parse as messages.
    recovery: Option<Py<PyAny>>,
    /// Reading ended at a chunk cut short (without recovery): as C++, reads
    /// return the end and `close()` raises this `CorruptedFileError` message.
    truncated: Option<String>,
    /// What a read of the reader raised (as C++, the reader has failed): every later
    /// operation, `close()` included, raises it again.
    failure: Option<Py<PyBaseException>>,
    /// Once closed: `pos` then (Google's answers it after `close()`).
    closed_at: Option<riegeli_records::RecordPosition>,
    /// The field projection set by the caller (given back after an Arrow stream's).
    projection: FieldProjection,
    /// The reader is read by the Arrow stream of `arrow_batches()`, which puts it here when
    /// it ends or is dropped; `restore` if the stream set a projection of its own.
    lent: Option<(Arc<Mutex<Option<Inner>>>, bool)>,
}

impl State {
    /// Takes the reader back from an Arrow stream that is done with it; an exception if the
    /// stream still reads it.
    fn reclaim(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some((slot, restore)) = &self.lent else { return Ok(()) };
        let Some(mut reader) = slot.lock().ok().and_then(|mut slot| slot.take()) else {
            return Err(riegeli_error(
                py,
                "FailedPreconditionError",
                "the reader is being read by the Arrow stream of arrow_batches(): consume it or drop it first"
                    .to_owned(),
            ));
        };
        let restore = *restore;
        self.lent = None;
        let restored = if restore { reader.set_field_projection(self.projection.clone()) } else { Ok(()) };
        self.reader = Some(reader);
        self.finish(py, restored).map(drop)
    }

    /// The exception that failed the reader, to raise again, if one did.
    fn raise_failure(&self, py: Python<'_>) -> Option<PyErr> {
        self.failure.as_ref().map(|failure| PyErr::from_value(failure.bind(py).clone().into_any()))
    }

    /// Python's result of a Rust call: an exception of the recovery function is raised
    /// in place of the error; `Ok(None)` if the recovery function ended reading.
    fn finish<T>(&mut self, py: Python<'_>, result: Result<T, Error>) -> PyResult<Option<T>> {
        let error = match result {
            Ok(value) => return Ok(Some(value)),
            Err(error) => error,
        };
        if let Ok(mut outcome) = self.outcome.lock() {
            if let Some(exception) = outcome.exception.take() {
                return Err(exception);
            }
            if outcome.stopped {
                self.ended = true;
                return Ok(None);
            }
        }
        if let (None, Some(&Corruption::Truncated { end }), Some(chunk)) =
            (&self.recovery, corruption(&error), error.position())
        {
            // C++'s `DefaultChunkReader` words, and its class (`InvalidArgument`).
            let length = end.saturating_sub(chunk);
            self.truncated =
                Some(format!("Truncated Riegeli/records file, incomplete chunk at {chunk} with length {length}"));
            return Ok(None);
        }
        let failure = to_py(py, &error);
        self.failure = Some(failure.value(py).clone().unbind());
        Err(failure)
    }

    /// After `parse_error` parsing the record or metadata in `[begin, end)`:
    /// `Ok(true)` to go on if the recovery function returned normally,
    /// `Ok(false)` if it ended reading; `parse_error` (or what the recovery
    /// function raised) otherwise.
    fn recover_parse(&mut self, py: Python<'_>, parse_error: PyErr, begin: u64, end: u64) -> PyResult<bool> {
        let Some(recovery) = self.recovery.as_ref().filter(|_| is_decode_error(py, &parse_error)) else {
            return Err(parse_error);
        };
        let message = error_message(py, &parse_error)?;
        match skipped_region(py, begin, end, &message).and_then(|region| recovery.call1(py, (region,))) {
            Ok(_) => Ok(true),
            Err(e) if e.is_instance_of::<PyStopIteration>(py) => {
                self.ended = true;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

/// Reads records from a Riegeli/records file (see the stub for the full documentation).
#[pyclass(module = "riegeli.records.record_reader", name = "RecordReader")]
#[derive(Debug)]
pub(crate) struct RecordReader {
    state: Mutex<State>,
}

/// A `riegeli.SkippedRegion` for the recovery function.
fn skipped_region<'py>(py: Python<'py>, begin: u64, end: u64, message: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("riegeli.records.skipped_region")?.getattr("SkippedRegion")?.call1((begin, end, message))
}

/// What is wrong with the file, for an error about damaged file contents.
fn corruption(error: &Error) -> Option<&Corruption> {
    match error.kind() {
        ErrorKind::Corrupt { cause, .. } => Some(cause),
        _ => None,
    }
}

/// Whether `error` is protobuf's `DecodeError` (a record or metadata that does not parse).
fn is_decode_error(py: Python<'_>, error: &PyErr) -> bool {
    let class = py.import("google.protobuf.message").and_then(|module| module.getattr("DecodeError"));
    class.is_ok_and(|class| error.is_instance(py, &class))
}

/// The message of a `SkippedRegion` for `error`, as Google's: `Class: text`.
fn error_message(py: Python<'_>, error: &PyErr) -> PyResult<String> {
    let class = error.get_type(py).name()?;
    let text = error.value(py).str()?;
    Ok(if text.is_empty()? { class.to_string() } else { format!("{class}: {text}") })
}

/// Parses `record` with `message_type.FromString` (a parse failure raises
/// protobuf's `DecodeError`, as in Google's module).
fn parse_message(py: Python<'_>, message_type: &Bound<'_, PyAny>, record: &[u8]) -> PyResult<Py<PyAny>> {
    Ok(message_type.call_method1("FromString", (PyBytes::new(py, record),))?.unbind())
}

/// `reader` with `projection` set again, after an Arrow stream set its own.
fn reader_restored(mut reader: Inner, projection: &FieldProjection) -> Result<Inner, Error> {
    reader.set_field_projection(projection.clone())?;
    Ok(reader)
}

/// A field projection from Python: an iterable of iterables of field numbers, or `None`.
fn field_projection(projection: Option<&Bound<'_, PyAny>>) -> PyResult<FieldProjection> {
    let Some(projection) = projection.filter(|p| !p.is_none()) else { return Ok(FieldProjection::all()) };
    let mut paths: Vec<Vec<u32>> = Vec::new();
    for path in projection.try_iter()? {
        let mut numbers = Vec::new();
        for number in path?.try_iter()? {
            numbers.push(number?.extract::<u32>()?);
        }
        paths.push(numbers);
    }
    FieldProjection::from_paths(paths)
        .map_err(|e| riegeli_error(projection.py(), "InvalidArgumentError", format!("field projection: {e}")))
}

/// The ordering a Python `test` function returned: an int's sign, or `None`.
fn ordering(py: Python<'_>, verdict: &Py<PyAny>) -> PyResult<Option<Ordering>> {
    if verdict.is_none(py) {
        return Ok(None);
    }
    let value: i64 = verdict.extract(py).map_err(|_| PyTypeError::new_err("search test must return an int or None"))?;
    Ok(Some(value.cmp(&0)))
}

impl RecordReader {
    /// The batches `args` describe, from the current record on: the reader is lent to the
    /// stream and comes back when the stream is consumed or dropped.
    fn batches(&mut self, py: Python<'_>, args: arrow::Args) -> PyResult<ArrowBatches> {
        let random_access = self.supports_random_access(py)?;
        let state = self.state(py)?;
        if let Some(failure) = state.raise_failure(py) {
            return Err(failure);
        }
        let reader = state.reader.take().ok_or_else(|| closed(py))?;
        let (options, limit) = (args.options, args.max_rows);
        let built = py.detach(move || {
            let arrow = if random_access {
                ArrowReader::try_new(reader, options)
            } else {
                ArrowReader::try_without_seeking(reader, options)
            };
            let arrow = arrow.map_err(|failed| Box::new((failed.0, failed.1, false)))?;
            ArrowStream::try_new(arrow, limit).map_err(|(error, arrow)| {
                let projected = random_access && arrow.field_projection().is_some();
                Box::new((error, arrow.into_inner(), projected))
            })
        });
        let stream = match built {
            Ok(stream) => stream,
            Err(failed) => {
                let (error, reader, projected) = *failed;
                // Given back; a projection the stream set is undone.
                let restored = if projected { reader_restored(reader, &state.projection) } else { Ok(reader) };
                return match restored {
                    Ok(reader) => {
                        state.reader = Some(reader);
                        Err(arrow::to_py(py, error))
                    }
                    Err(e) => Err(arrow::to_py(py, e.into())),
                };
            }
        };
        let projected = random_access && stream.get_ref().field_projection().is_some();
        let slot = Arc::new(Mutex::new(None));
        let back = Arc::clone(&slot);
        let give_back = Box::new(move |arrow: ArrowReader<Src>| {
            if let Ok(mut slot) = back.lock() {
                *slot = Some(arrow.into_inner());
            }
        });
        state.lent = Some((slot, projected));
        Ok(ArrowBatches::new(Reporting::new(stream, Some(give_back))))
    }

    fn state(&mut self, py: Python<'_>) -> PyResult<&mut State> {
        let state = self.state.get_mut().map_err(|_| internal(py, "RecordReader state poisoned by a panic"))?;
        state.reclaim(py)?;
        Ok(state)
    }

    /// Runs `f` on the open reader without the GIL. `Ok(None)` if the recovery function
    /// ended reading (before or during `f`).
    fn run<T: Send>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut Inner) -> Result<T, Error> + Send,
    ) -> PyResult<Option<T>> {
        let state = self.state(py)?;
        if let Some(failure) = state.raise_failure(py) {
            return Err(failure);
        }
        if state.ended {
            return Ok(None);
        }
        let reader = state.reader.as_mut().ok_or_else(|| closed(py))?;
        let result = py.detach(|| f(reader));
        state.finish(py, result)
    }

    /// The next record, or `None` at the end.
    fn next_record<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let record = self.run(py, |reader| reader.read_record())?.flatten();
        Ok(record.map(|record| PyBytes::new(py, &record)))
    }

    /// The next record parsed as `message_type`, or `None` at the end. With a
    /// recovery function, a record that does not parse is skipped (the
    /// function is told, as for damage).
    fn next_message(&mut self, py: Python<'_>, message_type: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        loop {
            let Some(record) = self.next_record(py)? else { return Ok(None) };
            let error = match parse_message(py, message_type, record.as_bytes()) {
                Ok(message) => return Ok(Some(message)),
                Err(error) => error,
            };
            let state = self.state(py)?;
            let reader = state.reader.as_ref().ok_or_else(|| closed(py))?;
            let begin = reader.last_pos().map_or(0, |pos| pos.numeric());
            let end = reader.pos().numeric();
            if !state.recover_parse(py, error, begin, end)? {
                return Ok(None);
            }
        }
    }

    /// Binary search with `test` judging each record. An exception of `test` ends the search
    /// and is raised; with `stop_iteration_ends`, `StopIteration` ends it with `None`, as
    /// Google's `search_for_record` and `search_for_message` (its `search` raises it).
    fn search_records(
        &mut self,
        py: Python<'_>,
        stop_iteration_ends: bool,
        test: &SearchTest<'_>,
    ) -> PyResult<Option<i32>> {
        let failure: Mutex<Option<PyErr>> = Mutex::new(None);
        let cancelled = std::sync::atomic::AtomicBool::new(false);
        let result = self.run(py, |reader| {
            reader.search(|reader| {
                if cancelled.load(std::sync::atomic::Ordering::Relaxed) {
                    return Ok(None);
                }
                let Some(record) = reader.read_record()? else { return Ok(None) };
                let span = (reader.last_pos().map_or(0, |pos| pos.numeric()), reader.pos().numeric());
                Ok(Python::attach(|py| match test(py, &record, span) {
                    Ok(verdict) => verdict,
                    Err(e) => {
                        cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
                        if let Ok(mut slot) = failure.lock() {
                            *slot = Some(e);
                        }
                        None
                    }
                }))
            })
        })?;
        if let Some(e) = failure.lock().ok().and_then(|mut slot| slot.take()) {
            if stop_iteration_ends && e.is_instance_of::<PyStopIteration>(py) {
                return Ok(None);
            }
            return Err(e);
        }
        Ok(result.flatten().map(|ordering| ordering as i32))
    }
}

#[pymethods]
impl RecordReader {
    #[new]
    #[pyo3(signature = (
        src, *, owns_src = true, assumed_pos = None, min_buffer_size = 4 << 10, max_buffer_size = 64 << 10,
        buffer_size = None, field_projection = None, recovery = None,
    ), text_signature = "(src, *, owns_src=True, assumed_pos=None, min_buffer_size=4096, max_buffer_size=65536, \
        buffer_size=None, field_projection=None, recovery=None)")]
    #[allow(clippy::too_many_arguments, reason = "Google's signature, keyword arguments in Python")]
    fn new(
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        owns_src: bool,
        assumed_pos: Option<u64>,
        min_buffer_size: u64,
        max_buffer_size: u64,
        buffer_size: Option<u64>,
        field_projection: Option<&Bound<'_, PyAny>>,
        recovery: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        // Reading goes in 64 KiB blocks whatever the buffer sizes; they are checked only.
        if buffer_size.is_none() && min_buffer_size > max_buffer_size {
            return Err(riegeli_error(
                py,
                "InvalidArgumentError",
                format!("min_buffer_size {min_buffer_size} > max_buffer_size {max_buffer_size}"),
            ));
        }
        let projection = self::field_projection(field_projection)?;
        let (source, start, owned_file) = match as_path(src)? {
            Some(path) => {
                if assumed_pos.is_some() {
                    return Err(riegeli_error(
                        py,
                        "InvalidArgumentError",
                        "assumed_pos applies to file objects, not paths or URLs".to_owned(),
                    ));
                }
                let source =
                    match py.detach(|| Location::open(&path, FetchConfig::default())).map_err(|e| io_to_py(py, &e))? {
                        Location::File(file) => Src::File(file),
                        Location::Object(object) => Src::Object(object),
                    };
                (source, 0, None)
            }
            None => {
                let (file, start) = PyFile::open(src, assumed_pos)?;
                (Src::Py(file), start, owns_src.then(|| src.clone().unbind()))
            }
        };
        let projection_kept = projection.clone();
        let options = RecordReaderOptions { field_projection: projection, ..RecordReaderOptions::default() };
        let mut reader = Inner::at_position(source, start, options);
        let outcome = Arc::new(Mutex::new(RecoveryOutcome::default()));
        let recovery = recovery.filter(|r| !r.is_none(py));
        if let Some(recovery) = recovery.as_ref().map(|r| r.clone_ref(py)) {
            let outcome = Arc::clone(&outcome);
            reader.set_recovery(move |region| {
                Python::attach(|py| {
                    let called = skipped_region(py, region.begin, region.end, &region.message)
                        .and_then(|region| recovery.call1(py, (region,)));
                    let Err(e) = called else { return true };
                    if let Ok(mut outcome) = outcome.lock() {
                        if e.is_instance_of::<PyStopIteration>(py) {
                            outcome.stopped = true;
                        } else {
                            outcome.exception = Some(e);
                        }
                    }
                    false
                })
            });
        }
        let state = State {
            reader: Some(reader),
            src: src.clone().unbind(),
            owned_file,
            start,
            outcome,
            ended: false,
            recovery,
            truncated: None,
            failure: None,
            closed_at: None,
            projection: projection_kept,
            lent: None,
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
        crate::errors::closed_on_exit(self.close(py), exc_type)
    }

    /// What the garbage collector needs to see: the exception kept (its traceback's frames
    /// often hold this reader) and the Python objects given. If a thread is inside a read
    /// (the state is locked), nothing is reported, which only keeps the objects alive longer.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let Ok(state) = self.state.try_lock() else { return Ok(()) };
        visit.call(&state.failure)?;
        visit.call(&state.recovery)?;
        visit.call(&state.owned_file)?;
        visit.call(&state.src)
    }

    /// Breaks the reference cycles found through `__traverse__`.
    fn __clear__(&mut self) {
        if let Ok(state) = self.state.get_mut() {
            state.failure = None;
            state.recovery = None;
            state.owned_file = None;
        }
    }

    /// Marks the reader closed; closes `src` if owned. Raises what failed the reader, if
    /// something did, and so every time (as C++); a file that ended inside a chunk
    /// (without recovery) has failed now.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let state = self.state.get_mut().map_err(|_| internal(py, "RecordReader state poisoned by a panic"))?;
        if state.reclaim(py).is_err() {
            // An Arrow stream still reads the reader: it keeps it, and drops it when done.
            state.lent = None;
        }
        if let Some(reader) = state.reader.take() {
            state.closed_at = Some(reader.pos());
            py.detach(|| drop(reader));
            if let Some(file) = state.owned_file.take() {
                file.call_method0(py, "close")?;
            }
            if let Some(message) = state.truncated.take() {
                state.failure = Some(riegeli_error(py, "CorruptedFileError", message).value(py).clone().unbind());
            }
        }
        state.raise_failure(py).map_or(Ok(()), Err)
    }

    /// The `src` argument.
    #[getter]
    fn src(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.state(py)?.src.clone_ref(py))
    }

    /// Whether `seek`, `size` and `search` can be used: `False` for a file object given with
    /// `assumed_pos` or whose `seekable()` is false.
    #[getter]
    fn supports_random_access(&mut self, py: Python<'_>) -> PyResult<bool> {
        let reader = self.state(py)?.reader.as_ref().ok_or_else(|| closed(py))?;
        Ok(!matches!(reader.get_ref(), Src::Py(file) if !file.supports_random_access()))
    }

    /// `True` if the file looks like a Riegeli/records file, `False` if it ends first.
    fn check_file_format(&mut self, py: Python<'_>) -> PyResult<bool> {
        let start = self.state(py)?.start;
        let result = self.run(py, |reader| match reader.check_file_format() {
            Ok(()) => Ok(true),
            // An empty file (nothing was read): the end, not an error.
            Err(e)
                if matches!(corruption(&e), Some(Corruption::MissingSignature)) && reader.pos().numeric() <= start =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        })?;
        // A file cut short in its first chunk is the end too, and `close()` raises.
        Ok(result.unwrap_or(false))
    }

    /// The file metadata, serialized; `b''` for a file without metadata.
    fn read_serialized_metadata<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let metadata = self.run(py, |reader| reader.read_serialized_metadata())?;
        Ok(metadata.map(|m| PyBytes::new(py, m.as_deref().unwrap_or_default())))
    }

    /// The file metadata as a `RecordsMetadata` message.
    fn read_metadata(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let Some(serialized) = self.read_serialized_metadata(py)? else { return Ok(None) };
        let class = py.import("riegeli.records.records_metadata_pb2")?.getattr("RecordsMetadata")?;
        let error = match parse_message(py, &class, serialized.as_bytes()) {
            Ok(metadata) => return Ok(Some(metadata)),
            Err(error) => error,
        };
        // With a recovery function that lets reading go on: empty metadata, as C++.
        let state = self.state(py)?;
        let reader = state.reader.as_ref().ok_or_else(|| closed(py))?;
        let (begin, end) = (reader.last_pos().map_or(0, |pos| pos.chunk_begin()), reader.pos().numeric());
        if state.recover_parse(py, error, begin, end)? { Ok(Some(class.call0()?.unbind())) } else { Ok(None) }
    }

    /// The next record as bytes, or `None` at the end of the file.
    fn read_record<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        self.next_record(py)
    }

    /// The next record parsed as `message_type`, or `None` at the end of the file.
    #[pyo3(signature = (message_type))]
    fn read_message(&mut self, py: Python<'_>, message_type: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        self.next_message(py, message_type)
    }

    /// An iterator over the remaining records, as bytes.
    fn read_records(slf: Py<Self>) -> RecordIterator {
        RecordIterator { reader: slf, message_type: None }
    }

    /// An iterator over the remaining records, parsed as `message_type`.
    #[pyo3(signature = (message_type))]
    fn read_messages(slf: Py<Self>, message_type: Py<PyAny>) -> RecordIterator {
        RecordIterator { reader: slf, message_type: Some(message_type) }
    }

    /// Sets the fields to read (see the constructor's `field_projection`).
    #[pyo3(signature = (field_projection))]
    fn set_field_projection(&mut self, py: Python<'_>, field_projection: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let projection = self::field_projection(field_projection)?;
        self.state(py)?.projection = projection.clone();
        self.run(py, |reader| reader.set_field_projection(projection)).map(drop)
    }

    /// riegeli-rs: the records from the current one to the end as Arrow record batches
    /// (see the stub).
    #[pyo3(signature = (
        columns = None, *, batch_size = 65536, message_type = None, file_descriptor_set = None, format = None,
        skip_bad_records = false, max_rows = None,
    ))]
    #[allow(clippy::too_many_arguments, reason = "keyword arguments in Python")]
    fn arrow_batches(
        &mut self,
        py: Python<'_>,
        columns: Option<&Bound<'_, PyAny>>,
        batch_size: usize,
        message_type: Option<&Bound<'_, PyAny>>,
        file_descriptor_set: Option<&Bound<'_, PyAny>>,
        format: Option<&str>,
        skip_bad_records: bool,
        max_rows: Option<u64>,
    ) -> PyResult<ArrowBatches> {
        let args = arrow::args(
            py,
            columns,
            batch_size,
            message_type,
            file_descriptor_set,
            format,
            skip_bad_records,
            max_rows,
        )?;
        self.batches(py, args)
    }

    /// riegeli-rs: `arrow_batches(...)` read into a `pyarrow.Table` (see the stub).
    #[pyo3(signature = (
        columns = None, *, batch_size = 65536, message_type = None, file_descriptor_set = None, format = None,
        skip_bad_records = false, max_rows = None,
    ))]
    #[allow(clippy::too_many_arguments, reason = "keyword arguments in Python")]
    #[allow(clippy::wrong_self_convention, reason = "the Python name; it reads the records")]
    fn to_arrow<'py>(
        &mut self,
        py: Python<'py>,
        columns: Option<&Bound<'py, PyAny>>,
        batch_size: usize,
        message_type: Option<&Bound<'py, PyAny>>,
        file_descriptor_set: Option<&Bound<'py, PyAny>>,
        format: Option<&str>,
        skip_bad_records: bool,
        max_rows: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut args = arrow::args(
            py,
            columns,
            batch_size,
            message_type,
            file_descriptor_set,
            format,
            skip_bad_records,
            max_rows,
        )?;
        // One table: a transposed chunk's rows need not be copied into a batch with others'.
        args.options.exact_batch_size = false;
        self.batches(py, args)?.into_table(py)
    }

    /// riegeli-rs: reads only the records of the chunks that begin in `[start, end)`
    /// (byte offsets; `end=None`: to the end of the file), from the first of them on.
    #[pyo3(signature = (start, end = None))]
    fn set_byte_range(&mut self, py: Python<'_>, start: u64, end: Option<u64>) -> PyResult<()> {
        self.run(py, |reader| reader.set_byte_range(start..end.unwrap_or(u64::MAX))).map(drop)
    }

    /// Seeks to a position obtained from `pos` or `last_pos` of the same file.
    #[pyo3(signature = (pos))]
    fn seek(&mut self, py: Python<'_>, pos: &Bound<'_, PyAny>) -> PyResult<()> {
        let pos = pos
            .cast::<RecordPosition>()
            .map_err(|_| PyTypeError::new_err(format!("Expected RecordPosition, not {}", pos.get_type())))?
            .get()
            .0;
        self.run(py, move |reader| reader.seek(pos)).map(drop)
    }

    /// Seeks to the record with this numeric position, or the next one.
    #[pyo3(signature = (pos))]
    fn seek_numeric(&mut self, py: Python<'_>, pos: u64) -> PyResult<()> {
        self.run(py, move |reader| reader.seek_numeric(pos)).map(drop)
    }

    /// Seeks back by one record; `False` at the beginning of the file.
    fn seek_back(&mut self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.run(py, |reader| reader.seek_back())?.unwrap_or(false))
    }

    /// The size of the file in bytes.
    fn size(&mut self, py: Python<'_>) -> PyResult<u64> {
        let state = self.state(py)?;
        if let Some(failure) = state.raise_failure(py) {
            return Err(failure);
        }
        let reader = state.reader.as_mut().ok_or_else(|| closed(py))?;
        let size = py.detach(|| reader.size());
        // Nothing is skipped here: no recovery function can end it.
        state.finish(py, size)?.ok_or_else(|| internal(py, "size() ended by the recovery function"))
    }

    /// A position of the next record (or of the end of the file).
    #[getter]
    fn pos(&mut self, py: Python<'_>) -> PyResult<RecordPosition> {
        let state = self.state(py)?;
        let pos = state.reader.as_ref().map(Inner::pos).or(state.closed_at).ok_or_else(|| closed(py))?;
        Ok(RecordPosition(pos))
    }

    /// The position of the last record read.
    #[getter]
    fn last_pos(&mut self, py: Python<'_>) -> PyResult<RecordPosition> {
        // None after `close()`, as C++.
        let state = self.state(py)?;
        state
            .reader
            .as_ref()
            .and_then(Inner::last_pos)
            .map(RecordPosition)
            .ok_or_else(|| riegeli_error(py, "FailedPreconditionError", "No record was read".to_owned()))
    }

    /// Binary search; `test` is called with a view of the reader at a record (its
    /// `read_record()` and `read_message(type)` return that record).
    #[pyo3(signature = (test))]
    fn search(&mut self, py: Python<'_>, test: Py<PyAny>) -> PyResult<Option<i32>> {
        self.search_records(py, false, &|py, record, _| {
            let probe = Bound::new(py, SearchProbe { record: PyBytes::new(py, record).unbind() })?;
            ordering(py, &test.call1(py, (probe,))?)
        })
    }

    /// Binary search; `test` is called with each record as bytes.
    #[pyo3(signature = (test))]
    fn search_for_record(&mut self, py: Python<'_>, test: Py<PyAny>) -> PyResult<Option<i32>> {
        self.search_records(py, true, &|py, record, _| ordering(py, &test.call1(py, (PyBytes::new(py, record),))?))
    }

    /// Binary search; `test` is called with each record parsed as `message_type`. A record
    /// that does not parse raises `DecodeError`, or with a recovery function is reported to
    /// it and judged unordered (`StopIteration` there ends the search with `None`).
    #[pyo3(signature = (message_type, test))]
    fn search_for_message(
        &mut self,
        py: Python<'_>,
        message_type: Py<PyAny>,
        test: Py<PyAny>,
    ) -> PyResult<Option<i32>> {
        let recovery = self.state(py)?.recovery.as_ref().map(|recovery| recovery.clone_ref(py));
        self.search_records(py, true, &|py, record, (begin, end)| {
            let message = match parse_message(py, message_type.bind(py), record) {
                Ok(message) => message,
                Err(error) => {
                    let Some(recovery) = recovery.as_ref().filter(|_| is_decode_error(py, &error)) else {
                        return Err(error);
                    };
                    let message = error_message(py, &error)?;
                    recovery.call1(py, (skipped_region(py, begin, end, &message)?,))?;
                    return Ok(None);
                }
            };
            ordering(py, &test.call1(py, (message,))?)
        })
    }
}

/// What `RecordReader.search` passes to its test: the record being judged.
#[pyclass(module = "riegeli.records.record_reader", name = "SearchProbe", frozen)]
#[derive(Debug)]
pub(crate) struct SearchProbe {
    record: Py<PyBytes>,
}

#[pymethods]
impl SearchProbe {
    /// The record being judged.
    fn read_record(&self, py: Python<'_>) -> Py<PyBytes> {
        self.record.clone_ref(py)
    }

    /// The record being judged, parsed as `message_type`.
    #[pyo3(signature = (message_type))]
    fn read_message(&self, py: Python<'_>, message_type: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        parse_message(py, message_type, self.record.as_bytes(py))
    }
}

/// The iterator of `read_records()` and `read_messages()`.
#[pyclass(module = "riegeli.records.record_reader", name = "RecordIterator")]
#[derive(Debug)]
pub(crate) struct RecordIterator {
    reader: Py<RecordReader>,
    message_type: Option<Py<PyAny>>,
}

#[pymethods]
impl RecordIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut reader = self.reader.bind(py).try_borrow_mut()?;
        match &self.message_type {
            Some(message_type) => reader.next_message(py, message_type.bind(py)),
            None => Ok(reader.next_record(py)?.map(|record| record.into_any().unbind())),
        }
    }
}
