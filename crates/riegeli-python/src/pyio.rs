//! Python file objects as Rust `Read`/`Write`/`Seek`, and the kinds of source and
//! destination: a native file (a path was given), an object in object storage (a URL was
//! given; reading only) or a Python binary file object.
//!
//! The calling thread does not hold the GIL while Riegeli reads or writes; each call of a
//! file object's method takes it for that call only.

use std::io::{self, Read, Seek, SeekFrom, Write};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use riegeli_object_store::ObjectSource;
use riegeli_records::{PositionalFile, ReadHints};

use crate::errors::{NoRandomAccess, PythonIoError};

/// A Python binary file object (`read`, `write`, `seek`, `tell`, `flush`).
#[derive(Debug)]
pub(crate) struct PyFile {
    object: Py<PyAny>,
    /// Why it is not asked to seek, if it is not (as Google's `PythonReader`: `assumed_pos`
    /// was given, or `seekable()` is false): seeking fails with this.
    no_random_access: Option<&'static str>,
}

impl PyFile {
    /// A file object that can seek.
    pub(crate) fn new(object: Py<PyAny>) -> Self {
        Self { object, no_random_access: None }
    }

    /// A file object given as `src` or `dest`, and the file position it is at, decided as
    /// Google's `PythonReader` and `PythonWriter` do: with `assumed_pos`, that position and
    /// no seeking; else `seekable()` (if it has one): false means position 0 and no seeking
    /// (`tell()` is not called), true means the position `tell()` gives.
    pub(crate) fn open(object: &Bound<'_, PyAny>, assumed_pos: Option<u64>) -> PyResult<(Self, u64)> {
        let file = |no_random_access| Self { object: object.clone().unbind(), no_random_access };
        if let Some(pos) = assumed_pos {
            return Ok((file(Some("assumed_pos excludes random access")), pos));
        }
        if object.hasattr("seekable")? && !object.call_method0("seekable")?.is_truthy()? {
            return Ok((file(Some("seekable() is False which excludes random access")), 0));
        }
        let pos = object.call_method0("tell")?.extract()?;
        Ok((file(None), pos))
    }

    /// Whether it is asked to seek when reading needs it.
    pub(crate) fn supports_random_access(&self) -> bool {
        self.no_random_access.is_none()
    }
}

/// A Python exception as an `io::Error` that keeps it.
fn wrap(error: PyErr) -> io::Error {
    io::Error::other(PythonIoError(error))
}

impl Read for PyFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let data = self.object.call_method1(py, "read", (buf.len(),)).map_err(wrap)?;
            if data.is_none(py) {
                return Err(io::Error::new(io::ErrorKind::WouldBlock, "read() returned None (non-blocking file)"));
            }
            let data = data.bind(py);
            let bytes = data.cast::<PyBytes>().map_err(|e| wrap(e.into()))?.as_bytes();
            let out = buf.get_mut(..bytes.len()).ok_or_else(|| io::Error::other("read() returned too many bytes"))?;
            out.copy_from_slice(bytes);
            Ok(bytes.len())
        })
    }
}

impl Write for PyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let written = self.object.call_method1(py, "write", (PyBytes::new(py, buf),)).map_err(wrap)?;
            // Raw files may write less and say so; buffered ones return None or the length.
            if written.is_none(py) {
                return Ok(buf.len());
            }
            let written: usize = written.extract(py).map_err(wrap)?;
            Ok(written.min(buf.len()))
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        Python::attach(|py| {
            if self.object.bind(py).hasattr("flush").map_err(wrap)? {
                self.object.call_method0(py, "flush").map_err(wrap)?;
            }
            Ok(())
        })
    }
}

impl Seek for PyFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        if let Some(reason) = self.no_random_access {
            return Err(io::Error::other(NoRandomAccess(reason)));
        }
        let (offset, whence) = match pos {
            SeekFrom::Start(offset) => (i128::from(offset), 0),
            SeekFrom::Current(offset) => (i128::from(offset), 1),
            SeekFrom::End(offset) => (i128::from(offset), 2),
        };
        Python::attach(|py| {
            let pos = self.object.call_method1(py, "seek", (offset, whence)).map_err(wrap)?;
            pos.extract(py).map_err(wrap)
        })
    }
}

