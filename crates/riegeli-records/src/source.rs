//! `Source`: a buffered view of the file's physical bytes, by file position.
//!
//! Whole chunks leave the source as [`Bytes`] slices of its buffer, so records
//! can be zero-copy slices of what was read. While any of them is alive its
//! buffer cannot be refilled, so the source reads on into another buffer. The
//! buffers come from a small [`BufferPool`] that each buffer returns to when
//! its last slice is dropped, on whatever thread that happens: a reader whose
//! chunks are decoded on other threads (parallel reads, read-ahead) then
//! cycles through a few buffers instead of allocating a fresh one per chunk,
//! which with large chunks means fresh pages from the kernel, faulted in and
//! zeroed each time.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use riegeli_codec::{Homing, Recycler};

/// Smallest read from the underlying reader: one block.
const MIN_READ: usize = 64 << 10;
/// The most a fill allocates beyond twice the bytes it has: a chunk header
/// claiming a huge chunk in a short input costs at most this much memory.
const FILL_STEP: usize = 4 << 20;

/// The pool keeps at most this many idle buffers...
const MAX_POOLED_BUFFERS: usize = 8;
/// ...holding at most this many bytes in all.
const MAX_POOLED_BYTES: usize = 32 << 20;

/// Chunks at least this long that are not buffered yet are read into a buffer
/// of their own ([`Source::take_owned`]), where the caller gathers their data
/// in place. A chunk this long spans block boundaries, so its data is
/// gathered anyway; in a buffer of its own, the chunk is held once (not in
/// the source's buffer and again gathered), and only while it is used (not
/// with the chunks that share a buffer with it).
pub(crate) const OWNED_READ: usize = 4 * MIN_READ;

/// Buffers are allocated in multiples of this (and at least this large).
const BUFFER_GRANULE: usize = 64 << 10;

/// Chunk data gathered from between block headers is copied into a buffer of
/// its own below this size, into a pooled buffer from it on.
const SMALL_GATHER: usize = BUFFER_GRANULE / 4;

/// Idle buffers of one source (a [`Recycler`]). A pooled buffer keeps the
/// bytes it was initialized to (its `len()`), so reusing one zeroes at most
/// what is asked beyond them.
#[derive(Debug)]
struct BufferPool(Arc<Recycler<Vec<u8>>>);

impl Default for BufferPool {
    fn default() -> Self {
        Self(Recycler::new(MAX_POOLED_BUFFERS, MAX_POOLED_BYTES))
    }
}

impl BufferPool {
    /// An initialized buffer of at least `len` bytes: an idle one if one is
    /// large enough, else a new one with some room to spare, so that chunks
    /// of about the same size fit the buffers of their predecessors.
    fn get(&self, len: usize) -> Vec<u8> {
        if let Some(mut buffer) = self.0.take_if(|b| b.capacity() >= len) {
            if buffer.len() < len {
                buffer.resize(len, 0);
            }
            return buffer;
        }
        // A granule or less (a block read ahead, a chunk header) needs no room to spare.
        let spare = if len <= BUFFER_GRANULE { BUFFER_GRANULE } else { len.saturating_add(len / 8) };
        let rounded = spare.div_ceil(BUFFER_GRANULE).saturating_mul(BUFFER_GRANULE);
        // `len` itself is always allocatable if the rounded size is not.
        let mut buffer = Vec::new();
        if buffer.try_reserve_exact(rounded).is_err() {
            buffer.reserve_exact(len);
        }
        // Only what is asked: pages of the spare room are touched when used.
        buffer.resize(len, 0);
        buffer
    }

    /// `buffer` as [`Bytes`], going back to the pool when its last slice drops.
    fn homing(&self, buffer: Vec<u8>) -> Bytes {
        Homing::new(buffer, &self.0).into_bytes()
    }
}

/// Buffers the bytes `[pos, pos + buf.len())` of the underlying reader.
///
/// Reads at least 64 KiB at a time; retries `Interrupted`.
#[derive(Debug)]
pub(crate) struct Source<R> {
    inner: R,
    /// The buffered bytes: a slice of a pooled buffer.
    buf: Bytes,
    pos: u64,
    eof: bool,
    pool: Arc<BufferPool>,
}

/// A handle on a source's buffer pool, for copies of what it read (chunk
/// data gathered from between block headers) that may be made on other threads.
#[derive(Debug, Clone)]
pub(crate) struct Buffers(Arc<BufferPool>);

