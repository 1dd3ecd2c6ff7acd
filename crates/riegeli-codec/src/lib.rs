//! Chunk payloads of Riegeli/records: what the bytes inside a chunk mean.
//!
//! This crate turns records into chunk data and back. It will hold:
//! - varint (LEB128), signed LEB128 and ZigZag codecs;
//! - Parquet `DELTA_BINARY_PACKED` as a public building block;
//! - `CompressionType` and the none/brotli/zstd/snappy (de)compressors;
//! - simple chunks (`'r'`), transposed chunks (`'t'`) and the metadata chunk (`'m'`).
//!
//! It does no I/O and depends on no other riegeli crate.
#![forbid(unsafe_code)]
