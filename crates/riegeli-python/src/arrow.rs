//! Records as Arrow: the arguments of `arrow_batches()` and `to_arrow()` made into
//! `riegeli_arrow` options, and `ArrowBatches`, an `riegeli_arrow::ArrowStream` exported
//! through the Arrow PyCapsule stream interface (`__arrow_c_stream__`).
//!
//! The batches are decoded by whoever consumes the C stream (pyarrow, polars, DuckDB), on its
//! thread, without the GIL: nothing here takes the GIL while decoding. `to_arrow()` is
//! pyarrow's `RecordBatchReader.from_stream(batches).read_all()`, which releases the GIL.

use std::sync::{Arc, Mutex};

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyRange, PyString};
use std::path::Path;

use riegeli_arrow::{
    ArrayRecordArrowReader, ArrowReaderOptions, ArrowStream, BadRecords, BatchSource, ErrorKind, RecordFormat,
    RecordSelection, RecordsByIndex, message_type_from_set, message_type_of_file,
};
use riegeli_object_store::{FetchConfig, Location};
use riegeli_records::FieldProjection;

use crate::errors::riegeli_error;

/// What a consumed stream tells Python: the records skipped, and the error that ended it.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    skipped: u64,
    skipped_errors: Vec<String>,
    error: Option<riegeli_arrow::Error>,
}

/// The parts of `arrow_batches()`'s arguments that are not the source's.
#[derive(Debug)]
pub(crate) struct Args {
    pub(crate) options: ArrowReaderOptions,
    pub(crate) max_rows: Option<u64>,
}

/// `arrow_batches()`'s keyword arguments as options. `message_type` is a full type name or a
/// message class (its `DESCRIPTOR` gives the name, and the descriptors if
/// `file_descriptor_set` is not given); `file_descriptor_set` a serialized
/// `FileDescriptorSet` or the message.
#[allow(clippy::too_many_arguments, reason = "keyword arguments in Python")]
pub(crate) fn args(
    py: Python<'_>,
    columns: Option<&Bound<'_, PyAny>>,
    batch_size: usize,
    message_type: Option<&Bound<'_, PyAny>>,
    file_descriptor_set: Option<&Bound<'_, PyAny>>,
    format: Option<&str>,
    skip_bad_records: bool,
    max_rows: Option<u64>,
) -> PyResult<Args> {
    if batch_size == 0 {
        return Err(PyValueError::new_err("batch_size must be positive"));
    }
    let projection = match columns.filter(|c| !c.is_none()) {
        None => None,
        Some(columns) if columns.is_instance_of::<PyString>() => {
            return Err(PyTypeError::new_err("columns must be a sequence of field paths, not a str"));
        }
        Some(columns) => Some(columns.extract::<Vec<String>>()?),
    };
    let message_type = message_type.filter(|m| !m.is_none());
    let file_descriptor_set = file_descriptor_set.filter(|f| !f.is_none());
    let format = match format {
        Some("example") => {
            if message_type.is_some() || file_descriptor_set.is_some() {
                return Err(PyValueError::new_err("format='example' takes no message_type or file_descriptor_set"));
            }
            RecordFormat::Example(None)
        }
        Some("proto") | None => match message_type {
            None if file_descriptor_set.is_some() => {
                return Err(PyValueError::new_err("file_descriptor_set needs message_type (the type's full name)"));
            }
            None => RecordFormat::FromMetadata,
            Some(message_type) => {
                let (name, set) = type_and_set(py, message_type, file_descriptor_set)?;
                RecordFormat::Proto(message_type_from_set(&set, &name).map_err(|e| to_py(py, e))?)
            }
        },
        Some(other) => {
            return Err(PyValueError::new_err(format!("format must be 'proto' or 'example', not {other:?}")));
        }
    };
    let bad_records = if skip_bad_records { BadRecords::Skip } else { BadRecords::Fail };
    let options = ArrowReaderOptions { batch_size, projection, bad_records, format, ..Default::default() };
    Ok(Args { options, max_rows })
}

/// The type name and serialized `FileDescriptorSet` of `message_type` (a name, or a class).
fn type_and_set(
    py: Python<'_>,
    message_type: &Bound<'_, PyAny>,
    file_descriptor_set: Option<&Bound<'_, PyAny>>,
) -> PyResult<(String, Vec<u8>)> {
    let name = if let Ok(name) = message_type.extract::<String>() {
        name
    } else {
        message_type.getattr("DESCRIPTOR")?.getattr("full_name")?.extract()?
    };
    let set = match file_descriptor_set {
        Some(set) => match set.cast::<PyBytes>() {
            Ok(bytes) => bytes.as_bytes().to_vec(),
            Err(_) => set.call_method0("SerializeToString")?.extract()?,
        },
        None if message_type.is_instance_of::<PyString>() => {
            return Err(PyValueError::new_err("message_type given by name needs file_descriptor_set"));
        }
        None => {
            let helper = py.import("riegeli._arrow")?.getattr("file_descriptor_set")?;
            helper.call1((message_type,))?.extract()?
        }
    };
    Ok((name, set))
}

