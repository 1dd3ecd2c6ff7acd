//! Throughput of the Riegeli HighwayHash over 64 KiB buffers, next to memcpy.
#![allow(missing_docs, reason = "criterion_group! generates undocumented functions")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn bench_hash(c: &mut Criterion) {
    let data: Vec<u8> = (0..65536u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let mut group = c.benchmark_group("hash");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.bench_function("one_shot_64KiB", |b| b.iter(|| riegeli_hash::hash(black_box(&data))));
    group.bench_function("streaming_64KiB_in_4_pieces", |b| {
        b.iter(|| {
            let mut h = riegeli_hash::Hasher::new();
            for piece in black_box(&data).chunks(16384) {
                h.update(piece);
            }
            h.finish()
        })
    });
    let mut dst = vec![0u8; data.len()];
    group.bench_function("memcpy_64KiB", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&data));
            black_box(&dst);
        })
    });
    group.finish();
}

criterion_group!(benches, bench_hash);
criterion_main!(benches);
