//! Positional reads: [`PositionalFile`], a file read at offsets of its own
//! (no file position shared with another handle, or with another process
//! after a fork), and [`ReadAt`], what the decoding threads of a parallel
//! batch read their chunks through themselves (as C++ does with `pread`),
//! instead of the calling thread reading every chunk through the one `R`.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

/// Bytes read at given offsets, by several threads at once: what the decoding
/// threads of an [`ArrayRecordReader`](crate::ArrayRecordReader)'s parallel
/// reads read their chunks through, when the reader's source offers it
/// ([`ReadHints::positional`](crate::ReadHints::positional)). A
/// [`PositionalFile`] (`pread` on Unix); an object in object storage
/// (`riegeli-object-store`).
pub trait ReadAt: Send + Sync {
    /// Reads bytes at `offset` into `buf`; 0 at the end.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// The size of the source.
    fn size(&self) -> io::Result<u64>;

    /// The bytes of `ranges` (data chunks, in file order) are about to be
    /// read: a source with latency (object storage) fetches them
    /// concurrently, each range exactly, so that the reads find them at hand.
    /// Advisory; the default does nothing. An ArrayRecord reader announces
    /// up to its `readahead_buffer_size` of chunks at a time, the next ones
    /// once half of those are read.
    ///
    /// `checked`: the reader checks the hashes of each of these chunks as it
    /// reads it, and calls [`refetch`](Self::refetch) on a chunk that fails
    /// before it reports it as damaged, so a source may hand out a local copy
    /// of these bytes without checks of its own (the local chunk cache of
    /// object storage then reads a cached chunk with one `pread`, hashing it
    /// once, in the reader, instead of twice).
    fn will_need(&self, ranges: &[std::ops::Range<u64>], checked: bool) {
        let _ = (ranges, checked);
    }

    /// A chunk in `range` failed its checks (its hash, its framing) as read
    /// from here: a source whose bytes came over a network (object storage)
    /// drops its copy of them and fetches them again, and returns `true`;
    /// the reader then reads the chunk once more before it reports it as
    /// damaged. The default (a local file, whose bytes would be the same)
    /// returns `false`.
    fn refetch(&self, range: std::ops::Range<u64>) -> bool {
        let _ = range;
        false
    }
}

/// A source shared by the threads of a parallel batch, read at given offsets.
pub(crate) type SharedFile = Arc<dyn ReadAt>;

/// Whether the platform reads a file at an offset in one call, moving no
/// position that another read depends on.
pub(crate) const POSITIONAL: bool = cfg!(any(unix, windows));

/// Reads `file` at `offset`: `pread` on Unix, `seek_read` on Windows (which
/// moves the handle's cursor, but nothing here reads at the cursor); elsewhere
/// a seek and a read, which threads sharing the handle must not race.
fn read_file_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buf, offset);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buf, offset);
    #[cfg(not(any(unix, windows)))]
    {
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        file.read(buf)
    }
}

/// A file read at offsets: `Read + Seek` with a position of its own, every
/// read a positional read of the file (`pread` on Unix) at that position.
///
/// The file's own position, which every handle duplicated from it shares,
/// and which a child forked from this process shares with it, is never used
/// or moved: processes forked from the one that opened the file (workers of
/// a data loader) each read at their own positions, and so do clones (which
/// share the file handle, and start at the position of the one cloned). The
/// readers that open files by path read them through this.
///
/// ```no_run
/// use std::io::{Read, Seek, SeekFrom};
/// use riegeli_records::PositionalFile;
///
/// let mut file = PositionalFile::from(std::fs::File::open("records.riegeli")?);
/// let mut other = file.clone();
/// other.seek(SeekFrom::Start(100))?;
/// let mut head = [0u8; 8];
/// file.read_exact(&mut head)?; // bytes 0..8: `other` moved only itself
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PositionalFile {
    file: Arc<File>,
    pos: u64,
}

impl From<File> for PositionalFile {
    /// Reads `file` at offsets, from offset 0.
    fn from(file: File) -> Self {
        Self { file: Arc::new(file), pos: 0 }
    }
}

impl Read for PositionalFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = read_file_at(&self.file, buf, self.pos)?;
        self.pos = self.pos.saturating_add(n as u64);
        Ok(n)
    }
}

