//! `ArrayRecordReader`: array_record's Python `ArrayRecordReader` (`array_record_module`) on
//! `riegeli_records::ArrayRecordReader`.
//!
//! Exceptions are C++'s: `ValueError` for a bad option string, `IndexError` for `read()` past
//! the end and for a bad `read(begin, end)`, `RuntimeError` for everything else. As in C++,
//! a file that cannot be opened does not make the constructor fail: `ok()` is `False` and
//! every read (and `close()`) raises `RuntimeError` with the reason.
//!
//! The path may be a URL (`s3://`, `gs://`, `az://`, `http(s)://`): the file is then read
//! from object storage by ranged requests, each batch read fetching the chunks it needs
//! concurrently (`riegeli_object_store`). A local file is read by positional reads, as
//! `ArrayRecordReader::open` reads it.
//!
//! The reader is shared between Python threads (a data source serves several): its state is
//! behind a mutex that is only waited on without the GIL.
//!
//! And between processes: a reader made before a fork (a data source built in the parent of
//! data loader workers) is used in the children. Each process has its own state
//! (`PerProcess`): a child forked since opens the file again on its first call, with the same
//! options, at the record index the reader had (closed if it was closed), and never touches
//! the parent's, whose mutex another thread of the parent may have held at the fork and whose
//! decoding threads and connections do not exist in the child.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use riegeli_object_store::{FetchConfig, Location, ObjectSource};
use riegeli_records::{ArrayRecordReaderOptions, Error, ParseOptionsError, PerProcess};

use crate::arrow::{self, ArrowBatches};
use crate::pyio::as_path;

type Inner = riegeli_records::ArrayRecordReader<Location>;

#[derive(Debug)]
struct State {
    /// `None` once closed, or if opening failed.
    reader: Option<Inner>,
    /// Why opening failed: every operation raises it (as C++'s failed status).
    failure: Option<String>,
    /// `False` after `close()`.
    open: bool,
    /// The writer options stored in the footer (kept after `close()`, as C++).
    writer_options: Option<String>,
    /// The object read, if the path was a URL (for `io_stats()`).
    object: Option<ObjectSource>,
}

impl State {
    /// The open reader, or the exception C++ raises instead.
    fn reader(&mut self) -> Result<&mut Inner, String> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        self.reader.as_mut().ok_or_else(|| "Object closed".to_owned())
    }

    fn num_records(&self) -> u64 {
        self.reader.as_ref().map_or(0, Inner::num_records)
    }

    /// The next record for `read()`: `IndexError` at the end.
    fn next_record(&mut self) -> Result<Bytes, Failure> {
        let reader = self.reader().map_err(Failure::Runtime)?;
        reader
            .read_next()?
            .ok_or_else(|| Failure::Index(format!("Out of range of num_records: {}", reader.num_records())))
    }
}

/// An exception to raise, built once the GIL is held again.
#[derive(Debug)]
enum Failure {
    Runtime(String),
    Index(String),
}

impl Failure {
    fn into_py(self) -> PyErr {
        match self {
            Self::Runtime(message) => PyRuntimeError::new_err(message),
            Self::Index(message) => PyIndexError::new_err(message),
        }
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self::Runtime(error.to_string())
    }
}

/// array_record's `ArrayRecordReader` (see the stub for the full documentation).
#[pyclass(module = "riegeli.array_record.array_record_module", name = "ArrayRecordReader", frozen)]
#[derive(Debug)]
pub(crate) struct ArrayRecordReader {
    /// The state of each process that uses the reader (see the module docs).
    state: PerProcess<Mutex<State>>,
    /// What the reader was opened with, to open it again in a forked child.
    path: PathBuf,
    options: ArrayRecordReaderOptions,
    /// Why opening failed, if it did (a forked child fails alike).
    failure: Option<String>,
    writer_options: Option<String>,
    /// `close()` was called (in this process or the one it was forked from).
    closed: AtomicBool,
    /// `record_index` after the last call that moved it, for a forked child to start at.
    index: AtomicU64,
}

