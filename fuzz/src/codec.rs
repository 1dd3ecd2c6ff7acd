//! The checks behind the riegeli-codec fuzz targets: each takes the raw fuzz
//! input, calls the codec API on it and asserts the properties that must hold
//! whatever the bytes are (no panic, sizes as declared, round trips).
//!
//! The same functions replay `fuzz/regressions/<target>/` in
//! `crates/riegeli-codec/tests/fuzz_regressions.rs` (which includes this file
//! with `#[path]`), so this file uses only `riegeli_codec` and `std`.
//!
//! Input layouts are documented on each function. Missing bytes read as zero,
//! so every input, even an empty one, is valid.

use std::ops::ControlFlow;

use riegeli_codec::{
    CodecError, CompressionType, Compressor, CompressorOptions, DecodeLimits, Decompressor, FieldProjection, FieldSink,
    SimpleChunkDecoder, SimpleChunkEncoder, SubmessageAs, TransposedChunkDecoder, TransposedChunkEncoder, delta,
};

/// Small limits, so that no input makes a run allocate much.
/// Above every round trip's data (`MAX_ROUND_TRIP`); a damaged size is
/// zero-filled up to it before decoding, so it bounds what that costs a run.
const LIMITS: DecodeLimits = DecodeLimits { max_decoded_size: 1 << 16, max_num_records: 1 << 14 };

/// The largest decompressed size the `decompress_*` targets allow.
const MAX_DECOMPRESSED: u64 = 1 << 20;

/// The largest number of values the `delta` target decodes.
const MAX_DELTA_VALUES: usize = 1 << 20;

/// The most input bytes a round trip compresses, to keep runs fast.
const MAX_ROUND_TRIP: usize = 1 << 14;

/// Every compression type, in the order the round trips use them.
const COMPRESSION_TYPES: [CompressionType; 4] =
    [CompressionType::None, CompressionType::Brotli, CompressionType::Zstd, CompressionType::Snappy];

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

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    fn rest(self) -> &'a [u8] {
        self.rest
    }
}

/// Asserts the generic properties of an error: its message is not empty and
/// follows the style (no trailing period).
fn check_error(err: &CodecError) {
    let message = err.to_string();
    assert!(!message.is_empty() && !message.ends_with('.'), "{message:?}");
}

/// Compressor options of `compression_type` at a level chosen by `selector`
/// within the type's valid levels. Brotli stays below level 9, with a window
/// of 2^10 to 2^16 (chosen by `selector` too): the pure-Rust encoder zeroes
/// hash tables for each stream, 32 MiB at level 9, up to 16 MiB at levels 5
/// to 8 with a window above 2^16, which took most of each run.
fn options(compression_type: CompressionType, byte: u8) -> CompressorOptions {
    let selector = i32::from(byte);
    let base = match compression_type {
        CompressionType::Brotli => {
            let window_log = 10 + u32::from(byte / 9 % 7);
            CompressorOptions::brotli().with_level(selector % 9).with_window_log(Some(window_log))
        }
        CompressionType::Zstd => CompressorOptions::zstd().with_level(selector % 25 - 2),
        CompressionType::Snappy => CompressorOptions::snappy().with_level(1 + selector % 2),
        _ => CompressorOptions::uncompressed(),
    };
    assert_eq!(base.validate(), Ok(()), "{base:?}");
    base
}

/// Splits `data` into records at each `separator` byte (at most `max` records).
fn split_records(data: &[u8], separator: u8, max: usize) -> Vec<&[u8]> {
    data.split(|&byte| byte == separator).take(max).collect()
}

