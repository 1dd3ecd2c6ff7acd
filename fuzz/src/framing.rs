//! The checks behind the riegeli-framing fuzz targets: each takes the raw fuzz
//! input, calls the framing API on it and asserts the properties that must
//! hold whatever the bytes are.
//!
//! The same functions replay `fuzz/regressions/<target>/` in
//! `crates/riegeli-framing/tests/fuzz_regressions.rs` (which includes this file
//! with `#[path]`), so a crasher is replayed through exactly the calls that
//! found it. Under `cfg(fuzzing)` riegeli-framing skips its hash checks (and the
//! block-header consistency checks behind them); the assertions here hold in
//! both configurations and are stricter when the checks are on.
//!
//! Input layouts are documented on each function. Missing bytes read as zero,
//! so every input, even an empty one, is valid.

use std::ops::Range;

use riegeli_framing::{
    BLOCK_HEADER_SIZE, BLOCK_SIZE, BlockHeader, BlockLocation, CHUNK_HEADER_SIZE, ChunkHeader, FramingError,
    FramingErrorKind, add_with_overhead, block_begin, block_header_fields, chunk_end, distance_without_overhead,
    find_block_header, frame_chunk, is_block_boundary, is_possible_chunk_boundary, next_block_boundary,
    num_overhead_blocks, parse_chunk, parse_chunk_header, remaining_in_block, round_up_to_possible_chunk_boundary,
};

/// Whether riegeli-framing was built with its hash checks off (it follows `cfg(fuzzing)`).
const HASH_CHECKS_DISABLED: bool = cfg!(fuzzing);

/// The largest chunk data a `chunk_parse` input frames itself, to keep runs fast.
const MAX_FRAMED_DATA: usize = 1 << 17;

/// Reads fields off the front of the fuzz input; past its end, bytes read as zero.
struct Input<'a> {
    rest: &'a [u8],
}

impl<'a> Input<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { rest: data }
    }

    fn u8(&mut self) -> u8 {
        match self.rest.split_first() {
            Some((&byte, rest)) => {
                self.rest = rest;
                byte
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        let mut bytes = [0u8; 8];
        for byte in &mut bytes {
            *byte = self.u8();
        }
        u64::from_le_bytes(bytes)
    }

    /// A position chosen by a selector byte and a raw `u64`, weighted towards
    /// the edges where the position math changes behaviour.
    fn position(&mut self) -> u64 {
        let selector = self.u8();
        let raw = self.u64();
        match selector % 6 {
            // Anywhere.
            0 => raw,
            // In the first few blocks.
            1 => raw % (4 * BLOCK_SIZE),
            // Within 64 bytes either side of a block boundary.
            2 => (raw & !(BLOCK_SIZE - 1)).wrapping_add(raw & 0x7f).wrapping_sub(64),
            // At a block boundary.
            3 => raw & !(BLOCK_SIZE - 1),
            // Near the end of the position space.
            4 => u64::MAX - raw % (4 * BLOCK_SIZE),
            // A small block index at a block boundary.
            _ => (raw % 64) * BLOCK_SIZE,
        }
    }

    fn rest(self) -> &'a [u8] {
        self.rest
    }
}

/// Asserts the generic properties of an error returned for `input`.
fn check_error(err: &FramingError, input_len: usize) {
    // Display never panics and follows the style (lowercase, no trailing period).
    let message = err.to_string();
    assert!(!message.is_empty() && !message.ends_with('.'), "{message:?}");
    if let Some(needed) = err.needed() {
        assert!(err.is_incomplete() && !err.is_corruption());
        assert!(needed > input_len as u64, "incomplete with {input_len} bytes but needs only {needed}: {err}");
    } else {
        assert!(err.is_corruption());
    }
}