/// The batches of records read by index from the source `open` opens given the field
/// projection, without the GIL; the type from the metadata of the file at `metadata_path`
/// unless given.
pub(crate) fn by_index<S: RecordsByIndex + Send + 'static>(
    py: Python<'_>,
    args: Args,
    selection: RecordSelection,
    metadata_path: Option<&Path>,
    open: impl FnOnce(FieldProjection) -> riegeli_records::Result<S> + Send,
) -> PyResult<ArrowBatches> {
    let Args { mut options, max_rows } = args;
    let stream = py.detach(move || {
        if matches!(options.format, RecordFormat::FromMetadata) {
            // No file, no type: `ArrayRecordArrowReader::new` says so.
            if let Some(path) = metadata_path {
                let location = Location::open(path, FetchConfig::default()).map_err(riegeli_records::Error::from)?;
                options.format = RecordFormat::Proto(message_type_of_file(location)?);
            }
        }
        ArrowStream::new(ArrayRecordArrowReader::new(options, selection, open)?, max_rows)
    });
    let stream = stream.map_err(|e| to_py(py, e))?;
    Ok(ArrowBatches::new(Reporting::new(stream, None)))
}

/// The records to read of `indices`: `None` (all), a `range` of step 1, or integers.
pub(crate) fn selection(indices: Option<&Bound<'_, PyAny>>) -> PyResult<RecordSelection> {
    let Some(indices) = indices.filter(|i| !i.is_none()) else { return Ok(RecordSelection::All) };
    if let Ok(range) = indices.cast::<PyRange>() {
        let (start, stop, step): (i64, i64, i64) =
            (range.getattr("start")?.extract()?, range.getattr("stop")?.extract()?, range.getattr("step")?.extract()?);
        if step == 1 && start >= 0 {
            let stop = u64::try_from(stop.max(start)).unwrap_or_default();
            return Ok(RecordSelection::Range(start as u64..stop));
        }
    }
    let indices: Vec<i64> = indices.extract()?;
    let indices = indices
        .into_iter()
        .map(|i| u64::try_from(i).map_err(|_| PyIndexError::new_err(format!("record index {i} is negative"))))
        .collect::<PyResult<_>>()?;
    Ok(RecordSelection::Indices(indices))
}

/// The exception of a `riegeli_arrow` error: the `riegeli` exception of a file error as the
/// readers raise it; `InvalidArgumentError` for a bad record (its message names it), a type
/// and a projection; `IndexError` for records that are not there.
pub(crate) fn to_py(py: Python<'_>, error: riegeli_arrow::Error) -> PyErr {
    match error.into_kind() {
        ErrorKind::Records(error) => crate::errors::to_py(py, &error),
        ErrorKind::OutOfRange(message) => PyIndexError::new_err(message),
        ErrorKind::Arrow(error) => riegeli_error(py, "ResourceExhaustedError", format!("arrow: {error}")),
        kind => riegeli_error(py, "InvalidArgumentError", kind.to_string()),
    }
}

/// A stream of batches with its progress reported, and something to do when it is dropped
/// (a `RecordReader`'s reader given back).
pub(crate) struct Reporting<S: BatchSource> {
    stream: Option<ArrowStream<S>>,
    progress: Arc<Mutex<Progress>>,
    on_drop: Option<Box<dyn FnOnce(S) + Send>>,
}

impl<S: BatchSource> Reporting<S> {
    pub(crate) fn new(stream: ArrowStream<S>, on_drop: Option<Box<dyn FnOnce(S) + Send>>) -> Self {
        Self { stream: Some(stream), progress: Arc::default(), on_drop }
    }

    /// Gives back the source now (also done when dropped).
    fn finish(&mut self) {
        if let (Some(stream), Some(on_drop)) = (self.stream.take(), self.on_drop.take()) {
            on_drop(stream.into_inner());
        }
    }
}

