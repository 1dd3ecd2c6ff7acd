//! Positional reads of a shared file, so that the decoding threads of a
//! parallel batch read their chunks themselves (as C++ does with `pread`),
//! instead of the calling thread reading every chunk through the one `R`.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

/// A file shared by the threads of a parallel batch, read at given offsets.
pub(crate) type SharedFile = Arc<File>;

/// A file handle for positional reads, for a reader of `file`: a duplicate
/// (reads at an offset leave the original's cursor alone) where the platform
/// reads at offsets without moving the cursor, `None` elsewhere (and if the
/// handle cannot be duplicated): then the calling thread reads every chunk.
pub(crate) fn share(file: &File) -> Option<SharedFile> {
    if cfg!(unix) { file.try_clone().ok().map(Arc::new) } else { None }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_at(_: &File, _: &mut [u8], _: u64) -> io::Result<usize> {
    // `share` gives no handle on these platforms.
    Err(io::ErrorKind::Unsupported.into())
}

/// One thread's cursor over a [`SharedFile`]: `Read + Seek` by positional reads.
#[derive(Debug)]
pub(crate) struct AtCursor {
    file: SharedFile,
    pos: u64,
}

impl AtCursor {
    pub(crate) fn new(file: SharedFile) -> Self {
        Self { file, pos: 0 }
    }
}

impl Read for AtCursor {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = read_at(&self.file, buf, self.pos)?;
        self.pos = self.pos.saturating_add(n as u64);
        Ok(n)
    }
}

impl Seek for AtCursor {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let (base, delta) = match to {
            SeekFrom::Start(pos) => (pos, 0),
            SeekFrom::Current(delta) => (self.pos, delta),
            SeekFrom::End(delta) => (self.file.metadata()?.len(), delta),
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
