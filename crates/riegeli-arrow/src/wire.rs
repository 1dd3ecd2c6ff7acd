//! The protobuf wire format, read from a slice: varints, tags, fixed-width
//! values, length-delimited fields and skipping a field by its wire type.
//!
//! Every read checks the bytes that remain before it takes them, so a
//! damaged record is a [`WireError`], never a panic or an allocation.

use std::fmt;

/// Wire type 0: a varint.
pub(crate) const VARINT: u8 = 0;
/// Wire type 1: 8 little-endian bytes.
pub(crate) const FIXED64: u8 = 1;
/// Wire type 2: a varint length, then that many bytes.
pub(crate) const LEN: u8 = 2;
/// Wire type 3: the start of a group.
pub(crate) const START_GROUP: u8 = 3;
/// Wire type 4: the end of a group.
pub(crate) const END_GROUP: u8 = 4;
/// Wire type 5: 4 little-endian bytes.
pub(crate) const FIXED32: u8 = 5;

/// How deeply messages (and groups) may nest in a record.
pub(crate) const MAX_DEPTH: usize = 100;

/// What is wrong with a record: where in it (a byte offset) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WireError {
    /// Byte offset in the record where the problem was found.
    pub(crate) offset: usize,
    /// What is wrong, e.g. "truncated varint" or "field a.b: wire type 2 where int32 needs 0".
    pub(crate) reason: String,
}

impl WireError {
    #[cold]
    pub(crate) fn new(offset: usize, reason: impl Into<String>) -> Self {
        Self { offset, reason: reason.into() }
    }

