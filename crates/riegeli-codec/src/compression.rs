//! Compression of the buffers inside chunks: `CompressionType`, [`Compressor`]
//! and [`Decompressor`].
//!
//! Riegeli/records compresses each buffer of a chunk separately into a
//! *compressed block* (C++ `chunk_encoding_internal::Compressor` and
//! `Decompressor`):
//! - with [`CompressionType::None`], the data as is;
//! - otherwise `varint64(decompressed size)` followed by one brotli stream, one
//!   zstd frame, or one raw snappy block (not the snappy framing format).
//!
//! The decompressed size prefix is what a decoder trusts: zstd frames written by
//! C++ Riegeli often carry no content size. [`Decompressor`] checks it against
//! a caller's limit before allocating, decompresses into exactly that many
//! bytes, and requires the stream to end exactly there and the block to end
//! with the stream.

use crate::{
    error::{CodecError, CodecErrorKind},
    varint,
};

/// How the buffers of a chunk are compressed: the `compression_type` byte of a
/// simple or transposed chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompressionType {
    /// `0`: not compressed.
    None,
    /// `'b'` (0x62): brotli.
    Brotli,
    /// `'z'` (0x7a): zstd.
    Zstd,
    /// `'s'` (0x73): snappy (raw block format).
    Snappy,
}

impl CompressionType {
    /// The byte that stands for this compression type in chunk data.
    pub const fn to_byte(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Brotli => b'b',
            Self::Zstd => b'z',
            Self::Snappy => b's',
        }
    }

    /// The compression type a byte stands for.
    ///
    /// An unknown byte is an [`Invalid`](CodecErrorKind::Invalid) error at
    /// offset 0 of `"compression type"`. A known type whose cargo feature is off
    /// is returned normally; using it is an error later.
    pub fn from_byte(byte: u8) -> Result<Self, CodecError> {
        match byte {
            0 => Ok(Self::None),
            b'b' => Ok(Self::Brotli),
            b'z' => Ok(Self::Zstd),
            b's' => Ok(Self::Snappy),
            _ => Err(CodecError::invalid("compression type", 0, "unknown compression type byte")),
        }
    }

    /// The lowercase name of the compression type (`"none"`, `"brotli"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Brotli => "brotli",
            Self::Zstd => "zstd",
            Self::Snappy => "snappy",
        }
    }

    /// Whether this build can compress and decompress this type (its cargo
    /// feature is on).
    pub const fn is_supported(self) -> bool {
        match self {
            Self::None => true,
            Self::Brotli => cfg!(feature = "brotli"),
            Self::Zstd => cfg!(feature = "zstd"),
            Self::Snappy => cfg!(feature = "snappy"),
        }
    }

    /// The error for a type whose cargo feature is off.
    fn unsupported(self) -> CodecError {
        let what = match self {
            Self::None => "no compression",
            Self::Brotli => "brotli compression (cargo feature `brotli` is off)",
            Self::Zstd => "zstd compression (cargo feature `zstd` is off)",
            Self::Snappy => "snappy compression (cargo feature `snappy` is off)",
        };
        CodecError::new("compressed block", 0, CodecErrorKind::Unsupported { what })
    }
}

/// How [`Compressor`] compresses: the type, level and window.
///
/// The defaults follow C++ Riegeli's `CompressorOptions`: brotli at level 6
/// ([`Default`]), zstd at level 3, snappy at level 1, and a brotli window of
/// 2<sup>22</sup> bytes when [`window_log`](Self::window_log) is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompressorOptions {
    /// The compression type.
    pub compression_type: CompressionType,
    /// The compression level: brotli `0..=11`, zstd `-131072..=22` (0 means
    /// zstd's default, 3), snappy `1..=2` (the `snap` crate has a single level,
    /// so both compress alike); ignored for [`CompressionType::None`].
    pub level: i32,
    /// The base-2 logarithm of the window size: brotli `10..=30` (`None` =
    /// 22; above 24 is "large window brotli", which C++ Riegeli reads), zstd
    /// `10..=31` (`None` = zstd's choice for the level and data size). Must be
    /// `None` for no compression and snappy.
    pub window_log: Option<u32>,
}

impl CompressorOptions {
    /// C++ Riegeli's default brotli level.
    pub const BROTLI_DEFAULT_LEVEL: i32 = 6;
    /// C++ Riegeli's default zstd level (`ZSTD_CLEVEL_DEFAULT`).
    pub const ZSTD_DEFAULT_LEVEL: i32 = 3;
    /// C++ Riegeli's default snappy level.
    pub const SNAPPY_DEFAULT_LEVEL: i32 = 1;
    /// Valid brotli levels.
    pub const BROTLI_LEVELS: std::ops::RangeInclusive<i32> = 0..=11;
    /// Valid zstd levels (`ZSTD_minCLevel()..=ZSTD_maxCLevel()`).
    pub const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = -131_072..=22;
    /// Valid snappy levels.
    pub const SNAPPY_LEVELS: std::ops::RangeInclusive<i32> = 1..=2;
    /// Valid brotli window logs.
    pub const BROTLI_WINDOW_LOGS: std::ops::RangeInclusive<u32> = 10..=30;
    /// Valid zstd window logs.
    pub const ZSTD_WINDOW_LOGS: std::ops::RangeInclusive<u32> = 10..=31;
    /// The brotli window log used when [`window_log`](Self::window_log) is `None`.
    pub const BROTLI_DEFAULT_WINDOW_LOG: u32 = 22;

    /// No compression.
    pub const fn uncompressed() -> Self {
        Self { compression_type: CompressionType::None, level: 0, window_log: None }
    }

    /// Brotli at the default level (6).
    pub const fn brotli() -> Self {
        Self { compression_type: CompressionType::Brotli, level: Self::BROTLI_DEFAULT_LEVEL, window_log: None }
    }

    /// Zstd at the default level (3).
    pub const fn zstd() -> Self {
        Self { compression_type: CompressionType::Zstd, level: Self::ZSTD_DEFAULT_LEVEL, window_log: None }
    }

