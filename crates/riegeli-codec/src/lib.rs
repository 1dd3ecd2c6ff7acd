//! Chunk payloads of Riegeli/records: what the bytes inside a chunk mean.
//!
//! This crate turns records into chunk data and back:
//! - [`varint`]: LEB128 varints (lenient and canonical decoding);
//! - [`zigzag`], [`sleb128`] (signed LEB128) and [`delta`] (Parquet
//!   `DELTA_BINARY_PACKED`, byte-compatible with Apache Arrow) as public building blocks;
//! - `CompressionType` and the none/brotli/zstd/snappy (de)compressors;
//! - simple chunks (`'r'`), transposed chunks (`'t'`) and the metadata chunk (`'m'`).
//!
//! It does no I/O and depends on no other riegeli crate.
//!
//! # Crate features
//! - `brotli` (default): brotli compression.
//! - `zstd` (default): zstd compression.
//! - `snappy` (default): snappy compression.
//!
//! With a codec's feature off, decoding data compressed with it is an
//! [`Unsupported`](CodecErrorKind::Unsupported) error.
#![forbid(unsafe_code)]
#![warn(clippy::indexing_slicing, clippy::unwrap_used, clippy::cast_possible_truncation)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::cast_possible_truncation))]

mod chunk_type;
mod compression;
mod decoded;
pub mod delta;
mod error;
mod limits;
mod recycle;
mod simple;
pub mod sleb128;
mod transpose;
pub mod varint;
pub mod zigzag;

pub use crate::{
    chunk_type::ChunkType,
    compression::{CompressionType, Compressor, CompressorOptions, Decompressor},
    decoded::{DecodedRecords, RecordBuffers},
    error::{CodecError, CodecErrorKind},
    limits::DecodeLimits,
    recycle::{Homing, Recycler, Reusable},
    simple::{SimpleChunkDecoder, SimpleChunkEncoder},
    transpose::{FieldProjection, FieldSink, SubmessageAs, TransposedChunkDecoder, TransposedChunkEncoder},
};