/// Records decoded are made into `bytes` once this many bytes of them are waiting (the GIL
/// taken once for them), and the rest at the end: a large read overlaps making its `bytes`
/// with decoding, a small one (a Grain batch) takes the GIL once. Taking it per chunk made a
/// batch of 256 random records wait on the other Python threads up to 256 times.
const BYTES_BATCH: usize = 4 << 20;

/// Records decoded and not yet made into `bytes`, with their size.
struct Waiting<T> {
    records: Vec<T>,
    bytes: usize,
}

impl<T: Clone> Waiting<T> {
    fn new() -> Self {
        Self { records: Vec::new(), bytes: 0 }
    }

    /// Adds a chunk's records (`size` tells each one's); once [`BYTES_BATCH`] wait, hands
    /// them all to `make` with the GIL.
    fn add(
        &mut self,
        records: &[T],
        size: impl Fn(&T) -> usize,
        make: impl FnOnce(Python<'_>, std::vec::Drain<'_, T>),
    ) {
        self.records.extend_from_slice(records);
        self.bytes += records.iter().map(size).sum::<usize>();
        if self.bytes >= BYTES_BATCH {
            Python::attach(|py| make(py, self.records.drain(..)));
            self.bytes = 0;
        }
    }
}

/// The records of `range` as a Python list of bytes. With decoding threads, those decoded
/// are made into `bytes` every [`BYTES_BATCH`] while the threads go on with the next chunks
/// (`read_batch_each`): building the list overlaps the decoding. Without
/// (`max_parallelism:0`), all are decoded first, without the GIL, and the list is made at the
/// end: taking the GIL during the read would only make two Python threads reading two files
/// wait on each other.
fn range_to_list<'py>(
    reader: &ArrayRecordReader,
    py: Python<'py>,
    range: impl FnOnce(u64) -> Result<Range<u64>, Failure> + Send,
) -> PyResult<Bound<'py, PyList>> {
    let mut objects: Vec<Py<PyBytes>> = Vec::new();
    let serial = reader.options.parallelism == 0;
    let waiting = reader.with(py, |state| {
        let range = range(state.num_records())?;
        let reader = state.reader().map_err(Failure::Runtime)?;
        if serial {
            return Ok(reader.read_batch(range)?.into_iter().enumerate().collect());
        }
        objects.reserve(usize::try_from(range.end.saturating_sub(range.start)).unwrap_or(0).min(1 << 20));
        let mut waiting = Waiting::new();
        reader.read_batch_each(range, |records| {
            waiting.add(
                records,
                |(_, record)| record.len(),
                |py, records| {
                    objects.extend(records.map(|(_, record)| PyBytes::new(py, &record).unbind()));
                },
            );
        })?;
        Ok(waiting.records)
    })?;
    objects.extend(waiting.iter().map(|(_, record)| PyBytes::new(py, record).unbind()));
    PyList::new(py, objects)
}

/// Makes each (position, record) a `bytes` at its position in `objects`.
fn fill(py: Python<'_>, objects: &mut [Option<Py<PyBytes>>], records: impl Iterator<Item = (usize, Bytes)>) {
    for (p, record) in records {
        if let Some(slot) = objects.get_mut(p) {
            *slot = Some(PyBytes::new(py, &record).unbind());
        }
    }
}

/// Opens the reader of `path` (a file or a URL); the failure, as `ok()` reports it.
/// Does I/O: call it without the GIL.
fn open(path: &std::path::Path, options: ArrayRecordReaderOptions) -> Result<(Inner, Option<ObjectSource>), String> {
    (|| {
        let location = Location::open(path, FetchConfig::default())?;
        let object = location.object().cloned();
        Ok((Inner::with_options(location, options)?, object))
    })()
    .map_err(|e: riegeli_records::Error| format!("{e}; opening {}", path.display()))
}

