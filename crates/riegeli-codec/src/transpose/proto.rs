//! The protobuf wire format as the transposed encoder sees it (spec §12.1).

/// Wire type of a varint field.
pub(crate) const WT_VARINT: u32 = 0;
/// Wire type of a fixed64 field.
pub(crate) const WT_FIXED64: u32 = 1;
/// Wire type of a length-delimited field.
pub(crate) const WT_LENGTH_DELIMITED: u32 = 2;
/// Wire type of a start-group tag.
pub(crate) const WT_START_GROUP: u32 = 3;
/// Wire type of an end-group tag.
pub(crate) const WT_END_GROUP: u32 = 4;
/// Wire type of a fixed32 field.
pub(crate) const WT_FIXED32: u32 = 5;

/// Reads a canonical varint32 (shortest form, fits in 32 bits) from the
/// front of `data`: the value and its length.
#[inline]
pub(crate) fn read_canonical_u32(data: &[u8]) -> Option<(u32, usize)> {
    let (&first, _) = data.split_first()?;
    if first < 0x80 {
        return Some((u32::from(first), 1));
    }
    let mut value = u32::from(first & 0x7f);
    for i in 1..5 {
        let byte = *data.get(i)?;
        if i == 4 && byte > 0x0f {
            return None;
        }
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            // A trailing zero byte is not the shortest form.
            return (byte != 0).then_some((value, i + 1));
        }
    }
    None
}

/// The length of the canonical varint64 (shortest form, fits in 64 bits) at
/// the front of `data`.
#[inline]
pub(crate) fn canonical_u64_len(data: &[u8]) -> Option<usize> {
    let (&first, _) = data.split_first()?;
    if first < 0x80 {
        return Some(1);
    }
    for i in 1..10 {
        let byte = *data.get(i)?;
        if i == 9 && byte > 0x01 {
            return None;
        }
        if byte < 0x80 {
            return (byte != 0).then_some(i + 1);
        }
    }
    None
}

/// Whether `data` is a protobuf message in canonical encoding (spec §12.1):
/// canonical tags with field number ≥ 1 and wire type 0..5, canonical varint
/// values and lengths, complete fixed fields, and groups that nest.
///
/// `groups` is scratch space (left empty).
pub(crate) fn is_proto_message(mut data: &[u8], groups: &mut Vec<u32>) -> bool {
    groups.clear();
    while !data.is_empty() {
        let Some((tag, tag_len)) = read_canonical_u32(data) else { return false };
        data = data.get(tag_len..).unwrap_or_default();
        let field = tag >> 3;
        if field == 0 {
            return false;
        }
        let skip = match tag & 7 {
            WT_VARINT => match canonical_u64_len(data) {
                Some(len) => len,
                None => return false,
            },
            WT_FIXED64 => 8,
            WT_FIXED32 => 4,
            WT_LENGTH_DELIMITED => match read_canonical_u32(data) {
                Some((len, len_len)) => len_len + len as usize,
                None => return false,
            },
            WT_START_GROUP => {
                groups.push(field);
                0
            }
            WT_END_GROUP => {
                if groups.pop() != Some(field) {
                    return false;
                }
                0
            }
            _ => return false,
        };
        match data.get(skip..) {
            Some(rest) => data = rest,
            None => return false,
        }
    }
    let closed = groups.is_empty();
    groups.clear();
    closed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_varints() {
        assert_eq!(read_canonical_u32(&[0x00]), Some((0, 1)));
        assert_eq!(read_canonical_u32(&[0x80, 0x00]), None);
        assert_eq!(read_canonical_u32(&[0x81, 0x00]), None);
        assert_eq!(read_canonical_u32(&[0xff, 0xff, 0xff, 0xff, 0x0f]), Some((u32::MAX, 5)));
        assert_eq!(read_canonical_u32(&[0xff, 0xff, 0xff, 0xff, 0x10]), None);
        assert_eq!(read_canonical_u32(&[0x80]), None);
        assert_eq!(canonical_u64_len(&[0x96, 0x01]), Some(2));
        assert_eq!(canonical_u64_len(&[0x96, 0x00]), None);
        assert_eq!(canonical_u64_len(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), Some(10));
        assert_eq!(canonical_u64_len(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]), None);
    }

    #[test]
    fn proto_classification() {
        let mut g = Vec::new();
        assert!(is_proto_message(&[], &mut g));
        assert!(is_proto_message(&[0x08, 0x96, 0x01], &mut g));
        assert!(is_proto_message(&[0x23, 0x08, 0x02, 0x24], &mut g));
        // "hi!": 0x21 is fixed64 with too few bytes.
        assert!(!is_proto_message(b"hi!", &mut g));
        // Field 0, wire types 6 and 7, unclosed or mismatched groups.
        assert!(!is_proto_message(&[0x00, 0x00], &mut g));
        assert!(!is_proto_message(&[0x0e], &mut g));
        assert!(!is_proto_message(&[0x0f], &mut g));
        assert!(!is_proto_message(&[0x23], &mut g));
        assert!(!is_proto_message(&[0x23, 0x2c], &mut g));
        // Non-canonical value.
        assert!(!is_proto_message(&[0x08, 0x80, 0x00], &mut g));
        // Length past the end.
        assert!(!is_proto_message(&[0x0a, 0x02, 0x00], &mut g));
    }
}
