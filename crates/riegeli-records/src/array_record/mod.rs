//! ArrayRecord (google/array_record): Riegeli/records files with a footer
//! that indexes every chunk, for random access by record index.
//!
//! Layout (see `ArrayRecordWriter`): the file signature, data chunks of
//! `group_size` records each, a footer chunk (a `RiegeliFooterMetadata`
//! record and one `ArrayRecordFooter` record per data chunk), padding to a
//! block boundary, a postscript chunk at `size - 65536` holding three copies
//! of a `RiegeliPostscript` that points at the footer, and padding to the end.
//!
//! A layer on top of the Riegeli/records core: the writer composes the core's
//! chunk sink and chunker with its own chunking policy (`group_size` records
//! per chunk) and layout (every chunk remembered for the footer); the reader
//! loads the index from the footer or a scan (`load`), plans which chunks a
//! selection of records needs (`plan`), reads them through the index
//! (`crate::indexed`) and decodes them serially or on the decode stream
//! (`fetch`, `batch`); `shards` reads several files as one sequence of keys;
//! `from_plain` turns a plain Riegeli/records file into an ArrayRecord file.

mod batch;
mod compact;
mod fetch;
mod from_plain;
mod load;
mod options;
mod plan;
mod prefetch;
mod reader;
mod sequential;
mod shards;
mod writer;

pub use self::from_plain::{IndexReport, index_riegeli_file};
pub use self::load::{ArrayRecordTrailer, IndexInfo, IndexSource, find_array_record_trailer};
pub use self::options::{
    ARRAY_RECORD_ZSTD_WINDOW_LOG, ArrayRecordReaderOptions, ArrayRecordWriterOptions, DEFAULT_GROUP_SIZE,
    DEFAULT_TRANSPOSE_BUCKET_SIZE,
};
pub use self::plan::Selection;
pub use self::reader::ArrayRecordReader;
pub use self::shards::ArrayRecordShards;
pub use self::writer::ArrayRecordWriter;
