//! Property tests of transposed chunks: encode → decode returns the records,
//! and field projection keeps exactly what an independent reference
//! projection of the records keeps.

use std::collections::HashMap;
use std::ops::ControlFlow;

use bytes::Bytes;
use proptest::prelude::*;
use riegeli_codec::{
    CodecErrorKind, CompressionType, CompressorOptions, DecodeLimits, Decompressor, FieldProjection, FieldSink,
    SubmessageAs, TransposedChunkDecoder, TransposedChunkEncoder,
};

use super::transpose_gen::{Gen, Msg, edge_cases, put_tag, put_varint};

/// A field of a generated message.
#[derive(Debug, Clone)]
enum Field {
    Varint(u32, u64),
    Fixed32(u32, u32),
    Fixed64(u32, u64),
    Bytes(u32, Vec<u8>),
    Message(u32, Vec<Field>),
    Group(u32, Vec<Field>),
}

fn build(fields: &[Field]) -> Msg {
    fields.iter().fold(Msg::new(), |m, f| match f {
        Field::Varint(n, v) => m.varint(*n, *v),
        Field::Fixed32(n, v) => m.fixed32(*n, *v),
        Field::Fixed64(n, v) => m.fixed64(*n, *v),
        Field::Bytes(n, v) => m.bytes(*n, v),
        Field::Message(n, sub) => m.message(*n, &build(sub)),
        Field::Group(n, sub) => m.group(*n, &build(sub)),
    })
}

fn field_number() -> impl Strategy<Value = u32> {
    prop_oneof![1..=4u32, Just(16), Just(2047), Just((1 << 29) - 1)]
}

fn varint_value() -> impl Strategy<Value = u64> {
    prop_oneof![0..4u64, 0..300u64, any::<u64>(), any::<i32>().prop_map(|v| v as i64 as u64)]
}

fn fields() -> impl Strategy<Value = Vec<Field>> {
    let leaf = prop_oneof![
        (field_number(), varint_value()).prop_map(|(n, v)| Field::Varint(n, v)),
        (field_number(), any::<u32>()).prop_map(|(n, v)| Field::Fixed32(n, v)),
        (field_number(), any::<u64>()).prop_map(|(n, v)| Field::Fixed64(n, v)),
        (field_number(), proptest::collection::vec(any::<u8>(), 0..12)).prop_map(|(n, v)| Field::Bytes(n, v)),
    ];
    let field = leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            (field_number(), proptest::collection::vec(inner.clone(), 0..5)).prop_map(|(n, v)| Field::Message(n, v)),
            (field_number(), proptest::collection::vec(inner, 0..4)).prop_map(|(n, v)| Field::Group(n, v)),
        ]
    });
    proptest::collection::vec(field, 0..6)
}

fn record() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => fields().prop_map(|f| build(&f).build()),
        2 => proptest::collection::vec(any::<u8>(), 0..30),
        1 => Just(Vec::new()),
    ]
}

fn options(compression_type: CompressionType) -> CompressorOptions {
    CompressorOptions { compression_type, level: 1, window_log: None }
}

fn codec_available(t: CompressionType) -> bool {
    let mut out = Vec::new();
    !matches!(
        Decompressor::new().decompress(t, &[0], 0, &mut out).map_err(|e| e.kind().clone()),
        Err(CodecErrorKind::Unsupported { .. })
    )
}

fn encode(records: &[Vec<u8>], compression_type: CompressionType, bucket_size: u64) -> Vec<u8> {
    let mut encoder = TransposedChunkEncoder::new(options(compression_type), bucket_size);
    for r in records {
        encoder.add_record(r).unwrap();
    }
    let mut data = Vec::new();
    encoder.encode(&mut data).unwrap();
    data
}

fn decode(
    decoder: &mut TransposedChunkDecoder,
    data: &[u8],
    records: &[Vec<u8>],
    projection: &FieldProjection,
) -> Vec<Vec<u8>> {
    let size: usize = records.iter().map(Vec::len).sum();
    let decoded = decoder
        .decode(Bytes::copy_from_slice(data), records.len() as u64, size as u64, &DecodeLimits::default(), projection)
        .unwrap();
    decoded.iter().map(|r| r.to_vec()).collect()
}

// An independent reference of the encoder's classification and of
// projection (spec §10, §12.1–§12.2), working on record bytes.

