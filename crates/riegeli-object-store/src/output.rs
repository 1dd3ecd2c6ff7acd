//! [`Destination`]: what a writer given a path or a URL writes, and
//! [`Destination::create`], the one place a path or a URL is opened for
//! writing (the CLI, the Python package and the writers of this crate all
//! create through it), as [`Location::open`](crate::Location::open) is for
//! reading.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use riegeli_records::{ArrayRecordWriter, ArrayRecordWriterOptions, RecordWriter, RecordWriterOptions, SyncWrite};

use crate::config::UploadConfig;
use crate::location::{file_url_path, is_file_url};
use crate::store::is_url;
use crate::upload::{ObjectSink, UploadCounters};

/// A local file or an object being uploaded: what a writer given a path or
/// a URL writes. [`finish`](Self::finish) it after the writer's `close`:
/// only then does an object appear.
#[derive(Debug)]
pub enum Destination {
    /// A local file.
    File(File),
    /// An object, uploaded as it is written.
    Object(Box<ObjectSink>),
}

impl Destination {
    /// Creates `location` for writing (truncating a file, replacing an
    /// object when it is finished), the same way for every caller:
    ///
    /// - An object-store URL (see [`is_url`]) is an object, written by an
    ///   [`ObjectSink`] with `config` (`http(s)://` is refused: its servers
    ///   take no multipart upload). No request is made until a part is full
    ///   or the destination is finished.
    /// - A `file://` URL is the local file it names.
    /// - Anything else is a local path.
    ///
    /// Errors say `cannot create <location>: <why>`.
    pub fn create(location: impl AsRef<Path>, config: UploadConfig) -> io::Result<Self> {
        let location = location.as_ref();
        let created = match location.to_str() {
            Some(url) if is_url(url) => ObjectSink::create(url, config).map(|sink| Self::Object(Box::new(sink))),
            Some(url) if is_file_url(url) => file_url_path(url).and_then(File::create).map(Self::File),
            _ => File::create(location).map(Self::File),
        };
        created.map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", location.display())))
    }

    /// Opens the local file `location` (a path or a `file://` URL) to
    /// append to it, created if missing; returns it with its size (for
    /// [`RecordWriter::append`]). An object cannot be appended to: a URL is
    /// an [`io::ErrorKind::Unsupported`] error.
    pub fn append(location: impl AsRef<Path>) -> io::Result<(Self, u64)> {
        let location = location.as_ref();
        let open = |path: &Path| {
            let file = File::options().append(true).create(true).open(path)?;
            let size = file.metadata()?.len();
            Ok((Self::File(file), size))
        };
        let opened = match location.to_str() {
            Some(url) if is_url(url) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "an object cannot be appended to: write a new object (or append to a local file)",
            )),
            Some(url) if is_file_url(url) => file_url_path(url).and_then(|path| open(&path)),
            _ => open(location),
        };
        opened.map_err(|e| io::Error::new(e.kind(), format!("cannot append to {}: {e}", location.display())))
    }

    /// Finishes what was written: a file is flushed (it is not synced), an
    /// object's upload is completed ([`ObjectSink::finish`]), and only then
    /// does the object appear. Dropping a destination unfinished aborts an
    /// object's upload.
    pub fn finish(self) -> io::Result<()> {
        match self {
            Self::File(mut file) => file.flush(),
            Self::Object(object) => object.finish(),
        }
    }

    /// The counters of an object's upload (requests and bytes), readable
    /// while a writer owns the destination; a file's stay at zero.
    pub fn counters(&self) -> UploadCounters {
        match self {
            Self::File(_) => UploadCounters::default(),
            Self::Object(object) => object.counters(),
        }
    }
}

impl Write for Destination {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::File(file) => file.write(buf),
            Self::Object(object) => object.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Self::File(file) => file.write_all(buf),
            Self::Object(object) => object.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::File(file) => file.flush(),
            Self::Object(object) => object.flush(),
        }
    }
}

/// A file syncs (`fsync`); an object refuses (see [`ObjectSink`]).
impl SyncWrite for Destination {
    fn sync(&mut self) -> io::Result<()> {
        match self {
            Self::File(file) => file.sync(),
            Self::Object(object) => object.sync(),
        }
    }
}

/// A [`RecordWriter`] of `location` (a path or a URL, created by
/// [`Destination::create`]), writing on an I/O thread. Finish with
/// `writer.close()?.finish()?`: an object appears only then.
pub fn create_records(
    location: impl AsRef<Path>,
    options: RecordWriterOptions,
) -> riegeli_records::Result<RecordWriter<Destination>> {
    RecordWriter::with_io_thread(Destination::create(location, UploadConfig::default())?, options)
}

/// An [`ArrayRecordWriter`] of `location` (a path or a URL, created by
/// [`Destination::create`]), writing on an I/O thread. Finish with
/// `writer.close()?.finish()?`: an object appears only then.
pub fn create_array_record(
    location: impl AsRef<Path>,
    options: ArrayRecordWriterOptions,
) -> riegeli_records::Result<ArrayRecordWriter<Destination>> {
    ArrayRecordWriter::with_io_thread(Destination::create(location, UploadConfig::default())?, options)
}
