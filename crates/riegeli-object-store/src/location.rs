//! [`Location`]: what a reader given a path or a URL reads, and
//! [`Location::open`], the one place a path or a URL is opened (the CLI, the
//! Python package and the readers of this crate all open through it).

use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, PositionalFile, ReadAt, ReadHints, RecordReader, RecordReaderOptions,
};
use url::Url;

use crate::config::FetchConfig;
use crate::source::ObjectSource;
use crate::store::is_url;

/// A local file or an object: what a reader given a path or a URL reads.
///
/// Both are read at positions of their own: a file by positional reads
/// ([`PositionalFile`]), so that processes forked from the one that opened
/// it read it independently, an object through the cache of the process
/// that reads it ([`ObjectSource`]). A clone reads the same opened file or
/// object (the file's handle, the object's cache) at a position of its own:
/// a command that reads its input several ways opens it once.
#[derive(Debug, Clone)]
pub enum Location {
    /// A local file.
    File(PositionalFile),
    /// An object in object storage.
    Object(ObjectSource),
}

impl Location {
    /// Opens `location` for reading, the same way for every caller:
    ///
    /// - An object-store URL (see [`is_url`]: `s3://`, `s3a://`, `gs://`,
    ///   `az://`, `adl://`, `azure://`, `abfs(s)://`, `http(s)://`, the scheme
    ///   in any case) is an object, opened by [`ObjectSource::open_with`]
    ///   with `config`: one request, which learns its size and fetches its
    ///   tail. Credentials and endpoints come from the environment.
    /// - A `file://` URL is the local file it names (`file:///abs/path`, or
    ///   with the host `localhost`; percent-escapes decoded).
    /// - Anything else is a local path (relative to the current directory),
    ///   opened as it is: `s3:/x`, `foo://x` and `C:\x` are paths.
    ///
    /// A local file is read by positional reads ([`PositionalFile`]).
    ///
    /// Errors say `cannot open <location>: <why>`: a missing file or object is
    /// [`io::ErrorKind::NotFound`], one that may not be read
    /// [`io::ErrorKind::PermissionDenied`], a directory
    /// [`io::ErrorKind::IsADirectory`] (refused here, not at the first
    /// read), a `file://` URL that names no local path and a URL of an
    /// unknown store [`io::ErrorKind::InvalidInput`]; the message of an
    /// object's failed request names its URL and the bytes asked for.
    pub fn open(location: impl AsRef<Path>, config: FetchConfig) -> io::Result<Self> {
        let location = location.as_ref();
        let opened = match location.to_str() {
            Some(url) if is_url(url) => ObjectSource::open_with(url, config).map(Self::Object),
            Some(url) if is_file_url(url) => file_url_path(url).and_then(|path| Self::open_file(&path)),
            _ => Self::open_file(location),
        };
        opened.map_err(|e| io::Error::new(e.kind(), format!("cannot open {}: {e}", location.display())))
    }

    /// Opens the local file at `path`.
    fn open_file(path: &Path) -> io::Result<Self> {
        let file = std::fs::File::open(path)?;
        if file.metadata()?.is_dir() {
            return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory"));
        }
        Ok(Self::File(PositionalFile::from(file)))
    }

    /// The object's source, if this is an object.
    pub fn object(&self) -> Option<&ObjectSource> {
        match self {
            Self::Object(object) => Some(object),
            Self::File(_) => None,
        }
    }
}

/// Whether `location` is a `file://` URL (the scheme in any case).
pub(crate) fn is_file_url(location: &str) -> bool {
    location.split_once("://").is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("file"))
}

/// The local path of `file://` URL `url`.
pub(crate) fn file_url_path(url: &str) -> io::Result<PathBuf> {
    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, why.to_owned());
    let parsed = Url::parse(url).map_err(|e| invalid(&e.to_string()))?;
    parsed.to_file_path().map_err(|()| invalid("not a local path (file:///absolute/path)"))
}

impl Read for Location {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::File(file) => file.read(buf),
            Self::Object(object) => object.read(buf),
        }
    }
}

impl Seek for Location {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match self {
            Self::File(file) => file.seek(pos),
            Self::Object(object) => object.seek(pos),
        }
    }
}

/// An object acts on the hints (see [`ObjectSource`]'s); a file needs none.
impl ReadHints for Location {
    fn will_stop_at(&self, end: u64) {
        if let Self::Object(object) = self {
            object.will_stop_at(end);
        }
    }

    fn will_read(&self, range: Range<u64>) {
        if let Self::Object(object) = self {
            object.will_read(range);
        }
    }

    /// The file (where the platform reads at offsets), a clone of an
    /// object's source.
    fn positional(&self) -> Option<Arc<dyn ReadAt>> {
        match self {
            Self::File(file) => file.positional(),
            Self::Object(object) => object.positional(),
        }
    }
}

/// A [`RecordReader`] of `location` (a path or a URL, opened by
/// [`Location::open`]).
pub fn open_records(location: impl AsRef<Path>, options: RecordReaderOptions) -> io::Result<RecordReader<Location>> {
    Ok(RecordReader::with_options(Location::open(location, FetchConfig::default())?, options))
}

/// An [`ArrayRecordReader`] of `location` (a path or a URL, opened by
/// [`Location::open`]): its decoding threads read their chunks themselves (a
/// file by positional reads, an object through its cache), and an object
/// fetches the chunks a read is about to read concurrently.
pub fn open_array_record(
    location: impl AsRef<Path>,
    options: ArrayRecordReaderOptions,
) -> riegeli_records::Result<ArrayRecordReader<Location>> {
    ArrayRecordReader::with_options(Location::open(location, FetchConfig::default())?, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_file_urls_and_object_urls_open_as_they_say() {
        let dir = std::env::temp_dir().join(format!("riegeli-location-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a b.riegeli");
        std::fs::write(&path, b"0123456789").unwrap();
        let open = |location: &str| Location::open(location, FetchConfig::default());
        let read = |mut location: Location| {
            let mut bytes = Vec::new();
            location.read_to_end(&mut bytes).unwrap();
            bytes
        };
        // A path, and the file:// URL of the same file (escapes decoded, any case of scheme).
        let text = path.to_str().unwrap();
        assert_eq!(read(open(text).unwrap()), b"0123456789");
        let url = Url::from_file_path(&path).unwrap().to_string();
        assert!(url.contains("a%20b"), "{url}");
        assert_eq!(read(open(&url).unwrap()), b"0123456789");
        assert_eq!(read(open(&url.replacen("file", "FILE", 1)).unwrap()), b"0123456789");
        // Clones share the file and read at positions of their own.
        let mut first = open(text).unwrap();
        let mut byte = [0u8; 3];
        first.read_exact(&mut byte).unwrap();
        assert_eq!(read(first.clone()), b"3456789");
        assert_eq!(read(first), b"3456789");

        let error = open(dir.join("missing").to_str().unwrap()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound, "{error}");
        assert!(error.to_string().starts_with(&format!("cannot open {}: ", dir.join("missing").display())), "{error}");
        let error = open(dir.to_str().unwrap()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::IsADirectory, "{error}");
        assert_eq!(error.to_string(), format!("cannot open {}: is a directory", dir.display()));
        let error = open("file://host.example/x").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");
        assert!(error.to_string().starts_with("cannot open file://host.example/x: not a local path"), "{error}");
        // Not URLs of a store: local paths (here, missing ones).
        for location in ["s3:/bucket/key", "ftp://host/file", "relative/file.riegeli"] {
            assert_eq!(open(location).unwrap_err().kind(), io::ErrorKind::NotFound, "{location}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