/// Target `block_header`: `BlockHeader::parse` at a position taken from the input.
///
/// Layout: position selector (1 byte), raw position (8 bytes), then the
/// header bytes.
pub fn block_header(data: &[u8]) {
    let mut input = Input::new(data);
    let block_pos = input.position();
    let bytes = input.rest();

    match BlockHeader::parse(bytes, block_pos) {
        Ok((header, consumed)) => {
            assert_eq!(consumed, BLOCK_HEADER_SIZE as usize);
            assert!(is_block_boundary(block_pos));
            assert_eq!(header.validate(block_pos), Ok(()));
            // Encode -> parse agrees, and the encoding keeps the fields read.
            let encoded = header.encode();
            assert_eq!(BlockHeader::parse(&encoded, block_pos), Ok((header, consumed)));
            assert_eq!(encoded.get(8..), bytes.get(8..24));
            if !HASH_CHECKS_DISABLED {
                assert_eq!(encoded.get(..), bytes.get(..24));
            }
            // The chunk it points to begins and ends at possible chunk boundaries.
            let begin = header.chunk_begin(block_pos);
            let end = header.chunk_end(block_pos);
            assert_eq!(begin + header.previous_chunk, block_pos);
            assert_eq!(Some(end), block_pos.checked_add(header.next_chunk));
            assert!(begin <= block_pos && block_pos < end);
            assert!(is_possible_chunk_boundary(begin), "chunk begin {begin}");
            assert!(is_possible_chunk_boundary(end), "chunk end {end}");
            assert_eq!(BlockHeader::for_chunk(block_pos, begin, end), Ok(header));
            // Scanning from the block finds this very header.
            let found = find_block_header(bytes, block_pos);
            assert_eq!(found, Ok(BlockLocation { block_begin: block_pos, header }));
            let next = found.map(|location| location.next_chunk_boundary());
            assert!(next.is_ok_and(|next| next >= block_pos && is_possible_chunk_boundary(next)));
        }
        Err(err) => {
            assert_eq!(err.position(), block_pos);
            check_error(&err, bytes.len());
            assert_eq!(err.is_incomplete(), bytes.len() < BLOCK_HEADER_SIZE as usize);
        }
    }

    // Whatever the bytes, a header with these fields encodes to something that
    // parses exactly when its fields are valid at this position.
    let mut fields = Input::new(bytes.get(8..).unwrap_or_default());
    let header = BlockHeader { previous_chunk: fields.u64(), next_chunk: fields.u64() };
    let parsed = BlockHeader::parse(&header.encode(), block_pos);
    assert_eq!(parsed.is_ok(), header.validate(block_pos).is_ok());
    if let Ok((parsed, _)) = parsed {
        assert_eq!(parsed, header);
    }
}

/// Target `chunk_header`: `ChunkHeader::parse` at a position taken from the
/// input, and `chunk_end` of the fields read at a second position.
///
/// Layout: position selector and raw position (9 bytes), a second selector and
/// raw position (9 bytes), then the header bytes.
pub fn chunk_header(data: &[u8]) {
    let mut input = Input::new(data);
    let chunk_pos = input.position();
    let other_pos = input.position();
    let bytes = input.rest();

    match ChunkHeader::parse(bytes, chunk_pos) {
        Ok((header, consumed)) => {
            assert_eq!(consumed, CHUNK_HEADER_SIZE as usize);
            let encoded = header.encode();
            assert_eq!(ChunkHeader::parse(&encoded, chunk_pos), Ok((header, consumed)));
            assert_eq!(encoded.get(8..), bytes.get(8..40));
            if !HASH_CHECKS_DISABLED {
                assert_eq!(encoded.get(..), bytes.get(..40));
            }
            let rebuilt = ChunkHeader::new(
                header.chunk_type(),
                header.data_size(),
                header.data_hash(),
                header.num_records(),
                header.decoded_data_size(),
            );
            assert_eq!(rebuilt, Ok(header));
            // Parsing checked that the chunk's end fits.
            let end = header.chunk_end(chunk_pos).expect("a parsed header has a chunk end");
            assert_eq!(Ok(end), chunk_end(chunk_pos, header.data_size(), header.num_records()));
            let min_len = CHUNK_HEADER_SIZE.checked_add(header.data_size());
            assert!(min_len.is_some_and(|min_len| end - chunk_pos >= min_len));
            assert!(end - chunk_pos >= header.num_records());
        }
        Err(err) => {
            assert_eq!(err.position(), chunk_pos);
            check_error(&err, bytes.len());
            assert_eq!(err.is_incomplete(), bytes.len() < CHUNK_HEADER_SIZE as usize);
        }
    }

    // `chunk_end` of arbitrary fields at another position: an error, never a panic.
    let mut fields = Input::new(bytes.get(8..).unwrap_or_default());
    let data_size = fields.u64();
    let _data_hash = fields.u64();
    let num_records = fields.u64() >> 8;
    if let Ok(header) = ChunkHeader::new(b'r', data_size, 0, num_records, 0) {
        let end = header.chunk_end(other_pos);
        assert_eq!(end.is_ok(), chunk_end(other_pos, data_size, num_records).is_ok());
        if let Err(err) = end {
            check_error(&err, 0);
        }
    }
}

