//! Simple-chunk encode and decode throughput per codec, next to the raw
//! compressor and decompressor on the same bytes (the ceiling).
//!
//! Records: 1,000 × ~1 KiB of English-like text (seeded), one chunk.
//! Throughput is in bytes of record payload.
#![allow(missing_docs, reason = "criterion's macros generate undocumented public functions")]

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use riegeli_codec::{
    CompressionType, Compressor, CompressorOptions, DecodeLimits, Decompressor, SimpleChunkDecoder, SimpleChunkEncoder,
};

const WORDS: &[&str] = &[
    "the", "of", "and", "a", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are", "as", "with",
    "his", "they", "at", "be", "this", "have", "from", "or", "one", "had", "by", "word", "but", "not", "what", "all",
    "were", "we", "when", "your", "can", "said", "there", "use", "an", "each", "which", "she", "do", "how", "their",
    "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so", "some", "her", "would",
];

fn records() -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(0);
    (0..1000)
        .map(|_| {
            let len = rng.gen_range(900..1150);
            let mut record = Vec::with_capacity(len + 16);
            while record.len() < len {
                record.extend_from_slice(WORDS[rng.gen_range(0..WORDS.len())].as_bytes());
                record.push(b' ');
            }
            record
        })
        .collect()
}

fn codecs() -> Vec<(&'static str, CompressorOptions)> {
    let mut codecs = vec![("none", CompressorOptions::uncompressed())];
    if cfg!(feature = "brotli") {
        codecs.push(("brotli6", CompressorOptions::brotli()));
    }
    if cfg!(feature = "zstd") {
        codecs.push(("zstd3", CompressorOptions::zstd()));
    }
    if cfg!(feature = "snappy") {
        codecs.push(("snappy", CompressorOptions::snappy()));
    }
    codecs
}

fn bench_encode(c: &mut Criterion) {
    let records = records();
    let concatenated: Vec<u8> = records.concat();
    let mut group = c.benchmark_group("simple_encode");
    group.throughput(Throughput::Bytes(concatenated.len() as u64));
    for (name, options) in codecs() {
        let mut encoder = SimpleChunkEncoder::new(options);
        let mut out = Vec::new();
        group.bench_function(BenchmarkId::new("chunk", name), |b| {
            b.iter(|| {
                for record in &records {
                    encoder.add_record(record);
                }
                out.clear();
                encoder.encode(&mut out).unwrap();
                out.len()
            })
        });
        if options.compression_type != CompressionType::None {
            // The codec crate's own API on the concatenated records.
            group.bench_function(BenchmarkId::new("raw", name), |b| b.iter(|| raw_compress(options, &concatenated)));
            // riegeli-codec's `Compressor` on the same bytes.
            let mut compressor = Compressor::new(options);
            group.bench_function(BenchmarkId::new("compressor", name), |b| {
                b.iter(|| {
                    out.clear();
                    compressor.compress(&concatenated, &mut out).unwrap();
                    out.len()
                })
            });
        }
    }
    group.finish();
}

/// The codec crate's own API, without riegeli-codec in between (contexts reused
/// where the API allows).
fn raw_compress(options: CompressorOptions, data: &[u8]) -> usize {
    match options.compression_type {
        #[cfg(feature = "zstd")]
        CompressionType::Zstd => {
            thread_local! {
                static C: std::cell::RefCell<zstd::bulk::Compressor<'static>> =
                    std::cell::RefCell::new(zstd::bulk::Compressor::new(3).unwrap());
            }
            C.with(|c| c.borrow_mut().compress(data).unwrap().len())
        }
        #[cfg(feature = "snappy")]
        CompressionType::Snappy => snap::raw::Encoder::new().compress_vec(data).unwrap().len(),
        #[cfg(feature = "brotli")]
        CompressionType::Brotli => {
            let params = brotli::enc::BrotliEncoderParams { quality: 6, lgwin: 22, ..Default::default() };
            let mut out = Vec::new();
            brotli::BrotliCompress(&mut &data[..], &mut out, &params).unwrap();
            out.len()
        }
        _ => {
            let _ = data;
            0
        }
    }
}

/// The codec crate's own API, without riegeli-codec in between.
fn raw_decompress(options: CompressorOptions, block: &[u8], size: usize) -> usize {
    let stream = &block[riegeli_codec::varint::decode_u64(block).unwrap().1..];
    match options.compression_type {
        #[cfg(feature = "zstd")]
        CompressionType::Zstd => {
            thread_local! {
                static D: std::cell::RefCell<zstd::bulk::Decompressor<'static>> =
                    std::cell::RefCell::new(zstd::bulk::Decompressor::new().unwrap());
            }
            D.with(|d| d.borrow_mut().decompress(stream, size).unwrap().len())
        }
        #[cfg(feature = "snappy")]
        CompressionType::Snappy => snap::raw::Decoder::new().decompress_vec(stream).unwrap().len(),
        #[cfg(feature = "brotli")]
        CompressionType::Brotli => {
            let mut out = Vec::with_capacity(size);
            brotli::BrotliDecompress(&mut &stream[..], &mut out).unwrap();
            out.len()
        }
        _ => {
            let _ = (stream, size);
            0
        }
    }
}

fn bench_decode(c: &mut Criterion) {
    let records = records();
    let concatenated: Vec<u8> = records.concat();
    let mut group = c.benchmark_group("simple_decode");
    group.throughput(Throughput::Bytes(concatenated.len() as u64));
    for (name, options) in codecs() {
        let mut encoder = SimpleChunkEncoder::new(options);
        for record in &records {
            encoder.add_record(record);
        }
        let (n, size) = (encoder.num_records(), encoder.decoded_data_size());
        let mut data = Vec::new();
        encoder.encode(&mut data).unwrap();
        let data = Bytes::from(data);
        let limits = DecodeLimits::default();
        let mut decoder = SimpleChunkDecoder::new();
        group.bench_function(BenchmarkId::new("chunk", name), |b| {
            b.iter(|| decoder.decode(data.clone(), n, size, &limits).unwrap().len())
        });
        group.bench_function(BenchmarkId::new("chunk_recycled", name), |b| {
            b.iter(|| {
                let records = decoder.decode(data.clone(), n, size, &limits).unwrap();
                // Dropped before the next decode: its buffers go back to the decoder.
                records.len()
            })
        });
        if options.compression_type != CompressionType::None {
            let mut block = Vec::new();
            Compressor::new(options).compress(&concatenated, &mut block).unwrap();
            group.bench_function(BenchmarkId::new("raw", name), |b| {
                b.iter(|| raw_decompress(options, &block, concatenated.len()))
            });
            let mut decompressor = Decompressor::new();
            let mut out = Vec::new();
            group.bench_function(BenchmarkId::new("decompressor", name), |b| {
                b.iter(|| {
                    out.clear();
                    decompressor.decompress(options.compression_type, &block, u64::MAX, &mut out).unwrap();
                    out.len()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_encode, bench_decode);
criterion_main!(benches);
