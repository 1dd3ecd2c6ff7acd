//! `ArrayRecordWriterOptions` (ArrayRecord's option grammar) and `ArrayRecordReaderOptions`.

use std::fmt;
use std::str::FromStr;

use riegeli_codec::{CompressionType, CompressorOptions, FieldProjection};

use crate::error::{ErrorKind, Result};
use crate::options::{ChunkReadOptions, CompressorText, ParseOptionsError, parse_compressor, parse_options, value};

/// Default records per chunk (C++ `kDefaultGroupSize`).
pub const DEFAULT_GROUP_SIZE: u64 = 1;
/// Default bucket size of transposed chunks (C++ `kDefaultTransposeBucketSize`).
pub const DEFAULT_TRANSPOSE_BUCKET_SIZE: u64 = 256;
/// The zstd window log ArrayRecord uses unless told otherwise (C++ `kZstdDefaultWindowLog`).
pub const ARRAY_RECORD_ZSTD_WINDOW_LOG: u32 = 20;

/// Options of an [`ArrayRecordWriter`](crate::ArrayRecordWriter), with the
/// option-string grammar of C++ `ArrayRecordWriterBase::Options::FromString`
/// (array-record 0.8.6):
///
/// ```text
/// options ::= option? ("," option?)*
/// option ::= "default" | "group_size" ":" 1..2^31-1
///   | "transpose" (":" ("true" | "false"))? | "transpose_bucket_size" ":" ("auto" | bytes)
///   | "uncompressed" | "brotli" (":" 0..11)? | "zstd" (":" -131072..22)? | "snappy" (":" 1..2)?
///   | "window_log" ":" ("auto" | 10..31)
///   | "pad_to_block_boundary" (":" ("true" | "false"))?
///   | "max_parallelism" ":" ("auto" | 1..2^31-1) | "saturation_delay_ms" ":" 1..2^31-1
/// ```
///
/// Defaults (as C++): `group_size:1`, simple chunks, transpose bucket 256
/// bytes, `zstd:3` with `window_log:20` (ArrayRecord forces 20 for zstd when
/// no window log is given), no padding, `max_parallelism:auto`.
///
/// Quirks kept from C++:
/// - a bare `pad_to_block_boundary` means **false** (only `:true` pads),
///   while a bare `transpose` means true;
/// - `default` may only come first and once, with any value (ignored);
/// - at most one compression option; `window_log` is an error with
///   `uncompressed` or `snappy` (brotli allows 10..=30, zstd 10..=31);
/// - the snappy level is accepted but not kept (`Display` writes `snappy`).
///
/// `max_parallelism:auto` means what C++ does without a thread pool (which is
/// how the Python binding writes): encode in the caller's thread. Give
/// `max_parallelism:N` to encode N chunks in parallel: the caller's thread
/// and N - 1 background threads ([`parallelism`](Self::parallelism) `Some(N - 1)`).
///
/// Values set as fields are checked when the writer starts
/// ([`ArrayRecordWriter::new`](crate::ArrayRecordWriter::new) refuses bad
/// ones with [`ErrorKind::InvalidArgument`]).
///
/// `Display` writes C++'s `Options::ToString()` form, which is what the
/// footer stores as `writer_options`:
///
/// ```
/// use riegeli_records::ArrayRecordWriterOptions;
/// let options: ArrayRecordWriterOptions = "group_size:2,uncompressed".parse()?;
/// assert_eq!(options.to_string(), "group_size:2,transpose:false,pad_to_block_boundary:false,uncompressed");
/// let options: ArrayRecordWriterOptions = "transpose,max_parallelism:1".parse()?;
/// assert_eq!(
///     options.to_string(),
///     "group_size:1,transpose:true,pad_to_block_boundary:false,transpose_bucket_size:256,\
///      zstd:3,window_log:20,max_parallelism:1"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayRecordWriterOptions {
    /// Records per data chunk, in `1..=2^31-1` (the last chunk may hold
    /// fewer; default [`DEFAULT_GROUP_SIZE`]; `group_size`).
    pub group_size: u64,
    /// Transposed chunks (default `false`; `transpose`).
    pub transpose: bool,
    /// Bucket size of transposed chunks in bytes, at least 1 (default
    /// [`DEFAULT_TRANSPOSE_BUCKET_SIZE`]; `transpose_bucket_size`).
    pub transpose_bucket_size: u64,
    /// The compression type, level and window log of data and footer chunks
    /// (default zstd at level 3 with window log
    /// [`ARRAY_RECORD_ZSTD_WINDOW_LOG`]; `uncompressed`, `brotli:N`, `zstd:N`,
    /// `snappy`, `window_log:N`). Zstd without a window log gets
    /// [`ARRAY_RECORD_ZSTD_WINDOW_LOG`], as in C++.
    pub compression: CompressorOptions,
    /// Pads to a block boundary after every data chunk (default `false`;
    /// `pad_to_block_boundary:true`).
    pub pad_to_block_boundary: bool,
    /// Background threads encoding chunks, as
    /// [`RecordWriterOptions::parallelism`](crate::RecordWriterOptions::parallelism):
    /// 0 encodes in the caller's thread. `None`, the default, is the
    /// grammar's `max_parallelism:auto`, which encodes in the caller's thread
    /// as C++ does without a thread pool. C++'s `max_parallelism:N` counts
    /// the caller's thread too: it is `Some(N - 1)`.
    pub parallelism: Option<usize>,
    /// File metadata, a serialized [`RecordsMetadata`](crate::RecordsMetadata)
    /// written as the metadata chunk after the file signature (C++
    /// `Options::set_metadata`; default `None`, and the Python binding never
    /// writes one), as [`RecordWriterOptions::metadata`](crate::RecordWriterOptions::metadata).
    pub metadata: Option<Vec<u8>>,
}