impl Buffers {
    /// The concatenation of `pieces` (`len` bytes in all), in a pooled buffer.
    pub(crate) fn gather<'a>(&self, pieces: impl IntoIterator<Item = &'a [u8]>, len: usize) -> Bytes {
        if len < SMALL_GATHER {
            // Exactly its size: a pooled buffer would be a granule zeroed for a few bytes,
            // held as long as the chunk's records, and would crowd the file's buffers out
            // of the pool (a file of tiny chunks gathers one at every block boundary).
            let mut buffer = Vec::with_capacity(len);
            for piece in pieces {
                let n = piece.len().min(len - buffer.len());
                buffer.extend_from_slice(piece.get(..n).unwrap_or_default());
            }
            return Bytes::from(buffer);
        }
        let mut buffer = self.0.get(len);
        let mut at = 0;
        for piece in pieces {
            let n = piece.len().min(len - at);
            let (Some(out), Some(piece)) = (buffer.get_mut(at..at + n), piece.get(..n)) else { break };
            out.copy_from_slice(piece);
            at += n;
        }
        self.0.homing(buffer).slice(..at)
    }
}

impl<R> Source<R> {
    pub(crate) fn new(inner: R, pos: u64) -> Self {
        Self { inner, buf: Bytes::new(), pos, eof: false, pool: Arc::default() }
    }

    /// The source's buffer pool.
    pub(crate) fn buffers(&self) -> Buffers {
        Buffers(Arc::clone(&self.pool))
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
    ///
    /// The buffered bytes move to a buffer with room for `len` (at least
    /// 64 KiB more than are buffered, and at most 4 MiB or twice what is
    /// buffered: larger lengths are filled in growing steps), which the reader
    /// then fills. If reading fails, the bytes read before the error stay
    /// buffered.
    pub(crate) fn fill(&mut self, len: usize) -> io::Result<usize> {
        while self.buf.len() < len && !self.eof {
            let old = self.buf.len();
            // Room for `len`, but no more than the bytes read so far justify:
            // a length that a header merely claims allocates at most
            // `FILL_STEP` until the data is there.
            let want = len.min(old.saturating_mul(2).max(FILL_STEP)).max(old.saturating_add(MIN_READ));
            self.fill_step(len.min(want), want)?;
        }
        Ok(self.buf.len())
    }

    /// Buffers `len` bytes (fewer if the input ends first), reading only those
    /// of them not buffered yet: no 64 KiB least read, for a chunk whose
    /// extent is known and that is read by itself (a random read). Larger
    /// lengths are read in the growing steps of [`fill`](Self::fill).
    pub(crate) fn fill_exactly(&mut self, len: usize) -> io::Result<usize> {
        while self.buf.len() < len && !self.eof {
            let want = len.min(self.buf.len().saturating_mul(2).max(FILL_STEP));
            self.fill_step(want, want)?;
        }
        Ok(self.buf.len())
    }

    /// Moves the buffered bytes to a buffer of at least `want` bytes and reads
    /// until `target` bytes are buffered, the input ends, or reading fails
    /// (the bytes read before the error stay buffered).
    fn fill_step(&mut self, target: usize, want: usize) -> io::Result<()> {
        let old = self.buf.len();
        if old == 0 {
            // Nothing to keep: the buffer goes back to the pool (unless a chunk
            // still holds a slice of it), and may well be the one reused.
            self.buf = Bytes::new();
        }
        let mut buffer = self.pool.get(want);
        buffer[..old].copy_from_slice(&self.buf);
        let space = buffer.get_mut(old..want).unwrap_or_default();
        let (n, result) = self.read_into(space, target.saturating_sub(old));
        let filled = old + n;
        let buffer = self.pool.homing(buffer);
        // Dropping the old slice may return its buffer to the pool.
        self.buf = buffer.slice(..filled);
        result
    }

    /// Reads into `space` until at least `target` bytes (at most all of
    /// `space`) are read, the input ends (then `eof` is set) or reading
    /// fails; retries `Interrupted`. Returns the bytes read and how it ended.
    fn read_into(&mut self, space: &mut [u8], target: usize) -> (usize, io::Result<()>) {
        let mut n = 0;
        while n < target {
            let Some(rest) = space.get_mut(n..) else { break };
            match self.inner.read(rest) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(read) => n += read,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return (n, Err(e)),
            }
        }
        (n, Ok(()))
    }