/// Target `position`: the position functions on an arbitrary triple `(p, s, q)`
/// and the invariants that tie them together.
///
/// Layout: `p` (selector + 8 bytes), `s` (8 bytes, also used as a size) and `q`
/// (selector + 8 bytes).
pub fn position(data: &[u8]) {
    let mut input = Input::new(data);
    let p = input.position();
    let s = input.u64();
    let q = input.position();
    check_position(p, s);
    check_position(q, s);
    check_pair(p.min(q), p.max(q));
    check_chunk_end(p, s, q);
    check_chunk_end(p, s % (4 * BLOCK_SIZE), q % (4 * BLOCK_SIZE));
    // Sizes small enough to cross a few block headers, and a boundary-aligned start.
    check_position(p, s % (4 * BLOCK_SIZE));
    check_position(block_begin(p), s % (4 * BLOCK_SIZE));
}

fn check_position(p: u64, s: u64) {
    let remaining = remaining_in_block(p);
    assert!(remaining < BLOCK_SIZE);
    assert_eq!(remaining == 0, is_block_boundary(p));
    assert!(is_block_boundary(p.wrapping_add(remaining)));
    if is_block_boundary(p) {
        assert!(is_possible_chunk_boundary(p));
    }
    // A chunk may begin at a block boundary or past the first 24 bytes of a block.
    assert_eq!(is_possible_chunk_boundary(p), p.is_multiple_of(BLOCK_SIZE) || p % BLOCK_SIZE > BLOCK_HEADER_SIZE);

    let begin = block_begin(p);
    assert!(begin <= p && p - begin < BLOCK_SIZE && is_block_boundary(begin));
    match next_block_boundary(p) {
        Ok(next) => assert!(next >= p && next - p == remaining && is_block_boundary(next)),
        Err(_) => assert!(p.checked_add(remaining).is_none()),
    }

    match round_up_to_possible_chunk_boundary(p) {
        Ok(r) => {
            assert!(r >= p && r - p <= BLOCK_HEADER_SIZE + 1, "round_up({p}) = {r}");
            assert!(is_possible_chunk_boundary(r), "round_up({p}) = {r}");
            if is_possible_chunk_boundary(p) {
                assert_eq!(r, p);
            }
            // It is the smallest: nothing between p and r is a possible boundary.
            assert!((p..r).all(|x| !is_possible_chunk_boundary(x)), "round_up({p}) = {r}");
        }
        Err(_) => panic!("round_up overflowed at {p}: the last block of u64 ends past 25"),
    }

    let overhead = num_overhead_blocks(p, s);
    match add_with_overhead(p, s) {
        Ok(end) => {
            let plain = p.checked_add(s);
            assert!(plain.is_some_and(|plain| end >= plain), "add_with_overhead({p}, {s}) = {end}");
            let overhead = overhead.expect("add_with_overhead ok but num_overhead_blocks fails");
            assert_eq!(Some(end - p - s), overhead.checked_mul(BLOCK_HEADER_SIZE));
            if is_possible_chunk_boundary(p) {
                // The inverse, and the end is a possible chunk boundary again.
                assert_eq!(distance_without_overhead(p, end), Ok(s), "p {p}, s {s}, end {end}");
                assert!(is_possible_chunk_boundary(end), "add_with_overhead({p}, {s}) = {end}");
                // Laying out s bytes in two steps crosses the same headers.
                let half = s / 2;
                let mid = add_with_overhead(p, half);
                assert_eq!(mid.and_then(|mid| add_with_overhead(mid, s - half)), Ok(end), "p {p}, s {s}");
                // One more byte goes strictly further.
                if let Some(s1) = s.checked_add(1)
                    && let Ok(end1) = add_with_overhead(p, s1)
                {
                    assert!(end1 > end);
                }
            }
        }
        Err(_) => {
            // Only a result past u64::MAX may fail.
            let total = overhead
                .ok()
                .and_then(|o| o.checked_mul(BLOCK_HEADER_SIZE))
                .and_then(|o| o.checked_add(s))
                .and_then(|o| o.checked_add(p));
            assert!(total.is_none(), "add_with_overhead({p}, {s}) failed but fits");
        }
    }
}

