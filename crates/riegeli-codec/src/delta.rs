//! Parquet `DELTA_BINARY_PACKED` (encoding 5) for INT32 and INT64 columns.
//!
//! The format is summarised in `spec/delta-binary-packed.md`, section 4: a
//! header (`block_size`, `miniblocks_per_block`, `total_value_count`, ZigZag
//! first value, all ULEB128), then blocks of `block_size` deltas. Each block
//! stores its minimum delta (ZigZag ULEB128), one bit-width byte per miniblock,
//! and the miniblocks' deltas minus that minimum, bit-packed LSB-first.
//!
//! - The encoders write exactly what Apache Arrow's C++ writer (pyarrow)
//!   writes: 128-delta blocks of 4 miniblocks for INT32, 256-delta blocks of 4
//!   miniblocks for INT64, the *signed* minimum delta, zero padding, and width
//!   0 for unused miniblocks (section 4.8).
//! - The decoders accept every valid block/miniblock configuration, overlong
//!   varints, any padding bits and any width byte of an unused miniblock, and
//!   they reject everything section 4.6 lists, with the byte offset of the
//!   problem. Arithmetic wraps modulo 2^32 or 2^64 (section 4.5).
//!
//! A stream's end is known only by counting values, so the decoders return the
//! number of bytes consumed: bytes after the stream are left to the caller.
//!
//! # Memory
//!
//! `total_value_count` comes from the data, and a block of `1 +
//! miniblocks_per_block` bytes whose widths are all 0 legitimately stands for
//! `block_size` values. The decoders therefore never reserve the header's
//! count up front: they reserve at most 8 values per remaining input byte and
//! grow the output only as values are actually decoded. For untrusted input,
//! use the `_with_limit` functions, which reject a `total_value_count` above
//! the caller's limit (for example a data page's `num_values`) before decoding
//! anything.
//!
//! # Example
//!
//! ```
//! use riegeli_codec::delta;
//!
//! // The Parquet spec's example 2, as pyarrow writes it (section 4.10).
//! let mut bytes = Vec::new();
//! delta::encode_i32(&[7, 5, 3, 1, 2, 3, 4, 5], &mut bytes);
//! assert_eq!(bytes[..10], [0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 0x02, 0x00, 0x00, 0x00]);
//! let (values, consumed) = delta::decode_i32(&bytes)?;
//! assert_eq!(values, [7, 5, 3, 1, 2, 3, 4, 5]);
//! assert_eq!(consumed, bytes.len());
//! # Ok::<(), riegeli_codec::CodecError>(())
//! ```

use crate::{error::CodecError, varint, zigzag};

/// The `what` of every error from this module.
const WHAT: &str = "delta binary packed";

/// Block size (deltas per block) Arrow writes for INT32 columns.
pub const ARROW_BLOCK_SIZE_I32: usize = 128;
/// Block size (deltas per block) Arrow writes for INT64 columns.
pub const ARROW_BLOCK_SIZE_I64: usize = 256;
/// Miniblocks per block Arrow writes for both column types.
pub const ARROW_MINIBLOCKS_PER_BLOCK: usize = 4;

/// Fields per unpacking group: every miniblock holds a multiple of 32 values,
/// and 32 fields of `w` bits are exactly `4 * w` bytes.
const GROUP: usize = 32;
/// Extra readable bytes the unpackers need after a group: each field is read
/// with 8-byte loads that may run up to 8 bytes past the group's end.
const UNPACK_SLACK: usize = 8;
/// The largest group plus slack: 32 fields of 64 bits, and 8 more bytes.
const MAX_PADDED_GROUP: usize = 4 * 64 + UNPACK_SLACK;
/// The decoders reserve at most this many values per remaining input byte.
const RESERVE_VALUES_PER_BYTE: usize = 8;

