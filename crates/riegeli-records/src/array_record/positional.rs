//! Positional reads of a shared source, so that the decoding threads of a
//! parallel batch read their chunks themselves (as C++ does with `pread`),
//! instead of the calling thread reading every chunk through the one `R`.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

/// Bytes read at given offsets, by several threads at once: what the decoding
/// threads of an [`ArrayRecordReader`](crate::ArrayRecordReader)'s parallel
/// reads read their chunks through (see
/// [`set_read_at`](crate::ArrayRecordReader::set_read_at)). A `File` on Unix
/// (`pread`); an object in object storage (`riegeli-object-store`).
pub trait ReadAt: Send + Sync {
    /// Reads bytes at `offset` into `buf`; 0 at the end.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// The size of the source.
    fn size(&self) -> io::Result<u64>;
}

/// A source shared by the threads of a parallel batch, read at given offsets.
pub(crate) type SharedFile = Arc<dyn ReadAt>;

/// A file handle for positional reads, for a reader of `file`: a duplicate
/// (reads at an offset leave the original's cursor alone) where the platform
/// reads at offsets without moving the cursor, `None` elsewhere (and if the
/// handle cannot be duplicated): then the calling thread reads every chunk.
pub(crate) fn share(file: &File) -> Option<SharedFile> {
    if cfg!(unix) { file.try_clone().ok().map(|file| Arc::new(file) as SharedFile) } else { None }
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
        let (base, delta) = match to {
            SeekFrom::Start(pos) => (pos, 0),
            SeekFrom::Current(delta) => (self.pos, delta),
            SeekFrom::End(delta) => (self.file.size()?, delta),
        };
        self.pos = base
            .checked_add_signed(delta)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek to a negative or overflowing position"))?;
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
        let shared = share(&original).unwrap();
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
}