impl Seek for PositionalFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = seek_from(self.pos, to, || self.file.metadata().map(|m| m.len()))?;
        Ok(self.pos)
    }

    fn stream_position(&mut self) -> io::Result<u64> {
        Ok(self.pos)
    }
}

impl ReadAt for PositionalFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        read_file_at(&self.file, buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
}

/// The position `to` names, from `pos` and (for [`SeekFrom::End`]) the size.
fn seek_from(pos: u64, to: SeekFrom, size: impl FnOnce() -> io::Result<u64>) -> io::Result<u64> {
    let (base, delta) = match to {
        SeekFrom::Start(pos) => (pos, 0),
        SeekFrom::Current(delta) => (pos, delta),
        SeekFrom::End(delta) => (size()?, delta),
    };
    base.checked_add_signed(delta)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek to a negative or overflowing position"))
}

/// `pread` on Unix; elsewhere positional reads move a cursor shared with
/// duplicated handles, so a `File` does not read at offsets there.
impl ReadAt for File {
    #[cfg(unix)]
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, offset)
    }

    #[cfg(not(unix))]
    fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<usize> {
        Err(io::ErrorKind::Unsupported.into())
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

/// One thread's cursor over a [`SharedFile`]: `Read + Seek` by positional reads.
pub(crate) struct AtCursor {
    file: SharedFile,
    pos: u64,
}

impl std::fmt::Debug for AtCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtCursor").field("pos", &self.pos).finish_non_exhaustive()
    }
}

impl AtCursor {
    /// The shared source.
    pub(crate) fn file(&self) -> &SharedFile {
        &self.file
    }

    pub(crate) fn new(file: SharedFile) -> Self {
        Self { file, pos: 0 }
    }
}

impl Read for AtCursor {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos = self.pos.saturating_add(n as u64);
        Ok(n)
    }
}

impl Seek for AtCursor {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = seek_from(self.pos, to, || self.file.size())?;
        Ok(self.pos)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn cursors_read_and_seek_independently_of_the_original() {
        let path = std::env::temp_dir().join(format!("riegeli-at-cursor-{}", std::process::id()));
        File::create(&path).unwrap().write_all(b"0123456789").unwrap();
        let mut original = File::open(&path).unwrap();
        let shared: SharedFile = Arc::new(original.try_clone().unwrap());
        let mut a = AtCursor::new(Arc::clone(&shared));
        let mut b = AtCursor::new(shared);
        let mut buf = [0u8; 4];
        a.seek(SeekFrom::Start(6)).unwrap();
        a.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"6789");
        b.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"0123");
        assert_eq!(b.seek(SeekFrom::Current(-1)).unwrap(), 3);
        assert_eq!(b.seek(SeekFrom::End(-2)).unwrap(), 8);
        assert!(b.seek(SeekFrom::Current(-9)).is_err());
        assert_eq!(a.read(&mut buf).unwrap(), 0, "end of file");
        // The original's cursor did not move.
        original.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"0123");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn positional_files_keep_positions_of_their_own() {
        let path = std::env::temp_dir().join(format!("riegeli-positional-{}", std::process::id()));
        File::create(&path).unwrap().write_all(b"0123456789").unwrap();
        let mut file = PositionalFile::from(File::open(&path).unwrap());
        let mut buf = [0u8; 3];
        file.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"012");
        // A clone starts where the original is, and moves on its own.
        let mut clone = file.clone();
        assert_eq!(clone.seek(SeekFrom::End(-2)).unwrap(), 8);
        clone.read_exact(&mut buf[..2]).unwrap();
        assert_eq!(&buf[..2], b"89");
        assert_eq!(clone.read(&mut buf).unwrap(), 0, "end of file");
        file.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"345");
        assert_eq!(file.stream_position().unwrap(), 6);
        // The handle's own position never moved: reading it directly starts at 0.
        let mut direct = &*file.file;
        direct.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"012");
        assert_eq!(file.read_at(&mut buf, 7).unwrap(), 3);
        assert_eq!(&buf, b"789");
        assert!(file.seek(SeekFrom::Current(-7)).is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
