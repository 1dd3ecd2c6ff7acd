//! `FlushType` (how far a flush reaches) and `SyncWrite` (destinations that
//! can make their bytes durable).

use std::io::{self, Write};

/// How far [`RecordWriter::flush_with`](crate::RecordWriter::flush_with)
/// pushes the data written so far (C++ `riegeli::FlushType`, Python
/// `riegeli.FlushType`).
///
/// Every flush first writes the open chunk and the final padding; the types
/// differ in what happens to the destination after that. A stronger type
/// does everything a weaker one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FlushType {
    /// The bytes are handed to the destination (`Write::write_all`) and so
    /// become visible to other users of the destination object; the
    /// destination itself is not flushed. With an I/O thread
    /// ([`RecordWriter::with_io_thread`](crate::RecordWriter::with_io_thread))
    /// the flush waits for that thread, which also flushes the destination.
    FromObject,
    /// [`FromObject`](Self::FromObject), then `Write::flush` of the
    /// destination: the bytes become visible outside the process (for a
    /// file, the kernel has them). This is [`RecordWriter::flush`](crate::RecordWriter::flush).
    #[default]
    FromProcess,
    /// [`FromProcess`](Self::FromProcess), then [`SyncWrite::sync`] of the
    /// destination: the bytes become durable, surviving an operating system
    /// crash (for a file, `fsync`).
    FromMachine,
}

/// A destination that can make the bytes written to it durable, for
/// [`FlushType::FromMachine`].
///
/// Implemented for [`File`](std::fs::File) (`sync_all`, i.e. `fsync`), for
/// in-memory destinations (`Vec<u8>`, `Cursor`, `io::Sink`: nothing to do),
/// for `BufWriter`, `&mut W` and `Box<W>` of a `SyncWrite`, and for
/// the I/O thread of [`RecordWriter::with_io_thread`](crate::RecordWriter::with_io_thread) (its thread syncs).
/// Implement it for a destination of your own whose bytes can be made
/// durable.
pub trait SyncWrite: Write {
    /// Makes every byte written so far durable. Callers flush before they
    /// call this; an implementation that buffers must write its buffer first.
    ///
    /// A destination that cannot promise durability now (an object in a
    /// bucket, durable only once complete) returns an error of kind
    /// [`io::ErrorKind::Unsupported`], never a silent `Ok`: the writer's
    /// flush fails with it, and the writer stays usable (nothing was lost).
    fn sync(&mut self) -> io::Result<()>;
}

impl SyncWrite for std::fs::File {
    fn sync(&mut self) -> io::Result<()> {
        self.sync_all()
    }
}

impl SyncWrite for &std::fs::File {
    fn sync(&mut self) -> io::Result<()> {
        self.sync_all()
    }
}

impl SyncWrite for Vec<u8> {
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl SyncWrite for io::Sink {
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<T> SyncWrite for io::Cursor<T>
where
    io::Cursor<T>: Write,
{
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<W: SyncWrite> SyncWrite for io::BufWriter<W> {
    fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        self.get_mut().sync()
    }
}

impl<W: SyncWrite + ?Sized> SyncWrite for &mut W {
    fn sync(&mut self) -> io::Result<()> {
        (**self).sync()
    }
}

impl<W: SyncWrite + ?Sized> SyncWrite for Box<W> {
    fn sync(&mut self) -> io::Result<()> {
        (**self).sync()
    }
}

/// Flushes `dest`, then syncs it (what a `WriteBehind` thread runs for
/// [`FlushType::FromMachine`]).
pub(crate) fn flush_and_sync<W: SyncWrite>(dest: &mut W) -> io::Result<()> {
    dest.flush()?;
    dest.sync()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_from_process() {
        assert_eq!(FlushType::default(), FlushType::FromProcess);
    }

    #[test]
    fn files_sync() {
        let path = std::env::temp_dir().join(format!("riegeli-flush-{}.bin", std::process::id()));
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(b"durable").unwrap();
        flush_and_sync(&mut file).unwrap();
        let mut buffered = io::BufWriter::new(&file);
        buffered.write_all(b" too").unwrap();
        buffered.sync().unwrap();
        drop(buffered);
        assert_eq!(std::fs::read(&path).unwrap(), b"durable too");
        drop(file);
        std::fs::remove_file(&path).unwrap();
    }
}
