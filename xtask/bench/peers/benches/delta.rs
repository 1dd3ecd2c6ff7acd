//! Parquet `DELTA_BINARY_PACKED` decoding: `riegeli_codec::delta` against the
//! `parquet` crate's `DeltaBitPackDecoder`, on the same bytes (written by
//! `riegeli_codec::delta`, which matches Arrow C++ byte for byte).
//!
//! Three inputs of 100,000 values: sorted nanosecond timestamps (INT64),
//! random small values (INT32) and full-width random values (INT64). Both
//! decoders write into a reused output buffer; throughput is in values.
//!
//! `cargo bench --bench delta -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use bench_peers::{full_width_i64, random_small_i32, timestamps_ns};
use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput};
use parquet::{
    data_type::{Int32Type, Int64Type},
    encodings::decoding::{Decoder, DeltaBitPackDecoder},
};
use riegeli_codec::delta;

const N: usize = 100_000;

fn bench_i64(c: &mut Criterion, name: &str, values: &[i64]) {
    let mut encoded = Vec::new();
    delta::encode_i64(values, &mut encoded);
    let bytes = Bytes::from(encoded.clone());

    // Both decoders agree on the input before anything is timed.
    let mut theirs = vec![0i64; values.len()];
    let mut decoder = DeltaBitPackDecoder::<Int64Type>::new();
    decoder.set_data(bytes.clone(), values.len()).unwrap();
    assert_eq!(decoder.get(&mut theirs).unwrap(), values.len());
    assert_eq!(theirs, values);
    assert_eq!(delta::decode_i64(&encoded).unwrap(), (values.to_vec(), encoded.len()));

    let mut group = c.benchmark_group("delta_decode");
    group.throughput(Throughput::Elements(values.len() as u64));
    let mut ours = Vec::with_capacity(values.len());
    group.bench_function(BenchmarkId::new("riegeli_codec", name), |b| {
        b.iter(|| {
            ours.clear();
            delta::decode_i64_into(black_box(&encoded), usize::MAX, &mut ours).unwrap()
        });
    });
    group.bench_function(BenchmarkId::new("parquet", name), |b| {
        b.iter(|| {
            let mut decoder = DeltaBitPackDecoder::<Int64Type>::new();
            decoder.set_data(black_box(bytes.clone()), theirs.len()).unwrap();
            decoder.get(&mut theirs).unwrap()
        });
    });
    group.finish();
}

fn bench_i32(c: &mut Criterion, name: &str, values: &[i32]) {
    let mut encoded = Vec::new();
    delta::encode_i32(values, &mut encoded);
    let bytes = Bytes::from(encoded.clone());

    let mut theirs = vec![0i32; values.len()];
    let mut decoder = DeltaBitPackDecoder::<Int32Type>::new();
    decoder.set_data(bytes.clone(), values.len()).unwrap();
    assert_eq!(decoder.get(&mut theirs).unwrap(), values.len());
    assert_eq!(theirs, values);
    assert_eq!(delta::decode_i32(&encoded).unwrap(), (values.to_vec(), encoded.len()));

    let mut group = c.benchmark_group("delta_decode");
    group.throughput(Throughput::Elements(values.len() as u64));
    let mut ours = Vec::with_capacity(values.len());
    group.bench_function(BenchmarkId::new("riegeli_codec", name), |b| {
        b.iter(|| {
            ours.clear();
            delta::decode_i32_into(black_box(&encoded), usize::MAX, &mut ours).unwrap()
        });
    });
    group.bench_function(BenchmarkId::new("parquet", name), |b| {
        b.iter(|| {
            let mut decoder = DeltaBitPackDecoder::<Int32Type>::new();
            decoder.set_data(black_box(bytes.clone()), theirs.len()).unwrap();
            decoder.get(&mut theirs).unwrap()
        });
    });
    group.finish();
}

// A plain `main` rather than `criterion_group!`, whose generated function has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_i64(&mut c, "timestamps_ns_i64", &timestamps_ns(N, 1));
    bench_i32(&mut c, "random_small_i32", &random_small_i32(N, 2));
    bench_i64(&mut c, "full_width_i64", &full_width_i64(N, 3));
    c.final_summary();
}