    /// The error with its offset moved by `base`: for an error found in a
    /// slice that begins at `base` of its record.
    pub(crate) fn at(mut self, base: usize) -> Self {
        self.offset += base;
        self
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

/// A cursor over one record: `pos` is an offset into `buf`, the whole record,
/// and `end` bounds the message being read (a nested message ends before the
/// record does).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) end: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `buf[start..end]`; `end` must not exceed `buf.len()`.
    pub(crate) fn new(buf: &'a [u8], start: usize, end: usize) -> Self {
        let end = end.min(buf.len());
        Self { buf, pos: start.min(end), end }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.end
    }

    /// Reads a varint (riegeli-codec's decoder: at most 10 bytes, no overflow).
    ///
    /// A varint of one byte (most tags, lengths and small values) is read
    /// here, inlined; longer ones in [`Self::varint_long`].
    #[inline(always)]
    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        if self.pos < self.end
            && let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(b));
        }
        self.varint_long()
    }

    /// Reads a varint of more than one byte (or a truncated one).
    #[inline]
    fn varint_long(&mut self) -> Result<u64, WireError> {
        let bytes = self.buf.get(self.pos..self.end).unwrap_or_default();
        match riegeli_codec::varint::decode_u64(bytes) {
            Ok((value, len)) => {
                self.pos += len;
                Ok(value)
            }
            Err(e) => Err(varint_error(self.pos, &e)),
        }
    }

    /// Reads a tag: `(field number, wire type)`.
    #[inline(always)]
    pub(crate) fn tag(&mut self) -> Result<(u32, u8), WireError> {
        let at = self.pos;
        let tag = self.varint()?;
        let number = tag >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(invalid_field_number(at, number));
        }
        let wire_type = (tag & 7) as u8;
        #[allow(clippy::cast_possible_truncation, reason = "checked against 2^29 above")]
        Ok((number as u32, wire_type))
    }

    /// Takes `n` bytes, returning their offsets `(start, end)` in the record.
    #[inline]
    fn take(&mut self, n: usize, what: &str) -> Result<(usize, usize), WireError> {
        let start = self.pos;
        match start.checked_add(n) {
            Some(end) if end <= self.end => {
                self.pos = end;
                Ok((start, end))
            }
            _ => Err(past_end(start, n, self.end - start, what)),
        }
    }

    /// Reads 4 little-endian bytes.
    #[inline]
    pub(crate) fn fixed32(&mut self) -> Result<u32, WireError> {
        let (start, _) = self.take(4, "fixed32 value")?;
        let bytes = self.buf.get(start..).and_then(|b| b.first_chunk::<4>()).copied().unwrap_or([0; 4]);
        Ok(u32::from_le_bytes(bytes))
    }

    /// Reads 8 little-endian bytes.
    #[inline]
    pub(crate) fn fixed64(&mut self) -> Result<u64, WireError> {
        let (start, _) = self.take(8, "fixed64 value")?;
        let bytes = self.buf.get(start..).and_then(|b| b.first_chunk::<8>()).copied().unwrap_or([0; 8]);
        Ok(u64::from_le_bytes(bytes))
    }

    /// Reads a length-delimited value: the offsets `(start, end)` of its bytes.
    #[inline]
    pub(crate) fn len_delimited(&mut self) -> Result<(usize, usize), WireError> {
        let at = self.pos;
        let len = self.varint()?;
        let left = self.end - self.pos;
        match usize::try_from(len) {
            Ok(n) if n <= left => self.take(n, "length-delimited value"),
            _ => Err(bad_length(at, len, left)),
        }
    }

    /// Skips the value of a field of `wire_type` (whose tag was just read, with
    /// field `number`); groups are skipped to their end, nesting at most
    /// `MAX_DEPTH - depth` deep.
    pub(crate) fn skip(&mut self, number: u32, wire_type: u8, depth: usize) -> Result<(), WireError> {
        match wire_type {
            VARINT => self.varint().map(drop),
            FIXED64 => self.take(8, "fixed64 value").map(drop),
            LEN => self.len_delimited().map(drop),
            FIXED32 => self.take(4, "fixed32 value").map(drop),
            START_GROUP => self.skip_group(number, depth),
            END_GROUP => Err(WireError::new(self.pos, format!("unexpected end of group {number}"))),
            other => Err(WireError::new(self.pos, format!("invalid wire type {other} (field {number})"))),
        }
    }

    /// Skips a group's fields to its end tag.
    fn skip_group(&mut self, number: u32, depth: usize) -> Result<(), WireError> {
        // Without recursion: a stack of open group numbers, bounded by MAX_DEPTH.
        let mut open = vec![number];
        loop {
            if open.len() + depth > MAX_DEPTH {
                return Err(WireError::new(self.pos, format!("groups nest deeper than {MAX_DEPTH}")));
            }
            if self.is_empty() {
                return Err(WireError::new(self.pos, format!("group {number} has no end")));
            }
            let (n, wire_type) = self.tag()?;
            match wire_type {
                START_GROUP => open.push(n),
                END_GROUP => {
                    if open.pop() != Some(n) {
                        return Err(WireError::new(self.pos, format!("end of group {n} does not match its start")));
                    }
                    if open.is_empty() {
                        return Ok(());
                    }
                }
                _ => self.skip(n, wire_type, MAX_DEPTH)?,
            }
        }
    }
}

/// ZigZag-decodes a 32-bit value (sint32).
#[allow(clippy::cast_possible_wrap, reason = "ZigZag is defined on the bits")]
pub(crate) fn zigzag32(value: u32) -> i32 {
    ((value >> 1) as i32) ^ -((value & 1) as i32)
}

