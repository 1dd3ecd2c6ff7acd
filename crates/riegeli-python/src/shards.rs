//! `ArrayRecordShards`: `riegeli_records::ArrayRecordShards` over paths and URLs, the native
//! side of `ArrayRecordDataSource` and of `riegeli.grain`'s read-ahead; `PendingRead`, a batch
//! read on a thread of its own.
//!
//! Files are opened as `ArrayRecordReader` opens them (`Location::open`: local paths by
//! positional reads, URLs from object storage), on first use in each process (a forked child
//! opens its own). `on_open(shard, writer_options)`, if given, is called with the GIL when a
//! file is opened (the data source checks the group size there); what it raises is raised
//! by the read that opened the file.
//!
//! Exceptions: `ValueError` for a key out of `[0, len)` (array_record's data source's message),
//! `TypeError` for a key that is not an integer, `RuntimeError` for everything else (a file
//! that cannot be opened, a damaged one), as `ArrayRecordReader.read` raises.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};

use bytes::Bytes;
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use riegeli_object_store::{FetchConfig, Location};
use riegeli_records::{ArrayRecordReader, ArrayRecordReaderOptions, Error, ParseOptionsError};

use crate::array_reader::path_arg;
use crate::arrow::{self, ArrowBatches};

type Inner = riegeli_records::ArrayRecordShards<Location>;

/// An exception raised by `on_open`, raised again by the call whose read opened the file.
type Raised = Arc<Mutex<Option<PyErr>>>;

/// The message of array_record's data source for a key out of range.
const KEY_OUT_OF_RANGE: &str = "Record key should be in [0, num_records)";

/// The records of several ArrayRecord files, each a range of its file, by key (see the stub).
#[pyclass(module = "riegeli._riegeli", name = "ArrayRecordShards", frozen)]
pub(crate) struct ArrayRecordShards {
    inner: Arc<Inner>,
    raised: Raised,
    /// What the shards were made of, for the readers of `arrow_batches()` (and `repr`).
    paths: Vec<PathBuf>,
    ranges: Vec<(u64, u64)>,
    options: ArrayRecordReaderOptions,
}

/// The keys argument: integers (anything with `__index__`) in `[0, len)`.
fn keys_arg(keys: &Bound<'_, PyAny>, len: u64) -> PyResult<Vec<u64>> {
    let keys: Vec<i64> = keys.extract().map_err(|e: PyErr| {
        if e.is_instance_of::<PyOverflowError>(keys.py()) { PyValueError::new_err(KEY_OUT_OF_RANGE) } else { e }
    })?;
    keys.into_iter().map(|key| key_in_range(key, len)).collect()
}

fn key_in_range(key: i64, len: u64) -> PyResult<u64> {
    u64::try_from(key).ok().filter(|&key| key < len).ok_or_else(|| PyValueError::new_err(KEY_OUT_OF_RANGE))
}

/// One key argument.
fn key_arg(key: &Bound<'_, PyAny>, len: u64) -> PyResult<u64> {
    let key: i64 = key.extract().map_err(|e: PyErr| {
        if e.is_instance_of::<PyOverflowError>(key.py()) { PyValueError::new_err(KEY_OUT_OF_RANGE) } else { e }
    })?;
    key_in_range(key, len)
}

/// `error` as the exception to raise: what `on_open` raised, if it did, else `RuntimeError`.
fn failure(raised: &Raised, error: &Error) -> PyErr {
    raised
        .lock()
        .ok()
        .and_then(|mut raised| raised.take())
        .unwrap_or_else(|| PyRuntimeError::new_err(error.to_string()))
}

/// Records as a list of `bytes`.
fn to_list<'py>(py: Python<'py>, records: &[Bytes]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, records.iter().map(|record| PyBytes::new(py, record)))
}

#[pymethods]
impl ArrayRecordShards {
    #[new]
    #[pyo3(signature = (paths, ranges, options = "", on_open = None))]
    fn new(
        paths: Vec<Bound<'_, PyAny>>,
        ranges: Vec<(u64, u64)>,
        options: &str,
        on_open: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let options: ArrayRecordReaderOptions =
            options.parse().map_err(|e: ParseOptionsError| PyValueError::new_err(e.message.to_owned()))?;
        let paths: Vec<PathBuf> = paths.iter().map(path_arg).collect::<PyResult<_>>()?;
        if paths.len() != ranges.len() {
            return Err(PyValueError::new_err(format!("{} paths but {} ranges", paths.len(), ranges.len())));
        }
        let raised = Raised::default();
        let on_open_raised = Arc::clone(&raised);
        let kept = (paths.clone(), ranges.clone(), options.clone());
        let open = move |shard: usize| {
            let path = paths.get(shard).ok_or_else(|| Error::from(std::io::Error::other("no such shard")))?;
            let reader = Location::open(path, FetchConfig::default())
                .map_err(Error::from)
                .and_then(|location| ArrayRecordReader::with_options(location, options.clone()))
                .map_err(|e| Error::from(std::io::Error::other(format!("{e}; opening {}", path.display()))))?;
            if let Some(on_open) = &on_open {
                let writer_options = reader.index().writer_options.clone();
                Python::attach(|py| on_open.call1(py, (shard, writer_options)).map(drop)).map_err(|e| {
                    if let Ok(mut raised) = on_open_raised.lock() {
                        *raised = Some(e);
                    }
                    Error::from(std::io::Error::other(format!("on_open failed for {}", path.display())))
                })?;
            }
            Ok(reader)
        };
        let ranges = ranges.into_iter().map(|(start, end)| start..end).collect();
        let inner = Inner::new(ranges, open).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let (paths, ranges, options) = kept;
        Ok(Self { inner: Arc::new(inner), raised, paths, ranges, options })
    }

