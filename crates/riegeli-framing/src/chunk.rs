//! Laying a chunk out in the file (block headers and padding inserted) and
//! gathering it back from physical bytes.

use crate::block_header::{BlockHeader, HASH_CHECKS_DISABLED};
use crate::chunk_header::ChunkHeader;
use crate::error::{FramingError, FramingErrorKind, OverflowAt};
use crate::position::{
    BLOCK_HEADER_SIZE, BLOCK_SIZE, CHUNK_HEADER_LEN, CHUNK_HEADER_SIZE, add_with_overhead, is_block_boundary,
    is_possible_chunk_boundary, remaining_in_block, to_usize,
};

/// A piece of a chunk's physical bytes, as produced by [`FramedChunk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Chunk data to write as it is.
    Data(&'a [u8]),
    /// A block header or a part of the chunk header, held inline.
    Inline(InlineBytes),
    /// This many zero bytes of padding.
    Zeros(u64),
}

/// Up to 40 bytes held by value (a block header or part of a chunk header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InlineBytes {
    buf: [u8; CHUNK_HEADER_LEN],
    len: u8,
}

impl InlineBytes {
    fn new(bytes: &[u8]) -> Self {
        let mut buf = [0u8; CHUNK_HEADER_LEN];
        let mut len = 0u8;
        for (dst, &src) in buf.iter_mut().zip(bytes) {
            *dst = src;
            len += 1;
        }
        Self { buf, len }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.buf.get(..usize::from(self.len)).unwrap_or_default()
    }
}

/// The physical bytes of one chunk, from its beginning to its end: the chunk
/// header and data with a block header at every 64 KiB boundary, then zero
/// padding up to the spec's `chunk_end` (so the chunk covers at least
/// `num_records` bytes and does not end inside or right after a block header).
///
/// An iterator of [`Piece`]s, so a writer can send data to its sink without
/// copying it; [`frame_chunk`] collects the pieces into a `Vec`.
#[derive(Debug, Clone)]
pub struct FramedChunk<'a> {
    begin: u64,
    end: u64,
    pos: u64,
    /// Logical (block-header-free) offset within header + data + padding.
    logical: u64,
    header: [u8; CHUNK_HEADER_LEN],
    data: &'a [u8],
}

impl<'a> FramedChunk<'a> {
    /// Lays out a chunk with `header` and `data` beginning at `chunk_begin`.
    ///
    /// Errors if `chunk_begin` is not a possible chunk boundary, if
    /// `data.len()` differs from the header's `data_size`, or if the chunk
    /// would end past `u64::MAX`.
    pub fn new(chunk_begin: u64, header: &ChunkHeader, data: &'a [u8]) -> Result<Self, FramingError> {
        if !is_possible_chunk_boundary(chunk_begin) {
            return Err(FramingError::new(chunk_begin, FramingErrorKind::InvalidChunkBoundary));
        }
        if data.len() as u64 != header.data_size() {
            return Err(FramingError::new(
                chunk_begin,
                FramingErrorKind::InvalidChunkHeader { reason: "data_size differs from the data given" },
            ));
        }
        let end = header.chunk_end(chunk_begin)?;
        Ok(Self { begin: chunk_begin, end, pos: chunk_begin, logical: 0, header: header.encode(), data })
    }

    /// Where the chunk begins.
    pub fn chunk_begin(&self) -> u64 {
        self.begin
    }

    /// Where the chunk ends (the next chunk begins), padding included.
    pub fn chunk_end(&self) -> u64 {
        self.end
    }
}