impl<S: BatchSource> Drop for Reporting<S> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl<S: BatchSource> Iterator for Reporting<S> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let stream = self.stream.as_mut()?;
        let result = stream.next_batch();
        let mut progress = self.progress.lock().ok();
        if let Some(progress) = progress.as_deref_mut() {
            progress.skipped = stream.skipped().count;
            progress.skipped_errors.clone_from(&stream.skipped().first_errors);
        }
        match result {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => {
                drop(progress);
                self.finish();
                None
            }
            Err(error) => {
                // The first error ends the stream; the source is given back.
                let message = error.to_string();
                if let Some(progress) = progress.as_deref_mut() {
                    progress.error = Some(error);
                }
                drop(progress);
                self.finish();
                Some(Err(ArrowError::ExternalError(message.into())))
            }
        }
    }
}

impl<S: BatchSource> RecordBatchReader for Reporting<S> {
    fn schema(&self) -> SchemaRef {
        match &self.stream {
            Some(stream) => stream.schema(),
            None => Arc::new(arrow_schema::Schema::empty()),
        }
    }
}

/// Record batches of Arrow, to be consumed once through the Arrow PyCapsule stream
/// interface (see the stub).
#[pyclass(module = "riegeli._riegeli", name = "ArrowBatches", frozen)]
pub(crate) struct ArrowBatches {
    stream: Mutex<Option<(Box<dyn RecordBatchReader + Send>, SchemaRef)>>,
    progress: Arc<Mutex<Progress>>,
}

impl ArrowBatches {
    pub(crate) fn new<S: BatchSource + Send + 'static>(reporting: Reporting<S>) -> Self {
        let progress = Arc::clone(&reporting.progress);
        let schema = reporting.schema();
        Self { stream: Mutex::new(Some((Box::new(reporting), schema))), progress }
    }

    /// `to_arrow()`: the batches decoded here without the GIL, then given to pyarrow as a
    /// stream of batches in memory. (Not pyarrow reading the stream itself: it would call
    /// back into a source that may be a Python file object while the GIL it released is
    /// still counted as held by this thread, from which this call came.)
    pub(crate) fn into_table(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        let to_table = py.import("riegeli._arrow")?.getattr("to_table")?;
        let taken = self.stream.lock().map_err(|_| PyRuntimeError::new_err("ArrowBatches poisoned"))?.take();
        let (stream, schema) = taken.ok_or_else(|| PyRuntimeError::new_err("the Arrow stream was already consumed"))?;
        let collected = py.detach(move || stream.collect::<Result<Vec<_>, ArrowError>>());
        let batches = match collected {
            Ok(batches) => batches,
            Err(error) => {
                return Err(match self.progress()?.error.take() {
                    Some(error) => to_py(py, error),
                    None => PyRuntimeError::new_err(error.to_string()),
                });
            }
        };
        let in_memory = arrow_array::RecordBatchIterator::new(batches.into_iter().map(Ok), schema.clone());
        let batches = Self { stream: Mutex::new(Some((Box::new(in_memory), schema))), progress: Arc::default() };
        to_table.call1((Bound::new(py, batches)?,))
    }

    fn progress(&self) -> PyResult<std::sync::MutexGuard<'_, Progress>> {
        self.progress.lock().map_err(|_| PyRuntimeError::new_err("ArrowBatches poisoned by a panic"))
    }
}

#[pymethods]
impl ArrowBatches {
    /// The Arrow PyCapsule stream interface: a capsule named "arrow_array_stream" holding an
    /// `ArrowArrayStream`. Once only. A `requested_schema` is ignored (the spec allows it).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let taken = self.stream.lock().map_err(|_| PyRuntimeError::new_err("ArrowBatches poisoned"))?.take();
        let (stream, _) = taken.ok_or_else(|| PyRuntimeError::new_err("the Arrow stream was already consumed"))?;
        PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(stream), c"arrow_array_stream")
    }

    /// How many records were skipped as bad so far (with `skip_bad_records=True`).
    #[getter]
    fn skipped_records(&self) -> PyResult<u64> {
        Ok(self.progress()?.skipped)
    }

    /// Why, for the first ten skipped.
    #[getter]
    fn skipped_errors(&self) -> PyResult<Vec<String>> {
        Ok(self.progress()?.skipped_errors.clone())
    }

    /// The `riegeli` exception of the error that ended the stream, if one did (once).
    fn _take_error(&self, py: Python<'_>) -> PyResult<Option<PyErr>> {
        Ok(self.progress()?.error.take().map(|error| to_py(py, error)))
    }

    /// Whether the stream was handed out already.
    #[getter]
    fn consumed(&self) -> PyResult<bool> {
        Ok(self.stream.lock().map_err(|_| PyRuntimeError::new_err("ArrowBatches poisoned"))?.is_none())
    }
}