impl Default for ArrayRecordWriterOptions {
    fn default() -> Self {
        Self {
            group_size: DEFAULT_GROUP_SIZE,
            transpose: false,
            transpose_bucket_size: DEFAULT_TRANSPOSE_BUCKET_SIZE,
            compression: CompressorOptions::zstd().with_window_log(Some(ARRAY_RECORD_ZSTD_WINDOW_LOG)),
            pad_to_block_boundary: false,
            parallelism: None,
            metadata: None,
        }
    }
}

impl ArrayRecordWriterOptions {
    /// Refuses values C++'s options parser refuses (called when a writer
    /// starts).
    pub(crate) fn validate(&self) -> Result<()> {
        let invalid = |message: String| Err(ErrorKind::InvalidArgument(message).into());
        if !(1..=i32::MAX as u64).contains(&self.group_size) {
            return invalid(format!("group_size {} out of range 1..=2147483647", self.group_size));
        }
        if self.transpose_bucket_size == 0 {
            return invalid("transpose_bucket_size must be at least 1".to_owned());
        }
        if self.parallelism.is_some_and(|p| p >= i32::MAX as usize) {
            return invalid("parallelism out of range 0..2147483647".to_owned());
        }
        match self.compressor().validate() {
            Ok(()) => Ok(()),
            Err(e) => invalid(e.to_string()),
        }
    }

    /// The compressor options of data and footer chunks: [`compression`](Self::compression)
    /// with ArrayRecord's zstd window log when none is given.
    pub(crate) fn compressor(&self) -> CompressorOptions {
        let mut compression = self.compression;
        if compression.compression_type == CompressionType::Zstd && compression.window_log.is_none() {
            compression.window_log = Some(ARRAY_RECORD_ZSTD_WINDOW_LOG);
        }
        compression
    }

    /// The background threads that encode chunks.
    pub(crate) fn threads(&self) -> usize {
        self.parallelism.unwrap_or(0)
    }
}

impl FromStr for ArrayRecordWriterOptions {
    type Err = ParseOptionsError;