impl<'a> Iterator for FramedChunk<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        if self.pos >= self.end {
            return None;
        }
        if is_block_boundary(self.pos) {
            // `pos` lies in [begin, end): the fields cannot fail.
            let header = BlockHeader { previous_chunk: self.pos - self.begin, next_chunk: self.end - self.pos };
            self.pos += BLOCK_HEADER_SIZE;
            return Some(Piece::Inline(InlineBytes::new(&header.encode())));
        }
        let room = remaining_in_block(self.pos).min(self.end - self.pos);
        let data_end = CHUNK_HEADER_SIZE + self.data.len() as u64;
        let (piece, len) = if self.logical < CHUNK_HEADER_SIZE {
            let from = to_usize(self.logical);
            let to = to_usize((self.logical + room).min(CHUNK_HEADER_SIZE));
            // The header is a fixed array of 40 bytes and from < to <= 40.
            let piece = self.header.get(from..to).unwrap_or_default();
            (Piece::Inline(InlineBytes::new(piece)), piece.len() as u64)
        } else if self.logical < data_end {
            let from = to_usize(self.logical - CHUNK_HEADER_SIZE);
            let to = to_usize((self.logical + room).min(data_end) - CHUNK_HEADER_SIZE);
            let piece = self.data.get(from..to).unwrap_or_default();
            (Piece::Data(piece), piece.len() as u64)
        } else {
            (Piece::Zeros(room), room)
        };
        self.pos += len;
        self.logical += len;
        Some(piece)
    }
}

/// Appends the physical bytes of a chunk beginning at `chunk_begin` to `out`
/// and returns the chunk's end position. See [`FramedChunk`].
pub fn frame_chunk(
    chunk_begin: u64,
    header: &ChunkHeader,
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<u64, FramingError> {
    let framed = FramedChunk::new(chunk_begin, header, data)?;
    let end = framed.chunk_end();
    if let Ok(len) = usize::try_from(end - chunk_begin) {
        out.reserve(len);
    }
    for piece in framed {
        match piece {
            Piece::Data(bytes) => out.extend_from_slice(bytes),
            Piece::Inline(bytes) => out.extend_from_slice(bytes.as_slice()),
            Piece::Zeros(n) => out.resize(out.len().saturating_add(to_usize(n)), 0),
        }
    }
    Ok(end)
}

/// Reads the block header at `block_begin` inside a chunk and checks it against
/// the chunk's beginning (and end, when known).
///
/// A block header whose hash does not match is ignored, as the spec says
/// ("this block header is corrupted and must be ignored"): the chunk header
/// and data hashes still protect the chunk. Returns `Ok(false)` for such a
/// header. A header with a valid hash that points elsewhere is an error.
fn check_block_header_in_chunk(
    physical: &[u8],
    chunk_begin: u64,
    block_begin: u64,
    chunk_end: Option<u64>,
) -> Result<bool, FramingError> {
    let offset = to_usize(block_begin - chunk_begin);
    let input = physical.get(offset..).unwrap_or_default();
    let header = match BlockHeader::parse(input, block_begin) {
        Ok((header, _)) => header,
        Err(e) if matches!(e.kind(), FramingErrorKind::HashMismatch { .. }) => return Ok(false),
        Err(e) => return Err(e),
    };
    if HASH_CHECKS_DISABLED {
        return Ok(true);
    }
    let mismatch = |field, expected, found| {
        Err(FramingError::new(block_begin, FramingErrorKind::BlockHeaderMismatch { field, expected, found }))
    };
    if header.previous_chunk != block_begin - chunk_begin {
        return mismatch("previous_chunk", block_begin - chunk_begin, header.previous_chunk);
    }
    if let Some(end) = chunk_end
        && header.next_chunk != end - block_begin
    {
        return mismatch("next_chunk", end - block_begin, header.next_chunk);
    }
    Ok(true)
}

/// Parses the header of the chunk beginning at `chunk_begin` from `input`,
/// the file's physical bytes from `chunk_begin` on (block headers included).
///
/// Returns the header and the number of physical bytes it spans. Block headers
/// met on the way are verified (constraints, `previous_chunk`; one whose hash
/// fails is ignored, as the spec says). With
/// too little input the error is [`FramingErrorKind::Incomplete`] and says how
/// many bytes are needed.
pub fn parse_chunk_header(input: &[u8], chunk_begin: u64) -> Result<(ChunkHeader, usize), FramingError> {
    if !is_possible_chunk_boundary(chunk_begin) {
        return Err(FramingError::new(chunk_begin, FramingErrorKind::InvalidChunkBoundary));
    }
    let header_end = add_with_overhead(chunk_begin, CHUNK_HEADER_SIZE).at(chunk_begin, "chunk header end")?;
    let span = header_end - chunk_begin;
    if (input.len() as u64) < span {
        return Err(FramingError::incomplete(chunk_begin, "chunk header", span, input.len()));
    }
    let mut bytes = [0u8; CHUNK_HEADER_LEN];
    let mut filled = 0usize;
    let mut pos = chunk_begin;
    while filled < bytes.len() {
        if is_block_boundary(pos) {
            check_block_header_in_chunk(input, chunk_begin, pos, None)?;
            pos += BLOCK_HEADER_SIZE;
            continue;
        }
        let take = to_usize(remaining_in_block(pos)).min(bytes.len() - filled);
        let from = to_usize(pos - chunk_begin);
        let src = input.get(from..from + take).unwrap_or_default();
        bytes.get_mut(filled..filled + take).unwrap_or_default().copy_from_slice(src);
        filled += take;
        pos += take as u64;
    }
    let (header, _) = ChunkHeader::parse(&bytes, chunk_begin)?;
    Ok((header, to_usize(span)))
}

/// A whole chunk found in physical bytes by [`parse_chunk`].
#[derive(Debug, Clone)]
pub struct ChunkView<'a> {
    begin: u64,
    end: u64,
    header: ChunkHeader,
    /// The physical bytes `[begin, end)`.
    physical: &'a [u8],
    /// Positions of block headers inside the chunk that failed their hash and were ignored.
    damaged_block_headers: Vec<u64>,
}