/// ZigZag-decodes a 64-bit value (sint64).
#[allow(clippy::cast_possible_wrap, reason = "ZigZag is defined on the bits")]
pub(crate) fn zigzag64(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Why a varint at `at` did not decode, in the walker's words.
#[cold]
#[inline(never)]
fn varint_error(at: usize, e: &riegeli_codec::CodecError) -> WireError {
    let reason = match e.kind() {
        riegeli_codec::CodecErrorKind::VarintOverflow { .. } => "varint overflows 64 bits or is longer than 10 bytes",
        _ => "truncated varint",
    };
    WireError::new(at, reason)
}

#[cold]
#[inline(never)]
fn bad_length(at: usize, len: u64, left: usize) -> WireError {
    if usize::try_from(len).is_err() {
        return WireError::new(at, format!("length {len} too large"));
    }
    WireError::new(at, format!("length {len} runs past the end of its message ({left} bytes left)"))
}

#[cold]
#[inline(never)]
fn past_end(start: usize, n: usize, left: usize, what: &str) -> WireError {
    WireError::new(start, format!("{what} of {n} bytes runs past the end of its message ({left} bytes left)"))
}

#[cold]
#[inline(never)]
fn invalid_field_number(at: usize, number: u64) -> WireError {
    WireError::new(at, format!("invalid field number {number}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(bytes: &[u8]) -> Result<(u64, usize), WireError> {
        let mut c = Cursor::new(bytes, 0, bytes.len());
        c.varint().map(|v| (v, c.pos))
    }

    #[test]
    fn varints() {
        assert_eq!(varint(&[0]).unwrap(), (0, 1));
        assert_eq!(varint(&[0xac, 0x02]).unwrap(), (300, 2));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(varint(&max).unwrap(), (u64::MAX, 10));
        let mut over = max;
        over[9] = 0x02;
        assert!(varint(&over).unwrap_err().reason.contains("overflows"));
        assert!(varint(&[0x80; 11]).unwrap_err().reason.contains("longer than 10"));
        assert!(varint(&[0x80, 0x80]).unwrap_err().reason.contains("truncated"));
        assert!(varint(&[]).unwrap_err().reason.contains("truncated"));
    }

    #[test]
    fn lengths_and_skips_stay_inside_the_message() {
        // Field 1, length 5, but only 2 bytes follow.
        let bytes = [0x0a, 0x05, 1, 2];
        let mut c = Cursor::new(&bytes, 0, bytes.len());
        assert_eq!(c.tag().unwrap(), (1, LEN));
        assert!(c.len_delimited().unwrap_err().reason.contains("past the end"));
        // A huge length is an error, not an allocation.
        let bytes = [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f];
        let mut c = Cursor::new(&bytes, 0, bytes.len());
        c.tag().unwrap();
        assert!(c.len_delimited().is_err());
        // Groups: 1 { 2 { } 3: 7 } skipped whole; a mismatched end is an error.
        let bytes = [0x0b, 0x13, 0x14, 0x18, 0x07, 0x0c, 0x20, 0x01];
        let mut c = Cursor::new(&bytes, 0, bytes.len());
        let (n, w) = c.tag().unwrap();
        c.skip(n, w, 0).unwrap();
        assert_eq!(c.tag().unwrap(), (4, VARINT));
        let bytes = [0x0b, 0x14];
        let mut c = Cursor::new(&bytes, 0, bytes.len());
        let (n, w) = c.tag().unwrap();
        assert!(c.skip(n, w, 0).is_err());
        // Deeply nested groups are refused.
        let bytes = vec![0x0b; 200];
        let mut c = Cursor::new(&bytes, 0, bytes.len());
        let (n, w) = c.tag().unwrap();
        assert!(c.skip(n, w, 0).unwrap_err().reason.contains("deeper"));
        // Field number 0 and wire types 6 and 7 are invalid.
        assert!(Cursor::new(&[0x00], 0, 1).tag().is_err());
        let mut c = Cursor::new(&[0x0e, 0], 0, 2);
        let (n, w) = c.tag().unwrap();
        assert!(c.skip(n, w, 0).is_err());
    }

    #[test]
    fn zigzag() {
        assert_eq!(zigzag32(0), 0);
        assert_eq!(zigzag32(1), -1);
        assert_eq!(zigzag32(4294967294), 2147483647);
        assert_eq!(zigzag32(4294967295), -2147483648);
        assert_eq!(zigzag64(u64::MAX), i64::MIN);
    }
}