    /// C++'s `ArrayRecordWriterBase::Options::FromString`, messages included.
    fn from_str(text: &str) -> Result<Self, ParseOptionsError> {
        const KEYS: [&str; 12] = [
            "default",
            "group_size",
            "max_parallelism",
            "saturation_delay_ms",
            "transpose",
            "transpose_bucket_size",
            "uncompressed",
            "brotli",
            "zstd",
            "snappy",
            "window_log",
            "pad_to_block_boundary",
        ];
        let mut options = Self::default();
        let mut compressor = CompressorText::default();
        let max = i64::from(i32::MAX);
        parse_options(text, &KEYS, &[], |item, seen| {
            let v = item.value;
            match item.key {
                "default" => value::fail_if_any_seen(item, seen)?,
                "group_size" => options.group_size = value::int(v, 1, max)? as u64,
                "max_parallelism" => {
                    options.parallelism =
                        value::or(value::one_of(v, &[("auto", None)]), || value::int(v, 1, max).map(Some))?
                            .map(|n| n as usize - 1);
                }
                // How long C++'s pool waits for work: there is no such wait here, so the
                // value is only checked (C++ option strings parse).
                "saturation_delay_ms" => drop(value::int(v, 1, max)?),
                "transpose" => options.transpose = value::one_of(v, &[("", true), ("true", true), ("false", false)])?,
                "transpose_bucket_size" => {
                    options.transpose_bucket_size =
                        value::or(value::one_of(v, &[("auto", DEFAULT_TRANSPOSE_BUCKET_SIZE)]), || {
                            value::bytes(v, 1, u64::MAX)
                        })?;
                }
                // A bare `pad_to_block_boundary` means false, as in C++.
                "pad_to_block_boundary" => {
                    options.pad_to_block_boundary = value::one_of(v, &[("", false), ("true", true), ("false", false)])?;
                }
                _ => compressor.copy(item),
            }
            Ok(())
        })?;
        // C++ appends its default, `zstd:3`, unless a compression was named.
        options.compression =
            parse_compressor(&compressor, (CompressionType::Zstd, CompressorOptions::ZSTD_DEFAULT_LEVEL))?;
        // The snappy level is accepted but not kept (C++'s `ToString()` writes `snappy`).
        if options.compression.compression_type == CompressionType::Snappy {
            options.compression.level = CompressorOptions::SNAPPY_DEFAULT_LEVEL;
        }
        // ArrayRecord's zstd window is 20 unless given (not zstd's own default).
        options.compression = options.compressor();
        Ok(options)
    }
}

impl fmt::Display for ArrayRecordWriterOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "group_size:{},transpose:{},pad_to_block_boundary:{}",
            self.group_size, self.transpose, self.pad_to_block_boundary
        )?;
        if self.transpose {
            write!(f, ",transpose_bucket_size:{}", self.transpose_bucket_size)?;
        }
        let compression = self.compressor();
        match compression.compression_type {
            CompressionType::None => f.write_str(",uncompressed")?,
            CompressionType::Brotli => write!(f, ",brotli:{}", compression.level)?,
            CompressionType::Zstd => write!(f, ",zstd:{}", compression.level)?,
            _ => f.write_str(",snappy")?,
        }
        if let Some(log) = compression.window_log {
            write!(f, ",window_log:{log}")?;
        }
        // C++'s `max_parallelism` counts the caller's thread.
        if let Some(parallelism) = self.parallelism {
            write!(f, ",max_parallelism:{}", parallelism.saturating_add(1))?;
        }
        Ok(())
    }
}