    /// Takes the next `len` bytes as a vector of the caller's own, reading
    /// those not buffered straight into it: one allocation that grows in
    /// place as the data arrives (by the steps of [`fill`](Self::fill): a
    /// length that is merely claimed allocates at most twice what was read),
    /// instead of `fill`'s copies into ever larger buffers. For a chunk of
    /// [`OWNED_READ`] bytes or more, whose data the caller then gathers in
    /// place. `None` if the input ends first: the bytes read stay buffered, as
    /// after `fill`, and so they do if reading fails.
    pub(crate) fn take_owned(&mut self, len: usize) -> io::Result<Option<Vec<u8>>> {
        let have = self.buf.len().min(len);
        let mut out = Vec::with_capacity(have.max(MIN_READ).min(len));
        out.extend_from_slice(&self.buf[..have]);
        self.buf.advance(have);
        let mut result = Ok(());
        while out.len() < len && !self.eof && result.is_ok() {
            let filled = out.len();
            let want = len.min(filled.saturating_mul(2).max(FILL_STEP));
            out.reserve_exact(want - filled);
            out.resize(want, 0);
            let space = out.get_mut(filled..want).unwrap_or_default();
            let (n, read) = self.read_into(space, want - filled);
            result = read;
            out.truncate(filled + n);
        }
        if out.len() == len && result.is_ok() {
            self.pos += len as u64;
            return Ok(Some(out));
        }
        // Fewer than `len` were buffered, so nothing else is: what was read is all there is.
        self.buf = Bytes::from(out);
        result.map(|()| None)
    }

    /// Puts `bytes`, just taken by [`take_owned`](Self::take_owned), back in
    /// front of the buffered bytes, as if they had not been taken.
    pub(crate) fn untake(&mut self, bytes: Vec<u8>) {
        self.pos -= bytes.len() as u64;
        self.buf = if self.buf.is_empty() { Bytes::from(bytes) } else { [&bytes[..], &self.buf[..]].concat().into() };
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
        self.buf.split_to(n)
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
}

impl<R: Read + Seek> Source<R> {
    /// Moves to file position `pos`, keeping buffered bytes when `pos` lies among them.
    pub(crate) fn seek(&mut self, pos: u64) -> io::Result<()> {
        if pos >= self.pos && pos - self.pos <= self.buf.len() as u64 {
            self.consume((pos - self.pos) as usize);
            return Ok(());
        }
        self.inner.seek(SeekFrom::Start(pos))?;
        self.buf = Bytes::new();
        self.pos = pos;
        self.eof = false;
        Ok(())
    }

    /// Lets go of every buffer: the buffered bytes (reading goes on at the
    /// same position) and the idle ones. Called once an index is read, so
    /// that a reader kept open for random access holds none of the buffers
    /// that read it (a footer of a million entries takes megabytes).
    pub(crate) fn release_buffers(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.inner.seek(SeekFrom::Start(self.pos))?;
            self.buf = Bytes::new();
            self.eof = false;
        }
        while self.pool.0.take().is_some() {}
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields its bytes `step` at a time, with an `Interrupted` before each read.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
        interrupt: bool,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn fill_take_and_consume_track_the_file_position() {
        let file = data(300_000);
        let mut source = Source::new(Trickle { data: &file, step: 7_777, interrupt: false }, 0);
        // A fill buffers at least what was asked for, as far as one read goes.
        assert_eq!(source.fill(10).unwrap(), 7_777);
        let first = source.take(4);
        assert_eq!(&first[..], &file[..4]);
        source.consume(6);
        assert_eq!(source.pos(), 10);
        let have = source.fill(200_000).unwrap();
        assert!((200_000..200_000 + 7_777).contains(&have), "{have}");
        assert_eq!(source.buffered(), &file[10..10 + have]);
        let chunk = source.take(150_000);
        assert_eq!(&chunk[..], &file[10..150_010]);
        // The rest of the file, past the end: only what there is.
        assert_eq!(source.fill(1 << 20).unwrap(), 300_000 - 150_010);
        assert_eq!(source.buffered(), &file[150_010..]);
        assert!(source.skip_to(299_999).unwrap());
        assert!(!source.skip_to(300_001).unwrap());
        assert_eq!(source.pos(), 300_000);
        // Slices handed out earlier are unchanged by later reads.
        assert_eq!(&first[..], &file[..4]);
        assert_eq!(&chunk[..], &file[10..150_010]);
    }

    /// Yields its bytes at most `step` at a time, then fails.
    struct Failing<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Failing<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.data.is_empty() {
                return Err(io::Error::other("disk on fire"));
            }
            let n = out.len().min(self.data.len()).min(self.step);
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// Counts the bytes its reader asks for.
    struct Counting<'a> {
        data: &'a [u8],
        asked: usize,
    }

