//! `Source`: a buffered view of the file's physical bytes, by file position.

use std::io::{self, Read, Seek, SeekFrom};

use bytes::{Buf, Bytes, BytesMut};

/// Smallest read from the underlying reader: one block.
const MIN_READ: usize = 64 << 10;

/// Buffers the bytes `[pos, pos + buf.len())` of the underlying reader.
///
/// Reads at least 64 KiB at a time; retries `Interrupted`. Whole chunks are
/// handed out as `Bytes` split off the buffer, so records can be zero-copy
/// slices of what was read.
#[derive(Debug)]
pub(crate) struct Source<R> {
    inner: R,
    buf: BytesMut,
    pos: u64,
    eof: bool,
}

impl<R> Source<R> {
    pub(crate) fn new(inner: R, pos: u64) -> Self {
        Self { inner, buf: BytesMut::new(), pos, eof: false }
    }

    /// File position of the first buffered byte.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }
}

impl<R: Read> Source<R> {
    /// The buffered bytes, starting at [`pos`](Self::pos).
    pub(crate) fn buffered(&self) -> &[u8] {
        &self.buf
    }

    /// Buffers at least `len` bytes, unless the input ends first. Returns the
    /// number of bytes buffered.
    pub(crate) fn fill(&mut self, len: usize) -> io::Result<usize> {
        while self.buf.len() < len && !self.eof {
            let want = (len - self.buf.len()).max(MIN_READ);
            let old = self.buf.len();
            self.buf.resize(old + want, 0);
            let result = loop {
                match self.inner.read(&mut self.buf[old..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            };
            match result {
                Ok(0) => {
                    self.buf.truncate(old);
                    self.eof = true;
                }
                Ok(n) => self.buf.truncate(old + n),
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(e);
                }
            }
        }
        Ok(self.buf.len())
    }

    /// Drops the first `n` buffered bytes.
    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.buf.len());
        self.buf.advance(n);
        self.pos += n as u64;
    }

    /// Splits the first `n` buffered bytes off as `Bytes` (no copy).
    pub(crate) fn take(&mut self, n: usize) -> Bytes {
        let n = n.min(self.buf.len());
        self.pos += n as u64;
        self.buf.split_to(n).freeze()
    }

    /// Moves forward to `target` by reading and discarding. Returns `false` if
    /// the input ended first (then the position is the end of input).
    pub(crate) fn skip_to(&mut self, target: u64) -> io::Result<bool> {
        while self.pos < target {
            if self.buf.is_empty() {
                let want = usize::try_from(target - self.pos).unwrap_or(usize::MAX).min(1 << 20);
                if self.fill(want)? == 0 {
                    return Ok(false);
                }
            }
            let n = usize::try_from(target - self.pos).unwrap_or(usize::MAX).min(self.buf.len());
            self.consume(n);
        }
        Ok(true)
    }

    pub(crate) fn get_ref(&self) -> &R {
        &self.inner
    }

    pub(crate) fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read + Seek> Source<R> {
    /// Moves to file position `pos`, keeping buffered bytes when `pos` lies among them.
    pub(crate) fn seek(&mut self, pos: u64) -> io::Result<()> {
        if pos >= self.pos && pos - self.pos <= self.buf.len() as u64 {
            self.consume((pos - self.pos) as usize);
            return Ok(());
        }
        self.inner.seek(SeekFrom::Start(pos))?;
        self.buf.clear();
        self.pos = pos;
        self.eof = false;
        Ok(())
    }

    /// The size of the file.
    pub(crate) fn size(&mut self) -> io::Result<u64> {
        let here = self.inner.stream_position()?;
        let end = self.inner.seek(SeekFrom::End(0))?;
        self.inner.seek(SeekFrom::Start(here))?;
        Ok(end)
    }
}