/// Target `simple_chunk`: `SimpleChunkDecoder::decode` on arbitrary chunk
/// data, and an encode -> decode round trip of records taken from the input
/// with every compression type.
///
/// Layout: `num_records` (2 bytes), `decoded_data_size` (4 bytes), a record
/// separator byte, a level selector byte, then the chunk data (which is also
/// split into records at the separator for the round trip).
pub fn simple_chunk(data: &[u8]) {
    let mut input = Input::new(data);
    let num_records = u64::from(input.u16());
    let decoded_data_size = u64::from(input.u32());
    let separator = input.u8();
    let level = input.u8();
    let chunk = input.rest();

    let mut decoder = SimpleChunkDecoder::new();
    match decoder.decode(chunk.to_vec().into(), num_records, decoded_data_size, &LIMITS) {
        Ok(records) => {
            assert_eq!(records.len() as u64, num_records);
            assert_eq!(records.decoded_data_size() as u64, decoded_data_size);
            let total: u64 = records.iter().map(|record| record.len() as u64).sum();
            assert_eq!(total, decoded_data_size);
            // Re-encoding without compression and decoding gives the same records.
            let mut encoder = SimpleChunkEncoder::new(CompressorOptions::uncompressed());
            for record in records.iter() {
                encoder.add_record(&record);
            }
            let mut encoded = Vec::new();
            assert_eq!(encoder.encode(&mut encoded), Ok(()));
            let again = decoder.decode(encoded.into(), num_records, decoded_data_size, &LIMITS);
            assert!(again.is_ok_and(|again| again.iter().eq(records.iter())));
        }
        Err(err) => check_error(&err),
    }

    let source = chunk.get(..MAX_ROUND_TRIP).unwrap_or(chunk);
    let records = split_records(source, separator, 1 << 12);
    for compression_type in COMPRESSION_TYPES {
        let mut encoder = SimpleChunkEncoder::new(options(compression_type, level));
        for record in &records {
            encoder.add_record(record);
        }
        let num_records = encoder.num_records();
        let decoded_data_size = encoder.decoded_data_size();
        assert_eq!(num_records, records.len() as u64);
        assert_eq!(decoded_data_size, records.iter().map(|record| record.len() as u64).sum::<u64>());
        let mut encoded = vec![0xa5];
        assert_eq!(encoder.encode(&mut encoded), Ok(()), "{compression_type:?}");
        assert!(encoder.is_empty());
        assert_eq!(encoded.first(), Some(&0xa5));
        let encoded = encoded.get(1..).unwrap_or_default().to_vec();
        assert_eq!(encoded.first(), Some(&compression_type.to_byte()));
        let decoded = decoder.decode(encoded.into(), num_records, decoded_data_size, &LIMITS);
        let decoded = decoded.map_err(|err| err.to_string());
        assert!(
            decoded.as_ref().is_ok_and(|decoded| decoded
                .iter()
                .map(|record| record.to_vec())
                .eq(records.iter().map(|record| record.to_vec()))),
            "{compression_type:?}: {decoded:?}"
        );
    }
}

/// `Decompressor::decompress` of `compression_type` on the whole input, and a
/// compress -> decompress round trip of it (the first byte picks the level).
fn decompress(compression_type: CompressionType, data: &[u8]) {
    let mut decompressor = Decompressor::new();
    // Output is appended: what `out` held before stays.
    let prefix = b"prefix";
    let mut out = prefix.to_vec();
    match decompressor.decompress(compression_type, data, MAX_DECOMPRESSED, &mut out) {
        Ok(()) => {
            let declared = Decompressor::declared_size(compression_type, data).map(|(size, _)| size);
            assert_eq!(declared, Ok((out.len() - prefix.len()) as u64));
            assert!(out.starts_with(prefix));
        }
        Err(err) => {
            check_error(&err);
            assert_eq!(out, prefix, "out changed on error");
        }
    }

    let source = data.get(..MAX_ROUND_TRIP).unwrap_or(data);
    let mut compressor = Compressor::new(options(compression_type, data.first().copied().unwrap_or(0)));
    let mut compressed = vec![0x5a];
    assert_eq!(compressor.compress(source, &mut compressed), Ok(()));
    let compressed = compressed.get(1..).unwrap_or_default();
    let declared = Decompressor::declared_size(compression_type, compressed);
    assert_eq!(declared.map(|(size, _)| size), Ok(source.len() as u64));
    let mut out = Vec::new();
    let result = decompressor.decompress(compression_type, compressed, source.len() as u64, &mut out);
    assert_eq!(result, Ok(()));
    assert!(out == source, "round trip differs");
    // One byte less of allowed size is a limit error (except for an empty
    // input, which fits any limit).
    if let Some(smaller) = (source.len() as u64).checked_sub(1) {
        let mut out = Vec::new();
        assert!(decompressor.decompress(compression_type, compressed, smaller, &mut out).is_err());
        assert!(out.is_empty());
    }
}

/// Target `decompress_brotli`: the input is a brotli compressed block.
pub fn decompress_brotli(data: &[u8]) {
    decompress(CompressionType::Brotli, data);
}

/// Target `decompress_zstd`: the input is a zstd compressed block.
pub fn decompress_zstd(data: &[u8]) {
    decompress(CompressionType::Zstd, data);
}

/// Target `decompress_snappy`: the input is a snappy compressed block.
pub fn decompress_snappy(data: &[u8]) {
    decompress(CompressionType::Snappy, data);
}

