//! `RecordWriterOptions` (with the C++ option-string grammar) and `RecordReaderOptions`.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use riegeli_codec::{CompressionType, CompressorOptions, DecodeLimits, FieldProjection};

use crate::metadata::RecordsMetadata;

/// Default chunk size when compressing (C++ `chunk_size:auto`): 1 MiB.
pub const DEFAULT_COMPRESSED_CHUNK_SIZE: u64 = 1 << 20;
/// Default chunk size without compression (C++ `chunk_size:auto`): 4 KiB.
pub const DEFAULT_UNCOMPRESSED_CHUNK_SIZE: u64 = 4 << 10;
/// The padding that a bare `padding`, `initial_padding` or `final_padding` means: 64 KiB.
pub const IMPLICIT_PADDING: u64 = 64 << 10;

/// Options of a [`RecordWriter`](crate::RecordWriter).
///
/// Build them with the setters, or parse the option string of C++ Riegeli
/// (google/riegeli `doc/record_writer_options.md`):
///
/// ```text
/// options ::= option? ("," option?)*
/// option ::= "default" | "transpose" (":" ("true" | "false"))? | "uncompressed"
///   | "brotli" (":" 0..11)? | "zstd" (":" -131072..22)? | "snappy" (":" 1..2)?
///   | "window_log" ":" ("auto" | 10..31) | "brotli_encoder" ":" ("rbrotli_or_cbrotli" | "cbrotli" | "rbrotli")
///   | "chunk_size" ":" ("auto" | real with suffix [BkKMGTPE]) | "bucket_fraction" ":" 0..1
///   | "padding" (":" size)? | "initial_padding" (":" size)? | "final_padding" (":" size)?
///   | "parallelism" ":" N
/// ```
///
/// `Display` writes an option string that parses back to equal options.
///
/// ```
/// use riegeli_records::RecordWriterOptions;
/// let options: RecordWriterOptions = "transpose,zstd:5,chunk_size:2M".parse()?;
/// assert!(options.transpose());
/// assert_eq!(options.effective_chunk_size(), 2 << 20);
/// assert_eq!(options.to_string().parse::<RecordWriterOptions>()?, options);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RecordWriterOptions {
    transpose: bool,
    compression_type: CompressionType,
    compression_level: i32,
    window_log: Option<u32>,
    chunk_size: Option<u64>,
    bucket_fraction: f64,
    initial_padding: u64,
    final_padding: u64,
    parallelism: usize,
    metadata: Metadata,
}

/// The metadata a [`RecordWriterOptions`] carries: one setting, given as a
/// message or as its serialized form.
#[derive(Debug, Clone, PartialEq, Default)]
enum Metadata {
    #[default]
    None,
    Message(RecordsMetadata),
    Serialized(Vec<u8>),
}

impl Default for RecordWriterOptions {
    fn default() -> Self {
        Self {
            transpose: false,
            compression_type: CompressionType::Brotli,
            compression_level: 6,
            window_log: None,
            chunk_size: None,
            bucket_fraction: 1.0,
            initial_padding: 1,
            final_padding: 1,
            parallelism: 0,
            metadata: Metadata::None,
        }
    }
}

impl RecordWriterOptions {
    /// The default options: brotli:6, simple chunks, 1 MiB chunks, no padding, serial.
    pub fn new() -> Self {
        Self::default()
    }

