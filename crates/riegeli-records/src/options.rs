//! `RecordWriterOptions` (with the C++ option-string grammar) and `RecordReaderOptions`.

use std::fmt;
use std::str::FromStr;

use riegeli_codec::{CompressionType, CompressorOptions, DecodeLimits, FieldProjection};

#[cfg(doc)]
use crate::metadata::RecordsMetadata;

/// Default chunk size when compressing (C++ `chunk_size:auto`): 1 MiB.
pub const DEFAULT_COMPRESSED_CHUNK_SIZE: u64 = 1 << 20;
/// Default chunk size without compression (C++ `chunk_size:auto`): 4 KiB.
pub const DEFAULT_UNCOMPRESSED_CHUNK_SIZE: u64 = 4 << 10;
/// The padding that a bare `padding`, `initial_padding` or `final_padding` means: 64 KiB.
pub const IMPLICIT_PADDING: u64 = 64 << 10;

/// Options of a [`RecordWriter`](crate::RecordWriter), set as fields or
/// parsed from the option string of C++ Riegeli
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
/// Values set as fields are checked when the writer starts
/// ([`RecordWriter::new`](crate::RecordWriter::new) refuses bad ones with
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)).
///
/// ```
/// use riegeli_records::{CompressorOptions, RecordWriterOptions};
/// let options: RecordWriterOptions = "transpose,zstd:5,chunk_size:2M".parse()?;
/// assert!(options.transpose);
/// assert_eq!(options.compression, CompressorOptions::zstd().with_level(5));
/// assert_eq!(options.chunk_size, Some(2 << 20));
/// assert_eq!(options.to_string().parse::<RecordWriterOptions>()?, options);
///
/// let options = RecordWriterOptions { compression: CompressorOptions::uncompressed(), ..Default::default() };
/// assert_eq!(options.to_string(), "uncompressed");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RecordWriterOptions {
    /// Transposed chunks, which compress proto records better (default
    /// `false`; `transpose`).
    pub transpose: bool,
    /// The compression type, level and window log (default brotli at level
    /// 6 and brotli's default window; `uncompressed`, `brotli:N`, `zstd:N`,
    /// `snappy:N`, `window_log:N`).
    pub compression: CompressorOptions,
    /// Desired decoded size of a chunk, at least 1 (`None`, the default,
    /// `chunk_size:auto`: [`DEFAULT_COMPRESSED_CHUNK_SIZE`], or
    /// [`DEFAULT_UNCOMPRESSED_CHUNK_SIZE`] without compression).
    pub chunk_size: Option<u64>,
    /// Bucket size of transposed chunks relative to the chunk size, in
    /// `0.0..=1.0` (default 1; `bucket_fraction`).
    pub bucket_fraction: f64,
    /// When appending, pads the file at the beginning to a multiple of this,
    /// at least 1 (default 1: no padding; `initial_padding`, `padding`).
    pub initial_padding: u64,
    /// Pads the file when flushing and at the end to a multiple of this, at
    /// least 1 (default 1: no padding; `final_padding`, `padding`).
    pub final_padding: u64,
    /// Background threads encoding chunks (default 0: encode in the
    /// caller's thread; `parallelism`); see [`RecordWriter`](crate::RecordWriter).
    pub parallelism: usize,
    /// File metadata: a serialized [`RecordsMetadata`] message, written as
    /// the metadata chunk after the file signature exactly as given
    /// (extensions and unknown fields kept), as C++ `set_serialized_metadata`
    /// (default `None`: no metadata chunk). Give a [`RecordsMetadata`] as
    /// `Some(prost::Message::encode_to_vec(&metadata))`. The bytes are not
    /// checked: bytes that do not parse as a `RecordsMetadata` make a file
    /// whose [`read_metadata`](crate::RecordReader::read_metadata) fails.
    pub metadata: Option<Vec<u8>>,
}

impl Default for RecordWriterOptions {
    fn default() -> Self {
        Self {
            transpose: false,
            compression: CompressorOptions::brotli(),
            chunk_size: None,
            bucket_fraction: 1.0,
            initial_padding: 1,
            final_padding: 1,
            parallelism: 0,
            metadata: None,
        }
    }
}