/// Target `delta`: `DELTA_BINARY_PACKED` decoding of arbitrary bytes with a
/// value limit, re-encoding of what decodes, and an encode -> decode round
/// trip of values read from the input.
///
/// Layout: a byte whose low bit picks INT32 (0) or INT64 (1), then the stream.
pub fn delta(data: &[u8]) {
    let mut input = Input::new(data);
    let wide = input.u8() & 1 == 1;
    let stream = input.rest();
    if wide {
        check_delta(
            stream,
            |bytes| delta::decode_i64_with_limit(bytes, MAX_DELTA_VALUES),
            delta::encode_i64,
            |chunk| i64::from_le_bytes(chunk.try_into().expect("8 bytes")),
            8,
        );
    } else {
        check_delta(
            stream,
            |bytes| delta::decode_i32_with_limit(bytes, MAX_DELTA_VALUES),
            delta::encode_i32,
            |chunk| i32::from_le_bytes(chunk.try_into().expect("4 bytes")),
            4,
        );
    }
}

fn check_delta<T: PartialEq + std::fmt::Debug>(
    stream: &[u8],
    decode: impl Fn(&[u8]) -> Result<(Vec<T>, usize), CodecError>,
    encode: impl Fn(&[T], &mut Vec<u8>),
    from_le: impl Fn(&[u8]) -> T,
    width: usize,
) {
    match decode(stream) {
        Ok((values, consumed)) => {
            assert!(consumed <= stream.len(), "consumed {consumed} of {}", stream.len());
            assert!(values.len() <= MAX_DELTA_VALUES);
            // The stream ends where counting values says: the bytes after it do not matter.
            let prefix = decode(stream.get(..consumed).unwrap_or_default());
            assert!(prefix.as_ref().is_ok_and(|(again, used)| *again == values && *used == consumed));
            let mut encoded = Vec::new();
            encode(&values, &mut encoded);
            let again = decode(&encoded);
            assert!(
                again.as_ref().is_ok_and(|(again, used)| *again == values && *used == encoded.len()),
                "re-encoded stream decodes differently"
            );
        }
        Err(err) => check_error(&err),
    }

    // Values read from the input round-trip through the encoder.
    let values: Vec<T> = stream.chunks_exact(width).map(from_le).collect();
    let mut encoded = Vec::new();
    encode(&values, &mut encoded);
    let decoded = decode(&encoded);
    assert!(
        decoded.as_ref().is_ok_and(|(decoded, used)| *decoded == values && *used == encoded.len()),
        "round trip of {} values",
        values.len()
    );
}

/// A [`FieldSink`] that takes every field and counts the records.
struct CountingSink {
    records: u64,
    /// Submessages field by field, or serialized.
    fields_as_submessages: bool,
}

