//! Sans-IO framing of Riegeli/records files.
//!
//! A Riegeli/records file is a sequence of chunks, interrupted at every multiple
//! of 64 KiB by a 24-byte block header that points at the chunk it interrupts.
//! This crate knows that layout and nothing else: it takes bytes and returns
//! values plus the number of bytes consumed, or an
//! [`Incomplete`](FramingErrorKind::Incomplete) error saying how much more
//! input is needed. It never does I/O and treats `chunk_type` as an opaque
//! byte (the meaning of chunk data belongs to `riegeli-codec`).
//!
//! - [`position`](crate#position-math): the spec's formulas as checked `const fn`s;
//! - [`BlockHeader`] and [`ChunkHeader`]: encode, parse, verify;
//! - [`FramedChunk`]/[`frame_chunk`]: a chunk's physical bytes, block headers
//!   and padding inserted; [`parse_chunk`]/[`parse_chunk_header`]: the reverse;
//! - [`find_block_header`]: the next valid block header from any position, and
//!   the chunk boundary it points to, for seeking and recovery.
//!
//! # Position math
//! [`remaining_in_block`], [`add_with_overhead`], [`num_overhead_blocks`],
//! [`distance_without_overhead`], [`round_up_to_possible_chunk_boundary`],
//! [`chunk_end`] and [`block_header_fields`] follow the specification's
//! implementation notes and return [`PositionOverflow`] rather than wrap.
//!
//! # Example
//! ```
//! use riegeli_framing::{ChunkHeader, frame_chunk, parse_chunk};
//!
//! // The file signature chunk makes the fixed first 64 bytes of every file.
//! let signature = ChunkHeader::for_data(b's', b"", 0, 0)?;
//! let mut file = Vec::new();
//! let end = frame_chunk(0, &signature, b"", &mut file)?;
//! assert_eq!(end, 64);
//! assert_eq!(file[..8], [0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f]);
//!
//! let chunk = parse_chunk(&file, 0)?;
//! assert_eq!(chunk.header().chunk_type(), b's');
//! assert_eq!(chunk.chunk_end(), 64);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(clippy::indexing_slicing, clippy::unwrap_used, clippy::cast_possible_truncation)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::cast_possible_truncation))]

mod block_header;
mod chunk;
mod chunk_header;
mod error;
mod locate;
mod position;

pub use crate::{
    block_header::BlockHeader,
    chunk::{
        ChunkView, DataPieces, DataRanges, FramedChunk, InlineBytes, Piece, frame_chunk, gather_data_in_place,
        parse_chunk, parse_chunk_header, verify_data_hash,
    },
    chunk_header::{ChunkHeader, MAX_NUM_RECORDS},
    error::{FramingError, FramingErrorKind},
    locate::{BlockLocation, find_block_header},
    position::{
        BLOCK_HEADER_SIZE, BLOCK_SIZE, CHUNK_HEADER_SIZE, PositionOverflow, USABLE_BLOCK_SIZE, add_with_overhead,
        block_begin, block_header_fields, chunk_end, distance_without_overhead, is_block_boundary,
        is_possible_chunk_boundary, next_block_boundary, num_overhead_blocks, remaining_in_block,
        round_up_to_possible_chunk_boundary,
    },
};