impl RecordWriterOptions {
    /// Refuses values the setters of C++ Riegeli refuse (called when a
    /// writer starts).
    pub(crate) fn validate(&self) -> Result<(), crate::Error> {
        let invalid = |message: String| Err(crate::ErrorKind::InvalidArgument(message).into());
        if let Err(e) = self.compression.validate() {
            return invalid(e.to_string());
        }
        if self.chunk_size == Some(0) {
            return invalid("chunk_size must be at least 1".to_owned());
        }
        if !(0.0..=1.0).contains(&self.bucket_fraction) {
            return invalid(format!("bucket_fraction {} out of range 0..=1", self.bucket_fraction));
        }
        if self.initial_padding == 0 || self.final_padding == 0 {
            return invalid("initial_padding and final_padding must be at least 1".to_owned());
        }
        Ok(())
    }

    /// The chunk size actually used.
    pub(crate) fn effective_chunk_size(&self) -> u64 {
        self.chunk_size.unwrap_or(if self.compression.compression_type == CompressionType::None {
            DEFAULT_UNCOMPRESSED_CHUNK_SIZE
        } else {
            DEFAULT_COMPRESSED_CHUNK_SIZE
        })
    }

    /// The bucket size for transposed chunks: `round(chunk_size * bucket_fraction)`, at least 1.
    pub(crate) fn bucket_size(&self) -> u64 {
        let size = (self.effective_chunk_size() as f64 * self.bucket_fraction).round();
        if size >= u64::MAX as f64 {
            u64::MAX
        } else if size >= 1.0 {
            size as u64
        } else {
            1
        }
    }
}

/// A bad option string: the token at fault and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid option {token:?}: {message}")]
pub struct ParseOptionsError {
    /// The offending `name[:value]` item.
    pub token: String,
    /// What is wrong with it (C++'s message).
    pub message: String,
}

impl ParseOptionsError {
    pub(crate) fn new(token: &str, message: impl Into<String>) -> Self {
        Self { token: token.to_owned(), message: message.into() }
    }
}

/// One `key[:value]` item of an option string, as [`parse_options`] hands it over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptionItem<'t> {
    /// The name before the first `:`.
    pub(crate) key: &'t str,
    /// What follows the first `:` (empty if there is none: C++ treats `key` and `key:` alike).
    pub(crate) value: &'t str,
}

/// Why a value parser refused an item (C++'s `ValueParser` failing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The value is none of these (C++'s `InvalidValue()` descriptions, joined by `, `).
    Invalid(String),
    /// A conflict with another option, in its whole message.
    Failed(String),
}

/// The option-string parser of C++ Riegeli (`riegeli/base/options_parser.cc`), the one
/// mechanism every option grammar here goes through, with C++'s error messages word for
/// word: items separated by `,` (empty ones skipped), each `key` or `key:value`; a key not
/// in `keys` is `Unknown option K, valid options: ...` (in the order of `keys`), a key given
/// twice `Option K is present more than once`, and a value `parse` refuses
/// `Option K: invalid value: V, valid values: ...` (or the conflict it reports).
/// `parse` gets each item and the keys accepted before it. `ours` are keys of this
/// implementation's own, accepted as `keys` are but not listed in C++'s message.
pub(crate) fn parse_options<'t>(
    text: &'t str,
    keys: &[&str],
    ours: &[&str],
    mut parse: impl FnMut(OptionItem<'t>, &[&'t str]) -> Result<(), Refusal>,
) -> Result<(), ParseOptionsError> {
    let mut seen: Vec<&'t str> = Vec::new();
    for token in text.split(',').filter(|token| !token.is_empty()) {
        let (key, value) = token.split_once(':').unwrap_or((token, ""));
        if !keys.contains(&key) && !ours.contains(&key) {
            let message = format!("Unknown option {key}, valid options: {}", keys.join(", "));
            return Err(ParseOptionsError::new(token, message));
        }
        if seen.contains(&key) {
            return Err(ParseOptionsError::new(token, format!("Option {key} is present more than once")));
        }
        match parse(OptionItem { key, value }, &seen) {
            Ok(()) => seen.push(key),
            Err(Refusal::Invalid(valid)) => {
                let shown = if value.is_empty() { "(empty)" } else { value };
                let message = format!("Option {key}: invalid value: {shown}, valid values: {valid}");
                return Err(ParseOptionsError::new(token, message));
            }
            Err(Refusal::Failed(message)) => return Err(ParseOptionsError::new(token, message)),
        }
    }
    Ok(())
}

/// The value parsers of C++'s `ValueParser`, for [`parse_options`].
pub(crate) mod value {
    use super::{OptionItem, Refusal};

    /// `Empty`: no value (or an empty one).
    pub(crate) fn empty(value: &str) -> Result<(), Refusal> {
        if value.is_empty() { Ok(()) } else { Err(Refusal::Invalid("(empty)".to_owned())) }
    }