fn read_varint(data: &[u8], pos: &mut usize) -> Option<(u64, usize)> {
    let start = *pos;
    let mut value = 0u64;
    for i in 0..10 {
        let b = *data.get(*pos)?;
        *pos += 1;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            let len = *pos - start;
            // Canonical: no trailing zero byte, fits in 64 bits.
            if (len > 1 && b == 0) || (i == 9 && b > 1) {
                return None;
            }
            return Some((value, len));
        }
    }
    None
}

/// One parsed field: number, wire type, the whole field's byte range and the value's range.
struct Parsed {
    number: u32,
    wire_type: u32,
    whole: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
}

/// Parses a canonical message into top-level fields (a group is one field
/// whose value is its inside); `None` if it is not one.
fn parse(data: &[u8]) -> Option<Vec<Parsed>> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut open: Vec<(u32, usize, usize)> = Vec::new();
    while pos < data.len() {
        let start = pos;
        let (tag, _) = read_varint(data, &mut pos)?;
        if tag > u64::from(u32::MAX) || tag >> 3 == 0 {
            return None;
        }
        let (number, wire_type) = ((tag >> 3) as u32, (tag & 7) as u32);
        let value_start = pos;
        match wire_type {
            0 => {
                read_varint(data, &mut pos)?;
            }
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let (len, _) = read_varint(data, &mut pos)?;
                if len > u64::from(u32::MAX) {
                    return None;
                }
                pos += len as usize;
            }
            3 => {
                open.push((number, start, pos));
                continue;
            }
            4 => {
                let (n, group_start, inside) = open.pop()?;
                if n != number {
                    return None;
                }
                if open.is_empty() {
                    out.push(Parsed { number, wire_type: 3, whole: group_start..pos, value: inside..start });
                }
                continue;
            }
            _ => return None,
        }
        if pos > data.len() {
            return None;
        }
        if open.is_empty() {
            out.push(Parsed { number, wire_type, whole: start..pos, value: value_start..pos });
        }
    }
    open.is_empty().then_some(out)
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    Fully,
    Child,
    Existence,
}

type Tree = HashMap<(usize, u32), (usize, Kind)>;

fn tree(paths: &[Vec<u32>]) -> Tree {
    let mut t = Tree::new();
    for path in paths {
        let (path, existence) = match path.split_last() {
            Some((0, rest)) => (rest, true),
            _ => (&path[..], false),
        };
        let mut cur = usize::MAX;
        for (i, &n) in path.iter().enumerate() {
            let kind = if i + 1 < path.len() {
                Kind::Child
            } else if existence {
                Kind::Existence
            } else {
                Kind::Fully
            };
            let next = t.len();
            let e = t.entry((cur, n)).or_insert((next, kind));
            e.1 = e.1.min(kind);
            cur = e.0;
        }
    }
    t
}

/// Projects the canonical message `data` at nesting `depth` under tree node `id`.
fn project(data: &[u8], tree: &Tree, id: usize, depth: usize, out: &mut Vec<u8>) {
    for f in parse(data).unwrap() {
        let Some(&(child, kind)) = tree.get(&(id, f.number)) else { continue };
        let value = &data[f.value.clone()];
        match f.wire_type {
            3 => match kind {
                Kind::Fully => out.extend_from_slice(&data[f.whole.clone()]),
                Kind::Child => {
                    put_tag(out, f.number, 3);
                    project(value, tree, child, depth + 1, out);
                    put_tag(out, f.number, 4);
                }
                Kind::Existence => {
                    put_tag(out, f.number, 3);
                    put_tag(out, f.number, 4);
                }
            },
            2 => {
                // Split as a submessage: non-empty, shallow enough, canonical (§12.2).
                let payload = {
                    let mut p = f.value.start;
                    read_varint(data, &mut p).unwrap();
                    &data[p..f.value.end]
                };
                let split = !payload.is_empty() && depth < 100 && parse(payload).is_some();
                match (kind, split) {
                    (Kind::Fully, _) | (Kind::Child, false) => out.extend_from_slice(&data[f.whole.clone()]),
                    (Kind::Child, true) => {
                        let mut sub = Vec::new();
                        project(payload, tree, child, depth + 1, &mut sub);
                        put_tag(out, f.number, 2);
                        put_varint(out, sub.len() as u64);
                        out.extend(sub);
                    }
                    (Kind::Existence, _) => {
                        put_tag(out, f.number, 2);
                        out.push(0);
                    }
                }
            }
            _ => match kind {
                Kind::Fully | Kind::Child => out.extend_from_slice(&data[f.whole.clone()]),
                Kind::Existence => {
                    put_tag(out, f.number, f.wire_type);
                    let zeros = match f.wire_type {
                        0 => 1,
                        1 => 8,
                        _ => 4,
                    };
                    out.extend(std::iter::repeat_n(0, zeros));
                }
            },
        }
    }
}