    /// Transposed chunks (better compression of proto records).
    pub fn set_transpose(mut self, transpose: bool) -> Self {
        self.transpose = transpose;
        self
    }
    /// No compression.
    pub fn set_uncompressed(mut self) -> Self {
        self.compression_type = CompressionType::None;
        self.compression_level = 0;
        self.window_log = None;
        self
    }
    /// Brotli compression at `level` (0..=11).
    ///
    /// # Panics
    /// If `level` is out of range.
    pub fn set_brotli(mut self, level: i32) -> Self {
        assert!((0..=11).contains(&level), "brotli level {level} out of range 0..=11");
        self.compression_type = CompressionType::Brotli;
        self.compression_level = level;
        self
    }
    /// Zstd compression at `level` (-131072..=22).
    ///
    /// # Panics
    /// If `level` is out of range.
    pub fn set_zstd(mut self, level: i32) -> Self {
        assert!((-131072..=22).contains(&level), "zstd level {level} out of range -131072..=22");
        self.compression_type = CompressionType::Zstd;
        self.compression_level = level;
        self
    }
    /// Snappy compression at `level` (1..=2).
    ///
    /// # Panics
    /// If `level` is out of range.
    pub fn set_snappy(mut self, level: i32) -> Self {
        assert!((1..=2).contains(&level), "snappy level {level} out of range 1..=2");
        self.compression_type = CompressionType::Snappy;
        self.compression_level = level;
        self.window_log = None;
        self
    }
    /// Logarithm of the LZ77 window (`None`: the codec's default).
    pub fn set_window_log(mut self, window_log: Option<u32>) -> Self {
        self.window_log = window_log;
        self
    }
    /// Desired decoded size of a chunk (`None`: 1 MiB compressed, 4 KiB uncompressed).
    pub fn set_chunk_size(mut self, chunk_size: Option<u64>) -> Self {
        self.chunk_size = chunk_size.map(|s| s.max(1));
        self
    }
    /// Bucket size relative to the chunk size, for transposed chunks (0..=1).
    pub fn set_bucket_fraction(mut self, fraction: f64) -> Self {
        self.bucket_fraction = fraction.clamp(0.0, 1.0);
        self
    }
    /// Pads the file at the beginning (when appending) to a multiple of `padding`.
    pub fn set_initial_padding(mut self, padding: u64) -> Self {
        self.initial_padding = padding.max(1);
        self
    }
    /// Pads the file when flushing and at the end to a multiple of `padding`.
    pub fn set_final_padding(mut self, padding: u64) -> Self {
        self.final_padding = padding.max(1);
        self
    }
    /// Both initial and final padding.
    pub fn set_padding(self, padding: u64) -> Self {
        self.set_initial_padding(padding).set_final_padding(padding)
    }
    /// Number of background threads encoding chunks (0: encode in the caller's thread); see
    /// [`RecordWriter`](crate::RecordWriter).
    pub fn set_parallelism(mut self, parallelism: usize) -> Self {
        self.parallelism = parallelism;
        self
    }
    /// File metadata, written as a metadata chunk after the file signature.
    ///
    /// This and [`set_serialized_metadata`](Self::set_serialized_metadata)
    /// are one setting: the one called last wins.
    pub fn set_metadata(mut self, metadata: Option<RecordsMetadata>) -> Self {
        self.metadata = metadata.map_or(Metadata::None, Metadata::Message);
        self
    }
    /// File metadata as a serialized `RecordsMetadata` message, written as
    /// the metadata chunk exactly (extensions and unknown fields kept, which
    /// [`RecordsMetadata`] would drop), as C++ `set_serialized_metadata`.
    /// The bytes are not checked: bytes that do not parse as a
    /// `RecordsMetadata` make a file whose
    /// [`read_metadata`](crate::RecordReader::read_metadata) fails.
    ///
    /// This and [`set_metadata`](Self::set_metadata) are one setting: the
    /// one called last wins.
    pub fn set_serialized_metadata(mut self, serialized: Option<Vec<u8>>) -> Self {
        self.metadata = serialized.map_or(Metadata::None, Metadata::Serialized);
        self
    }