    /// Snappy at the default level (1).
    pub const fn snappy() -> Self {
        Self { compression_type: CompressionType::Snappy, level: Self::SNAPPY_DEFAULT_LEVEL, window_log: None }
    }

    /// The same options with compression level `level`.
    pub const fn with_level(mut self, level: i32) -> Self {
        self.level = level;
        self
    }

    /// The same options with window log `window_log`.
    pub const fn with_window_log(mut self, window_log: Option<u32>) -> Self {
        self.window_log = window_log;
        self
    }

    /// Checks the level and window log against the ranges of the compression
    /// type (those of C++ Riegeli's options parser).
    pub fn validate(&self) -> Result<(), CodecError> {
        let bad = |reason| Err(CodecError::invalid("compressor options", 0, reason));
        match self.compression_type {
            CompressionType::None => {
                if self.window_log.is_some() {
                    return bad("window_log given without compression");
                }
            }
            CompressionType::Brotli => {
                if !Self::BROTLI_LEVELS.contains(&self.level) {
                    return bad("brotli level out of range 0..=11");
                }
                if self.window_log.is_some_and(|w| !Self::BROTLI_WINDOW_LOGS.contains(&w)) {
                    return bad("brotli window_log out of range 10..=30");
                }
            }
            CompressionType::Zstd => {
                if !Self::ZSTD_LEVELS.contains(&self.level) {
                    return bad("zstd level out of range -131072..=22");
                }
                if self.window_log.is_some_and(|w| !Self::ZSTD_WINDOW_LOGS.contains(&w)) {
                    return bad("zstd window_log out of range 10..=31");
                }
            }
            CompressionType::Snappy => {
                if !Self::SNAPPY_LEVELS.contains(&self.level) {
                    return bad("snappy level out of range 1..=2");
                }
                if self.window_log.is_some() {
                    return bad("window_log given with snappy");
                }
            }
        }
        Ok(())
    }
}

impl Default for CompressorOptions {
    /// Brotli at level 6, as in C++ Riegeli.
    fn default() -> Self {
        Self::brotli()
    }
}

/// The codec state kept by a [`Compressor`] between calls.
enum Encoder {
    None,
    #[cfg(feature = "brotli")]
    Brotli {
        quality: u32,
        window_log: u32,
    },
    #[cfg(feature = "zstd")]
    Zstd(Box<zstd::bulk::Compressor<'static>>),
    #[cfg(feature = "snappy")]
    Snappy(Box<snap::raw::Encoder>),
    /// Invalid options or a codec whose feature is off: every call fails.
    Failed(CodecError),
}

/// Compresses buffers into compressed blocks, reusing its codec context
/// (zstd `CCtx`, snappy hash table) from call to call.
pub struct Compressor {
    options: CompressorOptions,
    encoder: Encoder,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor").field("options", &self.options).finish_non_exhaustive()
    }
}

impl Compressor {
    /// A compressor with `options`.
    ///
    /// Invalid options (see [`CompressorOptions::validate`]) or a compression
    /// type whose cargo feature is off make every [`compress`](Self::compress)
    /// call fail with that error.
    pub fn new(options: CompressorOptions) -> Self {
        let encoder = match options.validate() {
            Ok(()) => Self::make_encoder(&options).unwrap_or_else(Encoder::Failed),
            Err(e) => Encoder::Failed(e),
        };
        Self { options, encoder }
    }

    fn make_encoder(options: &CompressorOptions) -> Result<Encoder, CodecError> {
        match options.compression_type {
            CompressionType::None => Ok(Encoder::None),
            #[cfg(feature = "brotli")]
            CompressionType::Brotli => Ok(Encoder::Brotli {
                // `validate` keeps both in range.
                quality: u32::try_from(options.level).unwrap_or(6),
                window_log: options.window_log.unwrap_or(CompressorOptions::BROTLI_DEFAULT_WINDOW_LOG),
            }),
            #[cfg(feature = "zstd")]
            CompressionType::Zstd => zstd_impl::new_encoder(options),
            #[cfg(feature = "snappy")]
            CompressionType::Snappy => Ok(Encoder::Snappy(Box::new(snap::raw::Encoder::new()))),
            #[allow(unreachable_patterns, reason = "reached when a codec feature is off")]
            other => Err(other.unsupported()),
        }
    }

    /// The options this compressor was made with.
    pub fn options(&self) -> &CompressorOptions {
        &self.options
    }

    /// Appends one compressed block holding `data` to `out`: `data` itself for
    /// no compression, otherwise `varint64(data.len())` then the compressed
    /// stream.
    ///
    /// On error `out` is left as it was.
    pub fn compress(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        let start = out.len();
        let result = self.compress_impl(data, out);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn compress_impl(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        if let Encoder::None = self.encoder {
            out.extend_from_slice(data);
            return Ok(());
        }
        if let Encoder::Failed(e) = &self.encoder {
            return Err(e.clone());
        }
        varint::encode_u64(data.len() as u64, out);
        match &mut self.encoder {
            #[cfg(feature = "brotli")]
            Encoder::Brotli { quality, window_log } => brotli_impl::compress(data, *quality, *window_log, out),
            #[cfg(feature = "zstd")]
            Encoder::Zstd(encoder) => zstd_impl::compress(encoder, data, out),
            #[cfg(feature = "snappy")]
            Encoder::Snappy(encoder) => snappy_impl::compress(encoder, data, out),
            Encoder::None | Encoder::Failed(_) => Ok(()),
        }
    }
}

/// Decompresses compressed blocks, reusing its codec contexts (zstd `DCtx`,
/// snappy decoder) from call to call.
#[derive(Default)]
pub struct Decompressor {
    #[cfg(feature = "zstd")]
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    /// A streaming context, for decompressing only the beginning of a block.
    #[cfg(feature = "zstd")]
    zstd_stream: Option<zstd::stream::raw::Decoder<'static>>,
    #[cfg(feature = "snappy")]
    snappy: Option<snap::raw::Decoder>,
}

impl std::fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decompressor").finish_non_exhaustive()
    }
}