fn reference_projection(records: &[Vec<u8>], paths: &[Vec<u32>]) -> Vec<Vec<u8>> {
    let t = tree(paths);
    records
        .iter()
        .map(|r| match parse(r) {
            Some(_) => {
                let mut out = Vec::new();
                project(r, &t, usize::MAX, 0, &mut out);
                out
            }
            None => r.clone(),
        })
        .collect()
}

fn path() -> impl Strategy<Value = Vec<u32>> {
    (proptest::collection::vec(field_number(), 1..4), any::<bool>()).prop_map(|(mut p, existence)| {
        if existence {
            p.push(0);
        }
        p
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn round_trip_uncompressed(records in proptest::collection::vec(record(), 0..40)) {
        let data = encode(&records, CompressionType::None, u64::MAX);
        let mut decoder = TransposedChunkDecoder::new();
        prop_assert_eq!(decode(&mut decoder, &data, &records, &FieldProjection::all()), records.clone());
        // Our encoder never writes what strict mode rejects.
        decoder.set_strict(true);
        prop_assert_eq!(decode(&mut decoder, &data, &records, &FieldProjection::all()), records);
    }

    #[test]
    fn round_trip_compressed(records in proptest::collection::vec(record(), 0..40), bucket_size in prop_oneof![Just(1u64), Just(64), Just(1 << 20)]) {
        for t in [CompressionType::Zstd, CompressionType::Snappy, CompressionType::Brotli] {
            if !codec_available(t) {
                continue;
            }
            let data = encode(&records, t, bucket_size);
            let mut decoder = TransposedChunkDecoder::new();
            prop_assert_eq!(decode(&mut decoder, &data, &records, &FieldProjection::all()), records.clone());
        }
    }

    #[test]
    fn projection_matches_reference(
        records in proptest::collection::vec(record(), 0..30),
        paths in proptest::collection::vec(path(), 0..4),
    ) {
        let projection = FieldProjection::from_paths(&paths).unwrap();
        let expected = reference_projection(&records, &paths);
        let mut decoder = TransposedChunkDecoder::new();
        let data = encode(&records, CompressionType::None, u64::MAX);
        prop_assert_eq!(decode(&mut decoder, &data, &records, &projection), expected.clone());
        for t in [CompressionType::Zstd, CompressionType::Snappy] {
            if codec_available(t) {
                let data = encode(&records, t, 16);
                prop_assert_eq!(decode(&mut decoder, &data, &records, &projection), expected.clone());
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200), n in 0..5u64, size in 0..300u64) {
        let mut decoder = TransposedChunkDecoder::new();
        let limits = DecodeLimits { max_decoded_size: 1 << 20, max_num_records: 1 << 10 };
        for projection in [FieldProjection::all(), FieldProjection::from_paths([&[1][..], &[2, 0]]).unwrap()] {
            let decoded = decoder.decode(Bytes::from(data.clone()), n, size, &limits, &projection);
            if let Ok(records) = &decoded {
                prop_assert_eq!(records.len() as u64, n);
            }
            // The sink's decode never panics either, and takes only what
            // `decode` takes, with the same records.
            for serialized in [false, true] {
                let mut sink = Reserializer::new(serialized);
                if let Ok(ControlFlow::Continue(())) = decoder.decode_to_sink(&data, n, size, &limits, &projection, &mut sink) {
                    let records = decoded.as_ref().expect("the sink took a chunk decode rejects");
                    let records: Vec<Vec<u8>> = records.iter().map(|r| r.to_vec()).collect();
                    prop_assert_eq!(sink.into_records(), records);
                }
            }
        }
    }
}

#[test]
fn generated_records_round_trip() {
    let mut g = Gen::new(7);
    let sets = vec![
        edge_cases(),
        g.mixed(2000),
        g.schema(1000),
        g.many_fields(500, 5000),
        (90..110).map(|d| g.deep(d)).collect(),
        vec![g.large(300_000), vec![], g.large(70_000)],
    ];
    let mut decoder = TransposedChunkDecoder::new();
    for records in &sets {
        let data = encode(records, CompressionType::None, u64::MAX);
        assert_eq!(&decode(&mut decoder, &data, records, &FieldProjection::all()), records);
        for t in [CompressionType::Zstd, CompressionType::Brotli, CompressionType::Snappy] {
            if codec_available(t) {
                let data = encode(records, t, 256);
                assert_eq!(&decode(&mut decoder, &data, records, &FieldProjection::all()), records);
            }
        }
    }
}

#[test]
fn generated_records_projection() {
    let mut g = Gen::new(8);
    let records: Vec<Vec<u8>> = g.mixed(500).into_iter().chain(g.schema(200)).chain(edge_cases()).collect();
    let mut decoder = TransposedChunkDecoder::new();
    let data = encode(&records, CompressionType::None, u64::MAX);
    for paths in [
        vec![vec![1]],
        vec![vec![4, 1], vec![2, 0]],
        vec![vec![4, 0], vec![5]],
        vec![vec![4, 4, 4], vec![11, 5], vec![3]],
        vec![vec![0]],
        vec![],
    ] {
        let projection = FieldProjection::from_paths(&paths).unwrap();
        let expected = reference_projection(&records, &paths);
        assert_eq!(decode(&mut decoder, &data, &records, &projection), expected, "{paths:?}");
    }
}

#[test]
fn encoder_is_reusable() {
    let mut g = Gen::new(9);
    let a = g.mixed(300);
    let b = g.schema(300);
    let mut encoder = TransposedChunkEncoder::new(options(CompressionType::None), u64::MAX);
    let mut first = Vec::new();
    for r in &a {
        encoder.add_record(r).unwrap();
    }
    encoder.encode(&mut first).unwrap();
    let mut second = Vec::new();
    for r in &b {
        encoder.add_record(r).unwrap();
    }
    encoder.encode(&mut second).unwrap();
    // Each chunk is what a fresh encoder writes.
    assert_eq!(first, encode(&a, CompressionType::None, u64::MAX));
    assert_eq!(second, encode(&b, CompressionType::None, u64::MAX));
}

#[test]
fn buffers_decoded_into_again_give_the_same_records() {
    let mut g = Gen::new(10);
    let chunks = [g.mixed(200), g.schema(50), vec![], g.mixed(500)];
    let mut decoder = TransposedChunkDecoder::new();
    for _ in 0..2 {
        for records in &chunks {
            let data = encode(records, CompressionType::None, u64::MAX);
            let size: usize = records.iter().map(Vec::len).sum();
            let decoded = decoder
                .decode(
                    Bytes::from(data),
                    records.len() as u64,
                    size as u64,
                    &DecodeLimits::default(),
                    &FieldProjection::all(),
                )
                .unwrap();
            assert_eq!(decoded.iter().map(|r| r.to_vec()).collect::<Vec<_>>(), *records);
        }
    }
    let data = Bytes::from(encode(&chunks[0], CompressionType::None, u64::MAX));
    let size: usize = chunks[0].iter().map(Vec::len).sum();
    let mut decode_again = || {
        let n = chunks[0].len() as u64;
        decoder.decode(data.clone(), n, size as u64, &DecodeLimits::default(), &FieldProjection::all()).unwrap()
    };
    let decoded = decode_again();
    let (values, ends) = (decoded.values().as_ptr(), decoded.ends().as_ptr());
    drop(decoded);
    // Dropped, their buffers are decoded into again.
    let decoded = decode_again();
    assert_eq!(decoded.ends().as_ptr(), ends);
    assert!(decoded.values().as_ptr() >= values, "a slice of the same buffer");
    // A buffer still shared is not decoded into (and stays intact).
    let kept = decoded.get(0).unwrap();
    drop(decoded);
    let _ = decode_again();
    assert_eq!(kept.to_vec(), chunks[0][0]);
}

/// A [`FieldSink`] that serializes what it is given again, backwards as it
/// comes, into records: what `decode` returns, if the sink gets every field.
/// With `serialized`, it takes every submessage serialized.
struct Reserializer {
    serialized: bool,
    /// The record being built, reversed.
    current: Vec<u8>,
    /// `current.len()` at each open submessage's end.
    open: Vec<usize>,
    /// Records, last first.
    records: Vec<Vec<u8>>,
}

impl Reserializer {
    fn new(serialized: bool) -> Self {
        Self { serialized, current: Vec::new(), open: Vec::new(), records: Vec::new() }
    }

    fn put(&mut self, bytes: &[u8]) {
        self.current.extend(bytes.iter().rev());
    }

    fn put_varint(&mut self, value: u64) {
        let mut bytes = Vec::new();
        put_varint(&mut bytes, value);
        self.put(&bytes);
    }

    fn put_tag(&mut self, field: u32, wire_type: u32) {
        self.put_varint(u64::from(field) << 3 | u64::from(wire_type));
    }

    /// The records in file order.
    fn into_records(self) -> Vec<Vec<u8>> {
        self.records.into_iter().rev().collect()
    }
}

impl FieldSink for Reserializer {
    fn record_start(&mut self) -> ControlFlow<()> {
        let mut record = std::mem::take(&mut self.current);
        record.reverse();
        self.records.push(record);
        ControlFlow::Continue(())
    }
    fn varint(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        self.put_varint(value);
        self.put_tag(field, 0);
        ControlFlow::Continue(())
    }
    fn fixed32(&mut self, field: u32, value: u32) -> ControlFlow<()> {
        self.put(&value.to_le_bytes());
        self.put_tag(field, 5);
        ControlFlow::Continue(())
    }
    fn fixed64(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        self.put(&value.to_le_bytes());
        self.put_tag(field, 1);
        ControlFlow::Continue(())
    }
    fn bytes(&mut self, field: u32, value: &[u8]) -> ControlFlow<()> {
        self.put(value);
        self.put_varint(value.len() as u64);
        self.put_tag(field, 2);
        ControlFlow::Continue(())
    }
    fn submessage_end(&mut self, _: u32) -> ControlFlow<(), SubmessageAs> {
        if self.serialized {
            return ControlFlow::Continue(SubmessageAs::Serialized);
        }
        self.open.push(self.current.len());
        ControlFlow::Continue(SubmessageAs::Fields)
    }
    fn submessage_start(&mut self, field: u32) -> ControlFlow<()> {
        let Some(end) = self.open.pop() else { return ControlFlow::Break(()) };
        self.put_varint((self.current.len() - end) as u64);
        self.put_tag(field, 2);
        ControlFlow::Continue(())
    }
    fn group(&mut self, field: u32, start: bool) -> ControlFlow<()> {
        self.put_tag(field, if start { 3 } else { 4 });
        ControlFlow::Continue(())
    }
    fn non_proto(&mut self, record: &[u8]) -> ControlFlow<()> {
        self.put(record);
        ControlFlow::Continue(())
    }
}

/// Counts records and stops at the `stop_at`-th call.
struct Stopper {
    calls: usize,
    stop_at: usize,
}

impl Stopper {
    fn step(&mut self) -> ControlFlow<()> {
        self.calls += 1;
        if self.calls >= self.stop_at { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    }
}

impl FieldSink for Stopper {
    fn record_start(&mut self) -> ControlFlow<()> {
        self.step()
    }
    fn varint(&mut self, _: u32, _: u64) -> ControlFlow<()> {
        self.step()
    }
    fn fixed32(&mut self, _: u32, _: u32) -> ControlFlow<()> {
        self.step()
    }
    fn fixed64(&mut self, _: u32, _: u64) -> ControlFlow<()> {
        self.step()
    }
    fn bytes(&mut self, _: u32, _: &[u8]) -> ControlFlow<()> {
        self.step()
    }
    fn submessage_end(&mut self, _: u32) -> ControlFlow<(), SubmessageAs> {
        match self.step() {
            ControlFlow::Continue(()) => ControlFlow::Continue(SubmessageAs::Fields),
            ControlFlow::Break(()) => ControlFlow::Break(()),
        }
    }
    fn submessage_start(&mut self, _: u32) -> ControlFlow<()> {
        self.step()
    }
    fn group(&mut self, _: u32, _: bool) -> ControlFlow<()> {
        self.step()
    }
    fn non_proto(&mut self, _: &[u8]) -> ControlFlow<()> {
        self.step()
    }
}

fn to_sink<F: FieldSink>(
    data: &[u8],
    records: &[Vec<u8>],
    projection: &FieldProjection,
    sink: &mut F,
) -> Result<ControlFlow<()>, riegeli_codec::CodecError> {
    let size: usize = records.iter().map(Vec::len).sum();
    TransposedChunkDecoder::new().decode_to_sink(
        data,
        records.len() as u64,
        size as u64,
        &DecodeLimits::default(),
        projection,
        sink,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// The sink is given every field of every record: serialized again, they
    /// are the records `decode` returns (field by field, and with
    /// submessages taken serialized), projected or not.
    #[test]
    fn sink_gets_what_decode_serializes(
        records in proptest::collection::vec(record(), 0..30),
        paths in proptest::collection::vec(path(), 0..4),
        compressed in any::<bool>(),
    ) {
        let t = if compressed && codec_available(CompressionType::Zstd) { CompressionType::Zstd } else { CompressionType::None };
        let data = encode(&records, t, 64);
        for projection in [FieldProjection::all(), FieldProjection::from_paths(&paths).unwrap()] {
            let expected = decode(&mut TransposedChunkDecoder::new(), &data, &records, &projection);
            for serialized in [false, true] {
                let mut sink = Reserializer::new(serialized);
                prop_assert_eq!(to_sink(&data, &records, &projection, &mut sink).unwrap(), ControlFlow::Continue(()));
                prop_assert_eq!(sink.into_records(), expected.clone());
            }
        }
    }

    /// Under projection, a compressed chunk's machine runs once to find what
    /// the projected fields read, then its output takes the steps found. A
    /// step that fails there (here: more output than the chunk declares)
    /// fails as in the same chunk uncompressed, whose machine runs once with
    /// its output: with the same reason, at the same transition.
    #[test]
    fn projected_failures_are_placed_alike_compressed_or_not(
        records in proptest::collection::vec(record(), 1..30),
        paths in proptest::collection::vec(path(), 1..4),
        short in 1usize..40,
    ) {
        if !codec_available(CompressionType::Zstd) {
            return Ok(());
        }
        let projection = FieldProjection::from_paths(&paths).unwrap();
        let projected: usize = reference_projection(&records, &paths).iter().map(Vec::len).sum();
        prop_assume!(projected > 0);
        let declared = projected.saturating_sub(short) as u64;
        let (n, limits) = (records.len() as u64, DecodeLimits::default());
        let failures = |data: &[u8]| {
            let decoded = TransposedChunkDecoder::new().decode(Bytes::copy_from_slice(data), n, declared, &limits, &projection);
            let mut sink = Reserializer::new(false);
            let sunk = TransposedChunkDecoder::new().decode_to_sink(data, n, declared, &limits, &projection, &mut sink);
            (decoded.err().map(|e| e.to_string()), sunk.err().map(|e| e.to_string()))
        };
        let plain = failures(&encode(&records, CompressionType::None, 64));
        prop_assert!(plain.0.is_some() && plain.1.is_some(), "{:?}", plain);
        prop_assert_eq!(failures(&encode(&records, CompressionType::Zstd, 64)), plain);
    }

    /// A sink that stops makes the decode stop, with no error.
    #[test]
    fn sink_stops_decoding(records in proptest::collection::vec(record(), 1..20), stop_at in 1usize..20) {
        let data = encode(&records, CompressionType::None, u64::MAX);
        let mut sink = Stopper { calls: 0, stop_at };
        let flow = to_sink(&data, &records, &FieldProjection::all(), &mut sink).unwrap();
        prop_assert_eq!(flow == ControlFlow::Break(()), sink.calls >= stop_at);
        prop_assert!(sink.calls <= stop_at);
    }

    /// Damaged chunk data: the sink's decode fails or stops where `decode`
    /// fails, never panics, and succeeds only where `decode` succeeds.
    #[test]
    fn sink_on_damaged_chunks(records in proptest::collection::vec(record(), 1..20), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut data = encode(&records, CompressionType::None, u64::MAX);
        let i = at.index(data.len());
        data[i] = byte;
        let size: usize = records.iter().map(Vec::len).sum();
        let decoded = TransposedChunkDecoder::new().decode(
            Bytes::copy_from_slice(&data), records.len() as u64, size as u64, &DecodeLimits::default(), &FieldProjection::all());
        let mut sink = Reserializer::new(false);
        match to_sink(&data, &records, &FieldProjection::all(), &mut sink) {
            Ok(ControlFlow::Continue(())) => {
                let decoded = decoded.expect("the sink took a chunk decode rejects");
                let decoded: Vec<Vec<u8>> = decoded.iter().map(|r| r.to_vec()).collect();
                prop_assert_eq!(sink.into_records(), decoded);
            }
            Ok(ControlFlow::Break(())) => {}
            Err(_) => prop_assert!(decoded.is_err()),
        }
    }
}