/// Options of an [`ArrayRecordReader`](crate::ArrayRecordReader).
///
/// Set as fields, or parsed from the option string of C++'s reader
/// (array-record 0.8.6), whose errors it gives with C++'s messages
/// ([`ParseOptionsError::message`]):
///
/// ```text
/// options ::= option? ("," option?)*
/// option ::= "max_parallelism" ":" ("auto" | 0..2^31-1)
///   | "readahead_buffer_size" ":" ("auto" | bytes up to 1 GiB)
///   | "index_storage_option" ":" ("" | "in_memory" | "offloaded")
///   | "footer_prefetch_bytes" ":" ("auto" | bytes up to 1 GiB)
/// ```
///
/// `max_parallelism:0` (C++: no thread pool) decodes on the calling thread;
/// `index_storage_option:offloaded` sets [`offload_index`](Self::offload_index);
/// `footer_prefetch_bytes` is checked as C++ checks it and chooses nothing
/// here (the footer is read at once).
///
/// One option is this crate's, not C++'s (array_record's reader rejects it as
/// unknown): `scan_fallback` (`"scan_fallback" (":" ("true" | "false"))?`, a
/// bare name meaning true) sets [`scan_fallback`](Self::scan_fallback). An
/// unknown option's message lists C++'s options only, word for word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayRecordReaderOptions {
    /// Limits and checks of each chunk read.
    pub chunks: ChunkReadOptions,
    /// Background threads that decode chunks in the parallel batch reads,
    /// beside the calling thread, which decodes too (default: one fewer
    /// than the available cores; `max_parallelism:auto`). 0 decodes on the
    /// calling thread. The reader keeps its threads from its first parallel
    /// read that is worth it until it is dropped. C++'s `max_parallelism:N`
    /// counts the calling thread: it is `N - 1` here (and `max_parallelism:0`
    /// is 0).
    pub parallelism: usize,
    /// The most raw chunk bytes a parallel read holds read but not yet
    /// decoded and handed out (default 64 MiB; `readahead_buffer_size:auto`).
    pub readahead_buffer_size: u64,
    /// When the postscript or the footer is missing or unusable (a file cut
    /// short by an interrupted copy, a damaged trailer, or a plain
    /// Riegeli/records file): `false`, the default, fails to open, as
    /// array_record's reader does; `true` indexes the records that are there
    /// by a scan of the whole file instead ([`IndexSource::Scanned`](crate::IndexSource::Scanned),
    /// and [`IndexInfo::fallback_reason`](crate::IndexInfo::fallback_reason) says why).
    /// This crate's option, not C++'s: `scan_fallback` in the option string.
    pub scan_fallback: bool,
    /// The fields of transposed chunks to decode (default: all; simple
    /// chunks are read whole), as [`RecordReaderOptions::field_projection`](crate::RecordReaderOptions::field_projection).
    /// Not in the option string.
    pub field_projection: FieldProjection,
    /// Keeps nothing of the footer's index in memory (default `false`; C++'s
    /// `index_storage_option:offloaded`): the footer is checked when the file
    /// is opened, then read and decoded again by every read that needs chunk
    /// entries (a batch, a record of a chunk not decoded last, a sequential
    /// read-ahead), as array_record's reader does for every entry. In memory
    /// the index takes about 12 bits per chunk of 1 KiB; offloaded, none,
    /// at the price of a footer read per read. A file indexed by a scan keeps
    /// its index in memory either way.
    pub offload_index: bool,
}

/// The name of [`ArrayRecordReaderOptions::scan_fallback`] in the option
/// string (this crate's option, not C++'s).
const SCAN_FALLBACK: &str = "scan_fallback";

/// The default [`ArrayRecordReaderOptions::readahead_buffer_size`].
const DEFAULT_READAHEAD: u64 = 64 << 20;

impl Default for ArrayRecordReaderOptions {
    fn default() -> Self {
        Self {
            chunks: ChunkReadOptions::default(),
            parallelism: crate::pool::cores().saturating_sub(1),
            readahead_buffer_size: DEFAULT_READAHEAD,
            scan_fallback: false,
            field_projection: FieldProjection::all(),
            offload_index: false,
        }
    }
}

impl ArrayRecordReaderOptions {
    /// The threads the parallel reads use, the calling thread included.
    pub(crate) fn effective_parallelism(&self) -> usize {
        self.parallelism.saturating_add(1)
    }
}

impl FromStr for ArrayRecordReaderOptions {
    type Err = ParseOptionsError;