impl Decompressor {
    /// A decompressor; codec contexts are created on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// The decompressed size a compressed block declares: its varint prefix
    /// and the prefix's length, or for [`CompressionType::None`] the block's
    /// length and 0. Does not look at the stream.
    pub fn declared_size(compression_type: CompressionType, input: &[u8]) -> Result<(u64, usize), CodecError> {
        match compression_type {
            CompressionType::None => Ok((input.len() as u64, 0)),
            _ => varint::decode_u64(input).map_err(|e| e.within("compressed block", 0)),
        }
    }

    /// Decompresses one whole compressed block `input` of `compression_type`
    /// and appends exactly its declared decompressed size to `out`.
    ///
    /// Errors (with `out` left as it was):
    /// - the declared size exceeds `max_size`:
    ///   [`LimitExceeded`](CodecErrorKind::LimitExceeded), found before
    ///   allocating anything;
    /// - the stream is truncated, corrupt, or decompresses to more or fewer
    ///   bytes than declared, or bytes follow it in `input`;
    /// - the type's cargo feature is off: [`Unsupported`](CodecErrorKind::Unsupported).
    ///
    /// For [`CompressionType::None`] it appends `input` (`max_size` applies to
    /// its length). Offsets in errors are within `input` (`what` is
    /// `"compressed block"`).
    pub fn decompress(
        &mut self,
        compression_type: CompressionType,
        input: &[u8],
        max_size: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        self.decompress_prefix(compression_type, input, max_size, u64::MAX, out)
    }

    /// [`decompress`](Self::decompress), but appends only the first `prefix`
    /// bytes of the decompressed block (all of it if it is shorter): what
    /// reading one record of a chunk needs. Zstd decompresses no further than
    /// the end of the zstd block (at most 128 KiB) holding the prefix's end;
    /// brotli stops there too, but decodes into its window first, so it
    /// saves work only for blocks longer than the window; snappy
    /// decompresses all and drops the rest. The declared size is checked as by
    /// `decompress` (against `max_size`, and against a zstd frame's content
    /// size); what the stream holds after the prefix may not be looked at, so a
    /// stream corrupt only there may not be reported. (A zstd frame without a
    /// content size and with a window larger than the block is decompressed
    /// whole: a window is what the streaming context would allocate.)
    pub fn decompress_prefix(
        &mut self,
        compression_type: CompressionType,
        input: &[u8],
        max_size: u64,
        prefix: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        if !compression_type.is_supported() {
            return Err(compression_type.unsupported());
        }
        let (declared, prefix_len) = Self::declared_size(compression_type, input)?;
        if declared > max_size {
            return Err(CodecError::limit("compressed block", 0, "max decompressed size", declared, max_size));
        }
        let size = usize::try_from(declared)
            .map_err(|_| CodecError::limit("compressed block", 0, "address space", declared, usize::MAX as u64))?;
        // At most `size`, which fits in a usize.
        let wanted = usize::try_from(prefix).map_or(size, |prefix| prefix.min(size));
        let stream = input.get(prefix_len..).unwrap_or_default();
        let start = out.len();
        let result = match compression_type {
            CompressionType::None => {
                out.extend_from_slice(input.get(..wanted).unwrap_or_default());
                Ok(())
            }
            #[cfg(feature = "brotli")]
            CompressionType::Brotli => brotli_impl::decompress(stream, size, wanted, out),
            #[cfg(feature = "zstd")]
            CompressionType::Zstd if wanted < size && !zstd_impl::window_beyond(stream, size) => {
                zstd_impl::decompress_prefix(&mut self.zstd_stream, stream, size, wanted, out)
            }
            #[cfg(feature = "zstd")]
            CompressionType::Zstd => {
                zstd_impl::decompress(&mut self.zstd, stream, size, out).map(|()| out.truncate(start + wanted))
            }
            #[cfg(feature = "snappy")]
            CompressionType::Snappy => {
                // Snappy blocks decompress in one go; the rest is dropped.
                let decoder = self.snappy.get_or_insert_with(snap::raw::Decoder::new);
                snappy_impl::decompress(decoder, stream, size, out).map(|()| out.truncate(start + wanted))
            }
            #[allow(unreachable_patterns, reason = "reached when a codec feature is off")]
            other => {
                let _ = (stream, size, wanted);
                Err(other.unsupported())
            }
        };
        result.map_err(|e| {
            out.truncate(start);
            // Offsets inside the stream become offsets inside the block.
            e.within("compressed block", prefix_len as u64)
        })
    }
}

/// The error for a stream that decompresses to more than its declared size.
#[cfg(any(feature = "brotli", feature = "zstd"))]
fn longer_than_declared(offset: usize) -> CodecError {
    CodecError::invalid("compressed stream", offset as u64, "stream decompresses to more than the declared size")
}

/// The error for a stream that decompresses to less than its declared size.
#[cfg(any(feature = "brotli", feature = "zstd"))]
fn shorter_than_declared(offset: usize) -> CodecError {
    CodecError::invalid("compressed stream", offset as u64, "stream decompresses to less than the declared size")
}

/// The error for bytes after the end of the compressed stream.
#[cfg(any(feature = "brotli", feature = "zstd"))]
fn trailing_bytes(offset: usize) -> CodecError {
    CodecError::invalid("compressed stream", offset as u64, "bytes after the end of the compressed stream")
}

#[cfg(any(feature = "brotli", feature = "zstd", feature = "snappy"))]
fn codec_failed(codec: &'static str, offset: usize, message: String) -> CodecError {
    CodecError::new("compressed stream", offset as u64, CodecErrorKind::Compression { codec, message })
}

#[cfg(feature = "brotli-c")]
mod brotli_impl {
    //! Brotli through the C library (Google's, as C++ Riegeli uses), via the
    //! `brotlic` bindings: about 1.5x faster than the pure-Rust encoder at
    //! quality 6, and a few percent smaller output.
    use brotlic::{
        BrotliDecoderOptions, BrotliEncoderOptions, LargeWindowSize, Quality, WindowSize, decode::DecoderInfo,
        encode::BrotliOperation,
    };

    use super::{CodecError, codec_failed, longer_than_declared, shorter_than_declared, trailing_bytes};

