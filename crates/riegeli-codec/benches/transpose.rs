//! Transposed chunks: decode and encode MB/s (of record bytes) on
//! protobuf-like records of about 200 bytes, in chunks of about 1 MB.

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use riegeli_codec::{
    CompressionType, CompressorOptions, DecodeLimits, Decompressor, FieldProjection, TransposedChunkDecoder,
    TransposedChunkEncoder,
};

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, tag: u8, value: &[u8]) {
    out.push(tag);
    put_varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// A protobuf-like record of about 200 bytes: ids, timestamps, a few
/// strings, a nested message, repeated and fixed fields.
fn record(rng: &mut StdRng, i: u64) -> Vec<u8> {
    let words: [&[u8]; 8] = [b"alpha", b"beta", b"gamma", b"delta", b"epsilon", b"zeta", b"eta", b"theta"];
    let mut r = Vec::with_capacity(256);
    r.push(0x08);
    put_varint(&mut r, i);
    r.push(0x10);
    put_varint(&mut r, 1_700_000_000_000 + rng.gen_range(0..1_000_000));
    let name: Vec<u8> = (0..rng.gen_range(2..5)).flat_map(|_| words[rng.gen_range(0..8)].iter().copied()).collect();
    put_bytes(&mut r, 0x1a, &name);
    r.push(0x21);
    r.extend(rng.r#gen::<f64>().to_le_bytes());
    let mut sub = Vec::new();
    sub.push(0x08);
    put_varint(&mut sub, rng.gen_range(0..100));
    put_bytes(&mut sub, 0x12, words[rng.gen_range(0..8)]);
    sub.push(0x1d);
    sub.extend(rng.r#gen::<f32>().to_le_bytes());
    put_bytes(&mut r, 0x2a, &sub);
    for _ in 0..rng.gen_range(2..6) {
        r.push(0x30);
        put_varint(&mut r, rng.gen_range(0..5000));
    }
    let text: Vec<u8> =
        (0..rng.gen_range(40..90)).map(|_| b"abcdefghijklmnopqrstuvwxyz    "[rng.gen_range(0..30)]).collect();
    put_bytes(&mut r, 0x3a, &text);
    r.push(0x40);
    put_varint(&mut r, rng.gen_range(0..4));
    r
}

fn records(n: usize) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(0);
    (0..n as u64).map(|i| record(&mut rng, i)).collect()
}

fn available(t: CompressionType) -> bool {
    let mut out = Vec::new();
    !matches!(
        Decompressor::new().decompress(t, &[0], 0, &mut out).map_err(|e| e.kind().clone()),
        Err(riegeli_codec::CodecErrorKind::Unsupported { .. })
    )
}

fn bench(c: &mut Criterion) {
    let records = records(5000);
    let size: u64 = records.iter().map(|r| r.len() as u64).sum();
    let mut group = c.benchmark_group("transpose");
    group.throughput(Throughput::Bytes(size));
    for (name, t, level) in [("none", CompressionType::None, 0), ("zstd3", CompressionType::Zstd, 3)] {
        if !available(t) {
            continue;
        }
        let options = CompressorOptions { compression_type: t, level, window_log: None };
        let mut encoder = TransposedChunkEncoder::new(options, 1 << 20);
        let mut data = Vec::new();
        let mut encode = |data: &mut Vec<u8>| {
            data.clear();
            for r in &records {
                encoder.add_record(r).unwrap();
            }
            encoder.encode(data).unwrap();
        };
        group.bench_function(BenchmarkId::new("encode", name), |b| b.iter(|| encode(&mut data)));
        encode(&mut data);
        let data = Bytes::from(data);
        let mut decoder = TransposedChunkDecoder::new();
        let limits = DecodeLimits::default();
        let n = records.len() as u64;
        group.bench_function(BenchmarkId::new("decode", name), |b| {
            b.iter(|| decoder.decode(data.clone(), n, size, &limits, &FieldProjection::all()).unwrap())
        });
        group.bench_function(BenchmarkId::new("decode_recycled", name), |b| {
            b.iter(|| {
                // Dropped before the next decode: its buffers go back to the decoder.
                decoder.decode(data.clone(), n, size, &limits, &FieldProjection::all()).unwrap().len()
            })
        });
        let projection = FieldProjection::from_paths([&[1][..], &[5, 1]]).unwrap();
        group.bench_function(BenchmarkId::new("decode_projected", name), |b| {
            b.iter(|| decoder.decode(data.clone(), n, size, &limits, &projection).unwrap())
        });
    }
    group.finish();
}

/// Runs the benchmarks (what `criterion_group!`/`criterion_main!` would
/// generate, written out so that it is documented).
fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