    /// C++'s `ArrayRecordReaderBase::Options::FromString`, messages included.
    fn from_str(text: &str) -> Result<Self, ParseOptionsError> {
        const KEYS: [&str; 4] =
            ["max_parallelism", "readahead_buffer_size", "index_storage_option", "footer_prefetch_bytes"];
        let mut options = Self::default();
        let mut footer_prefetch = 1u64 << 20;
        parse_options(text, &KEYS, &[SCAN_FALLBACK], |item, _| {
            let v = item.value;
            let bytes = |default| value::or(value::one_of(v, &[("auto", default)]), || value::bytes(v, 0, 1 << 30));
            match item.key {
                "max_parallelism" => {
                    let n = value::or(value::one_of(v, &[("auto", None)]), || {
                        value::int(v, 0, i64::from(i32::MAX)).map(Some)
                    })?;
                    options.parallelism = match n {
                        Some(n) => (n as usize).saturating_sub(1),
                        None => Self::default().parallelism,
                    };
                }
                "readahead_buffer_size" => options.readahead_buffer_size = bytes(DEFAULT_READAHEAD)?,
                "footer_prefetch_bytes" => footer_prefetch = bytes(1 << 20)?,
                SCAN_FALLBACK => {
                    options.scan_fallback = value::one_of(v, &[("", true), ("true", true), ("false", false)])?
                }
                _ => {
                    options.offload_index = value::one_of(v, &[("", false), ("in_memory", false), ("offloaded", true)])?
                }
            }
            Ok(())
        })?;
        if options.offload_index && footer_prefetch > 0 {
            let message = "footer_prefetch_bytes > 0 is only supported with index_storage_option:in_memory.";
            return Err(ParseOptionsError::new(text, message));
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ArrayRecordWriterOptions {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn reader_options_parse_as_cpp() {
        let parse = |text: &str| text.parse::<ArrayRecordReaderOptions>();
        assert_eq!(parse("").unwrap(), ArrayRecordReaderOptions::default());
        let o = parse("max_parallelism:3,readahead_buffer_size:1.5M,index_storage_option:in_memory").unwrap();
        assert_eq!((o.parallelism, o.readahead_buffer_size), (2, 3 << 19));
        assert_eq!(parse("max_parallelism:0").unwrap().parallelism, 0);
        assert_eq!(parse("max_parallelism:1").unwrap().parallelism, 0);
        assert_eq!(parse("max_parallelism:auto").unwrap().parallelism, ArrayRecordReaderOptions::default().parallelism);
        assert_eq!(parse("max_parallelism:auto,readahead_buffer_size:0").unwrap().readahead_buffer_size, 0);
        for (text, message) in [
            (
                "foo:1",
                "Unknown option foo, valid options: max_parallelism, readahead_buffer_size, index_storage_option, footer_prefetch_bytes",
            ),
            ("max_parallelism:1,max_parallelism:2", "Option max_parallelism is present more than once"),
            (
                "max_parallelism:-1",
                "Option max_parallelism: invalid value: -1, valid values: auto, integers in the range [0..2147483647]",
            ),
            (
                "readahead_buffer_size:2G",
                "Option readahead_buffer_size: invalid value: 2G, valid values: auto, integers expressed as reals with optional suffix [BkKMGTPE], in the range [0..1073741824]",
            ),
            (
                "readahead_buffer_size:inf",
                "Option readahead_buffer_size: invalid value: inf, valid values: auto, integers expressed as reals with optional suffix [BkKMGTPE], in the range [0..1073741824]",
            ),
            (
                "index_storage_option:disk",
                "Option index_storage_option: invalid value: disk, valid values: (empty), in_memory, offloaded",
            ),
            (
                "index_storage_option:offloaded",
                "footer_prefetch_bytes > 0 is only supported with index_storage_option:in_memory.",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err().message, message, "{text}");
        }
        assert!(parse("index_storage_option:offloaded,footer_prefetch_bytes:0").is_ok());
    }

    #[test]
    fn scan_fallback_is_an_option_of_ours() {
        let parse = |text: &str| text.parse::<ArrayRecordReaderOptions>();
        assert!(!ArrayRecordReaderOptions::default().scan_fallback);
        for (text, want) in [("scan_fallback", true), ("scan_fallback:true", true), ("scan_fallback:false", false)] {
            assert_eq!(parse(text).unwrap().scan_fallback, want, "{text}");
        }
        let o = parse("readahead_buffer_size:0,scan_fallback,max_parallelism:2").unwrap();
        assert_eq!((o.readahead_buffer_size, o.parallelism, o.scan_fallback), (0, 1, true));
        for (text, message) in [
            ("scan_fallback:yes", "Option scan_fallback: invalid value: yes, valid values: (empty), true, false"),
            ("scan_fallback,scan_fallback:false", "Option scan_fallback is present more than once"),
            // C++'s message for an unknown option is kept word for word: it lists C++'s options.
            (
                "scan_fallbak",
                "Unknown option scan_fallbak, valid options: max_parallelism, readahead_buffer_size, index_storage_option, footer_prefetch_bytes",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err().message, message, "{text}");
        }
    }

    #[test]
    fn defaults_match_cpp() {
        for text in ["", "default", ",,"] {
            let o = parse(text);
            assert_eq!(o, ArrayRecordWriterOptions::default(), "{text}");
            assert_eq!(o.group_size, 1);
            assert_eq!(
                (o.compression.compression_type, o.compression.level, o.compression.window_log),
                (CompressionType::Zstd, 3, Some(20))
            );
            assert_eq!(o.to_string(), "group_size:1,transpose:false,pad_to_block_boundary:false,zstd:3,window_log:20");
        }
    }

    #[test]
    fn to_string_is_cpp_form() {
        for (text, want) in [
            ("group_size:2,uncompressed", "group_size:2,transpose:false,pad_to_block_boundary:false,uncompressed"),
            (
                "group_size:100,transpose,zstd:3",
                "group_size:100,transpose:true,pad_to_block_boundary:false,transpose_bucket_size:256,zstd:3,window_log:20",
            ),
            (
                "transpose_bucket_size:1k,transpose:true,brotli,max_parallelism:1",
                "group_size:1,transpose:true,pad_to_block_boundary:false,transpose_bucket_size:1024,brotli:6,max_parallelism:1",
            ),
            ("snappy:2", "group_size:1,transpose:false,pad_to_block_boundary:false,snappy"),
            (
                "zstd:-5,window_log:auto",
                "group_size:1,transpose:false,pad_to_block_boundary:false,zstd:-5,window_log:20",
            ),
            ("window_log:15", "group_size:1,transpose:false,pad_to_block_boundary:false,zstd:3,window_log:15"),
            (
                "brotli:0,window_log:30",
                "group_size:1,transpose:false,pad_to_block_boundary:false,brotli:0,window_log:30",
            ),
            (
                "pad_to_block_boundary:true",
                "group_size:1,transpose:false,pad_to_block_boundary:true,zstd:3,window_log:20",
            ),
            (
                "transpose:false,max_parallelism:auto",
                "group_size:1,transpose:false,pad_to_block_boundary:false,zstd:3,window_log:20",
            ),
        ] {
            let shown = parse(text).to_string();
            assert_eq!(shown, want, "{text}");
            // The C++ form parses back to the same options (snappy's level aside).
            assert_eq!(parse(&shown).to_string(), shown, "{text}");
        }
    }

    #[test]
    fn quirks() {
        // A bare pad_to_block_boundary means false; a bare transpose means true.
        assert!(!parse("pad_to_block_boundary").pad_to_block_boundary);
        assert!(parse("pad_to_block_boundary:true").pad_to_block_boundary);
        assert!(parse("transpose").transpose);
        assert!(!parse("transpose:false").transpose);
        assert_eq!(parse("transpose_bucket_size:auto").transpose_bucket_size, 256);
        assert_eq!(parse("transpose_bucket_size:2M").transpose_bucket_size, 2 << 20);
        assert_eq!(parse("max_parallelism:4").parallelism, Some(3));
        assert_eq!(parse("max_parallelism:1").parallelism, Some(0));
        assert_eq!(parse("max_parallelism:auto").parallelism, None);
        assert_eq!(parse("saturation_delay_ms:7"), ArrayRecordWriterOptions::default(), "checked, has no effect");
        assert_eq!(parse("zstd:0").compression.level, 0);
        // A trailing space after a value is accepted, as by C++.
        assert_eq!(parse("group_size:7 ").group_size, 7);
        assert_eq!(parse("group_size:2147483647").group_size, 2147483647);
    }

    #[test]
    fn writer_refuses_bad_fields() {
        let bad = [
            ArrayRecordWriterOptions { group_size: 0, ..Default::default() },
            ArrayRecordWriterOptions { group_size: 1 << 31, ..Default::default() },
            ArrayRecordWriterOptions { transpose_bucket_size: 0, ..Default::default() },
            ArrayRecordWriterOptions { parallelism: Some(i32::MAX as usize), ..Default::default() },
            ArrayRecordWriterOptions { compression: CompressorOptions::brotli().with_level(12), ..Default::default() },
            ArrayRecordWriterOptions { compression: CompressorOptions::zstd().with_level(23), ..Default::default() },
            ArrayRecordWriterOptions {
                compression: CompressorOptions::zstd().with_window_log(Some(9)),
                ..Default::default()
            },
            ArrayRecordWriterOptions {
                compression: CompressorOptions::snappy().with_window_log(Some(20)),
                ..Default::default()
            },
        ];
        for options in bad {
            let err = crate::ArrayRecordWriter::new(Vec::new(), options.clone()).unwrap_err();
            assert!(matches!(err.kind(), crate::ErrorKind::InvalidArgument(_)), "{options:?}: {err}");
        }
        // Zstd without a window log gets ArrayRecord's, as the option string's `window_log:auto`.
        let options = ArrayRecordWriterOptions { compression: CompressorOptions::zstd(), ..Default::default() };
        assert_eq!(options.to_string(), parse("window_log:auto").to_string());
        assert!(crate::ArrayRecordWriter::new(Vec::new(), options).is_ok());
    }

    #[test]
    fn writer_errors_are_cpp_words() {
        // Messages of array-record 0.8.6's Python module (C++ ArrayRecordWriterBase::Options).
        const VALID: &str = "default, group_size, max_parallelism, saturation_delay_ms, transpose, \
                             transpose_bucket_size, uncompressed, brotli, zstd, snappy, window_log, pad_to_block_boundary";
        const BYTES: &str =
            "integers expressed as reals with optional suffix [BkKMGTPE], in the range [1..18446744073709551615]";
        for (text, message) in [
            ("grup_size:1", format!("Unknown option grup_size, valid options: {VALID}")),
            ("chunk_size:1k", format!("Unknown option chunk_size, valid options: {VALID}")),
            (
                "group_size:0",
                "Option group_size: invalid value: 0, valid values: integers in the range [1..2147483647]".to_owned(),
            ),
            (
                "group_size:x",
                "Option group_size: invalid value: x, valid values: integers in the range [1..2147483647]".to_owned(),
            ),
            ("zstd,brotli", "Option brotli conflicts with option zstd".to_owned()),
            (
                "transpose:maybe",
                "Option transpose: invalid value: maybe, valid values: (empty), true, false".to_owned(),
            ),
            ("uncompressed:3", "Option uncompressed: invalid value: 3, valid values: (empty)".to_owned()),
            (
                "window_log:5",
                "Option window_log: invalid value: 5, valid values: auto, integers in the range [10..31]".to_owned(),
            ),
            ("uncompressed,window_log:20", "Option window_log conflicts with option uncompressed".to_owned()),
            ("window_log:auto,uncompressed", "Option uncompressed conflicts with option window_log".to_owned()),
            ("snappy,window_log:20", "Option window_log conflicts with option snappy".to_owned()),
            ("default,default", "Option default is present more than once".to_owned()),
            ("zstd,default", "Option default must be first".to_owned()),
            ("group_size:1,group_size:2", "Option group_size is present more than once".to_owned()),
            (
                "brotli:12",
                "Option brotli: invalid value: 12, valid values: (empty), integers in the range [0..11]".to_owned(),
            ),
            (
                "snappy:3",
                "Option snappy: invalid value: 3, valid values: (empty), integers in the range [1..2]".to_owned(),
            ),
            (
                "max_parallelism:0",
                "Option max_parallelism: invalid value: 0, valid values: auto, integers in the range [1..2147483647]"
                    .to_owned(),
            ),
            (
                "transpose_bucket_size:0",
                format!("Option transpose_bucket_size: invalid value: 0, valid values: auto, {BYTES}"),
            ),
            (
                "transpose_bucket_size:-1",
                format!("Option transpose_bucket_size: invalid value: -1, valid values: auto, {BYTES}"),
            ),
            (
                "pad_to_block_boundary:x",
                "Option pad_to_block_boundary: invalid value: x, valid values: (empty), true, false".to_owned(),
            ),
            (
                "saturation_delay_ms:0",
                "Option saturation_delay_ms: invalid value: 0, valid values: integers in the range [1..2147483647]"
                    .to_owned(),
            ),
            (
                "brotli,window_log:31",
                "Option window_log: invalid value: 31, valid values: auto, integers in the range [10..30]".to_owned(),
            ),
        ] {
            assert_eq!(text.parse::<ArrayRecordWriterOptions>().unwrap_err().message, message, "{text}");
        }
        // Accepted by C++ too.
        assert_eq!(parse("transpose_bucket_size:1.5k").transpose_bucket_size, 1536);
        assert_eq!(parse("group_size: 3").group_size, 3);
        assert_eq!(parse("brotli:").compression.level, CompressorOptions::BROTLI_DEFAULT_LEVEL);
        assert_eq!(parse("window_log:25").compression.window_log, Some(25));
    }

    #[test]
    fn errors_name_the_token() {
        for (text, token) in [
            ("group_size:0", "group_size:0"),
            ("group_size:2147483648", "group_size:2147483648"),
            ("group_size", "group_size"),
            ("group_size:x", "group_size:x"),
            ("transpose:yes", "transpose:yes"),
            ("pad_to_block_boundary:1", "pad_to_block_boundary:1"),
            ("brotli:12", "brotli:12"),
            ("zstd:23", "zstd:23"),
            ("snappy:3", "snappy:3"),
            ("uncompressed:1", "uncompressed:1"),
            ("window_log:9", "window_log:9"),
            ("window_log:32", "window_log:32"),
            ("max_parallelism:0", "max_parallelism:0"),
            ("saturation_delay_ms:0", "saturation_delay_ms:0"),
            ("transpose_bucket_size:0", "transpose_bucket_size:0"),
            ("brotli_encoder:cbrotli", "brotli_encoder:cbrotli"),
            ("chunk_size:1M", "chunk_size:1M"),
            (" zstd", " zstd"),
            ("Zstd", "Zstd"),
            ("zstd,brotli", "brotli"),
            ("zstd,zstd:5", "zstd:5"),
            ("uncompressed,window_log:20", "window_log:20"),
            ("snappy,window_log:auto", "window_log:auto"),
            ("brotli,window_log:31", "window_log:31"),
            ("zstd,default", "default"),
            ("default,default", "default"),
        ] {
            let err = text.parse::<ArrayRecordWriterOptions>().unwrap_err();
            assert_eq!(err.token, token, "{text}: {err}");
            assert!(err.to_string().contains(token), "{err}");
        }
        assert!("zstd,window_log:31".parse::<ArrayRecordWriterOptions>().is_ok());
        // What C++ accepts after `default` (checked against array-record 0.8.6).
        assert_eq!("default,group_size:2".parse::<ArrayRecordWriterOptions>().unwrap().group_size, 2);
        assert_eq!(",default,group_size:3".parse::<ArrayRecordWriterOptions>().unwrap().group_size, 3);
        for text in ["default:1", "default:xyz", "default,zstd"] {
            assert_eq!(
                text.parse::<ArrayRecordWriterOptions>().unwrap(),
                ArrayRecordWriterOptions::default(),
                "{text}"
            );
        }
    }
}