impl<'a> ChunkView<'a> {
    /// The chunk header.
    pub fn header(&self) -> &ChunkHeader {
        &self.header
    }
    /// Where the chunk begins.
    pub fn chunk_begin(&self) -> u64 {
        self.begin
    }
    /// Where the chunk ends (padding included): where the next chunk begins.
    pub fn chunk_end(&self) -> u64 {
        self.end
    }
    /// The physical bytes of the chunk, block headers and padding included.
    pub fn physical(&self) -> &'a [u8] {
        self.physical
    }

    /// Positions of block headers inside the chunk whose hash failed. They were
    /// ignored (the spec says a corrupted block header "must be ignored"); the
    /// chunk itself is intact if its data hash matches.
    pub fn damaged_block_headers(&self) -> &[u64] {
        &self.damaged_block_headers
    }

    /// The offset of the data's first byte within [`physical`](Self::physical).
    pub fn data_offset(&self) -> usize {
        let data_begin = add_with_overhead(self.begin, CHUNK_HEADER_SIZE).unwrap_or(self.end);
        let data_begin = if is_block_boundary(data_begin) && self.header.data_size() > 0 {
            data_begin + BLOCK_HEADER_SIZE
        } else {
            data_begin
        };
        usize::try_from(data_begin - self.begin).unwrap_or(usize::MAX)
    }

    /// The chunk data in pieces, split where block headers interrupt it.
    pub fn data_pieces(&self) -> DataPieces<'a> {
        DataPieces::new(self.physical, self.begin, &self.header)
    }

    /// The chunk data as one slice, if no block header interrupts it.
    pub fn contiguous_data(&self) -> Option<&'a [u8]> {
        let mut pieces = self.data_pieces();
        let first = pieces.next().unwrap_or_default();
        pieces.next().is_none().then_some(first)
    }

    /// Appends the chunk data to `out`.
    pub fn copy_data_into(&self, out: &mut Vec<u8>) {
        out.reserve(to_usize(self.header.data_size()));
        for piece in self.data_pieces() {
            out.extend_from_slice(piece);
        }
    }

    /// The hash of the chunk data.
    pub fn compute_data_hash(&self) -> u64 {
        let mut hasher = riegeli_hash::Hasher::new();
        for piece in self.data_pieces() {
            hasher.update(piece);
        }
        hasher.finish()
    }

    /// Checks the data hash stored in the chunk header.
    pub fn verify_data_hash(&self) -> Result<(), FramingError> {
        check_data_hash(&self.header, self.begin, self.compute_data_hash())
    }
}