    /// Brotli's own limit for the standard (not large) window.
    const MAX_STANDARD_WINDOW_LOG: u32 = 24;

    pub(super) fn compress(data: &[u8], quality: u32, window_log: u32, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let failed = |what: &str| codec_failed("brotli", 0, what.to_owned());
        let quality = u8::try_from(quality).ok().and_then(|q| Quality::new(q).ok());
        let quality = quality.ok_or_else(|| failed("quality out of range"))?;
        let window = u8::try_from(window_log).map_err(|_| failed("window_log out of range"))?;
        let mut options = BrotliEncoderOptions::new();
        options.quality(quality).size_hint(u32::try_from(data.len()).unwrap_or(u32::MAX));
        if window_log > MAX_STANDARD_WINDOW_LOG {
            options.large_window_size(LargeWindowSize::new(window).map_err(|_| failed("window_log out of range"))?);
        } else {
            options.window_size(WindowSize::new(window).map_err(|_| failed("window_log out of range"))?);
        }
        let mut encoder = options.build().map_err(|_| failed("setting encoder parameters failed"))?;
        let stream_start = out.len();
        // Room for the whole stream in one go (grown below if ever too small).
        let bound = data.len() + data.len() / 8 + 1024;
        out.resize(stream_start + bound, 0);
        let mut in_offset = 0;
        let mut out_offset = stream_start;
        loop {
            let input = data.get(in_offset..).unwrap_or_default();
            let output = out.get_mut(out_offset..).unwrap_or_default();
            let Ok(result) = encoder.compress(input, output, BrotliOperation::Finish) else {
                out.truncate(stream_start);
                return Err(failed("encoder failed"));
            };
            in_offset += result.bytes_read;
            out_offset += result.bytes_written;
            if encoder.is_finished() {
                break;
            }
            if out_offset == out.len() {
                let grow = (out.len() - stream_start).max(4096);
                out.resize(out.len() + grow, 0);
            }
        }
        out.truncate(out_offset);
        Ok(())
    }

    /// Appends the first `prefix` bytes (at most `size`) of the stream's
    /// `size` decompressed bytes, decompressing no further.
    pub(super) fn decompress(stream: &[u8], size: usize, prefix: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let start = out.len();
        out.resize(start + prefix, 0);
        let output = out.get_mut(start..).unwrap_or_default();
        // Large-window streams are accepted, as C++ Riegeli's reader does.
        let mut decoder = BrotliDecoderOptions::new()
            .large_window_size(true)
            .build()
            .map_err(|_| codec_failed("brotli", 0, "setting decoder parameters failed".to_owned()))?;
        match decoder.decompress(stream, output) {
            Ok(result) => match result.info {
                // The prefix is full; the rest of the stream is not looked at.
                DecoderInfo::NeedsMoreOutput if prefix < size && result.bytes_written == prefix => Ok(()),
                DecoderInfo::Finished if result.bytes_written != size => Err(shorter_than_declared(result.bytes_read)),
                DecoderInfo::Finished if result.bytes_read != stream.len() => Err(trailing_bytes(result.bytes_read)),
                DecoderInfo::Finished => Ok(()),
                DecoderInfo::NeedsMoreOutput => Err(longer_than_declared(result.bytes_read)),
                DecoderInfo::NeedsMoreInput => Err(CodecError::truncated("compressed stream", stream.len() as u64, 1)),
            },
            Err(error) => Err(codec_failed("brotli", 0, format!("corrupt stream ({error})"))),
        }
    }
}

#[cfg(all(feature = "brotli", not(feature = "brotli-c")))]
mod brotli_impl {
    //! Brotli through the pure-Rust `brotli` crate.
    use brotli::{
        BrotliDecompressStream, BrotliResult, BrotliState,
        enc::{
            StandardAlloc,
            encode::{BrotliEncoderOperation, BrotliEncoderParameter, BrotliEncoderStateStruct},
        },
    };

    use super::{CodecError, codec_failed, longer_than_declared, shorter_than_declared, trailing_bytes};

    /// Brotli's own limit for the standard (not large) window.
    const MAX_STANDARD_WINDOW_LOG: u32 = 24;

    pub(super) fn compress(data: &[u8], quality: u32, window_log: u32, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let mut state = BrotliEncoderStateStruct::new(StandardAlloc::default());
        let size_hint = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let params_ok = state.set_parameter(BrotliEncoderParameter::BROTLI_PARAM_QUALITY, quality)
            && state.set_parameter(
                BrotliEncoderParameter::BROTLI_PARAM_LARGE_WINDOW,
                u32::from(window_log > MAX_STANDARD_WINDOW_LOG),
            )
            && state.set_parameter(BrotliEncoderParameter::BROTLI_PARAM_LGWIN, window_log)
            && state.set_parameter(BrotliEncoderParameter::BROTLI_PARAM_SIZE_HINT, size_hint);
        if !params_ok {
            return Err(codec_failed("brotli", 0, "setting encoder parameters failed".to_owned()));
        }
        let stream_start = out.len();
        // Room for the whole stream in one go (grown below if ever too small).
        let bound = brotli::enc::BrotliEncoderMaxCompressedSize(data.len()).max(data.len() / 2 + 64);
        out.resize(stream_start + bound, 0);
        let mut in_offset = 0;
        let mut out_offset = stream_start;
        loop {
            let mut available_in = data.len() - in_offset;
            let mut available_out = out.len() - out_offset;
            let ok = state.compress_stream(
                BrotliEncoderOperation::BROTLI_OPERATION_FINISH,
                &mut available_in,
                data,
                &mut in_offset,
                &mut available_out,
                out,
                &mut out_offset,
                &mut None,
                &mut |_, _, _, _| (),
            );
            if !ok {
                out.truncate(stream_start);
                return Err(codec_failed("brotli", 0, "encoder failed".to_owned()));
            }
            if state.is_finished() {
                break;
            }
            if available_out == 0 {
                let grow = (out.len() - stream_start).max(4096);
                out.resize(out.len() + grow, 0);
            }
        }
        out.truncate(out_offset);
        Ok(())
    }

