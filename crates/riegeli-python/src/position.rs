//! `RecordPosition`: the Python face of `riegeli_records::RecordPosition`.
//!
//! A leaf: it imports no other module of this crate.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use pyo3::IntoPyObjectExt;
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A position of a record: the file position of its chunk and its index in the chunk.
#[pyclass(module = "riegeli.records.record_position", name = "RecordPosition", frozen)]
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RecordPosition(pub(crate) riegeli_records::RecordPosition);

#[pymethods]
impl RecordPosition {
    #[new]
    #[pyo3(signature = (chunk_begin, record_index))]
    fn new(chunk_begin: u64, record_index: u64) -> PyResult<Self> {
        riegeli_records::RecordPosition::new(chunk_begin, record_index)
            .map(Self)
            .ok_or_else(|| PyOverflowError::new_err(format!("RecordPosition overflow: {chunk_begin}/{record_index}")))
    }

    /// File position of the beginning of the chunk containing the record.
    #[getter]
    fn chunk_begin(&self) -> u64 {
        self.0.chunk_begin()
    }

    /// Index of the record within the chunk.
    #[getter]
    fn record_index(&self) -> u64 {
        self.0.record_index()
    }

    /// The position as an integer between 0 and the file size, distinct per record.
    #[getter]
    fn numeric(&self) -> u64 {
        self.0.numeric()
    }

    /// The binary form (C++ `RecordPosition::ToBytes`), ordered like the positions.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.to_bytes())
    }

    /// Parses the binary form.
    #[staticmethod]
    #[pyo3(signature = (serialized))]
    fn from_bytes(serialized: &[u8]) -> PyResult<Self> {
        riegeli_records::RecordPosition::from_bytes(serialized)
            .map(Self)
            .map_err(|_| PyValueError::new_err("RecordPosition.from_bytes() failed"))
    }

    /// Parses the text form `chunk_begin/record_index`.
    #[staticmethod]
    #[pyo3(signature = (serialized))]
    fn from_str(serialized: &Bound<'_, PyAny>) -> PyResult<Self> {
        let text: String = if let Ok(bytes) = serialized.cast::<PyBytes>() {
            String::from_utf8_lossy(bytes.as_bytes()).into_owned()
        } else {
            serialized.extract()?
        };
        text.parse().map(Self).map_err(|_| PyValueError::new_err("RecordPosition.from_str() failed"))
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!("RecordPosition({}, {})", self.0.chunk_begin(), self.0.record_index())
    }

    fn __hash__(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        self.0.hash(&mut hasher);
        hasher.finish()
    }

    fn __getnewargs__(&self) -> (u64, u64) {
        (self.0.chunk_begin(), self.0.record_index())
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        match other.cast::<Self>() {
            Ok(other) => op.matches(self.0.cmp(&other.get().0)).into_py_any(py),
            Err(_) => Ok(py.NotImplemented()),
        }
    }
}
