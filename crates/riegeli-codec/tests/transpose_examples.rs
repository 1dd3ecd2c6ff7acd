//! The worked examples of the transposed-chunk spec (§14, real C++ output),
//! decoded and re-encoded, and hand-made corruptions of them.

use bytes::Bytes;
use riegeli_codec::{DecodeLimits, FieldProjection, TransposedChunkDecoder};

/// Parses whitespace-separated hex bytes; `(x5)` repeats the previous group.
pub(crate) fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace().map(|b| u8::from_str_radix(b, 16).unwrap()).collect()
}

/// Example A: records `08 0i 12 03 61 62 63`, i = 0..4 (spec §14).
pub(crate) fn example_a() -> Vec<u8> {
    let mut data =
        hex("00 1d 02 02 01 14 01 14 07 12 08 08 08 08 08 03 01 0d 0d 0d 0d 0d 00 0a 0b 0c 0d 00 01 00 00 04");
    for _ in 0..5 {
        data.extend(hex("03 61 62 63"));
    }
    data.extend(hex("11 0d 09 06"));
    data
}

pub(crate) fn example_a_records() -> Vec<Vec<u8>> {
    (0..5u8).map(|i| vec![0x08, i, 0x12, 0x03, 0x61, 0x62, 0x63]).collect()
}

/// Example B: submessage, fixed32/64, non-proto, empty record, group.
pub(crate) fn example_b() -> Vec<u8> {
    hex("00 2a 05 05 02 04 08 03 01 02 04 08 03 01 0b 03 01 08 02 0e 15 19 23 08 03 24 \
         00 11 0e 14 0d 0f 10 14 12 00 13 01 0c 03 00 01 02 0a \
         16 01 01 00 00 00 02 00 00 00 00 00 00 00 68 69 21 03 00 04")
}

pub(crate) fn example_b_records() -> Vec<Vec<u8>> {
    vec![hex("0a 03 08 96 01 15 01 00 00 00 19 02 00 00 00 00 00 00 00"), b"hi!".to_vec(), vec![], hex("23 08 02 24")]
}

/// Example D: the metadata record `RecordsMetadata{file_comment:"demo", record_type_name:"pkg.Msg", num_records:3}`.
pub(crate) fn example_d() -> Vec<u8> {
    hex("00 12 01 02 0d 05 08 04 03 0a 12 28 00 04 05 06 0d 00 01 03 04 64 65 6d 6f 07 70 6b 67 2e 4d 73 67")
}

pub(crate) fn example_d_record() -> Vec<u8> {
    hex("0a 04 64 65 6d 6f 12 07 70 6b 67 2e 4d 73 67 28 03")
}

fn decode(data: &[u8], num_records: u64, size: u64) -> Result<Vec<Vec<u8>>, riegeli_codec::CodecError> {
    decode_with(&mut TransposedChunkDecoder::new(), data, num_records, size, &FieldProjection::all())
}

pub(crate) fn decode_with(
    decoder: &mut TransposedChunkDecoder,
    data: &[u8],
    num_records: u64,
    size: u64,
    projection: &FieldProjection,
) -> Result<Vec<Vec<u8>>, riegeli_codec::CodecError> {
    let records =
        decoder.decode(Bytes::copy_from_slice(data), num_records, size, &DecodeLimits::default(), projection)?;
    Ok(records.iter().map(|r| r.to_vec()).collect())
}

#[test]
fn example_a_decodes() {
    assert_eq!(example_a().len(), 56);
    assert_eq!(decode(&example_a(), 5, 35).unwrap(), example_a_records());
}

#[test]
fn example_b_decodes() {
    assert_eq!(decode(&example_b(), 4, 26).unwrap(), example_b_records());
}

#[test]
fn example_d_decodes_as_metadata() {
    let data = example_d();
    assert_eq!(data.len(), 33);
    let mut decoder = TransposedChunkDecoder::new();
    let record = decoder.decode_metadata_chunk(Bytes::from(data.clone()), 0, 17, &DecodeLimits::default()).unwrap();
    assert_eq!(record.to_vec(), example_d_record());
    // A metadata chunk declares zero records.
    assert!(decoder.decode_metadata_chunk(Bytes::from(data), 1, 17, &DecodeLimits::default()).is_err());
}

#[test]
fn zero_and_one_empty_record_chunks() {
    // Spec §12.6.
    assert_eq!(decode(&hex("00 06 00 00 01 00 00 00"), 0, 0).unwrap(), Vec::<Vec<u8>>::new());
    assert_eq!(decode(&hex("00 06 00 00 01 03 00 00"), 1, 0).unwrap(), vec![Vec::<u8>::new()]);
}

#[test]
fn header_fields_must_match_the_chunk() {
    // Wrong num_records or decoded_data_size are rejected (§7 finish, §9 #21–23).
    assert!(decode(&example_a(), 4, 35).is_err());
    assert!(decode(&example_a(), 6, 35).is_err());
    assert!(decode(&example_a(), 5, 34).is_err());
    assert!(decode(&example_a(), 5, 36).is_err());
    assert!(decode(&example_b(), 4, 25).is_err());
}

