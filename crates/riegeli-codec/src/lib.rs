//! Chunk payloads of Riegeli/records: what the bytes inside a chunk mean.
//!
//! This crate turns records into chunk data and back:
//! - [`varint`]: LEB128 varints (lenient and canonical decoding);
//! - ZigZag and signed LEB128, Parquet `DELTA_BINARY_PACKED` as public building blocks;
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

mod decoded;
mod error;
pub mod varint;

pub use crate::{
    decoded::DecodedRecords,
    error::{CodecError, CodecErrorKind},
};
