//! `ChunkSink`: where encoded chunks go. It knows the file position, frames
//! each chunk with block headers, writes padding, and owns the destination
//! (written directly or through a [`WriteBehind`] thread). It does not know
//! records, encoders or ArrayRecord.

use std::io::Write;

use riegeli_codec::ChunkType;
use riegeli_framing::{
    BLOCK_SIZE, CHUNK_HEADER_SIZE, ChunkHeader, FramedChunk, Piece, distance_without_overhead,
    is_possible_chunk_boundary, remaining_in_block,
};

use crate::error::{EncodeError, Error, ErrorKind, Result};
use crate::flush::{FlushType, SyncWrite};
use crate::fork::ProcessBound;
use crate::write_behind::WriteBehind;

/// Bytes gathered before writing to the destination: a write of 1 MiB costs
/// the kernel ~7% less per byte than one of 64 KiB (uncompressed writes to tmpfs).
const OUT_BUFFER: usize = 1 << 20;
/// Bytes gathered before handing them to the I/O thread of a [`WriteBehind`].
const BEHIND_BUFFER: usize = 256 << 10;

/// Where a [`ChunkSink`] writes.
pub(crate) enum Dest<W> {
    /// Writes on the calling thread.
    Direct(W),
    /// Buffers go to a thread of their own.
    Behind(WriteBehind<W>),
}

impl<W: Write> Dest<W> {
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Direct(dest) => dest.flush(),
            Self::Behind(behind) => behind.flush(),
        }
    }

    /// Hands over to the destination what was given so far: nothing to do
    /// for a direct one; an I/O thread is waited for (and flushes).
    fn write_through(&mut self) -> std::io::Result<()> {
        match self {
            Self::Direct(_) => Ok(()),
            Self::Behind(behind) => behind.flush(),
        }
    }

    fn into_inner(self) -> std::io::Result<W> {
        match self {
            Self::Direct(dest) => Ok(dest),
            Self::Behind(behind) => behind.into_inner(),
        }
    }
}

/// Frames chunks at the file position and writes them to the destination.
///
/// After its first failure a sink writes nothing more: every later call
/// fails with a usage error, and dropping it writes nothing.
///
/// The destination belongs to the process that made the sink: in a child
/// forked since (whose destination, a file, is the parent's too), nothing
/// reaches it: the first write to it fails (the sink then fails), and
/// dropping the sink there leaves the destination alone (its own `Drop`, a
/// `BufWriter`'s flush or a [`WriteBehind`]'s, could write or wait).
pub(crate) struct ChunkSink<W: Write> {
    dest: Option<ProcessBound<Dest<W>>>,
    /// `out` is written when it holds this many bytes.
    out_limit: usize,
    /// File position of the end of everything framed so far (written or in `out`).
    pos: u64,
    out: Vec<u8>,
    failed: bool,
}

impl<W: Write> ChunkSink<W> {
    /// A sink writing to `dest`, whose file position is `pos`. A position
    /// that is not a possible chunk boundary (inside or right after a block
    /// header, as after a crash) is filled with zeros up to the next block.
    pub(crate) fn new(dest: Dest<W>, pos: u64) -> Self {
        let out_limit = match dest {
            Dest::Direct(_) => OUT_BUFFER,
            Dest::Behind(_) => BEHIND_BUFFER,
        };
        let mut sink = Self {
            dest: Some(ProcessBound::new(dest)),
            out_limit,
            pos,
            out: Vec::with_capacity(out_limit),
            failed: false,
        };
        if !is_possible_chunk_boundary(pos) {
            let zeros = remaining_in_block(pos);
            sink.out.resize(zeros as usize, 0);
            sink.pos += zeros;
        }
        sink
    }