fn check_pair(begin: u64, end: u64) {
    if let Some(after) = end.checked_add(1) {
        assert!(distance_without_overhead(after, end).is_err());
    }
    match distance_without_overhead(begin, end) {
        Ok(distance) => {
            assert!(distance <= end - begin);
            // Block headers take at most 24 bytes of each block touched.
            let blocks = end / BLOCK_SIZE - begin / BLOCK_SIZE;
            assert!(end - begin - distance <= (blocks + 1) * BLOCK_HEADER_SIZE);
            if is_possible_chunk_boundary(begin) && is_possible_chunk_boundary(end) {
                assert_eq!(add_with_overhead(begin, distance), Ok(end), "begin {begin}, end {end}");
            }
        }
        Err(_) => panic!("distance_without_overhead({begin}, {end}) failed with begin <= end"),
    }
}

fn check_chunk_end(begin: u64, data_size: u64, num_records: u64) {
    let fields = block_header_fields(begin, begin, begin);
    assert!(fields.is_err(), "an empty range holds no block");
    match chunk_end(begin, data_size, num_records) {
        Ok(end) => {
            let content = CHUNK_HEADER_SIZE.checked_add(data_size).and_then(|len| begin.checked_add(len));
            assert!(content.is_some_and(|content| end >= content), "chunk_end({begin}, {data_size}) = {end}");
            assert!(begin.checked_add(CHUNK_HEADER_SIZE).is_some_and(|min| end >= min));
            assert!(begin.checked_add(num_records).is_some_and(|min| end >= min));
            if is_possible_chunk_boundary(begin) {
                assert!(is_possible_chunk_boundary(end), "chunk_end({begin}, ..) = {end}");
            }
            // The block headers inside the chunk point back at its ends.
            if let Ok(block) = next_block_boundary(begin)
                && block < end
            {
                assert_eq!(block_header_fields(block, begin, end), Ok((block - begin, end - block)));
                let header = BlockHeader::for_chunk(block, begin, end);
                let want = BlockHeader { previous_chunk: block - begin, next_chunk: end - block };
                assert_eq!(header, Ok(want));
                if is_possible_chunk_boundary(begin) {
                    assert_eq!(want.validate(block), Ok(()), "chunk [{begin}, {end})");
                }
            }
        }
        Err(_) => {
            // Fails only when one of the two candidate ends does not fit.
            let content = CHUNK_HEADER_SIZE.checked_add(data_size).map(|len| add_with_overhead(begin, len));
            let records = begin.checked_add(num_records).map(round_up_to_possible_chunk_boundary);
            assert!(
                !matches!(content, Some(Ok(_))) || !matches!(records, Some(Ok(_))),
                "chunk_end({begin}, {data_size}, {num_records}) failed but both ends fit"
            );
        }
    }
}