    /// Whether chunks are transposed.
    pub fn transpose(&self) -> bool {
        self.transpose
    }
    /// The compression type.
    pub fn compression_type(&self) -> CompressionType {
        self.compression_type
    }
    /// The compression level.
    pub fn compression_level(&self) -> i32 {
        self.compression_level
    }
    /// The window log, if set.
    pub fn window_log(&self) -> Option<u32> {
        self.window_log
    }
    /// The chunk size actually used.
    pub fn effective_chunk_size(&self) -> u64 {
        self.chunk_size.unwrap_or(if self.compression_type == CompressionType::None {
            DEFAULT_UNCOMPRESSED_CHUNK_SIZE
        } else {
            DEFAULT_COMPRESSED_CHUNK_SIZE
        })
    }
    /// The bucket fraction.
    pub fn bucket_fraction(&self) -> f64 {
        self.bucket_fraction
    }
    /// The bucket size for transposed chunks: `round(chunk_size * bucket_fraction)`, at least 1.
    pub fn bucket_size(&self) -> u64 {
        let size = (self.effective_chunk_size() as f64 * self.bucket_fraction).round();
        if size >= u64::MAX as f64 {
            u64::MAX
        } else if size >= 1.0 {
            size as u64
        } else {
            1
        }
    }
    /// The initial padding.
    pub fn initial_padding(&self) -> u64 {
        self.initial_padding
    }
    /// The final padding.
    pub fn final_padding(&self) -> u64 {
        self.final_padding
    }
    /// The parallelism.
    pub fn parallelism(&self) -> usize {
        self.parallelism
    }
    /// The metadata, if it was given by [`set_metadata`](Self::set_metadata)
    /// (`None` if [`set_serialized_metadata`](Self::set_serialized_metadata)
    /// was called last; see [`serialized_metadata`](Self::serialized_metadata)).
    pub fn metadata(&self) -> Option<&RecordsMetadata> {
        match &self.metadata {
            Metadata::Message(metadata) => Some(metadata),
            Metadata::None | Metadata::Serialized(_) => None,
        }
    }
    /// The bytes the metadata chunk will hold, however the metadata was
    /// given; `None` if there is none.
    pub fn serialized_metadata(&self) -> Option<Cow<'_, [u8]>> {
        match &self.metadata {
            Metadata::None => None,
            Metadata::Message(metadata) => Some(Cow::Owned(prost::Message::encode_to_vec(metadata))),
            Metadata::Serialized(bytes) => Some(Cow::Borrowed(bytes)),
        }
    }

    /// The compressor options these options imply.
    pub fn compressor_options(&self) -> CompressorOptions {
        CompressorOptions {
            compression_type: self.compression_type,
            level: self.compression_level,
            window_log: self.window_log,
        }
    }
}

/// A bad option string: the token at fault and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid option {token:?}: {message}")]
pub struct ParseOptionsError {
    token: String,
    message: String,
}

impl ParseOptionsError {
    pub(crate) fn new(token: &str, message: impl Into<String>) -> Self {
        Self { token: token.to_owned(), message: message.into() }
    }
    /// The offending `name[:value]` item.
    pub fn token(&self) -> &str {
        &self.token
    }
    /// What is wrong with it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Parses an integer in `min..=max`.
pub(crate) fn parse_int(token: &str, value: &str, min: i64, max: i64) -> Result<i64, ParseOptionsError> {
    match value.parse::<i64>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(ParseOptionsError::new(token, format!("expected an integer in {min}..={max}"))),
    }
}

/// Parses a "real with optional suffix `[BkKMGTPE]`" into a positive byte count.
pub(crate) fn parse_bytes(token: &str, value: &str) -> Result<u64, ParseOptionsError> {
    let bad = || ParseOptionsError::new(token, "expected a positive size like 65536, 64k or 1.5M");
    parse_size(value).filter(|&n| n >= 1).ok_or_else(bad)
}