/// Where a `RecordReader` reads from.
#[derive(Debug)]
pub(crate) enum Src {
    /// A file opened by path, read at positions of its own (a forked child reads on
    /// without moving the parent's).
    File(PositionalFile),
    /// An object opened by URL, read by ranged requests.
    Object(ObjectSource),
    /// A Python file object.
    Py(PyFile),
}

impl Read for Src {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::File(file) => file.read(buf),
            Self::Object(object) => object.read(buf),
            Self::Py(file) => file.read(buf),
        }
    }
}

impl Seek for Src {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match self {
            Self::File(file) => file.seek(pos),
            Self::Object(object) => object.seek(pos),
            Self::Py(file) => file.seek(pos),
        }
    }
}

/// An object acts on what a reader says it will read (a byte range: nothing past it is
/// fetched ahead); files need no hints.
impl ReadHints for Src {
    fn will_stop_at(&self, end: u64) {
        if let Self::Object(object) = self {
            object.will_stop_at(end);
        }
    }

    fn will_read(&self, range: std::ops::Range<u64>) {
        if let Self::Object(object) = self {
            object.will_read(range);
        }
    }
}

/// Where a `RecordWriter` writes to.
#[derive(Debug)]
pub(crate) enum Dest {
    /// A file or an object created by path or URL (`Destination::create`, written on an I/O
    /// thread).
    Path(riegeli_object_store::Destination),
    /// A Python file object.
    Py(PyFile),
}

impl Dest {
    /// Creates `path` (a path or an object's URL) for writing, as every writer of riegeli-rs
    /// does.
    pub(crate) fn create(path: &std::path::Path) -> io::Result<Self> {
        riegeli_object_store::Destination::create(path, riegeli_object_store::UploadConfig::default()).map(Self::Path)
    }

    /// Finishes a file or an object created by path (an object appears only then).
    pub(crate) fn finish(self) -> io::Result<()> {
        match self {
            Self::Path(dest) => dest.finish(),
            Self::Py(_) => Ok(()),
        }
    }
}

impl Write for Dest {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Path(dest) => dest.write(buf),
            Self::Py(file) => file.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Self::Path(dest) => dest.write_all(buf),
            Self::Py(file) => file.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Path(dest) => dest.flush(),
            Self::Py(file) => file.flush(),
        }
    }
}

/// A destination created by path syncs as `Destination` does (a file: `fsync`; an object
/// refuses); a file object is synced by the writer through its `fileno()`, not here.
impl riegeli_records::SyncWrite for Dest {
    fn sync(&mut self) -> io::Result<()> {
        match self {
            Self::Path(dest) => dest.sync(),
            Self::Py(_) => Ok(()),
        }
    }
}

/// `io_stats()` of a writer: the requests and bytes of its upload (zeros for a file).
pub(crate) fn upload_stats(
    py: Python<'_>,
    counters: Option<&riegeli_object_store::UploadCounters>,
) -> PyResult<Py<PyAny>> {
    let stats = counters.map(riegeli_object_store::UploadCounters::stats).unwrap_or_default();
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item("requests", stats.requests)?;
    dict.set_item("bytes", stats.bytes)?;
    Ok(dict.into_any().unbind())
}

/// A path given as `src`/`dest`: a `str` or an `os.PathLike` (bytes paths too).
pub(crate) fn as_path(object: &Bound<'_, PyAny>) -> PyResult<Option<std::path::PathBuf>> {
    let py = object.py();
    let os = py.import("os")?;
    let is_path = object.is_instance_of::<pyo3::types::PyString>()
        || object.is_instance_of::<PyBytes>()
        || object.is_instance(&os.getattr("PathLike")?)?;
    if !is_path {
        return Ok(None);
    }
    Ok(Some(os.call_method1("fsdecode", (object,))?.extract()?))
}