#[test]
fn limits_are_checked_before_allocating() {
    let limits = DecodeLimits { max_decoded_size: 34, max_num_records: 100 };
    let mut decoder = TransposedChunkDecoder::new();
    assert!(decoder.decode(Bytes::from(example_a()), 5, 35, &limits, &FieldProjection::all()).is_err());
    let limits = DecodeLimits { max_decoded_size: 100, max_num_records: 4 };
    assert!(decoder.decode(Bytes::from(example_a()), 5, 35, &limits, &FieldProjection::all()).is_err());
    let huge = DecodeLimits { max_decoded_size: u64::MAX, max_num_records: u64::MAX };
    assert!(decoder.decode(Bytes::from(example_a()), 5, 1 << 62, &huge, &FieldProjection::all()).is_err());
}

#[test]
fn every_truncation_is_rejected() {
    let data = example_b();
    for len in 0..data.len() {
        // Only the full chunk decodes; a truncated transitions block leaves
        // too few records (or a final node that cannot stop).
        assert!(decode(&data[..len], 4, 26).is_err(), "truncated to {len}");
    }
}

#[test]
fn one_byte_changes_never_panic() {
    // Every value of every byte: the decoder must answer without panicking,
    // and whatever it accepts must be consistent with the header.
    for data in [example_a(), example_b(), example_d()] {
        let (n, size) = match data.len() {
            56 => (5, 35),
            33 => (1, 17),
            _ => (4, 26),
        };
        let mut decoder = TransposedChunkDecoder::new();
        for i in 0..data.len() {
            for v in 0..=255u8 {
                let mut corrupt = data.clone();
                corrupt[i] = v;
                if let Ok(records) = decode_with(&mut decoder, &corrupt, n, size, &FieldProjection::all()) {
                    assert_eq!(records.len() as u64, n);
                    assert_eq!(records.iter().map(Vec::len).sum::<usize>() as u64, size);
                }
                let projection = FieldProjection::from_paths([&[1][..], &[2, 0]]).unwrap();
                if let Ok(records) = decode_with(&mut decoder, &corrupt, n, size, &projection) {
                    assert_eq!(records.len() as u64, n);
                }
            }
        }
    }
}

#[test]
fn implicit_cycle_is_rejected() {
    // Two nodes, each implicitly leading to the other (next = 2 + other).
    let data = hex("00 08 00 00 02 03 03 03 02 00");
    let err = decode(&data, 1, 0).unwrap_err();
    assert!(err.to_string().contains("implicit loop"), "{err}");
}

#[test]
fn submessage_stack_underflow_and_overflow() {
    // One start-of-submessage node (id 2), explicit to itself.
    let underflow = hex("00 06 00 00 01 02 00 00");
    assert!(decode(&underflow, 0, 10).unwrap_err().to_string().contains("underflow"));
    // One end-of-submessage node (id 0x0e), explicit to itself, with many
    // transitions: the stack would grow without bound.
    let mut overflow = hex("00 06 00 00 01 0e 00 00");
    overflow.extend(std::iter::repeat_n(0x03, 100_000));
    let err = decode(&overflow, 0, 1000).unwrap_err();
    assert!(err.to_string().contains("stack overflow"), "{err}");
}

#[test]
fn strict_mode_rejects_unread_buffers() {
    // Example A with one more byte in bucket 0 (buffer 0 is 2 bytes, the
    // varint reads 1): C++ accepts, strict mode does not.
    let mut data =
        hex("00 1d 02 02 02 14 02 14 07 12 08 08 08 08 08 03 01 0d 0d 0d 0d 0d 00 0a 0b 0c 0d 00 01 00 00 04 05");
    for _ in 0..5 {
        data.extend(hex("03 61 62 63"));
    }
    data.extend(hex("11 0d 09 06"));
    assert_eq!(decode(&data, 5, 35).unwrap(), example_a_records());
    let mut strict = TransposedChunkDecoder::new();
    strict.set_strict(true);
    assert!(decode_with(&mut strict, &data, 5, 35, &FieldProjection::all()).is_err());
    assert_eq!(decode_with(&mut strict, &example_a(), 5, 35, &FieldProjection::all()).unwrap(), example_a_records());
}