/// A byte size: an integer or a real with an optional suffix `[BkKMGTPE]`
/// (powers of 1024), rounded; `None` if it is not one or does not fit.
pub(crate) fn parse_size(value: &str) -> Option<u64> {
    let (number, shift) = match value.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c {
                'B' => 0,
                'k' | 'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                'P' => 50,
                'E' => 60,
                _ => return None,
            };
            (&value[..i], shift)
        }
        _ => (value, 0),
    };
    if let Ok(n) = number.parse::<u64>() {
        return n.checked_mul(1u64 << shift);
    }
    let real: f64 = number.parse().ok()?;
    let scaled = (real * (1u64 << shift) as f64).round();
    (scaled.is_finite() && scaled >= 0.0 && scaled < u64::MAX as f64).then_some(scaled as u64)
}

/// The compression items of an option string, gathered item by item (the
/// C++ writer's grammar and ArrayRecord's share them): at most one of
/// `uncompressed`/`brotli`/`zstd`/`snappy`, and a `window_log` checked
/// against it once all items are read.
#[derive(Debug, Default)]
pub(crate) struct CompressionItems<'t> {
    chosen: Option<(&'t str, CompressionType, i32)>,
    window_log: Option<(&'t str, Option<u32>)>,
}

impl<'t> CompressionItems<'t> {
    /// The compression `token` names; an error if an earlier item named one.
    pub(crate) fn choose(
        &mut self,
        token: &'t str,
        kind: CompressionType,
        level: i32,
    ) -> Result<(), ParseOptionsError> {
        if let Some((previous, _, _)) = self.chosen {
            let message = format!("conflicts with the earlier compression option {previous:?}");
            return Err(ParseOptionsError::new(token, message));
        }
        self.chosen = Some((token, kind, level));
        Ok(())
    }

    /// A `window_log` item (`None`: `auto`).
    pub(crate) fn set_window_log(&mut self, token: &'t str, log: Option<u32>) {
        self.window_log = Some((token, log));
    }

    /// The compression chosen (`default` if none was) and its window log, if
    /// one was given and the compression takes it.
    pub(crate) fn finish(
        self,
        default: (CompressionType, i32),
    ) -> Result<(CompressionType, i32, Option<u32>), ParseOptionsError> {
        let (kind, level) = self.chosen.map_or(default, |(_, kind, level)| (kind, level));
        let window_log = match (kind, self.window_log) {
            (_, None) => None,
            (CompressionType::None, Some((token, _))) => {
                return Err(ParseOptionsError::new(token, "window_log is not allowed with uncompressed"));
            }
            (CompressionType::Snappy, Some((token, _))) => {
                return Err(ParseOptionsError::new(token, "window_log is not allowed with snappy"));
            }
            (CompressionType::Brotli, Some((token, Some(log)))) if log > 30 => {
                return Err(ParseOptionsError::new(token, "brotli window_log must be in 10..=30"));
            }
            (_, Some((_, log))) => log,
        };
        Ok((kind, level, window_log))
    }
}

/// Parses `true`/`false` (empty means `true`).
fn parse_bool(token: &str, value: Option<&str>) -> Result<bool, ParseOptionsError> {
    match value {
        None | Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(_) => Err(ParseOptionsError::new(token, "expected true or false")),
    }
}

impl FromStr for RecordWriterOptions {
    type Err = ParseOptionsError;

    fn from_str(text: &str) -> Result<Self, ParseOptionsError> {
        let mut options = Self::default();
        let mut compression = CompressionItems::default();
        for token in text.split(',') {
            if token.is_empty() {
                continue;
            }
            let (name, value) = match token.split_once(':') {
                Some((name, value)) => (name, Some(value)),
                None => (token, None),
            };
            let need_value = || ParseOptionsError::new(token, "a value is required");
            let mut set_compression = |kind, level| compression.choose(token, kind, level);
            match name {
                "default" if value.is_none() => {}
                "transpose" => options.transpose = parse_bool(token, value)?,
                "uncompressed" if value.is_none() => set_compression(CompressionType::None, 0)?,
                "brotli" => {
                    let level = value.map_or(Ok(6), |v| parse_int(token, v, 0, 11))?;
                    set_compression(CompressionType::Brotli, level as i32)?;
                }
                "zstd" => {
                    let level = value.map_or(Ok(3), |v| parse_int(token, v, -131072, 22))?;
                    set_compression(CompressionType::Zstd, level as i32)?;
                }
                "snappy" => {
                    let level = value.map_or(Ok(1), |v| parse_int(token, v, 1, 2))?;
                    set_compression(CompressionType::Snappy, level as i32)?;
                }
                "window_log" => {
                    let value = value.ok_or_else(need_value)?;
                    let log = if value == "auto" { None } else { Some(parse_int(token, value, 10, 31)? as u32) };
                    compression.set_window_log(token, log);
                }
                "brotli_encoder" => {
                    // C++ picks between two brotli libraries at run time; here the
                    // cargo feature `brotli-c` decides at build time, so the value is
                    // checked (C++ option strings parse) and has nothing to choose.
                    match value.ok_or_else(need_value)? {
                        "rbrotli_or_cbrotli" | "cbrotli" | "rbrotli" => {}
                        _ => {
                            return Err(ParseOptionsError::new(
                                token,
                                "expected rbrotli_or_cbrotli, cbrotli or rbrotli",
                            ));
                        }
                    }
                }
                "chunk_size" => {
                    let value = value.ok_or_else(need_value)?;
                    options.chunk_size = if value == "auto" { None } else { Some(parse_bytes(token, value)?) };
                }
                "bucket_fraction" => {
                    let value = value.ok_or_else(need_value)?;
                    options.bucket_fraction = match value.parse::<f64>() {
                        Ok(f) if (0.0..=1.0).contains(&f) => f,
                        _ => {
                            return Err(ParseOptionsError::new(token, "expected a real number in 0..1"));
                        }
                    };
                }
                "padding" | "initial_padding" | "final_padding" => {
                    let padding = value.map_or(Ok(IMPLICIT_PADDING), |v| parse_bytes(token, v))?;
                    if name != "final_padding" {
                        options.initial_padding = padding;
                    }
                    if name != "initial_padding" {
                        options.final_padding = padding;
                    }
                }
                "parallelism" => {
                    let value = value.ok_or_else(need_value)?;
                    options.parallelism = parse_int(token, value, 0, i64::from(i32::MAX))? as usize;
                }
                "default" | "uncompressed" => {
                    return Err(ParseOptionsError::new(token, "takes no value"));
                }
                _ => return Err(ParseOptionsError::new(token, "unknown option")),
            }
        }
        let default = (options.compression_type, options.compression_level);
        (options.compression_type, options.compression_level, options.window_log) = compression.finish(default)?;
        Ok(options)
    }
}

impl fmt::Display for RecordWriterOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items: Vec<String> = Vec::new();
        if self.transpose {
            items.push("transpose".into());
        }
        let default = Self::default();
        if (self.compression_type, self.compression_level) != (default.compression_type, default.compression_level) {
            items.push(match self.compression_type {
                CompressionType::None => "uncompressed".into(),
                CompressionType::Brotli => format!("brotli:{}", self.compression_level),
                CompressionType::Zstd => format!("zstd:{}", self.compression_level),
                CompressionType::Snappy => format!("snappy:{}", self.compression_level),
                _ => format!("unknown:{}", self.compression_level),
            });
        }
        if let Some(log) = self.window_log {
            items.push(format!("window_log:{log}"));
        }
        if let Some(size) = self.chunk_size {
            items.push(format!("chunk_size:{size}"));
        }
        if self.bucket_fraction != 1.0 {
            items.push(format!("bucket_fraction:{}", self.bucket_fraction));
        }
        if self.initial_padding > 1 {
            items.push(format!("initial_padding:{}", self.initial_padding));
        }
        if self.final_padding > 1 {
            items.push(format!("final_padding:{}", self.final_padding));
        }
        if self.parallelism > 0 {
            items.push(format!("parallelism:{}", self.parallelism));
        }
        if items.is_empty() { f.write_str("default") } else { f.write_str(&items.join(",")) }
    }
}