/// Checks the data hash in `header` of the chunk at `chunk_begin` against its
/// gathered `data` (block headers removed): the check of
/// [`ChunkView::verify_data_hash`], for data already copied out of the file
/// (e.g. hashed on another thread than the one that read it).
pub fn verify_data_hash(header: &ChunkHeader, chunk_begin: u64, data: &[u8]) -> Result<(), FramingError> {
    check_data_hash(header, chunk_begin, riegeli_hash::hash(data))
}

fn check_data_hash(header: &ChunkHeader, chunk_begin: u64, computed: u64) -> Result<(), FramingError> {
    if computed != header.data_hash() && !HASH_CHECKS_DISABLED {
        return Err(FramingError::hash_mismatch(chunk_begin, "chunk data", header.data_hash(), computed));
    }
    Ok(())
}

/// Where the pieces of a chunk's data lie among its physical bytes: ranges of
/// offsets from the chunk's beginning, in order, split where block headers
/// interrupt the data; what [`DataPieces`] and [`gather_data_in_place`] walk.
#[derive(Debug, Clone)]
pub struct DataRanges {
    chunk_begin: u64,
    pos: u64,
    left: u64,
}

impl DataRanges {
    /// The data ranges of the chunk at `chunk_begin` with this `header`.
    pub fn new(chunk_begin: u64, header: &ChunkHeader) -> Self {
        match add_with_overhead(chunk_begin, CHUNK_HEADER_SIZE) {
            Ok(pos) => DataRanges { chunk_begin, pos, left: header.data_size() },
            // No data fits past u64::MAX.
            Err(_) => DataRanges { chunk_begin, pos: chunk_begin, left: 0 },
        }
    }
}

impl Iterator for DataRanges {
    type Item = std::ops::Range<usize>;

    fn next(&mut self) -> Option<std::ops::Range<usize>> {
        if self.left == 0 {
            return None;
        }
        if is_block_boundary(self.pos) {
            self.pos = self.pos.saturating_add(BLOCK_HEADER_SIZE);
        }
        let take = remaining_in_block(self.pos).min(self.left);
        let from = to_usize(self.pos.saturating_sub(self.chunk_begin));
        self.pos = self.pos.saturating_add(take);
        self.left -= take;
        Some(from..from.saturating_add(to_usize(take)))
    }
}

/// The pieces of a chunk's data between block headers; see [`ChunkView::data_pieces`].
#[derive(Debug, Clone)]
pub struct DataPieces<'a> {
    physical: &'a [u8],
    ranges: DataRanges,
}

impl<'a> DataPieces<'a> {
    /// The data pieces of the chunk at `chunk_begin` with this `header`, whose
    /// physical bytes (from `chunk_begin` on) are `physical`: for bytes that
    /// [`parse_chunk`] accepted earlier, e.g. to gather the data on another
    /// thread than the one that parsed it. If `physical` is too short, the
    /// pieces end where it does.
    pub fn new(physical: &'a [u8], chunk_begin: u64, header: &ChunkHeader) -> Self {
        DataPieces { physical, ranges: DataRanges::new(chunk_begin, header) }
    }
}

impl<'a> Iterator for DataPieces<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        // ChunkView guarantees the physical bytes cover the whole chunk;
        // `DataPieces::new`'s callers may not, and then the pieces end here.
        self.physical.get(self.ranges.next()?)
    }
}