#[test]
fn projection_of_example_b() {
    let mut decoder = TransposedChunkDecoder::new();
    // Field 2 (fixed32) only: r0 keeps `15 01 00 00 00`; non-proto kept; the
    // group record loses everything.
    let p = FieldProjection::from_paths([&[2][..]]).unwrap();
    let records = decode_with(&mut decoder, &example_b(), 4, 26, &p).unwrap();
    assert_eq!(records, vec![hex("15 01 00 00 00"), b"hi!".to_vec(), vec![], vec![]]);
    // Field 1.1 (the varint inside the submessage) and field 3 existence only.
    let p = FieldProjection::from_paths([&[1, 1][..], &[3, 0]]).unwrap();
    let records = decode_with(&mut decoder, &example_b(), 4, 26, &p).unwrap();
    assert_eq!(records, vec![hex("0a 03 08 96 01 19 00 00 00 00 00 00 00 00"), b"hi!".to_vec(), vec![], vec![]]);
    // Field 1 existence only: an empty submessage.
    let p = FieldProjection::from_paths([&[1, 0][..]]).unwrap();
    let records = decode_with(&mut decoder, &example_b(), 4, 26, &p).unwrap();
    assert_eq!(records, vec![hex("0a 00"), b"hi!".to_vec(), vec![], vec![]]);
    // The group: field 4 fully; field 4.1 only.
    for path in [&[4][..], &[4, 1]] {
        let p = FieldProjection::from_paths([path]).unwrap();
        let records = decode_with(&mut decoder, &example_b(), 4, 26, &p).unwrap();
        assert_eq!(records, vec![vec![], b"hi!".to_vec(), vec![], hex("23 08 02 24")]);
    }
    // Nothing: empty protos, non-proto records whole.
    let records = decode_with(&mut decoder, &example_b(), 4, 26, &FieldProjection::none()).unwrap();
    assert_eq!(records, vec![vec![], b"hi!".to_vec(), vec![], vec![]]);
    // Everything, through the projection code path.
    let p = FieldProjection::from_paths([&[1][..], &[2], &[3], &[4]]).unwrap();
    assert_eq!(decode_with(&mut decoder, &example_b(), 4, 26, &p).unwrap(), example_b_records());
}

#[test]
fn projection_of_example_a() {
    let mut decoder = TransposedChunkDecoder::new();
    let p = FieldProjection::from_paths([&[1][..]]).unwrap();
    let records = decode_with(&mut decoder, &example_a(), 5, 35, &p).unwrap();
    assert_eq!(records, (0..5u8).map(|i| vec![0x08, i]).collect::<Vec<_>>());
    let p = FieldProjection::from_paths([&[1, 0][..], &[2, 0]]).unwrap();
    let records = decode_with(&mut decoder, &example_a(), 5, 35, &p).unwrap();
    assert_eq!(records, vec![hex("08 00 12 00"); 5]);
}

pub(crate) fn uncompressed() -> riegeli_codec::CompressorOptions {
    riegeli_codec::CompressorOptions {
        compression_type: riegeli_codec::CompressionType::None,
        level: 0,
        window_log: None,
    }
}

fn encode(records: &[Vec<u8>]) -> Vec<u8> {
    let mut encoder = riegeli_codec::TransposedChunkEncoder::new(uncompressed(), u64::MAX);
    for record in records {
        encoder.add_record(record).unwrap();
    }
    assert_eq!(encoder.num_records(), records.len() as u64);
    assert_eq!(encoder.decoded_data_size(), records.iter().map(Vec::len).sum::<usize>() as u64);
    let mut out = Vec::new();
    encoder.encode(&mut out).unwrap();
    assert_eq!(encoder.num_records(), 0);
    out
}

#[test]
fn examples_encode_byte_for_byte() {
    assert_eq!(encode(&example_a_records()), example_a());
    assert_eq!(encode(&example_b_records()), example_b());
    assert_eq!(encode(&[example_d_record()]), example_d());
    let mut metadata = Vec::new();
    riegeli_codec::TransposedChunkEncoder::encode_metadata(&example_d_record(), uncompressed(), &mut metadata).unwrap();
    assert_eq!(metadata, example_d());
}

#[test]
fn empty_chunks_encode_as_in_the_spec() {
    assert_eq!(encode(&[]), hex("00 06 00 00 01 00 00 00"));
    assert_eq!(encode(&[vec![]]), hex("00 06 00 00 01 03 00 00"));
}

#[test]
fn example_e_layout() {
    // Record i is {(i+1): 1} (spec §14 example E): 102 nodes, n0 a no-op with
    // base 64, n100 the record start, first_node 101, 99 transition bytes.
    let records: Vec<Vec<u8>> = (1..=100u32)
        .map(|field| {
            let mut r = Vec::new();
            let tag = field << 3;
            if tag < 0x80 {
                r.push(tag as u8)
            } else {
                r.extend([(tag as u8) | 0x80, (tag >> 7) as u8])
            }
            r.push(1);
            r
        })
        .collect();
    let data = encode(&records);
    // header_size takes two bytes here.
    assert!(data[1] >= 0x80 && data[2] < 0x80);
    assert_eq!(&data[3..6], &hex("00 00 66")[..]);
    // The transitions are the last 99 bytes: they start `00 8d 89 85` and end `08 04`.
    let transitions = &data[data.len() - 99..];
    assert_eq!(&transitions[..4], &hex("00 8d 89 85")[..]);
    assert_eq!(&transitions[97..], &hex("08 04")[..]);
    assert_eq!(decode(&data, 100, records.iter().map(Vec::len).sum::<usize>() as u64).unwrap(), records);
}