/// Limits and checks of reading one chunk, shared by every reader
/// ([`RecordReaderOptions::chunks`], the ArrayRecord reader's options,
/// [`ChunkReader`](crate::ChunkReader), [`ChunkDecoder`](crate::ChunkDecoder)).
///
/// Every allocation sized by the file is checked against these limits first;
/// a chunk over a limit is corruption (recoverable: the reader can skip it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkReadOptions {
    /// Largest chunk `data_size` accepted (default 1 GiB).
    pub max_chunk_data_size: u64,
    /// Largest decoded chunk (sum of record sizes) accepted (default 2 GiB).
    pub max_decoded_size: u64,
    /// Largest number of records per chunk accepted (default 2^28).
    pub max_num_records: u64,
    /// Verify chunk data hashes (default `true`; turning it off is for diagnostics only).
    pub verify_hashes: bool,
}

impl Default for ChunkReadOptions {
    fn default() -> Self {
        Self { max_chunk_data_size: 1 << 30, max_decoded_size: 2 << 30, max_num_records: 1 << 28, verify_hashes: true }
    }
}

impl ChunkReadOptions {
    pub(crate) fn decode_limits(&self) -> DecodeLimits {
        DecodeLimits { max_decoded_size: self.max_decoded_size, max_num_records: self.max_num_records }
    }
}

