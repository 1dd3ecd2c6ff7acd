//! Header parsing speed.
#![allow(missing_docs, reason = "criterion_group! generates undocumented functions")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use riegeli_framing::{BlockHeader, ChunkHeader};
use std::hint::black_box;

fn bench_headers(c: &mut Criterion) {
    let mut group = c.benchmark_group("headers");
    group.throughput(Throughput::Elements(1));
    let block = BlockHeader { previous_chunk: 100, next_chunk: 1000 }.encode();
    group.bench_function("block_header_parse", |b| b.iter(|| BlockHeader::parse(black_box(&block), 65536)));
    let chunk = ChunkHeader::new(b'r', 1000, 5, 10, 2000).unwrap().encode();
    group.bench_function("chunk_header_parse", |b| b.iter(|| ChunkHeader::parse(black_box(&chunk), 64)));
    group.finish();
}

criterion_group!(benches, bench_headers);
criterion_main!(benches);