/// Target `chunk_parse`: `parse_chunk_header`, `parse_chunk` and
/// `find_block_header` on bytes taken to begin at a position from the input.
///
/// Layout: a mode byte, then
/// - mode `% 3 == 0` (raw): position (9 bytes), then the file bytes from it;
/// - mode `% 3 == 1` (framed): position (9 bytes, rounded up to a possible
///   chunk boundary), chunk type (1), `num_records` (2), mutation count (1),
///   that many mutations (offset: 2, xor: 1), then the chunk data. The chunk
///   is framed with `frame_chunk`, mutated, and parsed;
/// - mode `% 3 == 2` (file): the valid 64-byte file start (signature chunk)
///   followed by the rest of the input, parsed at position 0 and then from 64.
pub fn chunk_parse(data: &[u8]) {
    let mut input = Input::new(data);
    match input.u8() % 3 {
        0 => {
            let pos = input.position();
            check_chunk_bytes(input.rest(), pos);
        }
        1 => {
            let pos = input.position();
            let pos = round_up_to_possible_chunk_boundary(pos).unwrap_or(pos);
            let chunk_type = input.u8();
            let num_records = u64::from(input.u16());
            let mutations: Vec<(u16, u8)> = (0..input.u8() % 8).map(|_| (input.u16(), input.u8())).collect();
            let data = input.rest();
            let data = data.get(..MAX_FRAMED_DATA).unwrap_or(data);
            let header = ChunkHeader::for_data(chunk_type, data, num_records, data.len() as u64)
                .expect("a 16-bit num_records fits");
            let mut file = Vec::new();
            match frame_chunk(pos, &header, data, &mut file) {
                Ok(end) => {
                    assert_eq!(file.len() as u64, end - pos);
                    // Unmutated, it parses back to the same chunk, byte for byte.
                    let view = parse_chunk(&file, pos).map_err(|err| err.to_string());
                    assert!(view.as_ref().is_ok_and(|view| *view.header() == header), "{view:?}");
                    assert!(parse_chunk(&file, pos).is_ok_and(|view| view.verify_data_hash().is_ok()));
                    check_chunk_bytes(&file, pos);
                    for (offset, xor) in mutations {
                        if let Some(byte) = file.get_mut(usize::from(offset)) {
                            *byte ^= xor;
                        }
                    }
                    check_chunk_bytes(&file, pos);
                }
                Err(err) => {
                    check_error(&err, 0);
                    assert!(chunk_end(pos, data.len() as u64, num_records).is_err(), "{err}");
                }
            }
        }
        _ => {
            let signature = ChunkHeader::for_data(b's', b"", 0, 0).expect("the signature header");
            let mut file = Vec::new();
            assert_eq!(frame_chunk(0, &signature, b"", &mut file), Ok(64));
            file.extend_from_slice(input.rest());
            let view = parse_chunk(&file, 0).map_err(|err| err.to_string());
            assert!(view.is_ok_and(|view| view.chunk_end() == 64 && *view.header() == signature));
            let found = find_block_header(&file, 0);
            assert_eq!(found.map(|location| location.next_chunk_boundary()), Ok(0));
            check_chunk_bytes(&file, 0);
            check_chunk_bytes(file.get(64..).unwrap_or_default(), 64);
        }
    }
}

/// What a byte of a chunk's physical bytes is, by the layout `frame_chunk` produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Region {
    /// Part of the block header at this position.
    BlockHeader(u64),
    HeaderHash,
    HeaderFields,
    Data,
    Padding,
}

