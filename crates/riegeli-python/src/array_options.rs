//! The option string of array_record's `ArrayRecordReader` (C++
//! `ArrayRecordReaderBase::Options::FromString`, array-record 0.8.6), with its error messages.
//!
//! A leaf: it imports no other module of this crate.

/// C++ `kDefaultReadaheadBufferSize`: 16 MiB.
pub(crate) const DEFAULT_READAHEAD: u64 = 16 << 20;
/// The default `footer_prefetch_bytes`: 1 MiB.
const DEFAULT_FOOTER_PREFETCH: u64 = 1 << 20;
/// The largest byte size the options accept (C++ `ValueParser::Bytes` here: 1 GiB).
const MAX_BYTES: u64 = 1 << 30;

/// The options of an `ArrayRecordReader` that mean something here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReaderOptions {
    /// `readahead_buffer_size`: the bytes `read()` decodes ahead; 0 reads chunk by chunk.
    pub(crate) readahead: u64,
    /// `max_parallelism`: `None` for `auto`.
    pub(crate) max_parallelism: Option<u32>,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        Self { readahead: DEFAULT_READAHEAD, max_parallelism: None }
    }
}

const VALID_OPTIONS: &str = "max_parallelism, readahead_buffer_size, index_storage_option, footer_prefetch_bytes";
const BYTES_VALUES: &str =
    "auto, integers expressed as reals with optional suffix [BkKMGTPE], in the range [0..1073741824]";

/// C++'s message for a value outside the grammar of option `name`.
fn invalid(name: &str, value: &str, valid: &str) -> String {
    let value = if value.is_empty() { "(empty)" } else { value };
    format!("Option {name}: invalid value: {value}, valid values: {valid}")
}

/// A byte size: a real with an optional suffix `[BkKMGTPE]`, rounded, in `0..=1 GiB`.
fn parse_bytes(value: &str) -> Option<u64> {
    let value = value.trim_ascii();
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
    // Rust's float grammar accepts words (`inf`, `nan`) C++ does not: digits only.
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let real: f64 = number.parse().ok()?;
    let scaled = (real * (1u64 << shift) as f64).round();
    if !(0.0..=MAX_BYTES as f64).contains(&scaled) {
        return None;
    }
    Some(scaled as u64)
}

/// Parses the reader options; the error is C++'s message (raised as `ValueError`).
pub(crate) fn parse_reader_options(text: &str) -> Result<ReaderOptions, String> {
    let mut options = ReaderOptions::default();
    let mut seen: Vec<&str> = Vec::new();
    let mut offloaded = false;
    let mut footer_prefetch = DEFAULT_FOOTER_PREFETCH;
    for token in text.split(',') {
        if token.is_empty() {
            continue;
        }
        let (name, value) = token.split_once(':').unwrap_or((token, ""));
        if !matches!(
            name,
            "max_parallelism" | "readahead_buffer_size" | "index_storage_option" | "footer_prefetch_bytes"
        ) {
            return Err(format!("Unknown option {name}, valid options: {VALID_OPTIONS}"));
        }
        if seen.contains(&name) {
            return Err(format!("Option {name} is present more than once"));
        }
        seen.push(name);
        match name {
            "max_parallelism" => {
                options.max_parallelism = match value {
                    "auto" => None,
                    _ => Some(
                        value
                            .trim_ascii()
                            .parse::<u32>()
                            .ok()
                            .filter(|&n| i32::try_from(n).is_ok())
                            .ok_or_else(|| invalid(name, value, "auto, integers in the range [0..2147483647]"))?,
                    ),
                }
            }
            "readahead_buffer_size" => {
                options.readahead = match value {
                    "auto" => DEFAULT_READAHEAD,
                    _ => parse_bytes(value).ok_or_else(|| invalid(name, value, BYTES_VALUES))?,
                }
            }
            "footer_prefetch_bytes" => {
                footer_prefetch = match value {
                    "auto" => DEFAULT_FOOTER_PREFETCH,
                    _ => parse_bytes(value).ok_or_else(|| invalid(name, value, BYTES_VALUES))?,
                }
            }
            _ => {
                offloaded = match value {
                    "" | "in_memory" => false,
                    "offloaded" => true,
                    _ => return Err(invalid(name, value, "(empty), in_memory, offloaded")),
                }
            }
        }
    }
    if offloaded && footer_prefetch > 0 {
        return Err("footer_prefetch_bytes > 0 is only supported with index_storage_option:in_memory.".to_owned());
    }
    Ok(options)
}