/// Options of a [`RecordReader`](crate::RecordReader), set as fields:
/// ```
/// use riegeli_records::RecordReaderOptions;
///
/// let mut options = RecordReaderOptions::default();
/// options.parallelism = 1;
/// options.chunks.max_num_records = 1 << 20;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordReaderOptions {
    /// Limits and checks of each chunk read.
    pub chunks: ChunkReadOptions,
    /// Return the footer and postscript of an ArrayRecord file as records
    /// (default `false`: a [`RecordReader`](crate::RecordReader) recognises
    /// them and skips them, so it reads an ArrayRecord file's data records only).
    pub read_array_record_trailer: bool,
    /// Decode chunks ahead on this many background threads while the caller
    /// consumes records (default 0: decode on the calling thread).
    ///
    /// The [`RecordReader`](crate::RecordReader) reads raw chunks and checks
    /// their hashes on the calling thread and keeps up to `parallelism + 1`
    /// data chunks being decoded, so memory use grows to about
    /// `parallelism + 2` decoded chunks (one being consumed, the others being
    /// decoded or waiting) and `parallelism + 1` raw chunks, plus a few small
    /// chunks without records read on the way. Uncompressed simple chunks,
    /// whose decoding is only splitting, are decoded by the caller.
    /// When the caller needs a chunk that is still being decoded, it decodes
    /// a queued one itself rather than wait, so `parallelism` threads keep
    /// `parallelism + 1` cores busy: on 2 cores, 1 is the setting to use.
    /// Records, positions, errors and recovery are the same as with 0.
    /// Worth it for compressed files on a machine with a core to spare; the
    /// threads start at the first read and are joined when the reader is
    /// dropped.
    pub parallelism: usize,
    /// With `parallelism` above 0, chunks decoding to fewer bytes than this
    /// are decoded on the calling thread (default 64 KiB). Handing a chunk to
    /// a thread costs a wake-up, tens of microseconds, and the read-ahead
    /// window counts chunks: with small chunks (C++'s default for
    /// uncompressed data is 4 KiB) waiting on wake-ups would cost more than
    /// decoding (measured: `transpose,uncompressed` files of 4 KiB chunks
    /// read 10x slower with 2 threads than without, before this limit). 0
    /// hands every data chunk over.
    pub parallel_min_chunk_size: u64,
    /// The fields of transposed chunks to decode (default: all; other chunks
    /// are read whole). A seekable reader can change it at any record with
    /// [`RecordReader::set_field_projection`](crate::RecordReader::set_field_projection).
    pub field_projection: FieldProjection,
}