    /// The file position after everything framed so far: where the next chunk begins.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Fails if an earlier call failed.
    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.failed {
            return Err(Error::new(ErrorKind::Usage("the writer failed earlier; nothing more can be written")));
        }
        if self.dest.is_none() {
            return Err(Error::new(ErrorKind::Usage("writer already closed")));
        }
        Ok(())
    }

    /// Marks the sink failed: nothing more is written, also on drop.
    pub(crate) fn fail(&mut self) {
        self.failed = true;
    }

    /// Runs `f`, marking the sink failed if it fails.
    fn guard<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.check_usable()?;
        let result = f(self);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    /// Frames and writes one chunk with a ready header at the current
    /// position; returns where it begins.
    pub(crate) fn write_chunk(&mut self, header: &ChunkHeader, data: &[u8]) -> Result<u64> {
        self.guard(|sink| {
            let begin = sink.pos;
            let framed =
                FramedChunk::new(begin, header, data).map_err(|e| encode_error(begin, EncodeError::Framing(e)))?;
            let end = framed.chunk_end();
            for piece in framed {
                // Data pieces end at block boundaries, so they are smaller than `out_limit`.
                match piece {
                    Piece::Data(bytes) => sink.out.extend_from_slice(bytes),
                    Piece::Inline(bytes) => sink.out.extend_from_slice(bytes.as_slice()),
                    Piece::Zeros(n) => {
                        let n = usize::try_from(n).map_err(|_| Error::internal("padding larger than memory"))?;
                        sink.out.resize(sink.out.len() + n, 0);
                    }
                }
                if sink.out.len() >= sink.out_limit {
                    sink.write_out()?;
                }
            }
            sink.pos = end;
            Ok(begin)
        })
    }

    /// Frames and writes a chunk of `chunk_type` with `data` (e.g. the
    /// signature, metadata, an ArrayRecord footer); returns where it begins.
    pub(crate) fn write_new_chunk(
        &mut self,
        chunk_type: ChunkType,
        data: &[u8],
        num_records: u64,
        decoded: u64,
    ) -> Result<u64> {
        let header = ChunkHeader::for_data(chunk_type.to_byte(), data, num_records, decoded)
            .map_err(|e| encode_error(self.pos, EncodeError::Framing(e)));
        let header = self.guard(|_| header)?;
        self.write_chunk(&header, data)
    }

    /// Writes a padding chunk so that the position becomes a multiple of
    /// `padding` (C++ `WritePadding`); nothing if it is one already.
    pub(crate) fn write_padding(&mut self, padding: u64) -> Result<()> {
        let pos = self.pos;
        let overflow = || Error::new(ErrorKind::InvalidArgument(format!("padding {padding} at {pos} overflows")));
        let target = pos_after_padding(pos, padding).ok_or_else(overflow);
        let target = self.guard(|_| target)?;
        if target == pos {
            return Ok(());
        }
        let length = distance_without_overhead(pos, target)
            .ok()
            .and_then(|d| d.checked_sub(CHUNK_HEADER_SIZE))
            .and_then(|d| usize::try_from(d).ok())
            .ok_or_else(overflow);
        let length = self.guard(|_| length)?;
        let zeros = vec![0u8; length];
        self.write_new_chunk(ChunkType::Padding, &zeros, 0, 0).map(|_| ())
    }

    /// Pads with a padding chunk up to the next block boundary (C++
    /// `ChunkWriter::PadToBlockBoundary`).
    pub(crate) fn pad_to_block_boundary(&mut self) -> Result<()> {
        self.write_padding(BLOCK_SIZE)
    }

    /// The destination, if the sink has one; an error in a forked child.
    fn dest(&mut self) -> Result<Option<&mut Dest<W>>> {
        dest_here(&mut self.dest, &mut self.failed)
    }

    /// Writes what is gathered to the destination.
    fn write_out(&mut self) -> Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let Some(dest) = dest_here(&mut self.dest, &mut self.failed)? else { return Ok(()) };
        let result = match dest {
            Dest::Direct(dest) => dest.write_all(&self.out),
            Dest::Behind(behind) => {
                let full = std::mem::take(&mut self.out);
                behind.write_buffer(full).map(|mut next| {
                    next.reserve(self.out_limit);
                    self.out = next;
                })
            }
        };
        self.out.clear();
        result.map_err(|e| {
            self.failed = true;
            e.into()
        })
    }

    /// Writes everything gathered and flushes the destination.
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.guard(|sink| {
            sink.write_out()?;
            match sink.dest()? {
                Some(dest) => dest.flush().map_err(Error::from),
                None => Ok(()),
            }
        })
    }

    /// Writes everything gathered to the destination and pushes it as far
    /// as `flush_type` says ([`FlushType::FromMachine`] also syncs it: [`SyncWrite::sync`]).
    pub(crate) fn flush_to(&mut self, flush_type: FlushType) -> Result<()> {
        match flush_type {
            FlushType::FromObject => self.guard(|sink| {
                sink.write_out()?;
                match sink.dest()? {
                    Some(dest) => dest.write_through().map_err(Error::from),
                    None => Ok(()),
                }
            }),
            _ => self.flush(),
        }
    }

    /// Returns the destination, after a [`flush`](Self::flush) (nothing
    /// gathered since is lost: it is written first, without another flush).
    pub(crate) fn take_dest(&mut self) -> Result<W> {
        self.guard(Self::write_out)?;
        self.guard(|sink| sink.dest().map(drop))?;
        let dest = self.dest.take().and_then(ProcessBound::into_inner);
        let dest = dest.ok_or(Error::new(ErrorKind::Usage("writer already closed")))?;
        dest.into_inner().map_err(|e| {
            self.failed = true;
            e.into()
        })
    }

    /// Whether the destination is still there and nothing failed: dropping
    /// the writer then flushes.
    pub(crate) fn is_open(&self) -> bool {
        self.dest.is_some() && !self.failed
    }
}