    /// riegeli-rs: records as Arrow record batches, all of them or those of the keys
    /// `indices` (a `range` or integers), read by readers of their own (see the stub).
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
        let (paths, options) = (self.paths.clone(), self.options.clone());
        let ranges = self.ranges.iter().map(|&(start, end)| start..end).collect();
        arrow::by_index(py, args, selection, self.paths.first().map(PathBuf::as_path), move |field_projection| {
            let options = ArrayRecordReaderOptions { field_projection, ..options };
            Inner::new(ranges, move |shard| {
                let path = paths.get(shard).ok_or_else(|| Error::from(std::io::Error::other("no such shard")))?;
                ArrayRecordReader::with_options(Location::open(path, FetchConfig::default())?, options.clone())
                    .map_err(|e| Error::from(std::io::Error::other(format!("{e}; opening {}", path.display()))))
            })
        })
    }

    fn __len__(&self) -> usize {
        usize::try_from(self.inner.num_records()).unwrap_or(usize::MAX)
    }

    /// `(shard, index in its file)` of `key`.
    fn locate(&self, key: &Bound<'_, PyAny>) -> PyResult<(usize, u64)> {
        let key = key_arg(key, self.inner.num_records())?;
        self.inner.locate(key).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The record of `key`.
    fn read<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let key = key_arg(key, self.inner.num_records())?;
        let record = py.detach(|| self.inner.read(key)).map_err(|e| failure(&self.raised, &e))?;
        Ok(PyBytes::new(py, &record))
    }

    /// The records of `keys`, in order.
    fn read_batch<'py>(&self, py: Python<'py>, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let keys = keys_arg(keys, self.inner.num_records())?;
        let records = py.detach(|| self.inner.read_batch(&keys)).map_err(|e| failure(&self.raised, &e))?;
        to_list(py, &records)
    }

    /// Starts reading the records of `keys` on a thread of its own; `result()` waits for them.
    fn start_read(&self, keys: &Bound<'_, PyAny>) -> PyResult<PendingRead> {
        let keys: Arc<[u64]> = keys_arg(keys, self.inner.num_records())?.into();
        let (sender, receiver) = mpsc::sync_channel(1);
        let (inner, thread_keys) = (Arc::clone(&self.inner), Arc::clone(&keys));
        let spawned = std::thread::Builder::new().name("riegeli-read-ahead".into()).spawn(move || {
            let _ = sender.send(inner.read_batch(&thread_keys));
        });
        let receiver = spawned.ok().map(|_| receiver);
        Ok(PendingRead {
            state: Mutex::new(Some(Pending {
                receiver,
                pid: std::process::id(),
                inner: Arc::clone(&self.inner),
                raised: Arc::clone(&self.raised),
                keys,
            })),
        })
    }

    /// Whether shard `shard`'s file is open in this process.
    fn is_open(&self, py: Python<'_>, shard: usize) -> bool {
        py.detach(|| self.inner.is_open(shard))
    }

    /// Closes the files open in this process (they open again when read).
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.inner.close());
    }

    fn __repr__(&self) -> String {
        format!("ArrayRecordShards(num_shards={}, len={})", self.paths.len(), self.inner.num_records())
    }
}

/// A batch read started by `ArrayRecordShards.start_read`.
struct Pending {
    /// The thread's result; `None` if no thread could be started.
    receiver: Option<mpsc::Receiver<riegeli_records::Result<Vec<Bytes>>>>,
    /// The process that started the thread: a forked child reads the batch itself.
    pid: u32,
    inner: Arc<Inner>,
    raised: Raised,
    keys: Arc<[u64]>,
}

/// A batch read going on on a thread of its own (see the stub).
#[pyclass(module = "riegeli._riegeli", name = "PendingRead", frozen)]
pub(crate) struct PendingRead {
    state: Mutex<Option<Pending>>,
}

#[pymethods]
impl PendingRead {
    /// The records, in the order of the keys (waiting for them without the GIL); once only.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let pending = self
            .state
            .lock()
            .ok()
            .and_then(|mut state| state.take())
            .ok_or_else(|| PyRuntimeError::new_err("PendingRead.result() was called already"))?;
        let raised = Arc::clone(&pending.raised);
        let records = py
            .detach(move || {
                let from_thread = pending
                    .receiver
                    .as_ref()
                    .filter(|_| pending.pid == std::process::id())
                    .and_then(|receiver| receiver.recv().ok());
                // No thread (none could start, or it was the parent's): read here.
                from_thread.unwrap_or_else(|| pending.inner.read_batch(&pending.keys))
            })
            .map_err(|e| failure(&raised, &e))?;
        to_list(py, &records)
    }
}