/// The regions of the physical bytes of the chunk `[begin, end)` with
/// `data_size` bytes of data, as ranges of offsets from `begin`, in order.
fn regions(begin: u64, end: u64, data_size: u64) -> Vec<(Region, Range<usize>)> {
    let offset = |pos: u64| usize::try_from(pos - begin).expect("the chunk is in memory");
    let data_end = CHUNK_HEADER_SIZE.saturating_add(data_size);
    let mut out = Vec::new();
    let mut pos = begin;
    let mut logical = 0u64;
    while pos < end {
        if is_block_boundary(pos) {
            let len = BLOCK_HEADER_SIZE.min(end - pos);
            out.push((Region::BlockHeader(pos), offset(pos)..offset(pos + len)));
            pos += len;
            continue;
        }
        let (region, region_end) = if logical < 8 {
            (Region::HeaderHash, 8)
        } else if logical < CHUNK_HEADER_SIZE {
            (Region::HeaderFields, CHUNK_HEADER_SIZE)
        } else if logical < data_end {
            (Region::Data, data_end)
        } else {
            (Region::Padding, u64::MAX)
        };
        let len = (region_end - logical).min(remaining_in_block(pos)).min(end - pos);
        out.push((region, offset(pos)..offset(pos + len)));
        pos += len;
        logical += len;
    }
    out
}

/// Whether `bytes` are all zero (compared a slice at a time: the fuzz build
/// instruments every comparison, so a byte loop over 64 KiB is slow).
fn all_zero(bytes: &[u8]) -> bool {
    static ZEROS: [u8; 4096] = [0; 4096];
    bytes.chunks(ZEROS.len()).all(|chunk| ZEROS.get(..chunk.len()) == Some(chunk))
}