impl<W: SyncWrite> ChunkSink<W> {
    /// [`flush_to`](Self::flush_to), and with [`FlushType::FromMachine`]
    /// then makes the destination's bytes durable; a destination that cannot
    /// ([`std::io::ErrorKind::Unsupported`]) fails this call only.
    pub(crate) fn flush_or_sync(&mut self, flush_type: FlushType) -> Result<()> {
        self.flush_to(flush_type)?;
        if flush_type != FlushType::FromMachine {
            return Ok(());
        }
        self.check_usable()?;
        let result = match self.dest()? {
            Some(Dest::Direct(dest)) => dest.sync(),
            Some(Dest::Behind(behind)) => behind.sync(),
            None => Ok(()),
        };
        // A sync the destination refuses (an object in a bucket) loses nothing: the writer
        // goes on. Any other failure fails it.
        if result.as_ref().is_err_and(|e| e.kind() != std::io::ErrorKind::Unsupported) {
            self.failed = true;
        }
        result.map_err(Error::from)
    }
}

/// The destination of a sink, if it has one; an error (and the sink failed)
/// in a process forked from the one that made it.
fn dest_here<'a, W>(dest: &'a mut Option<ProcessBound<Dest<W>>>, failed: &mut bool) -> Result<Option<&'a mut Dest<W>>> {
    match dest.as_mut().map(ProcessBound::get_mut) {
        None => Ok(None),
        Some(Some(dest)) => Ok(Some(dest)),
        Some(None) => {
            *failed = true;
            Err(Error::new(ErrorKind::Usage(FORKED)))
        }
    }
}

/// Why a writer fails in a process forked from the one that made it.
pub(crate) const FORKED: &str =
    "the writer belongs to the process that made it: a forked child cannot write through it";

/// An error of encoding or framing the chunk at `pos`.
pub(crate) fn encode_error(pos: u64, source: EncodeError) -> Error {
    Error::new(ErrorKind::Encode { pos, source })
}

/// C++ `PosAfterPadding`: the first position after `pos` that is a multiple of
/// `padding`, leaves room for a chunk header, and is a possible chunk boundary.
pub(crate) fn pos_after_padding(pos: u64, padding: u64) -> Option<u64> {
    if padding <= 1 {
        return Some(pos);
    }
    let remainder = pos % padding;
    if remainder == 0 {
        return Some(pos);
    }
    let mut length = padding - remainder;
    while length < CHUNK_HEADER_SIZE {
        length = length.checked_add(padding)?;
    }
    let mut end = pos.checked_add(length)?;
    while !is_possible_chunk_boundary(end) {
        end = end.checked_add(padding)?;
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_positions() {
        assert_eq!(pos_after_padding(64, 1), Some(64));
        assert_eq!(pos_after_padding(65536, 65536), Some(65536));
        assert_eq!(pos_after_padding(64, 65536), Some(65536));
        // Less than a chunk header before the boundary: go one more period.
        assert_eq!(pos_after_padding(65536 - 10, 65536), Some(131072));
        // Padding 100 from 95: 100 leaves 5 < 40 bytes, so 200.
        assert_eq!(pos_after_padding(95, 100), Some(200));
        assert_eq!(pos_after_padding(u64::MAX - 5, 100), None);
    }

    /// A destination failing at its first write.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("broken"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn after_a_failure_nothing_more_is_written() {
        let mut sink = ChunkSink::new(Dest::Direct(Broken), 0);
        sink.write_new_chunk(ChunkType::FileSignature, b"", 0, 0).unwrap();
        let error = sink.flush().unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::Io(_)), "{error}");
        assert!(sink.failed);
        let again = sink.write_new_chunk(ChunkType::Padding, b"", 0, 0).unwrap_err();
        assert!(matches!(again.kind(), ErrorKind::Usage(_)), "{again}");
        assert!(!sink.is_open());
    }
}