    /// `Enum`: one of the listed values (`""` also matches an absent value).
    pub(crate) fn one_of<T: Copy>(value: &str, choices: &[(&str, T)]) -> Result<T, Refusal> {
        if let Some(&(_, chosen)) = choices.iter().find(|(name, _)| *name == value) {
            return Ok(chosen);
        }
        let names: Vec<&str> =
            choices.iter().map(|&(name, _)| if name.is_empty() { "(empty)" } else { name }).collect();
        Err(Refusal::Invalid(names.join(", ")))
    }

    /// `Int`: an integer in `[min..max]` (`absl::SimpleAtoi`: surrounding whitespace and a
    /// sign allowed).
    pub(crate) fn int(value: &str, min: i64, max: i64) -> Result<i64, Refusal> {
        match value.trim_ascii().parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(Refusal::Invalid(format!("integers in the range [{min}..{max}]"))),
        }
    }

    /// `Real`: a real in `[min..max]`.
    pub(crate) fn real(value: &str, min: f64, max: f64) -> Result<f64, Refusal> {
        match value.trim_ascii().parse::<f64>() {
            Ok(x) if x >= min && x <= max => Ok(x),
            _ => Err(Refusal::Invalid(format!("reals in the range [{min}..{max}]"))),
        }
    }

    /// `Bytes`: an integer expressed as a real with an optional suffix `[BkKMGTPE]`
    /// (powers of 1024), rounded as C++ rounds it (in a double, saturating at 2^64-1), in
    /// `[min..max]`.
    pub(crate) fn bytes(value: &str, min: u64, max: u64) -> Result<u64, Refusal> {
        let (number, shift) = match value.as_bytes().last() {
            Some(b'B') => (&value[..value.len() - 1], 0),
            Some(b'k' | b'K') => (&value[..value.len() - 1], 10),
            Some(b'M') => (&value[..value.len() - 1], 20),
            Some(b'G') => (&value[..value.len() - 1], 30),
            Some(b'T') => (&value[..value.len() - 1], 40),
            Some(b'P') => (&value[..value.len() - 1], 50),
            Some(b'E') => (&value[..value.len() - 1], 60),
            _ => (value, 0),
        };
        let parsed = number.trim_ascii().parse::<f64>().ok().filter(|&x| x >= 0.0).map(|x| {
            let scaled = (x * (1u64 << shift) as f64).round();
            // `as` saturates, as C++ does explicitly.
            scaled as u64
        });
        match parsed {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(Refusal::Invalid(format!(
                "integers expressed as reals with optional suffix [BkKMGTPE], in the range [{min}..{max}]"
            ))),
        }
    }

    /// `Or`: the first parser's result, else the second's; valid values of both if both refuse.
    pub(crate) fn or<T>(first: Result<T, Refusal>, second: impl FnOnce() -> Result<T, Refusal>) -> Result<T, Refusal> {
        match first {
            Err(Refusal::Invalid(a)) => match second() {
                Err(Refusal::Invalid(b)) => Err(Refusal::Invalid(format!("{a}, {b}"))),
                other => other,
            },
            other => other,
        }
    }

    /// `FailIfSeen`: a conflict if one of `keys` was given before `item` (the first in `keys`
    /// order is named).
    pub(crate) fn fail_if_seen(item: OptionItem<'_>, seen: &[&str], keys: &[&str]) -> Result<(), Refusal> {
        match keys.iter().find(|key| seen.contains(key)) {
            Some(key) => Err(Refusal::Failed(format!("Option {} conflicts with option {key}", item.key))),
            None => Ok(()),
        }
    }

    /// `FailIfAnySeen`: a conflict if any option was given before `item`.
    pub(crate) fn fail_if_any_seen(item: OptionItem<'_>, seen: &[&str]) -> Result<(), Refusal> {
        if seen.is_empty() { Ok(()) } else { Err(Refusal::Failed(format!("Option {} must be first", item.key))) }
    }
}

/// The compression items of an option string, collected by the first pass of a writer's
/// grammar (C++'s `CopyTo`), as C++ writes them: `key` or `key:value`.
#[derive(Debug, Default)]
pub(crate) struct CompressorText(Vec<String>);

impl CompressorText {
    /// Keeps `item` for [`parse_compressor`].
    pub(crate) fn copy(&mut self, item: OptionItem<'_>) {
        self.0.push(if item.value.is_empty() { item.key.to_owned() } else { format!("{}:{}", item.key, item.value) });
    }
}