/// Turns the physical bytes of the chunk at `chunk_begin` with this `header`
/// (as [`parse_chunk`] accepted them) into its data, in place: the pieces
/// move to the front, over the chunk header and block headers, and the rest
/// is cut off. Gathers a large chunk without a second buffer the size of it.
/// If `physical` is too short, the data ends where [`DataPieces`] end.
pub fn gather_data_in_place(physical: &mut Vec<u8>, chunk_begin: u64, header: &ChunkHeader) {
    let mut at = 0;
    for range in DataRanges::new(chunk_begin, header) {
        // As with `DataPieces`, a piece cut short ends the data before it.
        if range.end > physical.len() {
            break;
        }
        let n = range.end - range.start;
        // Pieces only move toward the front: `at` never passes `range.start`.
        physical.copy_within(range, at);
        at += n;
    }
    physical.truncate(at);
}

/// Parses the whole chunk beginning at `chunk_begin` from `input`, the file's
/// physical bytes from `chunk_begin` on.
///
/// Verifies the chunk header and every block header inside the chunk
/// (hash, constraints, and that `previous_chunk`/`next_chunk` point at this
/// chunk's beginning and end). The data hash is left to the caller
/// ([`ChunkView::verify_data_hash`]). With too little input the error is
/// [`FramingErrorKind::Incomplete`] with the number of bytes needed (the
/// chunk's whole physical length, which the caller should check against its
/// limits before reading that much).
pub fn parse_chunk(input: &[u8], chunk_begin: u64) -> Result<ChunkView<'_>, FramingError> {
    let (header, _) = parse_chunk_header(input, chunk_begin)?;
    let end = header.chunk_end(chunk_begin)?;
    let len = end - chunk_begin;
    let physical = match usize::try_from(len).ok().and_then(|len| input.get(..len)) {
        Some(physical) => physical,
        None => return Err(FramingError::incomplete(chunk_begin, "chunk", len, input.len())),
    };
    let mut damaged_block_headers = Vec::new();
    // No block boundary lies past u64::MAX: a chunk in the last block has no block header.
    let mut block = crate::position::next_block_boundary(chunk_begin).ok();
    while let Some(at) = block.filter(|&at| at < end) {
        if !check_block_header_in_chunk(physical, chunk_begin, at, Some(end))? {
            damaged_block_headers.push(at);
        }
        block = at.checked_add(BLOCK_SIZE);
    }
    Ok(ChunkView { begin: chunk_begin, end, header, physical, damaged_block_headers })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_chunk_is_the_fixed_file_start() {
        let header = ChunkHeader::for_data(b's', b"", 0, 0).unwrap();
        let mut out = Vec::new();
        assert_eq!(frame_chunk(0, &header, b"", &mut out), Ok(64));
        assert_eq!(&out[..8], &[0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f]);
        assert_eq!(&out[24..32], &[0x91, 0xba, 0xc2, 0x3c, 0x92, 0x87, 0xe1, 0xa9]);
        let view = parse_chunk(&out, 0).unwrap();
        assert_eq!(view.header(), &header);
        assert_eq!(view.chunk_end(), 64);
        assert_eq!(view.contiguous_data(), Some(&b""[..]));
    }

    #[test]
    fn data_pieces_of_checked_bytes_match_the_view_and_stop_at_short_input() {
        let data: Vec<u8> = (0..150_000u32).map(|i| (i % 253) as u8).collect();
        let header = ChunkHeader::for_data(b'r', &data, 1, 2).unwrap();
        let begin = 65_000;
        let mut out = Vec::new();
        frame_chunk(begin, &header, &data, &mut out).unwrap();
        let view = parse_chunk(&out, begin).unwrap();
        let pieces: Vec<&[u8]> = DataPieces::new(&out, begin, &header).collect();
        assert_eq!(pieces, view.data_pieces().collect::<Vec<_>>());
        assert_eq!(pieces.concat(), data);
        let lens = |pieces: &[&[u8]]| pieces.iter().map(|p| p.len()).collect::<Vec<_>>();
        // `out` starts at `begin`: cut inside the third piece (which starts at 131,096).
        let cut = (135_000 - begin) as usize;
        let short: Vec<&[u8]> = DataPieces::new(&out[..cut], begin, &header).collect();
        assert_eq!(lens(&short), lens(&pieces[..2]), "{:?}", lens(&pieces));
        // In place, a short input keeps what it has of the data.
        let mut in_place = out[..cut].to_vec();
        gather_data_in_place(&mut in_place, begin, &header);
        assert!(in_place == short.concat(), "in place: {} bytes", in_place.len());
        // A chunk whose data would lie past u64::MAX has no pieces.
        assert_eq!(DataPieces::new(&out, u64::MAX - 10, &header).count(), 0);
    }

    #[test]
    fn chunk_across_blocks_round_trips() {
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let header = ChunkHeader::for_data(b'r', &data, 3, 7).unwrap();
        for begin in [0, 64, 65_000, 65_511, 65_536, 65_561, 3 * 65_536 - 1] {
            let mut out = Vec::new();
            let end = frame_chunk(begin, &header, &data, &mut out).unwrap();
            assert_eq!(out.len() as u64, end - begin);
            let view = parse_chunk(&out, begin).unwrap();
            let mut gathered = Vec::new();
            view.copy_data_into(&mut gathered);
            assert_eq!(gathered, data, "begin {begin}");
            let mut in_place = out.clone();
            gather_data_in_place(&mut in_place, begin, &header);
            assert!(in_place == data, "in place, begin {begin}");
            assert!(view.verify_data_hash().is_ok());
            assert!(view.contiguous_data().is_none());
            // One byte short is incomplete and asks for the whole chunk.
            let err = parse_chunk(&out[..out.len() - 1], begin).unwrap_err();
            assert_eq!(err.needed(), Some(end - begin));
        }
    }

    #[test]
    fn padding_covers_num_records() {
        let header = ChunkHeader::for_data(b'r', b"", 1000, 0).unwrap();
        let mut out = Vec::new();
        assert_eq!(frame_chunk(64, &header, b"", &mut out), Ok(1064));
        assert!(out[40..].iter().all(|&b| b == 0));
    }

    #[test]
    fn rejects_bad_boundary_and_mismatched_block_header() {
        let header = ChunkHeader::for_data(b'r', b"abc", 1, 3).unwrap();
        let mut out = Vec::new();
        assert!(frame_chunk(10, &header, b"abc", &mut out).is_err());
        assert!(frame_chunk(64, &header, b"ab", &mut out).is_err());
        // A chunk from 65_500 crosses a block header; claim it begins elsewhere.
        let data = vec![7u8; 100];
        let header = ChunkHeader::for_data(b'r', &data, 1, 100).unwrap();
        let mut out = Vec::new();
        frame_chunk(65_500, &header, &data, &mut out).unwrap();
        let block = 36usize;
        let forged = BlockHeader { previous_chunk: 35, next_chunk: 200 }.encode();
        out[block..block + 24].copy_from_slice(&forged);
        let err = parse_chunk(&out, 65_500).unwrap_err();
        assert!(matches!(err.kind(), FramingErrorKind::BlockHeaderMismatch { field: "previous_chunk", .. }));
        assert_eq!(err.position(), 65_536);
    }

    #[test]
    fn damaged_block_header_is_ignored() {
        let data: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        let header = ChunkHeader::for_data(b'r', &data, 1, 70_000).unwrap();
        let mut out = Vec::new();
        frame_chunk(64, &header, &data, &mut out).unwrap();
        out[65_536 - 64 + 3] ^= 0x40;
        let view = parse_chunk(&out, 64).unwrap();
        assert_eq!(view.damaged_block_headers(), &[65_536]);
        assert!(view.verify_data_hash().is_ok());
        assert_eq!(view.data_offset(), 40);
    }
}