    /// Appends the first `prefix` bytes (at most `size`) of the stream's
    /// `size` decompressed bytes, decompressing no further.
    pub(super) fn decompress(stream: &[u8], size: usize, prefix: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let start = out.len();
        out.resize(start + prefix, 0);
        let output = out.get_mut(start..).unwrap_or_default();
        // `BrotliState::new` accepts large-window streams, as C++ Riegeli's reader does.
        let mut state = BrotliState::new(StandardAlloc::default(), StandardAlloc::default(), StandardAlloc::default());
        let mut available_in = stream.len();
        let mut in_offset = 0;
        let mut available_out = output.len();
        let mut out_offset = 0;
        let mut total_out = 0;
        let result = BrotliDecompressStream(
            &mut available_in,
            &mut in_offset,
            stream,
            &mut available_out,
            &mut out_offset,
            output,
            &mut total_out,
            &mut state,
        );
        match result {
            BrotliResult::ResultSuccess => {
                if out_offset != size {
                    return Err(shorter_than_declared(in_offset));
                }
                if in_offset != stream.len() {
                    return Err(trailing_bytes(in_offset));
                }
                Ok(())
            }
            // The prefix is full; the rest of the stream is not looked at.
            BrotliResult::NeedsMoreOutput if prefix < size && out_offset == prefix => Ok(()),
            BrotliResult::NeedsMoreOutput => Err(longer_than_declared(in_offset)),
            BrotliResult::NeedsMoreInput => Err(CodecError::truncated("compressed stream", stream.len() as u64, 1)),
            BrotliResult::ResultFailure => {
                Err(codec_failed("brotli", in_offset, format!("corrupt stream ({:?})", state.error_code)))
            }
        }
    }
}

#[cfg(feature = "zstd")]
mod zstd_impl {
    //! Zstd through the `zstd` crate's bulk API, with reused contexts; a
    //! prefix of a block through its streaming API, which stops at the end of
    //! the zstd block (at most 128 KiB of output) holding the prefix's end.
    use std::io::Cursor;

    use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
    use zstd::zstd_safe::{self, CParameter, DParameter};

    use super::{
        CodecError, CompressorOptions, Encoder, codec_failed, longer_than_declared, shorter_than_declared,
        trailing_bytes,
    };

    /// The largest window zstd frames may use (`ZSTD_WINDOWLOG_MAX` on 64-bit
    /// targets); C++ Riegeli writes up to this.
    const MAX_WINDOW_LOG: u32 = 31;

    fn failed(offset: usize, e: &std::io::Error) -> CodecError {
        codec_failed("zstd", offset, e.to_string())
    }

    pub(super) fn new_encoder(options: &CompressorOptions) -> Result<Encoder, CodecError> {
        let mut encoder = zstd::bulk::Compressor::new(options.level).map_err(|e| failed(0, &e))?;
        // As C++ Riegeli's `ZstdWriter`: no checksum. The content size is
        // written (compressing in one call makes it known), which C++ reads.
        encoder.set_parameter(CParameter::ChecksumFlag(false)).map_err(|e| failed(0, &e))?;
        encoder.set_parameter(CParameter::ContentSizeFlag(true)).map_err(|e| failed(0, &e))?;
        if let Some(window_log) = options.window_log {
            encoder.set_parameter(CParameter::WindowLog(window_log)).map_err(|e| failed(0, &e))?;
        }
        Ok(Encoder::Zstd(Box::new(encoder)))
    }

    pub(super) fn compress(
        encoder: &mut zstd::bulk::Compressor<'static>,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        // With room for the worst case, zstd compresses straight into `out`.
        out.reserve(zstd_safe::compress_bound(data.len()));
        let mut cursor = Cursor::new(&mut *out);
        cursor.set_position(cursor.get_ref().len() as u64);
        encoder.compress_to_buffer(data, &mut cursor).map_err(|e| failed(0, &e))?;
        Ok(())
    }

    /// Whether `stream` is a frame without a content size whose window is
    /// larger than its declared `size`: a streaming context would allocate
    /// that window (as the header alone says, up to 2 GiB) to decompress a
    /// prefix, so the block is decompressed whole into its `size` instead. A
    /// frame with a content size is buffered at most at that size (which
    /// [`check_frame`] compares with `size`); one that does not parse is left
    /// to the streaming context to report.
    pub(super) fn window_beyond(stream: &[u8], size: usize) -> bool {
        const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
        let (Some(magic), Some(&descriptor), Some(&window)) = (stream.get(..4), stream.get(4), stream.get(5)) else {
            return false;
        };
        // The content size's flag (bits 6-7) and the single-segment flag (bit 5, a window of
        // the content size): either means a content size.
        if magic != MAGIC || descriptor & 0xe0 != 0 {
            return false;
        }
        let base = 1u64 << (10 + (window >> 3));
        base + base / 8 * u64::from(window & 7) > size as u64
    }

    /// Checks that `stream` is exactly one frame, and that a content size in
    /// its header agrees with the declared `size`.
    fn check_frame(stream: &[u8], size: usize) -> Result<(), CodecError> {
        let frame_len = zstd_safe::find_frame_compressed_size(stream).map_err(|code| {
            codec_failed("zstd", 0, format!("invalid or truncated frame: {}", zstd_safe::get_error_name(code)))
        })?;
        if frame_len != stream.len() {
            return Err(trailing_bytes(frame_len));
        }
        if let Ok(Some(content_size)) = zstd_safe::get_frame_content_size(stream)
            && content_size != size as u64
        {
            return Err(if content_size > size as u64 { longer_than_declared(0) } else { shorter_than_declared(0) });
        }
        Ok(())
    }

