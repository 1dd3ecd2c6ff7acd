//! Varint decoding and encoding: `riegeli_codec::varint` against the
//! `varint-rs` crate (the design card's candidate) on the same bytes.
//!
//! Inputs (4096 values each, seeded): `small` (every value below 128, one
//! byte), `mixed` (bit lengths uniform in 0..=64, so 1 to 10 bytes) and
//! `full64` (uniform u64: almost all 10 bytes). Run briefly with
//! `cargo bench -p riegeli-codec --bench varint -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng, rngs::StdRng};
use riegeli_codec::varint;
use varint_rs::{VarintReader, VarintWriter};

const COUNT: usize = 4096;

fn inputs() -> Vec<(&'static str, Vec<u64>)> {
    let mut rng = StdRng::seed_from_u64(0);
    let small = (0..COUNT).map(|_| rng.gen_range(0..128)).collect();
    let mixed = (0..COUNT)
        .map(|_| {
            let bits = rng.gen_range(0..=64u32);
            if bits == 0 { 0 } else { rng.r#gen::<u64>() >> (64 - bits) }
        })
        .collect();
    let full = (0..COUNT).map(|_| rng.r#gen::<u64>()).collect();
    vec![("small", small), ("mixed", mixed), ("full64", full)]
}

fn encode_all(values: &[u64]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for &v in values {
        varint::encode_u64(v, &mut bytes);
    }
    bytes
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("varint_decode_u64");
    for (name, values) in inputs() {
        let bytes = encode_all(&values);
        // Both implementations read the same bytes to the same values.
        let mut reader: &[u8] = &bytes;
        for &v in &values {
            assert_eq!(reader.read_u64_varint().unwrap(), v);
        }
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_with_input(BenchmarkId::new("riegeli_codec", name), &bytes, |b, bytes| {
            b.iter(|| {
                let mut input: &[u8] = black_box(bytes);
                let mut sum = 0u64;
                while !input.is_empty() {
                    let (value, len) = varint::decode_u64(input).unwrap();
                    sum = sum.wrapping_add(value);
                    input = &input[len..];
                }
                sum
            });
        });
        group.bench_with_input(BenchmarkId::new("varint_rs", name), &bytes, |b, bytes| {
            b.iter(|| {
                let mut input: &[u8] = black_box(bytes);
                let mut sum = 0u64;
                while !input.is_empty() {
                    sum = sum.wrapping_add(input.read_u64_varint().unwrap());
                }
                sum
            });
        });
    }
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("varint_encode_u64");
    for (name, values) in inputs() {
        let expected = encode_all(&values);
        let mut theirs = Vec::new();
        for &v in &values {
            theirs.write_u64_varint(v).unwrap();
        }
        assert_eq!(theirs, expected);
        group.throughput(Throughput::Bytes(expected.len() as u64));
        let mut out = Vec::with_capacity(expected.len());
        group.bench_with_input(BenchmarkId::new("riegeli_codec", name), &values, |b, values| {
            b.iter(|| {
                out.clear();
                for &v in black_box(values) {
                    varint::encode_u64(v, &mut out);
                }
                out.len()
            });
        });
        let mut out = Vec::with_capacity(expected.len());
        group.bench_with_input(BenchmarkId::new("varint_rs", name), &values, |b, values| {
            b.iter(|| {
                out.clear();
                for &v in black_box(values) {
                    out.write_u64_varint(v).unwrap();
                }
                out.len()
            });
        });
    }
    group.finish();
}

// A plain `main` rather than `criterion_group!`, whose generated function has no docs.
fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    decode(&mut criterion);
    encode(&mut criterion);
    criterion.final_summary();
}