/// The three parsers on `bytes`, the file's physical bytes from `pos` on.
fn check_chunk_bytes(bytes: &[u8], pos: u64) {
    let header = parse_chunk_header(bytes, pos);
    match &header {
        Ok((_, span)) => {
            assert!(is_possible_chunk_boundary(pos));
            assert_eq!(add_with_overhead(pos, CHUNK_HEADER_SIZE).map(|end| end - pos), Ok(*span as u64));
            assert!(*span <= bytes.len());
        }
        Err(err) => check_error(err, bytes.len()),
    }

    match parse_chunk(bytes, pos) {
        Ok(view) => {
            let (header, _) = header.expect("parse_chunk ok but parse_chunk_header failed");
            assert_eq!(*view.header(), header);
            assert_eq!(view.chunk_begin(), pos);
            let end = view.chunk_end();
            assert_eq!(header.chunk_end(pos), Ok(end));
            let physical = view.physical();
            assert_eq!(physical.len() as u64, end - pos);
            assert_eq!(bytes.get(..physical.len()), Some(physical));

            // The data pieces add up to data_size, and agree with the other accessors.
            let pieces: Vec<&[u8]> = view.data_pieces().collect();
            let total: u64 = pieces.iter().map(|piece| piece.len() as u64).sum();
            assert_eq!(total, header.data_size());
            assert!(pieces.iter().all(|piece| !piece.is_empty()));
            let data = pieces.concat();
            let mut copied = Vec::new();
            view.copy_data_into(&mut copied);
            assert_eq!(copied, data);
            assert_eq!(view.contiguous_data().is_some(), pieces.len() <= 1);
            if let Some(contiguous) = view.contiguous_data() {
                assert_eq!(contiguous, data.as_slice());
            }
            let hash = riegeli_hash::hash(&data);
            assert_eq!(view.compute_data_hash(), hash);
            assert_eq!(view.verify_data_hash().is_ok(), hash == header.data_hash() || HASH_CHECKS_DISABLED);

            // Block headers ignored for a failing hash: block boundaries inside
            // the chunk, in order, each failing its hash.
            let damaged = view.damaged_block_headers();
            assert!(damaged.windows(2).all(|pair| pair[0] < pair[1]));
            for &at in damaged {
                assert!(is_block_boundary(at) && pos < at && at < end, "damaged block header at {at}");
                let offset = usize::try_from(at - pos).unwrap_or(usize::MAX);
                let parsed = physical.get(offset..).map(|rest| BlockHeader::parse(rest, at));
                let hash_fails = parsed.is_some_and(|parsed| {
                    parsed.is_err_and(|err| matches!(err.kind(), FramingErrorKind::HashMismatch { .. }))
                });
                assert!(hash_fails, "block header at {at} reported damaged but its hash matches");
            }

            // Re-framing the header and data at the same position gives the
            // same physical bytes, except where the parser did not (or, with
            // hash checks off, could not) pin them down.
            let mut reframed = Vec::new();
            assert_eq!(frame_chunk(pos, &header, &data, &mut reframed), Ok(end));
            assert_eq!(reframed.len(), physical.len());
            let regions = regions(pos, end, header.data_size());
            let covered = regions.iter().try_fold(0, |at, (_, range)| (range.start == at).then_some(range.end));
            assert_eq!(covered, Some(physical.len()), "{regions:?}");
            let mut padding_zero = true;
            for (region, range) in regions {
                let (got, want) = (&physical[range.clone()], &reframed[range.clone()]);
                match region {
                    Region::HeaderFields | Region::Data => {
                        assert!(got == want, "{region:?} {range:?}")
                    }
                    Region::BlockHeader(at) => {
                        assert!(got == want || HASH_CHECKS_DISABLED || damaged.contains(&at), "{region:?} {range:?}")
                    }
                    Region::HeaderHash => {
                        assert!(got == want || HASH_CHECKS_DISABLED, "{region:?} {range:?}")
                    }
                    Region::Padding => {
                        assert!(all_zero(want), "reframed padding {range:?}");
                        padding_zero &= all_zero(got);
                    }
                }
            }
            if padding_zero && damaged.is_empty() && !HASH_CHECKS_DISABLED {
                assert_eq!(reframed.as_slice(), physical);
            }
            // Every block header framed inside the chunk is valid and points at it.
            let mut block = next_block_boundary(pos).ok();
            while let Some(at) = block.filter(|&at| at < end) {
                let offset = usize::try_from(at - pos).unwrap_or(usize::MAX);
                let parsed = reframed.get(offset..).map(|rest| BlockHeader::parse(rest, at));
                let want = BlockHeader { previous_chunk: at - pos, next_chunk: end - at };
                assert_eq!(parsed, Some(Ok((want, BLOCK_HEADER_SIZE as usize))));
                block = at.checked_add(BLOCK_SIZE);
            }
        }
        Err(err) => {
            check_error(&err, bytes.len());
            if err.is_incomplete()
                && let Ok((header, _)) = header
            {
                // Only the whole chunk can be missing once its header parsed.
                let needed = header.chunk_end(pos).map(|end| end - pos);
                assert_eq!(needed.ok(), err.needed(), "{err}");
            }
        }
    }

    match find_block_header(bytes, pos) {
        Ok(location) => {
            let at = location.block_begin;
            assert!(at >= pos && is_block_boundary(at));
            let offset = usize::try_from(at - pos).unwrap_or(usize::MAX);
            let parsed = bytes.get(offset..).map(|rest| BlockHeader::parse(rest, at));
            assert_eq!(parsed, Some(Ok((location.header, BLOCK_HEADER_SIZE as usize))));
            // Every block boundary skipped on the way held an invalid header.
            let mut skipped = next_block_boundary(pos).ok();
            while let Some(block) = skipped.filter(|&block| block < at) {
                let offset = usize::try_from(block - pos).unwrap_or(usize::MAX);
                assert!(bytes.get(offset..).is_some_and(|rest| BlockHeader::parse(rest, block).is_err()));
                skipped = block.checked_add(BLOCK_SIZE);
            }
            let begin = location.interrupted_chunk_begin();
            let next = location.next_chunk_boundary();
            assert!(begin <= at && next >= at);
            assert!(is_possible_chunk_boundary(begin) && is_possible_chunk_boundary(next));
        }
        Err(err) => check_error(&err, bytes.len()),
    }
}