    pub(super) fn decompress(
        context: &mut Option<zstd::bulk::Decompressor<'static>>,
        stream: &[u8],
        size: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        check_frame(stream, size)?;
        let decoder = match context {
            Some(decoder) => decoder,
            None => {
                let mut decoder = zstd::bulk::Decompressor::new().map_err(|e| failed(0, &e))?;
                decoder.set_parameter(DParameter::WindowLogMax(MAX_WINDOW_LOG)).map_err(|e| failed(0, &e))?;
                context.insert(decoder)
            }
        };
        // Decompress into spare capacity of exactly the declared size (or
        // more, if `out` already had it): a longer stream fails with
        // "destination buffer too small" or is caught by the length check.
        let start = out.len();
        out.reserve_exact(size);
        let roomy = out.capacity() - start > size;
        let mut cursor = Cursor::new(&mut *out);
        cursor.set_position(start as u64);
        let mut result = decoder.decompress_to_buffer(stream, &mut cursor);
        if matches!(result, Ok(written) if written == size) {
            return Ok(());
        }
        out.truncate(start);
        if roomy {
            // A stream that is not exactly `size` bytes fails as it does with room
            // for exactly `size`: with more room zstd gets further and may fail
            // otherwise (corruption past the declared size rather than "too small"),
            // and the error would depend on what `out` held before (found by
            // fuzzing: serial and parallel ArrayRecord reads disagreed).
            result = decoder.decompress_to_buffer(stream, &mut Vec::with_capacity(size));
        }
        match result {
            Ok(written) if written < size => Err(shorter_than_declared(stream.len())),
            Ok(_) => Err(longer_than_declared(0)),
            Err(e) if e.to_string().contains("too small") => Err(longer_than_declared(0)),
            Err(e) => Err(failed(0, &e)),
        }
    }

    /// Appends the first `prefix` (< `size`) decompressed bytes of `stream`,
    /// through a streaming context that stops there.
    ///
    /// A damaged stream fails as it would in a new context: a context used
    /// before keeps internal buffers sized by earlier frames, with which zstd
    /// gets further into the same bytes and fails otherwise ("Data corruption
    /// detected" rather than "Destination buffer is too small"; found by
    /// fuzzing: serial and parallel ArrayRecord reads disagreed). So a failure
    /// in a used context is decoded again in a new one, which is kept.
    pub(super) fn decompress_prefix(
        context: &mut Option<zstd::stream::raw::Decoder<'static>>,
        stream: &[u8],
        size: usize,
        prefix: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        check_frame(stream, size)?;
        let start = out.len();
        if start == 0 && out.capacity() < prefix {
            // Nothing to keep: exactly the room wanted (see below).
            *out = Vec::with_capacity(prefix);
        }
        let spare = out.capacity() - start;
        if spare >= prefix && spare - prefix <= prefix / 8 {
            // Room for the prefix and at most an eighth more: decompressed
            // straight into it, not zeroed first (the decoder fills the room
            // it is given, so a little past the prefix, dropped after).
            let result = with_context(context, |decoder| {
                out.truncate(start);
                prefix_into(decoder, stream, &mut OutBuffer::around_pos(&mut *out, start), start + prefix)
            });
            out.truncate(start + prefix);
            if result.is_ok() {
                return Ok(());
            }
            // Decoding further may have met damage past the prefix: what a
            // damaged stream gives must not depend on the room `out` had.
            out.truncate(start);
        }
        // Zeroed first, then decompressed into, in exactly the room of the
        // prefix (with more, the decoder would decompress as far as it goes).
        out.resize(start + prefix, 0);
        let target = out.get_mut(start..).unwrap_or_default();
        let mut retry = false;
        with_context(context, |decoder| {
            if std::mem::replace(&mut retry, true) {
                target.fill(0);
            }
            prefix_into(decoder, stream, &mut OutBuffer::around(&mut *target), prefix)
        })
    }

    /// Runs `decode` with the streaming context, reinitialized, and if that
    /// fails, again with a new context, which is kept: a context used before
    /// keeps internal buffers sized by earlier frames, with which zstd gets
    /// further into the same damaged bytes and fails otherwise ("Data
    /// corruption detected" rather than "Destination buffer is too small";
    /// found by fuzzing: serial and parallel ArrayRecord reads disagreed).
    fn with_context(
        context: &mut Option<zstd::stream::raw::Decoder<'static>>,
        mut decode: impl FnMut(&mut zstd::stream::raw::Decoder<'static>) -> Result<(), CodecError>,
    ) -> Result<(), CodecError> {
        if let Some(decoder) = context.as_mut() {
            decoder.reinit().map_err(|e| failed(0, &e))?;
            if decode(decoder).is_ok() {
                return Ok(());
            }
        }
        let mut decoder = zstd::stream::raw::Decoder::new().map_err(|e| failed(0, &e))?;
        decoder.set_parameter(DParameter::WindowLogMax(MAX_WINDOW_LOG)).map_err(|e| failed(0, &e))?;
        decode(context.insert(decoder))
    }

    /// Decompresses `stream` into `output` until it is at `end` or further.
    fn prefix_into<C: zstd_safe::WriteBuf + ?Sized>(
        decoder: &mut zstd::stream::raw::Decoder<'static>,
        stream: &[u8],
        output: &mut OutBuffer<'_, C>,
        end: usize,
    ) -> Result<(), CodecError> {
        let mut input = InBuffer::around(stream);
        while output.pos() < end {
            let before = (input.pos(), output.pos());
            let hint = decoder.run(&mut input, output).map_err(|e| failed(input.pos(), &e))?;
            if output.pos() < end && (hint == 0 || (input.pos(), output.pos()) == before) {
                // The frame ended, or nothing moved with all the input given.
                return Err(shorter_than_declared(input.pos()));
            }
        }
        Ok(())
    }
}

#[cfg(feature = "snappy")]
mod snappy_impl {
    //! Snappy raw blocks through the pure-Rust `snap` crate.
    use super::{CodecError, codec_failed};

    pub(super) fn compress(encoder: &mut snap::raw::Encoder, data: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        let bound = snap::raw::max_compress_len(data.len());
        if bound == 0 && !data.is_empty() {
            return Err(CodecError::limit(
                "snappy input",
                0,
                "snappy maximum input size",
                data.len() as u64,
                u64::from(u32::MAX),
            ));
        }
        let start = out.len();
        out.resize(start + bound, 0);
        let written = encoder
            .compress(data, out.get_mut(start..).unwrap_or_default())
            .map_err(|e| codec_failed("snappy", 0, e.to_string()))?;
        out.truncate(start + written);
        Ok(())
    }