/// Appends the `DELTA_BINARY_PACKED` encoding of `values` to `out`, byte for
/// byte as Apache Arrow writes an INT32 column (128-delta blocks, 4 miniblocks
/// of 32).
///
/// # Panics
///
/// If `values` has more than `u32::MAX` elements (the format's value count is
/// a 32-bit number in practice, and the decoders reject larger counts).
pub fn encode_i32(values: &[i32], out: &mut Vec<u8>) {
    encode::<u32>(values, ARROW_BLOCK_SIZE_I32, out);
}

/// Appends the `DELTA_BINARY_PACKED` encoding of `values` to `out`, byte for
/// byte as Apache Arrow writes an INT64 column (256-delta blocks, 4 miniblocks
/// of 64).
///
/// # Panics
///
/// If `values` has more than `u32::MAX` elements (the format's value count is
/// a 32-bit number in practice, and the decoders reject larger counts).
pub fn encode_i64(values: &[i64], out: &mut Vec<u8>) {
    encode::<u64>(values, ARROW_BLOCK_SIZE_I64, out);
}

/// Decodes an INT32 `DELTA_BINARY_PACKED` stream from the front of `input`:
/// the values and the number of bytes consumed.
///
/// The only limit on the value count is the format's own (`u32`); see the
/// [module docs](self#memory) and [`decode_i32_with_limit`].
pub fn decode_i32(input: &[u8]) -> Result<(Vec<i32>, usize), CodecError> {
    decode_i32_with_limit(input, usize::MAX)
}

/// Decodes an INT64 `DELTA_BINARY_PACKED` stream from the front of `input`:
/// the values and the number of bytes consumed.
///
/// The only limit on the value count is the format's own (`u32`); see the
/// [module docs](self#memory) and [`decode_i64_with_limit`].
pub fn decode_i64(input: &[u8]) -> Result<(Vec<i64>, usize), CodecError> {
    decode_i64_with_limit(input, usize::MAX)
}

/// Like [`decode_i32`], but rejects a stream announcing more than
/// `max_values` values with [`LimitExceeded`](crate::CodecErrorKind::LimitExceeded)
/// before decoding any of them.
pub fn decode_i32_with_limit(input: &[u8], max_values: usize) -> Result<(Vec<i32>, usize), CodecError> {
    let mut values = Vec::new();
    let consumed = decode_i32_into(input, max_values, &mut values)?;
    Ok((values, consumed))
}

/// Like [`decode_i64`], but rejects a stream announcing more than
/// `max_values` values with [`LimitExceeded`](crate::CodecErrorKind::LimitExceeded)
/// before decoding any of them.
pub fn decode_i64_with_limit(input: &[u8], max_values: usize) -> Result<(Vec<i64>, usize), CodecError> {
    let mut values = Vec::new();
    let consumed = decode_i64_into(input, max_values, &mut values)?;
    Ok((values, consumed))
}

/// Decodes an INT32 stream like [`decode_i32_with_limit`], appending the
/// values to `out` (so a buffer can be reused) and returning the bytes
/// consumed. On error, `out` may hold some of the stream's values.
pub fn decode_i32_into(input: &[u8], max_values: usize, out: &mut Vec<i32>) -> Result<usize, CodecError> {
    decode::<u32>(input, max_values, out)
}

/// Decodes an INT64 stream like [`decode_i64_with_limit`], appending the
/// values to `out` (so a buffer can be reused) and returning the bytes
/// consumed. On error, `out` may hold some of the stream's values.
pub fn decode_i64_into(input: &[u8], max_values: usize, out: &mut Vec<i64>) -> Result<usize, CodecError> {
    decode::<u64>(input, max_values, out)
}