/// The path argument: `str` or `os.PathLike` (a URL is a `str`).
pub(crate) fn path_arg(path: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    as_path(path)?
        .ok_or_else(|| PyTypeError::new_err(format!("path must be str or os.PathLike, not {}", path.get_type())))
}

impl ArrayRecordReader {
    /// The state of the running process: opened again in a child forked since the reader was
    /// made. Does I/O then: call it without the GIL.
    fn state(&self) -> &Mutex<State> {
        self.state.get_or_init(|| {
            let closed = self.closed.load(Ordering::Relaxed);
            let mut state = State {
                reader: None,
                failure: self.failure.clone(),
                open: !closed,
                writer_options: self.writer_options.clone(),
                object: None,
            };
            if closed || state.failure.is_some() {
                return Mutex::new(state);
            }
            match open(&self.path, self.options.clone()) {
                Ok((mut reader, object)) => {
                    reader.seek_record(self.index.load(Ordering::Relaxed));
                    state.reader = Some(reader);
                    state.object = object;
                }
                Err(failure) => state.failure = Some(failure),
            }
            Mutex::new(state)
        })
    }

    /// Runs `f` on the state, without the GIL while waiting for it and while `f` runs.
    fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut State) -> Result<T, Failure> + Send) -> PyResult<T> {
        py.detach(|| {
            let mut state =
                self.state().lock().map_err(|_| Failure::Runtime("ArrayRecordReader poisoned by a panic".into()))?;
            f(&mut state)
        })
        .map_err(Failure::into_py)
    }

    /// Notes where `record_index` is now (see [`index`](Self::index)).
    fn note_index(&self, state: &State) {
        if let Some(reader) = &state.reader {
            self.index.store(reader.record_index(), Ordering::Relaxed);
        }
    }

    /// `read(indices)`.
    fn read_indices<'py>(&self, py: Python<'py>, indices: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        if indices.is_instance_of::<PyString>() || indices.is_instance_of::<PyBytes>() || !indices.hasattr("__len__")? {
            return Err(PyTypeError::new_err("read(): expected a list of record indices"));
        }
        let indices: Vec<u64> = indices.extract().map_err(|e| PyTypeError::new_err(format!("read(): {e}")))?;
        // As `range_to_list`: with decoding threads, records decoded become bytes every
        // `BYTES_BATCH`, the rest at the end.
        let mut objects: Vec<Option<Py<PyBytes>>> = Vec::new();
        let serial = self.options.parallelism == 0;
        let waiting = self.with(py, |state| {
            let reader = state.reader().map_err(Failure::Runtime)?;
            let num_records = reader.num_records();
            if let Some(bad) = indices.iter().find(|&&i| i >= num_records) {
                return Err(Failure::Runtime(format!("index {bad} out of bound {num_records}")));
            }
            objects.resize_with(indices.len(), || None);
            // One record (a data source's `source[i]`): read where its chunk stays decoded
            // for the next call, so that records asked for one by one in order decode each
            // chunk about once, not once per record.
            if let [index] = indices[..] {
                return Ok(vec![(0, reader.read(index)?)]);
            }
            if serial {
                return Ok(reader.read_batch(&indices)?.into_iter().enumerate().collect());
            }
            let mut waiting = Waiting::new();
            reader.read_batch_each(&indices, |records| {
                waiting.add(records, |(_, record)| record.len(), |py, records| fill(py, &mut objects, records));
            })?;
            Ok(waiting.records)
        })?;
        fill(py, &mut objects, waiting.into_iter());
        PyList::new(py, objects.into_iter().map(|object| object.map_or_else(|| py.None(), Py::into_any)))
    }

    /// `read(begin, end)`: negative bounds count from the end, as C++.
    fn read_range<'py>(
        &self,
        py: Python<'py>,
        begin: &Bound<'py, PyAny>,
        end: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let bound = |value: &Bound<'py, PyAny>| {
            value
                .extract::<i32>()
                .map_err(|e| PyTypeError::new_err(format!("read(): begin and end must be 32-bit ints: {e}")))
        };
        let (begin, end) = (i64::from(bound(begin)?), i64::from(bound(end)?));
        range_to_list(self, py, |num_records| {
            let num_records = i64::try_from(num_records).unwrap_or(i64::MAX);
            let resolve = |i: i64| if i < 0 { i + num_records } else { i };
            let range: Range<i64> = resolve(begin)..resolve(end);
            if range.start < 0 || range.end > num_records || range.end <= range.start {
                return Err(Failure::Index(format!("[{begin}, {end}) is of range of [0, {num_records})")));
            }
            Ok(range.start as u64..range.end as u64)
        })
    }
}

