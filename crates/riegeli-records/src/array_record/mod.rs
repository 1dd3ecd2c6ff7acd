//! ArrayRecord (google/array_record): Riegeli/records files with a footer
//! that indexes every chunk, for random access by record index.
//!
//! Layout (see `ArrayRecordWriter`): the file signature, data chunks of
//! `group_size` records each, a footer chunk (a `RiegeliFooterMetadata`
//! record and one `ArrayRecordFooter` record per data chunk), padding to a
//! block boundary, a postscript chunk at `size - 65536` holding three copies
//! of a `RiegeliPostscript` that points at the footer, and padding to the end.

mod index;
mod layout;
mod options;
mod pool;
mod positional;
mod reader;
mod writer;

pub use self::index::{IndexReport, index_riegeli_file};
pub use self::layout::parse_postscript;
pub(crate) use self::layout::{looks_like_footer, looks_like_postscript};
pub use self::options::{
    ARRAY_RECORD_ZSTD_WINDOW_LOG, ArrayRecordReaderOptions, ArrayRecordWriterOptions, DEFAULT_GROUP_SIZE,
    DEFAULT_SATURATION_DELAY_MS, DEFAULT_TRANSPOSE_BUCKET_SIZE,
};
pub use self::reader::{ArrayRecordReader, ArrayRecordTrailer, IndexSource, find_trailer};
pub use self::writer::ArrayRecordWriter;