impl FieldSink for CountingSink {
    fn record_start(&mut self) -> ControlFlow<()> {
        self.records += 1;
        ControlFlow::Continue(())
    }
    fn varint(&mut self, _field: u32, _value: u64) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn fixed32(&mut self, _field: u32, _value: u32) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn fixed64(&mut self, _field: u32, _value: u64) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn bytes(&mut self, _field: u32, _value: &[u8]) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn submessage_end(&mut self, _field: u32) -> ControlFlow<(), SubmessageAs> {
        ControlFlow::Continue(if self.fields_as_submessages { SubmessageAs::Fields } else { SubmessageAs::Serialized })
    }
    fn submessage_start(&mut self, _field: u32) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn group(&mut self, _field: u32, _start: bool) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn non_proto(&mut self, _record: &[u8]) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// Target `transposed_chunk`: `TransposedChunkDecoder::decode` on arbitrary
/// chunk data, and an encode -> decode round trip of records taken from the
/// input.
///
/// The chunk data is also decoded under a projection of one field path
/// (`n`, or `n.1`), into records and through a [`FieldSink`] (as Arrow
/// columns are filled): neither panics, and the sink takes whole only chunks
/// that `decode` takes, with as many records.
///
/// Layout: `num_records` (2 bytes), `decoded_data_size` (4 bytes), a flags
/// byte (bit 0: strict mode; bits 1-2: compression type of the round trip;
/// bits 3-6: the projected field number less 1; bit 7: the path goes one
/// level deeper, to field 1 of that field), a record separator byte (its bit
/// 0 also says whether the sink takes submessages field by field or
/// serialized), then the chunk data (which is also split into records at the
/// separator for the round trip, and its top 3 bits say how many bytes short
/// the projected round trip declares its decoded size).
pub fn transposed_chunk(data: &[u8]) {
    let mut input = Input::new(data);
    let num_records = u64::from(input.u16());
    let decoded_data_size = u64::from(input.u32());
    let flags = input.u8();
    let separator = input.u8();
    let chunk = input.rest();

    let mut decoder = TransposedChunkDecoder::new();
    decoder.set_strict(flags & 1 == 1);
    match decoder.decode(chunk.to_vec().into(), num_records, decoded_data_size, &LIMITS, &FieldProjection::all()) {
        Ok(records) => {
            assert_eq!(records.len() as u64, num_records);
            assert_eq!(records.decoded_data_size() as u64, decoded_data_size);
        }
        Err(err) => check_error(&err),
    }
    // No projection: never more records or bytes than with all fields.
    let mut decoder = TransposedChunkDecoder::new();
    match decoder.decode(chunk.to_vec().into(), num_records, decoded_data_size, &LIMITS, &FieldProjection::none()) {
        Ok(records) => {
            assert_eq!(records.len() as u64, num_records);
            assert!(records.decoded_data_size() as u64 <= decoded_data_size);
        }
        Err(err) => check_error(&err),
    }

    // One field path projected: records, and fields handed to a sink.
    let field = u32::from((flags >> 3) & 0x0f) + 1;
    let path: &[u32] = if flags & 0x80 != 0 { &[field, 1] } else { &[field] };
    let mut projection = FieldProjection::none();
    if projection.add_field(path).is_ok() {
        let mut decoder = TransposedChunkDecoder::new();
        let decoded = decoder.decode(chunk.to_vec().into(), num_records, decoded_data_size, &LIMITS, &projection);
        match &decoded {
            Ok(records) => {
                assert_eq!(records.len() as u64, num_records);
                assert!(records.decoded_data_size() as u64 <= decoded_data_size);
            }
            Err(err) => check_error(err),
        }
        let mut sink = CountingSink { records: 0, fields_as_submessages: separator & 1 == 1 };
        match decoder.decode_to_sink(chunk, num_records, decoded_data_size, &LIMITS, &projection, &mut sink) {
            Ok(ControlFlow::Continue(())) => {
                assert!(decoded.is_ok(), "the sink took a chunk decode rejects");
                assert_eq!(sink.records, num_records);
            }
            Ok(ControlFlow::Break(())) => {}
            Err(err) => check_error(&err),
        }
    }

    let source = chunk.get(..MAX_ROUND_TRIP).unwrap_or(chunk);
    let records = split_records(source, separator, 1 << 10);
    let compression_type = COMPRESSION_TYPES.get(usize::from(flags >> 1) % 4).copied().unwrap_or(CompressionType::None);
    let mut encoder = TransposedChunkEncoder::new(options(compression_type, 1), 256);
    for record in &records {
        assert_eq!(encoder.add_record(record), Ok(()));
    }
    let num_records = encoder.num_records();
    let decoded_data_size = encoder.decoded_data_size();
    assert_eq!(num_records, records.len() as u64);
    let mut encoded = Vec::new();
    assert_eq!(encoder.encode(&mut encoded), Ok(()));
    let mut decoder = TransposedChunkDecoder::new();
    decoder.set_strict(true);
    let decoded =
        decoder.decode(encoded.clone().into(), num_records, decoded_data_size, &LIMITS, &FieldProjection::all());
    let decoded = decoded.map_err(|err| err.to_string());
    assert!(
        decoded.as_ref().is_ok_and(|decoded| decoded
            .iter()
            .map(|record| record.to_vec())
            .eq(records.iter().map(|record| record.to_vec()))),
        "{compression_type:?}: {decoded:?}"
    );

    // Projected, a compressed chunk runs its machine without values first and
    // replays what it found over the buffers it kept: the same records, or the
    // same error, as the one run over the chunk uncompressed.
    if compression_type != CompressionType::None
        && let Ok(projection) = FieldProjection::from_paths([path])
    {
        let mut plain = Vec::new();
        let mut encoder = TransposedChunkEncoder::new(options(CompressionType::None, 1), 256);
        for record in &records {
            assert_eq!(encoder.add_record(record), Ok(()));
        }
        assert_eq!(encoder.encode(&mut plain), Ok(()));
        // Declared a little short now and then, for steps that fail.
        let size = decoded_data_size.saturating_sub(u64::from(separator >> 5));
        let project = |chunk: Vec<u8>| {
            let decoded = TransposedChunkDecoder::new().decode(chunk.into(), num_records, size, &LIMITS, &projection);
            decoded.map(|records| records.iter().map(|r| r.to_vec()).collect::<Vec<_>>()).map_err(|e| e.to_string())
        };
        assert_eq!(project(encoded), project(plain), "{compression_type:?}");
    }
}