    impl Read for Counting<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.asked += out.len();
            let n = out.len().min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn fill_exactly_reads_no_more_than_the_length() {
        let file = data(20 << 20);
        let mut source = Source::new(Counting { data: &file, asked: 0 }, 0);
        assert_eq!(source.fill_exactly(777).unwrap(), 777);
        assert_eq!(source.inner.asked, 777);
        assert_eq!(source.buffered(), &file[..777]);
        // What is buffered is not read again; the rest is.
        assert_eq!(source.fill_exactly(1000).unwrap(), 1000);
        assert_eq!(source.inner.asked, 1000);
        assert_eq!(source.fill_exactly(10).unwrap(), 1000);
        assert_eq!(source.inner.asked, 1000);
        // A long length in steps, each read exactly.
        assert_eq!(source.fill_exactly(10 << 20).unwrap(), 10 << 20);
        assert_eq!(source.inner.asked, 10 << 20);
        assert_eq!(source.buffered(), &file[..10 << 20]);
        // `fill` reads at least a block.
        let mut source = Source::new(Counting { data: &file, asked: 0 }, 0);
        source.fill(777).unwrap();
        assert_eq!(source.inner.asked, MIN_READ);
        // Past the end: what there is.
        let mut short = Source::new(Counting { data: &file[..100], asked: 0 }, 0);
        assert_eq!(short.fill_exactly(777).unwrap(), 100);
    }

    #[test]
    fn bytes_read_before_an_error_stay_buffered() {
        let file = data(1_000);
        let mut source = Source::new(Failing { data: &file, step: 100 }, 0);
        assert_eq!(source.fill(1_500).unwrap_err().to_string(), "disk on fire");
        assert_eq!(source.buffered(), &file[..]);
        assert_eq!(source.fill(500).unwrap(), 1_000);
    }

    #[test]
    fn buffers_come_back_to_the_pool_when_their_last_slice_drops() {
        let file = data(4 << 20);
        let mut source = Source::new(&file[..], 0);
        let mut seen = Vec::new();
        for i in 0..8 {
            assert!(source.fill(1 << 19).unwrap() >= 1 << 19);
            let chunk = source.take(1 << 19);
            assert_eq!(&chunk[..], &file[i << 19..(i + 1) << 19]);
            seen.push(chunk.as_ptr() as usize - (chunk.as_ptr() as usize % BUFFER_GRANULE));
            // Dropped on another thread, as a decoding worker would.
            std::thread::spawn(move || drop(chunk)).join().unwrap();
        }
        // Two buffers alternate: each fill copies the leftover out of the one
        // the previous chunk was cut from, which is back in the pool by then.
        let idle = source.pool.0.idle();
        assert!(idle <= 2, "{idle} idle buffers");
        let distinct: std::collections::BTreeSet<_> = seen.iter().collect();
        assert!(distinct.len() <= 3, "{} distinct buffers for 8 chunks", distinct.len());
    }

    #[test]
    fn gathered_pieces_are_concatenated_and_their_buffer_recycled() {
        let source = Source::new(&b""[..], 0);
        let buffers = source.buffers();
        let gathered = buffers.gather([&b"abc"[..], b"", b"defg"], 7);
        assert_eq!(&gathered[..], b"abcdefg");
        // Bytes beyond `len` are left out.
        assert_eq!(&buffers.gather(std::iter::repeat_n(&b"abc"[..], 100_000), 10)[..], b"abcabcabca");
        drop(gathered);
        // Small ones are buffers of their own; from `SMALL_GATHER` on, pooled ones.
        assert_eq!(source.pool.0.idle(), 0);
        let big = vec![7u8; SMALL_GATHER];
        let gathered = buffers.gather([&big[..10], &big[10..]], SMALL_GATHER);
        assert_eq!(&gathered[..], &big[..]);
        drop(gathered);
        assert_eq!(source.pool.0.idle(), 1);
    }

    #[test]
    fn released_buffers_leave_nothing_held_and_reading_goes_on_where_it_was() {
        let file = data(4 << 20);
        let mut source = Source::new(std::io::Cursor::new(&file[..]), 0);
        assert_eq!(source.fill(3 << 20).unwrap(), 3 << 20);
        source.consume(1000);
        let before = source.take(10);
        drop(before);
        // Buffers of the reads before, idle and buffered.
        drop(source.buffers().gather([&file[..SMALL_GATHER]], SMALL_GATHER));
        assert!(source.pool.0.idle() > 0);
        source.release_buffers().unwrap();
        assert_eq!((source.pool.0.idle(), source.buffered().len(), source.pos()), (0, 0, 1010));
        assert!(source.fill(20).unwrap() >= 20);
        assert_eq!(&source.buffered()[..20], &file[1010..1030]);
    }