impl Default for RecordReaderOptions {
    fn default() -> Self {
        Self {
            chunks: ChunkReadOptions::default(),
            read_array_record_trailer: false,
            parallelism: 0,
            parallel_min_chunk_size: 64 << 10,
            field_projection: FieldProjection::all(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_cpp() {
        let o: RecordWriterOptions = "".parse().unwrap();
        assert_eq!(o, RecordWriterOptions::default());
        assert_eq!(o.compression_type(), CompressionType::Brotli);
        assert_eq!(o.compression_level(), 6);
        assert_eq!(o.effective_chunk_size(), 1 << 20);
        assert_eq!("default".parse::<RecordWriterOptions>().unwrap(), o);
        assert_eq!("zstd".parse::<RecordWriterOptions>().unwrap().compression_level(), 3);
        assert_eq!("snappy".parse::<RecordWriterOptions>().unwrap().compression_level(), 1);
        let u: RecordWriterOptions = "uncompressed".parse().unwrap();
        assert_eq!(u.effective_chunk_size(), 4096);
    }

    #[test]
    fn sizes_with_suffixes() {
        for (text, want) in [
            ("chunk_size:1", 1),
            ("chunk_size:64k", 65536),
            ("chunk_size:64K", 65536),
            ("chunk_size:1.5M", 3 << 19),
            ("chunk_size:2G", 2 << 30),
            ("chunk_size:100B", 100),
            ("chunk_size:1E", 1 << 60),
        ] {
            assert_eq!(text.parse::<RecordWriterOptions>().unwrap().effective_chunk_size(), want, "{text}");
        }
        let o: RecordWriterOptions = "padding".parse().unwrap();
        assert_eq!((o.initial_padding(), o.final_padding()), (65536, 65536));
        let o: RecordWriterOptions = "final_padding:1M".parse().unwrap();
        assert_eq!((o.initial_padding(), o.final_padding()), (1, 1 << 20));
    }

    #[test]
    fn errors_name_the_token() {
        for bad in [
            "brotli:12",
            "zstd:23",
            "zstd:-131073",
            "snappy:3",
            "transpose:yes",
            "chunk_size:0",
            "chunk_size:-5",
            "chunk_size:12Q",
            "bucket_fraction:1.5",
            "window_log:9",
            "window_log:32",
            "parallelism:-1",
            "frobnicate",
            "uncompressed:1",
        ] {
            let err = bad.parse::<RecordWriterOptions>().unwrap_err();
            assert_eq!(err.token(), bad, "{bad}: {err}");
        }
        let err = "zstd,brotli".parse::<RecordWriterOptions>().unwrap_err();
        assert_eq!(err.token(), "brotli");
        let err = "uncompressed,window_log:20".parse::<RecordWriterOptions>().unwrap_err();
        assert_eq!(err.token(), "window_log:20");
        assert!("snappy,window_log:auto".parse::<RecordWriterOptions>().is_err());
        assert!("brotli,window_log:31".parse::<RecordWriterOptions>().is_err());
        assert!("zstd,window_log:31".parse::<RecordWriterOptions>().is_ok());
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "default",
            "transpose",
            "transpose:false,uncompressed",
            "brotli:0",
            "zstd:-5,window_log:20",
            "snappy:2",
            "brotli_encoder:cbrotli",
            "chunk_size:1.5M,bucket_fraction:0.25",
            "padding:1M,parallelism:10",
            "initial_padding,final_padding:128k",
            ",,zstd:22,,",
        ] {
            let options: RecordWriterOptions = text.parse().unwrap();
            let shown = options.to_string();
            assert_eq!(shown.parse::<RecordWriterOptions>().unwrap(), options, "{text} -> {shown}");
        }
        assert_eq!("zstd:3,transpose".parse::<RecordWriterOptions>().unwrap().to_string(), "transpose,zstd:3");
    }
}