/// The unsigned word a column is computed in: `u32` for INT32, `u64` for INT64.
trait Word: Copy + Default + Eq + 'static {
    /// W: 32 or 64.
    const BITS: u32;
    /// The column's value type.
    type Signed: Copy + Default;
    /// The two's-complement bits of `v`.
    fn from_signed(v: Self::Signed) -> Self;
    /// The value whose two's-complement bits these are.
    fn to_signed(self) -> Self::Signed;
    fn wrapping_add(self, other: Self) -> Self;
    fn wrapping_sub(self, other: Self) -> Self;
    /// `self < other` as signed W-bit numbers.
    fn signed_lt(self, other: Self) -> bool;
    /// Bits needed for `self` as an unsigned number (0 for 0).
    fn bit_len(self) -> u32;
    fn to_u128(self) -> u128;
    /// Reads ULEB128(zigzag(v)) at the column width; returns v's bits.
    fn read_zigzag(input: &[u8]) -> Result<(Self, usize), CodecError>;
    /// Appends ULEB128(zigzag(v)) for v with these bits.
    fn write_zigzag(self, out: &mut Vec<u8>);
    /// Decodes a group: unpacks 32 fields of `width` bits (`1..=BITS`) from
    /// the front of `input` (which holds at least `4 * width + UNPACK_SLACK`
    /// bytes) and writes the running sums `last + min_delta + field`,
    /// advancing `last` by all 32.
    fn decode_group(width: u32, input: &[u8], min_delta: Self, last: &mut Self, out: &mut [Self::Signed; GROUP]);
}

/// Loads 8 little-endian bytes at `offset`, or 0 past the end (never reached:
/// callers guarantee the bytes, and the check then compiles away).
#[inline(always)]
fn load_u64(bytes: &[u8], offset: usize) -> u64 {
    bytes.get(offset..).and_then(<[u8]>::first_chunk::<8>).map_or(0, |chunk| u64::from_le_bytes(*chunk))
}

/// The low 32 bits of `x`.
#[inline(always)]
#[allow(clippy::cast_possible_truncation)] // Reason: truncation is the point.
const fn low_u32(x: u64) -> u32 {
    x as u32
}

/// The low 64 bits of `x`.
#[inline(always)]
#[allow(clippy::cast_possible_truncation)] // Reason: truncation is the point.
const fn low_u64(x: u128) -> u64 {
    x as u64
}

/// Field `i` of 32 `W`-bit fields (`1 <= W <= 32`): one unaligned 8-byte
/// load, a shift by at most 7 and a mask.
#[inline(always)]
fn field_u32<const W: usize>(bytes: &[u8], i: usize) -> u32 {
    let mask = if W == 32 { u64::from(u32::MAX) } else { (1u64 << W) - 1 };
    let bit = i * W;
    low_u32((load_u64(bytes, bit / 8) >> (bit % 8)) & mask)
}

/// Field `i` of 32 `W`-bit fields (`1 <= W <= 64`); fields wider than 56
/// bits may straddle 9 bytes and take a second load.
#[inline(always)]
fn field_u64<const W: usize>(bytes: &[u8], i: usize) -> u64 {
    let mask = if W == 64 { u64::MAX } else { (1u64 << W) - 1 };
    let bit = i * W;
    let (offset, shift) = (bit / 8, bit % 8);
    let mut value = load_u64(bytes, offset) >> shift;
    if W > 56 && shift != 0 {
        value |= load_u64(bytes, offset + 8) << (64 - shift);
    }
    value & mask
}