    #[test]
    fn a_claimed_length_allocates_only_as_the_data_arrives() {
        let file = data(10 << 20);
        // A short input asked for 1 GiB: the buffer stays small.
        let mut short = Source::new(&file[..1000], 0);
        assert_eq!(short.fill(1 << 30).unwrap(), 1000);
        short.buf = Bytes::new();
        // (A buffer over the pool's byte limit would not come back at all.)
        let idle = short.pool.0.take().unwrap();
        assert!(idle.len() <= 16 << 20, "{}", idle.len());
        // A long one gets all it asks for, in growing steps.
        let mut long = Source::new(&file[..], 0);
        assert_eq!(long.fill(9 << 20).unwrap(), 9 << 20);
        assert_eq!(long.buffered(), &file[..9 << 20]);
        assert_eq!(long.fill(20 << 20).unwrap(), 10 << 20);
    }

    #[test]
    fn take_owned_reads_exactly_the_length_and_a_short_input_stays_buffered() {
        let file = data(9 << 20);
        let mut source = Source::new(Trickle { data: &file, step: 100_003, interrupt: false }, 0);
        assert_eq!(source.fill(10).unwrap(), MIN_READ);
        source.consume(3);
        let taken = source.take_owned(5 << 20).unwrap().unwrap();
        assert!(taken == file[3..3 + (5 << 20)], "{} bytes taken", taken.len());
        assert_eq!(source.pos(), 3 + (5 << 20));
        // Nothing past the length was read: the rest follows.
        assert_eq!(source.fill(10).unwrap(), MIN_READ);
        assert_eq!(source.buffered()[..10], file[3 + (5 << 20)..][..10]);
        // Asked for more than there is: `None`, and what there is stays buffered.
        let at = source.pos();
        assert!(source.take_owned(1 << 30).unwrap().is_none());
        assert_eq!(source.pos(), at);
        assert!(source.buffered() == &file[at as usize..], "{} buffered", source.buffered().len());
        // Taken and put back: as if never taken.
        let rest = source.take_owned(1 << 20).unwrap().unwrap();
        source.untake(rest);
        assert_eq!(source.pos(), at);
        assert!(source.buffered() == &file[at as usize..]);
    }

    #[test]
    fn take_owned_keeps_what_it_read_before_an_error() {
        let file = data(6 << 20);
        let mut source = Source::new(Failing { data: &file, step: 1 << 20 }, 0);
        assert_eq!(source.take_owned(8 << 20).unwrap_err().to_string(), "disk on fire");
        assert_eq!(source.pos(), 0);
        assert!(source.buffered() == &file[..]);
    }

    #[test]
    fn the_pool_is_bounded() {
        let pool = BufferPool::default();
        for _ in 0..2 * MAX_POOLED_BUFFERS {
            pool.0.give(vec![0; 1 << 10]);
        }
        assert_eq!(pool.0.idle(), MAX_POOLED_BUFFERS);
        let pool = BufferPool::default();
        for _ in 0..4 {
            pool.0.give(vec![0; MAX_POOLED_BYTES / 3]);
        }
        assert_eq!(pool.0.idle(), 3);
        assert!(pool.get(MAX_POOLED_BYTES / 3).len() >= MAX_POOLED_BYTES / 3);
        assert_eq!(pool.0.idle(), 2);
    }

    /// A sequential read of chunks long enough to go into buffers of their
    /// own reads their headers into one read buffer of one granule, reused
    /// from chunk to chunk: not a new one per fill (the empty slice left of
    /// the last one given back first), nor one with room to spare.
    #[test]
    fn long_chunks_leave_one_granule_of_read_buffer() {
        let options: crate::RecordWriterOptions = "uncompressed,chunk_size:16K".parse().unwrap();
        let mut writer = crate::RecordWriter::new(Vec::new(), options).unwrap();
        for i in 0..4u8 {
            writer.write_record(&vec![i; 640 << 10]).unwrap();
        }
        let file = writer.close().unwrap();
        let mut source = Source::new(std::io::Cursor::new(&file), 0);
        let options = crate::ChunkReadOptions::default();
        let mut records = 0;
        while let Some(chunk) = crate::chunk_reader::read_lazy_chunk(&mut source, &options).unwrap() {
            records += chunk.header().num_records();
        }
        assert_eq!(records, 4);
        source.buf = Bytes::new();
        let held: Vec<usize> = std::iter::from_fn(|| source.pool.0.take()).map(|b| b.capacity()).collect();
        assert_eq!(held, [BUFFER_GRANULE], "capacities of the read buffers");
    }
}