/// C++'s `CompressorOptions::FromString` over the compression items: first the compression
/// (conflicting ones refused), then the values, which depend on it (`window_log` is refused
/// with `uncompressed` and `snappy`, ranges differ for brotli and zstd). `default` is the
/// compression and level if no item names one.
pub(crate) fn parse_compressor(
    text: &CompressorText,
    default: (CompressionType, i32),
) -> Result<CompressorOptions, ParseOptionsError> {
    const KEYS: [&str; 6] = ["uncompressed", "brotli", "zstd", "snappy", "window_log", "brotli_encoder"];
    let text = text.0.join(",");
    let (mut kind, mut level) = default;
    parse_options(&text, &KEYS, &[], |item, seen| {
        let (chosen, others): (CompressionType, &[&str]) = match item.key {
            "uncompressed" => (CompressionType::None, &["brotli", "zstd", "snappy"]),
            "brotli" => (CompressionType::Brotli, &["uncompressed", "zstd", "snappy"]),
            "zstd" => (CompressionType::Zstd, &["uncompressed", "brotli", "snappy"]),
            "snappy" => (CompressionType::Snappy, &["uncompressed", "brotli", "zstd"]),
            _ => return Ok(()),
        };
        value::fail_if_seen(item, seen, others)?;
        kind = chosen;
        Ok(())
    })?;
    let mut window_log = None;
    parse_options(&text, &KEYS, &[], |item, seen| {
        let v = item.value;
        match item.key {
            "uncompressed" => {
                value::fail_if_seen(item, seen, &["window_log"])?;
                value::empty(v)?;
                level = 0;
            }
            "brotli" => {
                let default = i64::from(CompressorOptions::BROTLI_DEFAULT_LEVEL);
                level = value::or(value::empty(v).map(|()| default), || value::int(v, 0, 11))? as i32;
            }
            "zstd" => {
                let default = i64::from(CompressorOptions::ZSTD_DEFAULT_LEVEL);
                level = value::or(value::empty(v).map(|()| default), || value::int(v, -131_072, 22))? as i32;
            }
            "snappy" => {
                value::fail_if_seen(item, seen, &["window_log"])?;
                let default = i64::from(CompressorOptions::SNAPPY_DEFAULT_LEVEL);
                level = value::or(value::empty(v).map(|()| default), || value::int(v, 1, 2))? as i32;
            }
            "window_log" => {
                let max = match kind {
                    CompressionType::None => return value::fail_if_seen(item, seen, &["uncompressed"]),
                    CompressionType::Snappy => return value::fail_if_seen(item, seen, &["snappy"]),
                    CompressionType::Brotli => 30,
                    _ => 31,
                };
                window_log = value::or(value::one_of(v, &[("auto", None)]), || value::int(v, 10, max).map(Some))?
                    .map(|log| log as u32);
            }
            _ => {
                // brotli_encoder: C++ picks between two brotli libraries at run time; here
                // the cargo feature `brotli-c` decides at build time, so the value is only
                // checked (C++ option strings parse).
                value::one_of(v, &[("rbrotli_or_cbrotli", ()), ("cbrotli", ()), ("rbrotli", ())])?;
            }
        }
        Ok(())
    })?;
    // A window log given before `uncompressed` or `snappy` is refused by them, so none is
    // left here for a compression that takes none.
    Ok(CompressorOptions { compression_type: kind, level, window_log })
}

impl FromStr for RecordWriterOptions {
    type Err = ParseOptionsError;

