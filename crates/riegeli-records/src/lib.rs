//! Reading and writing Riegeli/records files.
//!
//! This is the crate most users call, and the only one in the workspace that
//! does I/O. It joins `riegeli-framing` (blocks and chunk headers) and
//! `riegeli-codec` (chunk payloads) behind [`RecordReader`] and
//! [`RecordWriter`], with record positions, seeking, binary search, recovery
//! from corruption, metadata, padding, parallel encoding and parallel decoding; and, in
//! the ArrayRecord types, Google's ArrayRecord layout (a footer indexing every
//! chunk) with [`ArrayRecordReader`] and [`ArrayRecordWriter`].
//!
//! # Example
//! ```
//! use std::io::Cursor;
//! use riegeli_records::{RecordReader, RecordWriter, RecordWriterOptions};
//!
//! let options: RecordWriterOptions = "zstd:3".parse()?;
//! let mut writer = RecordWriter::new(Vec::new(), options)?;
//! for i in 0..1000u32 {
//!     writer.write_record(format!("record {i}").as_bytes())?;
//! }
//! let file = writer.close()?;
//!
//! let mut reader = RecordReader::new(Cursor::new(file));
//! let mut count = 0;
//! while let Some(record) = reader.read_record()? {
//!     assert_eq!(record, format!("record {count}").as_bytes());
//!     count += 1;
//! }
//! assert_eq!(count, 1000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Forked processes
//!
//! Readers and writers may be used in a process forked from the one that
//! made them (the workers of a data loader). What a process shares with
//! threads is tied to that process (as a [`PerProcess`] value is): in a
//! child forked since, a reader's worker pool starts threads of the child's
//! own at its next use there (what they were decoding ahead is decoded
//! again), and nothing of the parent's (its threads, the locks they may have
//! held at the fork, their queues) is waited on or dropped there. Files opened
//! by path are read at positions of their own ([`PositionalFile`]), so that
//! parent and child read independently; a reader given a plain `File` moves
//! the position it shares with the other process.
//!
//! A writer writes only in the process that made it: its destination (a
//! file) is the parent's too. In a forked child its first write to the
//! destination (a full buffer, a flush, closing) fails with
//! [`ErrorKind::Usage`], and dropping it there writes nothing and waits for
//! no thread.
//!
//! # Crate features
//! - `brotli`, `zstd`, `snappy` (all default): the compression codecs, forwarded to `riegeli-codec`.
#![forbid(unsafe_code)]

mod array_record;
mod chunk_reader;
mod chunk_stream;
mod chunker;
mod chunks;
mod decode;
mod error;
mod flush;
mod fork;
mod hints;
mod indexed;
mod metadata;
mod options;
mod pool;
mod position;
mod positional;
mod read_ahead;
mod reader;
mod sink;
mod skipped_region;
mod source;
mod split;
mod stream;
mod sync;
mod trailer;
mod work_queue;
mod write_behind;
mod writer;

#[cfg(all(test, loom))]
mod loom_tests;

pub use crate::{
    array_record::{
        ARRAY_RECORD_ZSTD_WINDOW_LOG, ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordShards,
        ArrayRecordTrailer, ArrayRecordWriter, ArrayRecordWriterOptions, DEFAULT_GROUP_SIZE,
        DEFAULT_TRANSPOSE_BUCKET_SIZE, IndexInfo, IndexReport, IndexSource, Selection, find_array_record_trailer,
        index_riegeli_file,
    },
    chunk_reader::Chunk,
    chunks::{ChunkReader, DecodedChunk},
    error::{Corruption, EncodeError, Error, ErrorKind, IndexCorruption, Result},
    flush::{FlushType, SyncWrite},
    fork::{PerProcess, track_forks},
    hints::ReadHints,
    metadata::{RecordsMetadata, record_type, set_record_type},
    options::{
        ChunkReadOptions, DEFAULT_COMPRESSED_CHUNK_SIZE, DEFAULT_UNCOMPRESSED_CHUNK_SIZE, IMPLICIT_PADDING,
        ParseOptionsError, RecordReaderOptions, RecordWriterOptions,
    },
    position::{ParsePositionError, RecordPosition},
    positional::{PositionalFile, ReadAt},
    reader::RecordReader,
    skipped_region::SkippedRegion,
    split::byte_ranges,
    stream::{ChunkDecodeFn, Made},
    trailer::{Disposition, TrailerDetector, TrailerStep},
    writer::RecordWriter,
};
pub use riegeli_codec::{ChunkType, CompressionType, CompressorOptions, DecodedRecords, FieldProjection};