    pub(super) fn decompress(
        decoder: &mut snap::raw::Decoder,
        stream: &[u8],
        size: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        // The snappy block starts with its own length, which must agree.
        let own_len = snap::raw::decompress_len(stream).map_err(|e| codec_failed("snappy", 0, e.to_string()))?;
        if own_len != size {
            return Err(CodecError::invalid(
                "compressed stream",
                0,
                "snappy block length differs from the declared size",
            ));
        }
        let start = out.len();
        out.resize(start + size, 0);
        // The decoder consumes the whole block and checks that it produces
        // exactly its stated length.
        let written = decoder
            .decompress(stream, out.get_mut(start..).unwrap_or_default())
            .map_err(|e| codec_failed("snappy", 0, e.to_string()))?;
        if written != size {
            return Err(CodecError::invalid("compressed stream", 0, "snappy block decompresses to a different size"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damaged zstd frame declaring 196 bytes (from a fuzzed ArrayRecord footer), after its
    /// varint-coded size.
    #[cfg(feature = "zstd")]
    const DAMAGED_ZSTD_BLOCK: &[u8] = &[
        0xc4, 0x01, 0x28, 0xb5, 0x2f, 0xfd, 0x20, 0xc4, 0xc5, 0x04, 0x00, 0x54, 0x08, 0x0a, 0x69, 0x08, 0x01, 0x10,
        0x0a, 0x18, 0xa0, 0x01, 0x22, 0x60, 0x67, 0x72, 0x6f, 0x75, 0x70, 0x5f, 0x73, 0x69, 0x7a, 0x65, 0x3a, 0x31,
        0x36, 0x2c, 0x74, 0x72, 0x61, 0x6e, 0x73, 0x70, 0x6f, 0x73, 0x65, 0x3a, 0x66, 0x61, 0x6c, 0x73, 0x65, 0x2c,
        0x70, 0x61, 0x64, 0x5f, 0x74, 0x6f, 0x5f, 0x62, 0x6c, 0x6f, 0x63, 0x6b, 0x5f, 0x62, 0x6f, 0x75, 0x6e, 0x64,
        0x61, 0x72, 0x79, 0x7a, 0x73, 0x74, 0x64, 0x3a, 0x33, 0x2c, 0x77, 0x69, 0x6e, 0x64, 0x6f, 0x77, 0x5f, 0x6c,
        0x6f, 0x67, 0x3a, 0x32, 0x30, 0x2c, 0x6d, 0x61, 0x78, 0x5f, 0x70, 0x61, 0x72, 0x61, 0x6c, 0x6c, 0x65, 0x6c,
        0x69, 0x73, 0x6d, 0x3a, 0x31, 0x08, 0x40, 0x10, 0x80, 0x80, 0x01, 0x18, 0x10, 0x08, 0xf0, 0x01, 0xa0, 0x03,
        0xd0, 0x04, 0x80, 0x06, 0xb0, 0x07, 0xe0, 0x08, 0x90, 0x0a, 0xc0, 0x0b, 0xf0, 0x0c, 0x10, 0x80, 0x80, 0x01,
        0x18, 0x10, 0x09, 0x04, 0x04, 0x00, 0x03, 0x0c, 0x30, 0xc0, 0x00, 0x03, 0x0c, 0x70, 0xb0, 0x40, 0xff, 0x09,
        0xff,
    ];

    #[cfg(feature = "zstd")]
    #[test]
    fn a_damaged_prefix_fails_alike_whatever_failed_before() {
        let prefix = |decompressor: &mut Decompressor, wanted| {
            let mut out = Vec::new();
            let result =
                decompressor.decompress_prefix(CompressionType::Zstd, DAMAGED_ZSTD_BLOCK, 1 << 20, wanted, &mut out);
            result.map_err(|e| e.to_string())
        };
        let fresh = prefix(&mut Decompressor::default(), 142);
        assert!(fresh.is_err());
        // Contexts used before: on a failure, on larger valid frames read in part and whole.
        let mut used = Decompressor::default();
        assert!(prefix(&mut used, 151).is_err());
        assert_eq!(prefix(&mut used, 142), fresh);
        let data: Vec<u8> = (0..1u32 << 16).map(|i| (i * 7 / 3 % 251) as u8).collect();
        let mut block = Vec::new();
        Compressor::new(CompressorOptions::zstd()).compress(&data, &mut block).unwrap();
        for wanted in [1000, 1 << 16, 20_000] {
            let mut out = Vec::new();
            used.decompress_prefix(CompressionType::Zstd, &block, 1 << 20, wanted, &mut out).unwrap();
            assert_eq!(out, data[..wanted as usize]);
            assert_eq!(prefix(&mut used, 142), fresh, "after a prefix of {wanted} bytes of a larger frame");
        }
    }

    /// A frame without a content size whose header declares a window of 2 GiB (the data's
    /// own frame, its window descriptor raised): its prefixes are read whole, not through a
    /// streaming context that would allocate the window.
    #[cfg(feature = "zstd")]
    #[test]
    fn a_prefix_of_a_frame_with_a_window_beyond_its_size_is_read_whole() {
        let data: Vec<u8> = (0..1u32 << 16).map(|i| (i * 7 / 3 % 251) as u8).collect();
        let mut compressor = zstd::bulk::Compressor::new(3).unwrap();
        compressor.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false)).unwrap();
        let frame = compressor.compress(&data).unwrap();
        // Magic, then a descriptor without the content size and single-segment flags.
        assert_eq!(frame[4] & 0xe0, 0);
        assert!(!zstd_impl::window_beyond(&frame, data.len()));
        let mut raised = frame.clone();
        raised[5] = 21 << 3;
        assert!(zstd_impl::window_beyond(&raised, data.len()));
        let mut block = Vec::new();
        varint::encode_u64(data.len() as u64, &mut block);
        block.extend_from_slice(&raised);
        for wanted in [0, 1, 1000, (1 << 16) - 1, 1 << 16] {
            let mut out = vec![7];
            Decompressor::new().decompress_prefix(CompressionType::Zstd, &block, 1 << 20, wanted, &mut out).unwrap();
            assert_eq!(out[1..], data[..wanted as usize]);
        }
        // A frame with a content size is buffered at that size whatever its window.
        let mut sized = Vec::new();
        Compressor::new(CompressorOptions::zstd()).compress(&data, &mut sized).unwrap();
        let (_, prefix_len) = varint::decode_u64(&sized).unwrap();
        assert!(!zstd_impl::window_beyond(&sized[prefix_len..], 1));
    }

    #[test]
    fn compression_type_bytes() {
        // From the spec / C++ `constants.h`.
        for (t, b) in [
            (CompressionType::None, 0u8),
            (CompressionType::Brotli, 0x62),
            (CompressionType::Zstd, 0x7a),
            (CompressionType::Snappy, 0x73),
        ] {
            assert_eq!(t.to_byte(), b);
            assert_eq!(CompressionType::from_byte(b), Ok(t));
        }
        let e = CompressionType::from_byte(b'x').unwrap_err();
        assert!(matches!(e.kind(), CodecErrorKind::Invalid { .. }));
    }

    #[test]
    fn option_ranges() {
        assert_eq!(CompressorOptions::default(), CompressorOptions::brotli());
        assert_eq!(CompressorOptions::default().level, 6);
        assert_eq!(CompressorOptions::zstd().level, 3);
        assert_eq!(CompressorOptions::snappy().level, 1);
        assert!(CompressorOptions::brotli().with_level(12).validate().is_err());
        assert!(CompressorOptions::brotli().with_window_log(Some(31)).validate().is_err());
        assert!(CompressorOptions::brotli().with_window_log(Some(30)).validate().is_ok());
        assert!(CompressorOptions::zstd().with_window_log(Some(31)).validate().is_ok());
        assert!(CompressorOptions::zstd().with_window_log(Some(9)).validate().is_err());
        assert!(CompressorOptions::zstd().with_level(-131_072).validate().is_ok());
        assert!(CompressorOptions::snappy().with_window_log(Some(20)).validate().is_err());
        assert!(CompressorOptions::uncompressed().with_window_log(Some(20)).validate().is_err());
        let mut c = Compressor::new(CompressorOptions::brotli().with_level(99));
        let mut out = vec![7];
        assert!(c.compress(b"abc", &mut out).is_err());
        assert_eq!(out, [7]);
    }

    /// A zstd stream longer than declared fails the same way whatever room the
    /// output buffer has (found by fuzzing `array_record_reader`: a reader's
    /// recycled buffer let zstd reach a corruption past the declared size, a
    /// fresh one stopped at the declared size, so serial and parallel reads
    /// reported different errors).
    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_errors_do_not_depend_on_the_room_in_the_output() {
        // Declares 1000 bytes; a byte near the end changed, so that decoding past
        // the declared size fails the checksum.
        let (_, mut block) = checksummed_zstd_block(false, |_| 1000);
        let near_end = block.len() - 10;
        block[near_end] ^= 0x55;
        let mut decompressor = Decompressor::new();
        let fresh = decompressor.decompress(CompressionType::Zstd, &block, 1 << 20, &mut Vec::new()).unwrap_err();
        let mut roomy = Vec::with_capacity(1 << 20);
        let reused = decompressor.decompress(CompressionType::Zstd, &block, 1 << 20, &mut roomy).unwrap_err();
        assert_eq!(fresh, reused);
        assert!(roomy.is_empty());
    }

    /// 300,000 bytes of patterned data, and a zstd block of them (a checksummed frame, with
    /// or without their size in its header) declaring the size `declared` gives.
    #[cfg(feature = "zstd")]
    fn checksummed_zstd_block(content_size: bool, declared: impl Fn(&[u8]) -> u64) -> (Vec<u8>, Vec<u8>) {
        let data: Vec<u8> = (0..300_000u32).map(|i| ((i % 251) ^ (i / 1000)) as u8).collect();
        let mut encoder = zstd::bulk::Compressor::new(3).unwrap();
        encoder.include_contentsize(content_size).unwrap();
        encoder.include_checksum(true).unwrap();
        let mut block = Vec::new();
        crate::varint::encode_u64(declared(&data), &mut block);
        block.extend_from_slice(&encoder.compress(&data).unwrap());
        (data, block)
    }

    /// A zstd prefix is the same bytes, and a damaged stream the same outcome, whatever room
    /// the output had: none (a buffer made for it), about the prefix (decompressed into it
    /// unzeroed, a little further), far more (zeroed, exactly the prefix), after bytes it held.
    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_prefixes_do_not_depend_on_the_room_in_the_output() {
        let (data, block) = checksummed_zstd_block(true, |data| data.len() as u64);
        // The checksum at the end damaged: a prefix never reaches it, a whole frame fails it.
        let mut damaged = block.clone();
        *damaged.last_mut().unwrap() ^= 0x55;
        let mut decompressor = Decompressor::new();
        let head = b"held".as_slice();
        for prefix in [1usize, 1000, 131_072, 200_000, data.len() - 100] {
            for room in [0, prefix, prefix + prefix / 16, prefix + 100, 2 * prefix + 200_000] {
                for held in [&[][..], head] {
                    for (stream, what) in [(&block, "intact"), (&damaged, "damaged checksum")] {
                        let mut out = Vec::with_capacity(held.len() + room);
                        out.extend_from_slice(held);
                        let result = decompressor.decompress_prefix(
                            CompressionType::Zstd,
                            stream,
                            1 << 20,
                            prefix as u64,
                            &mut out,
                        );
                        let case = format!("{what}, prefix {prefix}, room {room}, {} bytes held", held.len());
                        result.unwrap_or_else(|e| panic!("{case}: {e}"));
                        assert!(out[..held.len()] == *held && out[held.len()..] == data[..prefix], "{case}");
                    }
                }
            }
        }
        // And whole, the damaged frame fails.
        assert!(decompressor.decompress(CompressionType::Zstd, &damaged, 1 << 20, &mut Vec::new()).is_err());
    }
}