    /// C++'s `RecordWriterBase::Options::FromString`, messages included.
    fn from_str(text: &str) -> Result<Self, ParseOptionsError> {
        const KEYS: [&str; 14] = [
            "default",
            "transpose",
            "uncompressed",
            "brotli",
            "zstd",
            "snappy",
            "window_log",
            "brotli_encoder",
            "chunk_size",
            "bucket_fraction",
            "padding",
            "initial_padding",
            "final_padding",
            "parallelism",
        ];
        let mut options = Self::default();
        let mut compressor = CompressorText::default();
        parse_options(text, &KEYS, &[], |item, seen| {
            let v = item.value;
            let padding = || value::or(value::empty(v).map(|()| IMPLICIT_PADDING), || value::bytes(v, 1, u64::MAX));
            match item.key {
                "default" => value::fail_if_any_seen(item, seen)?,
                "transpose" => options.transpose = value::one_of(v, &[("", true), ("true", true), ("false", false)])?,
                "chunk_size" => {
                    options.chunk_size =
                        value::or(value::one_of(v, &[("auto", None)]), || value::bytes(v, 1, u64::MAX).map(Some))?;
                }
                "bucket_fraction" => options.bucket_fraction = value::real(v, 0.0, 1.0)?,
                "padding" => (options.initial_padding, options.final_padding) = (padding()?, padding()?),
                "initial_padding" => options.initial_padding = padding()?,
                "final_padding" => options.final_padding = padding()?,
                "parallelism" => options.parallelism = value::int(v, 0, i64::from(i32::MAX))? as usize,
                _ => compressor.copy(item),
            }
            Ok(())
        })?;
        let default = (options.compression.compression_type, options.compression.level);
        options.compression = parse_compressor(&compressor, default)?;
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
        let compression = &self.compression;
        if (compression.compression_type, compression.level)
            != (default.compression.compression_type, default.compression.level)
        {
            items.push(match compression.compression_type {
                CompressionType::None => "uncompressed".into(),
                CompressionType::Brotli => format!("brotli:{}", compression.level),
                CompressionType::Zstd => format!("zstd:{}", compression.level),
                CompressionType::Snappy => format!("snappy:{}", compression.level),
                _ => format!("unknown:{}", compression.level),
            });
        }
        if let Some(log) = compression.window_log {
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
/// [`ChunkReader`](crate::ChunkReader), [`Chunk::decode`](crate::Chunk::decode)).
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
        assert_eq!(o.compression.compression_type, CompressionType::Brotli);
        assert_eq!(o.compression.level, 6);
        assert_eq!(o.effective_chunk_size(), 1 << 20);
        assert_eq!("default".parse::<RecordWriterOptions>().unwrap(), o);
        assert_eq!("zstd".parse::<RecordWriterOptions>().unwrap().compression.level, 3);
        assert_eq!("snappy".parse::<RecordWriterOptions>().unwrap().compression.level, 1);
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
        assert_eq!((o.initial_padding, o.final_padding), (65536, 65536));
        let o: RecordWriterOptions = "final_padding:1M".parse().unwrap();
        assert_eq!((o.initial_padding, o.final_padding), (1, 1 << 20));
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
            assert_eq!(err.token, bad, "{bad}: {err}");
        }
        let err = "zstd,brotli".parse::<RecordWriterOptions>().unwrap_err();
        assert_eq!(err.token, "brotli");
        let err = "uncompressed,window_log:20".parse::<RecordWriterOptions>().unwrap_err();
        assert_eq!(err.token, "window_log:20");
        assert!("snappy,window_log:auto".parse::<RecordWriterOptions>().is_err());
        assert!("brotli,window_log:31".parse::<RecordWriterOptions>().is_err());
        assert!("zstd,window_log:31".parse::<RecordWriterOptions>().is_ok());
    }