#[pymethods]
impl ArrayRecordReader {
    #[new]
    #[pyo3(signature = (path, options = "", **kwargs))]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        options: &str,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        // `file_reader_buffer_size` and `file_options` tune C++'s file reader: nothing to tune here.
        let _ = kwargs;
        // C++'s grammar and messages, parsed by riegeli-records.
        let reader_options: ArrayRecordReaderOptions =
            options.parse().map_err(|e: ParseOptionsError| PyValueError::new_err(e.message.to_owned()))?;
        let path = path_arg(path)?;
        let opened = py.detach(|| open(&path, reader_options.clone()));
        let (reader, object, failure) = match opened {
            Ok((reader, object)) => (Some(reader), object, None),
            Err(failure) => (None, None, Some(failure)),
        };
        let writer_options = reader.as_ref().and_then(|r| r.index().writer_options.clone());
        let state =
            State { reader, failure: failure.clone(), open: true, writer_options: writer_options.clone(), object };
        Ok(Self {
            state: PerProcess::from(Mutex::new(state)),
            path,
            options: reader_options,
            failure,
            writer_options,
            closed: AtomicBool::new(false),
            index: AtomicU64::new(0),
        })
    }

    /// riegeli-rs: records as Arrow record batches, all of them or those of `indices` (a
    /// `range` or integers), read by a reader of their own (see the stub).
    #[pyo3(signature = (
        columns = None, *, indices = None, batch_size = 65536, message_type = None, file_descriptor_set = None,
        format = None, skip_bad_records = false, max_rows = None,
    ))]
    #[allow(clippy::too_many_arguments, reason = "keyword arguments in Python")]
    fn arrow_batches(
        &self,
        py: Python<'_>,
        columns: Option<&Bound<'_, PyAny>>,
        indices: Option<&Bound<'_, PyAny>>,
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
        let selection = arrow::selection(indices)?;
        if let Some(failure) = &self.failure {
            return Err(PyRuntimeError::new_err(failure.clone()));
        }
        if self.closed.load(Ordering::Relaxed) {
            return Err(PyRuntimeError::new_err("Object closed"));
        }
        let (path, options) = (self.path.clone(), self.options.clone());
        arrow::by_index(py, args, selection, Some(&self.path), move |field_projection| {
            let options = ArrayRecordReaderOptions { field_projection, ..options };
            Inner::with_options(Location::open(&path, FetchConfig::default())?, options)
        })
    }

    /// riegeli-rs: `arrow_batches(...)` read into a `pyarrow.Table` (see the stub).
    #[pyo3(signature = (
        columns = None, *, indices = None, batch_size = 65536, message_type = None, file_descriptor_set = None,
        format = None, skip_bad_records = false, max_rows = None,
    ))]
    #[allow(clippy::too_many_arguments, reason = "keyword arguments in Python")]
    fn to_arrow<'py>(
        &self,
        py: Python<'py>,
        columns: Option<&Bound<'py, PyAny>>,
        indices: Option<&Bound<'py, PyAny>>,
        batch_size: usize,
        message_type: Option<&Bound<'py, PyAny>>,
        file_descriptor_set: Option<&Bound<'py, PyAny>>,
        format: Option<&str>,
        skip_bad_records: bool,
        max_rows: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let batches = self.arrow_batches(
            py,
            columns,
            indices,
            batch_size,
            message_type,
            file_descriptor_set,
            format,
            skip_bad_records,
            max_rows,
        )?;
        batches.into_table(py)
    }

    /// `True` while open and not failed.
    fn ok(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |state| Ok(state.open && state.failure.is_none()))
    }

    /// `False` after `close()`.
    fn is_open(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |state| Ok(state.open))
    }

    /// Closes the file; raises `RuntimeError` if the reader had failed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.closed.store(true, Ordering::Relaxed);
        self.with(py, |state| {
            state.open = false;
            drop(state.reader.take());
            state.failure.clone().map_or(Ok(()), |failure| Err(Failure::Runtime(failure)))
        })
    }

    /// riegeli-rs: what reading an object cost in this process, as a dict (`requests`,
    /// `bytes`, `cache_hits`, `cache_bytes`, `cache_misses`, `cache_damaged`, `retries`,
    /// `hedges`, `refetches`); all 0 for a local file.
    fn io_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.with(py, |state| Ok(state.object.as_ref().map(ObjectSource::stats).unwrap_or_default()))?;
        let dict = PyDict::new(py);
        for (key, value) in [
            ("requests", stats.requests),
            ("bytes", stats.bytes),
            ("cache_hits", stats.cache_hits),
            ("cache_bytes", stats.cache_bytes),
            ("cache_misses", stats.cache_misses),
            ("cache_damaged", stats.cache_damaged),
            ("retries", stats.retries),
            ("hedges", stats.hedges),
            ("refetches", stats.refetches),
        ] {
            dict.set_item(key, value)?;
        }
        Ok(dict)
    }

    /// The number of records (0 once closed or if opening failed).
    fn num_records(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |state| Ok(state.num_records()))
    }

    /// The index of the record `read()` returns next.
    fn record_index(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |state| Ok(state.reader.as_ref().map_or(0, Inner::record_index)))
    }

    /// The writer options stored in the file, or `None`.
    fn writer_options_string(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |state| Ok(state.writer_options.clone()))
    }

    /// Makes `record_index` `index`, clamped to `num_records()` (as C++, negative too).
    fn seek(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<()> {
        let index: i64 = index.extract().map_err(|e| PyTypeError::new_err(format!("seek(): {e}")))?;
        self.with(py, |state| {
            let reader = state.reader().map_err(Failure::Runtime)?;
            // Negative: past the end, as C++ (whose index is unsigned).
            reader.seek_record(u64::try_from(index).unwrap_or(u64::MAX));
            self.index.store(reader.record_index(), Ordering::Relaxed);
            Ok(())
        })
    }

    /// `read()`: the next record (`IndexError` at the end); `read(indices)`: the records at
    /// these indices; `read(begin, end)`: the records in `[begin, end)`.
    #[pyo3(signature = (*args))]
    fn read<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        match args.len() {
            0 => {}
            1 => return self.read_indices(py, &args.get_item(0)?).map(Bound::into_any),
            2 => return self.read_range(py, &args.get_item(0)?, &args.get_item(1)?).map(Bound::into_any),
            n => return Err(PyTypeError::new_err(format!("read() takes 0, 1 or 2 arguments ({n} given)"))),
        }
        // Records already decoded are returned without releasing the GIL (the state is made,
        // in a forked child, by the call that waits for it).
        if let Some(state) = self.state.get()
            && let Ok(mut state) = state.try_lock()
            && let Some(record) = state.reader.as_mut().and_then(Inner::read_next_decoded)
        {
            self.note_index(&state);
            return Ok(PyBytes::new(py, &record).into_any());
        }
        let record = self.with(py, |state| {
            let record = state.next_record();
            self.note_index(state);
            record
        })?;
        Ok(PyBytes::new(py, &record).into_any())
    }

    /// Every record, in order (`record_index` does not move).
    fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        range_to_list(self, py, |num_records| Ok(0..num_records))
    }
}