/// `acc += min_delta + field i; out[i] = acc` for i in 0..32, written out
/// so that every offset and shift is a constant (a loop was unrolled only
/// twice), and with `acc` in a register (one add per value on the chain).
macro_rules! decode_32_fields {
    ($field:ident, $bytes:ident, $min:ident, $acc:ident, $out:ident, $signed:ty) => {
        decode_32_fields!(@ $field, $bytes, $min, $acc, $out, $signed;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@ $field:ident, $bytes:ident, $min:ident, $acc:ident, $out:ident, $signed:ty; $($i:literal)*) => {
        $(
            $acc = $acc.wrapping_add($min.wrapping_add($field::<W>($bytes, $i)));
            $out[$i] = $acc as $signed;
        )*
    };
}

/// Decodes a group of 32 fields of `W` bits (`1 <= W <= 32`), see
/// [`Word::decode_group`].
#[inline(always)]
fn decode_group_u32<const W: usize>(input: &[u8], min_delta: u32, last: &mut u32, out: &mut [i32; GROUP]) {
    debug_assert!(input.len() >= 4 * W + UNPACK_SLACK, "callers pass a group and its slack");
    // One length check (always true); the loads then need none.
    let Some(bytes) = input.get(..4 * W + UNPACK_SLACK) else { return };
    let mut acc = *last;
    decode_32_fields!(field_u32, bytes, min_delta, acc, out, i32);
    *last = acc;
}

/// Decodes a group of 32 fields of `W` bits (`1 <= W <= 64`), see
/// [`Word::decode_group`].
#[inline(always)]
fn decode_group_u64<const W: usize>(input: &[u8], min_delta: u64, last: &mut u64, out: &mut [i64; GROUP]) {
    debug_assert!(input.len() >= 4 * W + UNPACK_SLACK, "callers pass a group and its slack");
    let Some(bytes) = input.get(..4 * W + UNPACK_SLACK) else { return };
    let mut acc = *last;
    decode_32_fields!(field_u64, bytes, min_delta, acc, out, i64);
    *last = acc;
}

/// Calls `$f::<width>` for a run-time width, one monomorphic copy per width.
macro_rules! dispatch_width {
    ($width:expr, $f:ident, ($a:expr, $b:expr, $c:expr, $d:expr); $($w:literal)*) => {
        match $width {
            $($w => $f::<$w>($a, $b, $c, $d),)*
            _ => {}
        }
    };
}

impl Word for u32 {
    const BITS: u32 = 32;
    type Signed = i32;

    #[inline(always)]
    fn from_signed(v: i32) -> Self {
        v as u32
    }
    #[inline(always)]
    fn to_signed(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn wrapping_add(self, other: Self) -> Self {
        u32::wrapping_add(self, other)
    }
    #[inline(always)]
    fn wrapping_sub(self, other: Self) -> Self {
        u32::wrapping_sub(self, other)
    }
    #[inline(always)]
    fn signed_lt(self, other: Self) -> bool {
        (self as i32) < (other as i32)
    }
    #[inline(always)]
    fn bit_len(self) -> u32 {
        32 - self.leading_zeros()
    }
    #[inline(always)]
    fn to_u128(self) -> u128 {
        u128::from(self)
    }
    #[inline]
    fn read_zigzag(input: &[u8]) -> Result<(Self, usize), CodecError> {
        let (code, len) = varint::decode_u32(input)?;
        Ok((zigzag::decode_i32(code) as u32, len))
    }
    #[inline]
    fn write_zigzag(self, out: &mut Vec<u8>) {
        varint::encode_u32(zigzag::encode_i32(self as i32), out);
    }
    #[inline]
    fn decode_group(width: u32, input: &[u8], min_delta: u32, last: &mut u32, out: &mut [i32; GROUP]) {
        dispatch_width!(width, decode_group_u32, (input, min_delta, last, out);
            1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
    }
}

impl Word for u64 {
    const BITS: u32 = 64;
    type Signed = i64;

    #[inline(always)]
    fn from_signed(v: i64) -> Self {
        v as u64
    }
    #[inline(always)]
    fn to_signed(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn wrapping_add(self, other: Self) -> Self {
        u64::wrapping_add(self, other)
    }
    #[inline(always)]
    fn wrapping_sub(self, other: Self) -> Self {
        u64::wrapping_sub(self, other)
    }
    #[inline(always)]
    fn signed_lt(self, other: Self) -> bool {
        (self as i64) < (other as i64)
    }
    #[inline(always)]
    fn bit_len(self) -> u32 {
        64 - self.leading_zeros()
    }
    #[inline(always)]
    fn to_u128(self) -> u128 {
        u128::from(self)
    }
    #[inline]
    fn read_zigzag(input: &[u8]) -> Result<(Self, usize), CodecError> {
        let (code, len) = varint::decode_u64(input)?;
        Ok((zigzag::decode_i64(code) as u64, len))
    }
    #[inline]
    fn write_zigzag(self, out: &mut Vec<u8>) {
        varint::encode_u64(zigzag::encode_i64(self as i64), out);
    }
    #[inline]
    fn decode_group(width: u32, input: &[u8], min_delta: u64, last: &mut u64, out: &mut [i64; GROUP]) {
        dispatch_width!(width, decode_group_u64, (input, min_delta, last, out);
            1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
            33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64);
    }
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

/// Accumulates LSB-first bit fields and flushes whole 64-bit words.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    bits: u32,
}

impl<'a> BitWriter<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        Self { out, acc: 0, bits: 0 }
    }

    /// Appends the low `width` bits of `field` (`width <= 64`, higher bits clear).
    #[inline]
    fn put(&mut self, field: u128, width: u32) {
        self.acc |= field << self.bits;
        self.bits += width;
        if self.bits >= 64 {
            self.out.extend_from_slice(&low_u64(self.acc).to_le_bytes());
            self.acc >>= 64;
            self.bits -= 64;
        }
    }

    /// Writes the remaining whole bytes (callers write multiples of 8 bits).
    fn finish(self) {
        let bytes = self.acc.to_le_bytes();
        let len = (self.bits / 8) as usize;
        self.out.extend(bytes.iter().take(len));
    }
}

fn encode<W: Word>(values: &[W::Signed], block_size: usize, out: &mut Vec<u8>) {
    let miniblock_len = block_size / ARROW_MINIBLOCKS_PER_BLOCK;
    let total = u32::try_from(values.len()).expect("DELTA_BINARY_PACKED holds at most u32::MAX values");
    varint::encode_u64(block_size as u64, out);
    varint::encode_u64(ARROW_MINIBLOCKS_PER_BLOCK as u64, out);
    varint::encode_u32(total, out);
    let Some((&first, rest)) = values.split_first() else {
        // Arrow writes first value 0 for an empty stream (section 4.7).
        W::default().write_zigzag(out);
        return;
    };
    let mut last = W::from_signed(first);
    last.write_zigzag(out);

    let mut deltas = Vec::with_capacity(block_size.min(rest.len()));
    for block in rest.chunks(block_size) {
        deltas.clear();
        deltas.extend(block.iter().map(|&v| {
            let v = W::from_signed(v);
            let delta = v.wrapping_sub(last);
            last = v;
            delta
        }));
        // The signed minimum, as Arrow picks it (section 4.8).
        let min_delta = deltas.iter().copied().reduce(|a, b| if b.signed_lt(a) { b } else { a }).unwrap_or_default();
        min_delta.write_zigzag(out);

        let mut widths = [0u32; ARROW_MINIBLOCKS_PER_BLOCK];
        let mut miniblocks = deltas.chunks(miniblock_len);
        for width in &mut widths {
            *width = miniblocks
                .next()
                .map_or(0, |mb| mb.iter().map(|d| d.wrapping_sub(min_delta).bit_len()).max().unwrap_or(0));
        }
        out.extend(widths.iter().map(|&w| u8::try_from(w).unwrap_or(u8::MAX)));

        for (miniblock, &width) in deltas.chunks(miniblock_len).zip(&widths) {
            if width == 0 {
                continue;
            }
            let mut writer = BitWriter::new(out);
            for d in miniblock {
                writer.put(d.wrapping_sub(min_delta).to_u128(), width);
            }
            // Padding fields of a partial last miniblock are zero.
            for _ in miniblock.len()..miniblock_len {
                writer.put(0, width);
            }
            writer.finish();
        }
    }
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

/// Reads a header count (a varint32) at `*pos`, advancing it.
fn read_count(input: &[u8], pos: &mut usize) -> Result<u32, CodecError> {
    let rest = input.get(*pos..).unwrap_or_default();
    let (value, len) = varint::decode_u32(rest).map_err(|e| e.within(WHAT, *pos as u64))?;
    *pos += len;
    Ok(value)
}

/// Reads a ZigZag value of the column width at `*pos`, advancing it.
fn read_signed<W: Word>(input: &[u8], pos: &mut usize) -> Result<W, CodecError> {
    let rest = input.get(*pos..).unwrap_or_default();
    let (value, len) = W::read_zigzag(rest).map_err(|e| e.within(WHAT, *pos as u64))?;
    *pos += len;
    Ok(value)
}

/// Writes `count` values `last + delta`, `last + 2 * delta`, ... (a
/// miniblock of width 0).
#[inline]
fn decode_constant_deltas<W: Word>(out: &mut Vec<W::Signed>, last: &mut W, delta: W, count: usize) {
    if delta == W::default() {
        out.resize(out.len() + count, last.to_signed());
    } else {
        // A local accumulator, kept in a register.
        let mut acc = *last;
        out.extend((0..count).map(|_| {
            acc = acc.wrapping_add(delta);
            acc.to_signed()
        }));
        *last = acc;
    }
}

/// Decodes `count` (1 to 32) values of one group from the front of `bytes`
/// (which holds at least `4 * width + UNPACK_SLACK` bytes).
#[inline]
fn decode_group_into<W: Word>(
    out: &mut Vec<W::Signed>,
    last: &mut W,
    min_delta: W,
    width: u32,
    bytes: &[u8],
    count: usize,
) {
    let mut group = [W::Signed::default(); GROUP];
    if count == GROUP {
        W::decode_group(width, bytes, min_delta, last, &mut group);
        out.extend_from_slice(&group);
    } else {
        // The last, partial group: decode all 32, keep `count`.
        let mut acc = *last;
        W::decode_group(width, bytes, min_delta, &mut acc, &mut group);
        let values = group.get(..count).unwrap_or_default();
        if let Some(&value) = values.last() {
            *last = W::from_signed(value);
        }
        out.extend_from_slice(values);
    }
}

fn decode<W: Word>(input: &[u8], max_values: usize, out: &mut Vec<W::Signed>) -> Result<usize, CodecError> {
    let mut pos = 0;
    let block_size = read_count(input, &mut pos)?;
    let miniblocks_pos = pos;
    let miniblocks = read_count(input, &mut pos)?;
    let total_pos = pos;
    let total = read_count(input, &mut pos)?;
    let first = read_signed::<W>(input, &mut pos)?;

    if block_size == 0 || !block_size.is_multiple_of(128) {
        return Err(CodecError::invalid(WHAT, 0, "block size is not a positive multiple of 128"));
    }
    if miniblocks == 0 {
        return Err(CodecError::invalid(WHAT, miniblocks_pos as u64, "zero miniblocks per block"));
    }
    if !block_size.is_multiple_of(miniblocks) {
        return Err(CodecError::invalid(WHAT, miniblocks_pos as u64, "miniblock count does not divide the block size"));
    }
    let miniblock_len = block_size / miniblocks;
    if !miniblock_len.is_multiple_of(32) {
        return Err(CodecError::invalid(WHAT, miniblocks_pos as u64, "values per miniblock is not a multiple of 32"));
    }
    let total = usize::try_from(total)
        .map_err(|_| CodecError::limit(WHAT, total_pos as u64, "address space", u64::from(total), usize::MAX as u64))?;
    if total > max_values {
        return Err(CodecError::limit(WHAT, total_pos as u64, "max_values", total as u64, max_values as u64));
    }
    if total == 0 {
        return Ok(pos);
    }
    // Not `total`: that count is untrusted (see the module docs).
    let remaining = input.len().saturating_sub(pos);
    out.reserve(total.min(remaining.saturating_mul(RESERVE_VALUES_PER_BYTE).saturating_add(1)));

    out.push(first.to_signed());
    let mut last = first;
    let mut left = total - 1;
    // Both fit in usize: they are at most u32::MAX.
    let miniblocks = miniblocks as usize;
    let miniblock_len = miniblock_len as usize;
    let mut padded = [0u8; MAX_PADDED_GROUP];

    while left > 0 {
        let min_delta = read_signed::<W>(input, &mut pos)?;
        let widths_pos = pos;
        let widths = pos.checked_add(miniblocks).and_then(|end| input.get(pos..end)).ok_or_else(|| {
            CodecError::truncated(WHAT, input.len() as u64, (miniblocks - (input.len() - pos)) as u64)
        })?;
        pos += miniblocks;

        for (m, &width_byte) in widths.iter().enumerate() {
            if left == 0 {
                // Unused miniblocks of the last block: no body, width unchecked.
                break;
            }
            let width = u32::from(width_byte);
            if width > W::BITS {
                return Err(CodecError::invalid(WHAT, (widths_pos + m) as u64, "bit width exceeds the column width"));
            }
            let count = miniblock_len.min(left);
            if width == 0 {
                decode_constant_deltas(out, &mut last, min_delta, count);
                left -= count;
                continue;
            }
            // miniblock_len * width / 8, computed without overflow.
            let group_bytes = 4 * width as usize;
            let body_len = (miniblock_len / GROUP).checked_mul(group_bytes);
            let rest = input.get(pos..).unwrap_or_default();
            let body_len = match body_len {
                Some(len) if len <= rest.len() => len,
                _ => {
                    let needed = body_len.map_or(u64::MAX, |len| (len - rest.len()) as u64);
                    return Err(CodecError::truncated(WHAT, input.len() as u64, needed));
                }
            };
            left -= count;
            // Only the groups holding values are decoded; the rest is padding.
            let mut groups = rest;
            let mut count = count;
            while count > 0 {
                let n = count.min(GROUP);
                if groups.len() >= group_bytes + UNPACK_SLACK {
                    decode_group_into(out, &mut last, min_delta, width, groups, n);
                } else {
                    // Near the end of the input: copy into a zero-padded buffer.
                    padded.fill(0);
                    for (dst, &src) in padded.iter_mut().zip(groups.iter().take(group_bytes)) {
                        *dst = src;
                    }
                    decode_group_into(out, &mut last, min_delta, width, &padded, n);
                }
                groups = groups.get(group_bytes..).unwrap_or_default();
                count -= n;
            }
            pos += body_len;
        }
    }
    Ok(pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CodecErrorKind;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn spec_examples() {
        // Section 4.10: pyarrow's bytes for the Parquet spec's examples.
        let ex1_32 = hex("80 01 04 05 02 02 00 00 00 00");
        let ex1_64 = hex("80 02 04 05 02 02 00 00 00 00");
        let ex2_32 = hex("80 01 04 08 0e 03 02 00 00 00 c0 3f 00 00 00 00 00 00");
        let ex2_64 = hex("80 02 04 08 0e 03 02 00 00 00 c0 3f 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
        let v1 = [1, 2, 3, 4, 5];
        let v2 = [7, 5, 3, 1, 2, 3, 4, 5];

        let mut out = Vec::new();
        encode_i32(&v1, &mut out);
        assert_eq!(out, ex1_32);
        out.clear();
        encode_i64(&v1.map(i64::from), &mut out);
        assert_eq!(out, ex1_64);
        out.clear();
        encode_i32(&v2, &mut out);
        assert_eq!(out, ex2_32);
        out.clear();
        encode_i64(&v2.map(i64::from), &mut out);
        assert_eq!(out, ex2_64);

        assert_eq!(decode_i32(&ex1_32).unwrap(), (v1.to_vec(), ex1_32.len()));
        assert_eq!(decode_i64(&ex1_64).unwrap(), (v1.map(i64::from).to_vec(), ex1_64.len()));
        assert_eq!(decode_i32(&ex2_32).unwrap(), (v2.to_vec(), ex2_32.len()));
        assert_eq!(decode_i64(&ex2_64).unwrap(), (v2.map(i64::from).to_vec(), ex2_64.len()));
    }

    #[test]
    fn empty_and_single() {
        // Section 4.7.
        let mut out = Vec::new();
        encode_i32(&[], &mut out);
        assert_eq!(out, [0x80, 0x01, 0x04, 0x00, 0x00]);
        out.clear();
        encode_i64(&[], &mut out);
        assert_eq!(out, [0x80, 0x02, 0x04, 0x00, 0x00]);
        out.clear();
        encode_i32(&[42], &mut out);
        assert_eq!(out, [0x80, 0x01, 0x04, 0x01, 0x54]);
        assert_eq!(decode_i32(&out).unwrap(), (vec![42], 5));
        assert_eq!(decode_i32(&[0x80, 0x01, 0x04, 0x00, 0x00]).unwrap(), (vec![], 5));
    }

    #[test]
    fn trailing_bytes_are_not_consumed() {
        let mut bytes = hex("80 01 04 05 02 02 00 00 00 00");
        bytes.extend_from_slice(&[0xde, 0xad]);
        assert_eq!(decode_i32(&bytes).unwrap(), (vec![1, 2, 3, 4, 5], 10));
    }

    #[test]
    fn every_width_round_trips() {
        // Deltas 2^bits - 1 and 0: minimum 0, so the first miniblock's width is
        // exactly `bits`. Header: 80 0x 04, total 301 (ad 02), first 0 (00);
        // then min delta 00 at offset 6 and the width bytes from offset 7.
        // Widths 32 and 64 need negative deltas: the full_width vectors cover them.
        for bits in 1..64u32 {
            let top = (1u64 << bits) - 1;
            let mut values = vec![0i64];
            let mut last = 0u64;
            for i in 0..300u64 {
                last = last.wrapping_add(if i.is_multiple_of(3) { top } else { 0 });
                values.push(last as i64);
            }
            let mut bytes = Vec::new();
            encode_i64(&values, &mut bytes);
            assert_eq!(bytes[..8], [0x80, 0x02, 0x04, 0xad, 0x02, 0x00, 0x00, bits as u8], "{bits} bits");
            assert_eq!(decode_i64(&bytes).unwrap(), (values.clone(), bytes.len()), "{bits} bits");
            if bits < 32 {
                let values32: Vec<i32> = values.iter().map(|&v| v as i32).collect();
                bytes.clear();
                encode_i32(&values32, &mut bytes);
                assert_eq!(bytes[..8], [0x80, 0x01, 0x04, 0xad, 0x02, 0x00, 0x00, bits as u8], "i32 {bits} bits");
                assert_eq!(decode_i32(&bytes).unwrap(), (values32, bytes.len()), "i32 {bits} bits");
            }
        }
    }

    #[test]
    fn limit_is_checked_before_decoding() {
        let bytes = hex("80 01 04 05 02 02 00 00 00 00");
        let err = decode_i32_with_limit(&bytes, 4).unwrap_err();
        assert_eq!(err.kind(), &CodecErrorKind::LimitExceeded { limit: "max_values", requested: 5, max: 4 });
        assert_eq!(err.offset(), 3);
        assert_eq!(decode_i32_with_limit(&bytes, 5).unwrap().0.len(), 5);
    }

    #[test]
    fn huge_count_with_tiny_input_does_not_reserve_it() {
        // u32::MAX values announced, 1 block present: truncated, without
        // reserving 16 GiB first.
        let bytes = hex("80 01 04 ff ff ff ff 0f 00 02 00 00 00 00");
        let mut out = Vec::new();
        let err = decode_i32_into(&bytes, usize::MAX, &mut out).unwrap_err();
        assert!(matches!(err.kind(), CodecErrorKind::Truncated { .. }), "{err}");
        assert!(out.capacity() < 1 << 16, "capacity {}", out.capacity());
    }

    #[test]
    fn other_configurations_decode() {
        // Block size 128 with 1 miniblock of 128 values, width 1: values 0, 1, 1, 2, 2, ...
        // Relative deltas alternate 1, 0 starting from delta 1 (min 0):
        // fields 1,0,1,0,... LSB-first = 0x55 per byte, 16 bytes.
        let mut bytes = hex("80 01 01 05 00 00 01");
        bytes.extend_from_slice(&[0x55; 16]);
        let (values, consumed) = decode_i32(&bytes).unwrap();
        assert_eq!(values, [0, 1, 1, 2, 2]);
        assert_eq!(consumed, bytes.len());
    }
}