    #[test]
    fn errors_are_cpp_words() {
        const VALID: &str = "default, transpose, uncompressed, brotli, zstd, snappy, window_log, brotli_encoder, \
                             chunk_size, bucket_fraction, padding, initial_padding, final_padding, parallelism";
        const BYTES: &str =
            "integers expressed as reals with optional suffix [BkKMGTPE], in the range [1..18446744073709551615]";
        // C++'s RecordWriterBase::Options::FromString and CompressorOptions::FromString
        // (riegeli/base/options_parser.cc words).
        for (text, message) in [
            ("chunk_sise:1M", format!("Unknown option chunk_sise, valid options: {VALID}")),
            ("Zstd", format!("Unknown option Zstd, valid options: {VALID}")),
            ("zstd,zstd:5", "Option zstd is present more than once".to_owned()),
            ("zstd,default", "Option default must be first".to_owned()),
            ("default,default", "Option default is present more than once".to_owned()),
            ("transpose:yes", "Option transpose: invalid value: yes, valid values: (empty), true, false".to_owned()),
            ("chunk_size:0", format!("Option chunk_size: invalid value: 0, valid values: auto, {BYTES}")),
            ("chunk_size:", format!("Option chunk_size: invalid value: (empty), valid values: auto, {BYTES}")),
            ("chunk_size:12Q", format!("Option chunk_size: invalid value: 12Q, valid values: auto, {BYTES}")),
            (
                "bucket_fraction:1.5",
                "Option bucket_fraction: invalid value: 1.5, valid values: reals in the range [0..1]".to_owned(),
            ),
            ("padding:0", format!("Option padding: invalid value: 0, valid values: (empty), {BYTES}")),
            ("final_padding:-1", format!("Option final_padding: invalid value: -1, valid values: (empty), {BYTES}")),
            (
                "parallelism:-1",
                "Option parallelism: invalid value: -1, valid values: integers in the range [0..2147483647]".to_owned(),
            ),
            ("zstd,brotli", "Option brotli conflicts with option zstd".to_owned()),
            ("snappy,uncompressed", "Option uncompressed conflicts with option snappy".to_owned()),
            ("uncompressed:1", "Option uncompressed: invalid value: 1, valid values: (empty)".to_owned()),
            (
                "brotli:12",
                "Option brotli: invalid value: 12, valid values: (empty), integers in the range [0..11]".to_owned(),
            ),
            (
                "zstd:23",
                "Option zstd: invalid value: 23, valid values: (empty), integers in the range [-131072..22]".to_owned(),
            ),
            (
                "snappy:3",
                "Option snappy: invalid value: 3, valid values: (empty), integers in the range [1..2]".to_owned(),
            ),
            (
                "window_log:9",
                "Option window_log: invalid value: 9, valid values: auto, integers in the range [10..30]".to_owned(),
            ),
            (
                "zstd,window_log:32",
                "Option window_log: invalid value: 32, valid values: auto, integers in the range [10..31]".to_owned(),
            ),
            ("uncompressed,window_log:20", "Option window_log conflicts with option uncompressed".to_owned()),
            ("window_log:x,uncompressed", "Option uncompressed conflicts with option window_log".to_owned()),
            ("snappy,window_log:auto", "Option window_log conflicts with option snappy".to_owned()),
            (
                "brotli_encoder:c",
                "Option brotli_encoder: invalid value: c, valid values: rbrotli_or_cbrotli, cbrotli, rbrotli"
                    .to_owned(),
            ),
            // The first pass (every option but the compression ones) comes first.
            ("brotli:12,chunk_size:0", format!("Option chunk_size: invalid value: 0, valid values: auto, {BYTES}")),
        ] {
            let err = text.parse::<RecordWriterOptions>().unwrap_err();
            assert_eq!(err.message, message, "{text}");
        }
        // What C++ accepts: whitespace and a sign around integers, an empty value as none,
        // `default` first with any value, reals for sizes (rounded in a double).
        let o: RecordWriterOptions = "default:x,zstd: +5 ,chunk_size:1.5k,transpose:".parse().unwrap();
        assert_eq!(
            (o.compression.compression_type, o.compression.level, o.chunk_size),
            (CompressionType::Zstd, 5, Some(1536))
        );
        assert!(o.transpose);
        let o: RecordWriterOptions = "window_log:20".parse().unwrap();
        assert_eq!((o.compression.compression_type, o.compression.window_log), (CompressionType::Brotli, Some(20)));
        assert_eq!("chunk_size:inf".parse::<RecordWriterOptions>().unwrap().chunk_size, Some(u64::MAX));
        assert_eq!("zstd:".parse::<RecordWriterOptions>().unwrap().compression.level, 3);
    }

    #[test]
    fn writer_refuses_bad_fields() {
        let bad = [
            RecordWriterOptions { compression: CompressorOptions::brotli().with_level(12), ..Default::default() },
            RecordWriterOptions { compression: CompressorOptions::zstd().with_level(23), ..Default::default() },
            RecordWriterOptions { compression: CompressorOptions::snappy().with_level(3), ..Default::default() },
            RecordWriterOptions {
                compression: CompressorOptions::uncompressed().with_window_log(Some(20)),
                ..Default::default()
            },
            RecordWriterOptions {
                compression: CompressorOptions::brotli().with_window_log(Some(31)),
                ..Default::default()
            },
            RecordWriterOptions { chunk_size: Some(0), ..Default::default() },
            RecordWriterOptions { bucket_fraction: 1.5, ..Default::default() },
            RecordWriterOptions { bucket_fraction: f64::NAN, ..Default::default() },
            RecordWriterOptions { initial_padding: 0, ..Default::default() },
            RecordWriterOptions { final_padding: 0, ..Default::default() },
        ];
        for options in bad {
            let err = crate::RecordWriter::new(Vec::new(), options.clone()).unwrap_err();
            assert!(matches!(err.kind(), crate::ErrorKind::InvalidArgument(_)), "{options:?}: {err}");
        }
        let good = RecordWriterOptions { chunk_size: Some(1), bucket_fraction: 0.0, ..Default::default() };
        assert!(crate::RecordWriter::new(Vec::new(), good).is_ok());
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
