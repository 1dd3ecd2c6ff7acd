//! Simple chunks with records (`chunk_type` `'r'`): encoder and decoder.
//!
//! Chunk data (spec "Simple chunk with records"):
//! - `compression_type` (byte), for both buffers;
//! - `compressed_sizes_size` (varint64);
//! - `compressed_sizes` (`compressed_sizes_size` bytes): a compressed block
//!   holding one varint64 per record, its size;
//! - `compressed_values` (the rest): a compressed block holding the records
//!   back to back.
//!
//! The chunk header's `num_records` and `decoded_data_size` must match exactly:
//! the sizes decompress to exactly `num_records` varints that add up to exactly
//! `decoded_data_size`, and the values decompress to exactly
//! `decoded_data_size` bytes (C++ `SimpleDecoder` checks the same).

use std::sync::Arc;

use bytes::Bytes;

use crate::{
    compression::{CompressionType, Compressor, CompressorOptions, Decompressor},
    decoded::{Buffers, INLINE_ENDS},
    decoded::{DecodedRecords, RecordBuffers},
    error::CodecError,
    limits::DecodeLimits,
    recycle::{Homing, Recycler},
    varint,
};

/// Errors about the chunk data as a whole are reported under this name, with
/// offsets within the chunk data.
const WHAT: &str = "simple chunk";
/// Errors inside compressed sizes are reported under this name, with offsets
/// within the decompressed sizes.
const WHAT_SIZES: &str = "simple chunk decompressed sizes";

/// The most room [`SimpleChunkEncoder::encode_reusing`] keeps before the records.
const MAX_GAP: usize = 1 << 20;

/// Builds the data of simple chunks from records.
///
/// Records are buffered until [`encode`](Self::encode), which writes the chunk
/// data and leaves the encoder empty for the next chunk, keeping its buffers
/// and compressor.
///
/// # Example
/// ```
/// use bytes::Bytes;
/// use riegeli_codec::{CompressorOptions, DecodeLimits, SimpleChunkDecoder, SimpleChunkEncoder};
///
/// let mut encoder = SimpleChunkEncoder::new(CompressorOptions::uncompressed());
/// encoder.add_record(b"hello");
/// encoder.add_record(b"");
/// let (num_records, decoded_data_size) = (encoder.num_records(), encoder.decoded_data_size());
/// let mut data = Vec::new();
/// encoder.encode(&mut data)?;
/// assert_eq!(data, b"\x00\x02\x05\x00hello");
///
/// let records = SimpleChunkDecoder::new().decode(
///     Bytes::from(data),
///     num_records,
///     decoded_data_size,
///     &DecodeLimits::default(),
/// )?;
/// assert_eq!(records.get_slice(0), Some(&b"hello"[..]));
/// assert_eq!(records.get_slice(1), Some(&b""[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SimpleChunkEncoder {
    compression_type: CompressionType,
    compressor: Compressor,
    /// One varint per record.
    sizes: Vec<u8>,
    /// `gap` bytes, then the records back to back.
    values: Vec<u8>,
    /// Without compression: room kept before the records for the chunk
    /// data's prefix (compression byte, sizes), so that
    /// [`encode_reusing`](Self::encode_reusing) can hand the records over
    /// without copying them. Learnt from the chunks encoded so far.
    gap: usize,
    num_records: u64,
    /// The compressed sizes, before their length is known.
    scratch: Vec<u8>,
}

impl SimpleChunkEncoder {
    /// An empty encoder compressing with `options`.
    ///
    /// Invalid options, or a compression type whose cargo feature is off, make
    /// [`encode`](Self::encode) fail.
    pub fn new(options: CompressorOptions) -> Self {
        Self {
            compression_type: options.compression_type,
            compressor: Compressor::new(options),
            sizes: Vec::new(),
            values: Vec::new(),
            gap: 0,
            num_records: 0,
            scratch: Vec::new(),
        }
    }

    /// Adds a record to the chunk.
    pub fn add_record(&mut self, record: &[u8]) {
        if self.values.len() < self.gap {
            self.values.resize(self.gap, 0);
        }
        varint::encode_u64(record.len() as u64, &mut self.sizes);
        self.values.extend_from_slice(record);
        self.num_records += 1;
    }

    /// The records added so far, back to back.
    fn records(&self) -> &[u8] {
        self.values.get(self.gap..).unwrap_or_default()
    }

    /// The number of records added since the last [`encode`](Self::encode):
    /// the chunk header's `num_records`.
    pub fn num_records(&self) -> u64 {
        self.num_records
    }

    /// The sum of the sizes of the records added since the last
    /// [`encode`](Self::encode): the chunk header's `decoded_data_size`.
    pub fn decoded_data_size(&self) -> u64 {
        self.records().len() as u64
    }

    /// Whether no record was added since the last [`encode`](Self::encode).
    pub fn is_empty(&self) -> bool {
        self.num_records == 0
    }

    /// Drops the records added since the last [`encode`](Self::encode).
    pub fn clear(&mut self) {
        self.sizes.clear();
        self.values.clear();
        self.num_records = 0;
    }

    /// Appends the data of a simple chunk holding the records added so far to
    /// `out`, then empties the encoder for the next chunk (whether encoding
    /// succeeds or fails). Take [`num_records`](Self::num_records) and
    /// [`decoded_data_size`](Self::decoded_data_size) for the chunk header
    /// before calling this.
    ///
    /// For no compression the output is byte-identical to C++ Riegeli's.
    /// On error `out` is left as it was.
    pub fn encode(&mut self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let start = out.len();
        let result = self.encode_impl(out);
        if result.is_err() {
            out.truncate(start);
        }
        self.clear();
        result
    }

    /// [`encode`](Self::encode) into a buffer the encoder may swap with its
    /// own: afterwards the chunk data is `buffer[offset..]`, for the returned
    /// `offset`; the buffer's previous contents are discarded.
    ///
    /// Without compression, the records are then not copied again: the data
    /// is the encoder's own buffer, in which room was kept for the prefix
    /// before the records (learnt from earlier chunks; when the prefix does
    /// not fit, the data is copied as by `encode`), and `buffer`'s old
    /// allocation holds the next chunk's records. The bytes are those of
    /// `encode`.
    pub fn encode_reusing(&mut self, buffer: &mut Vec<u8>) -> Result<usize, CodecError> {
        let mut prefix = [0u8; varint::MAX_VARINT64_LEN];
        let prefix_len = varint::encode_u64_to_array(self.sizes.len() as u64, &mut prefix);
        let head = 1 + prefix_len + self.sizes.len();
        let uncompressed = self.compression_type == CompressionType::None;
        let offset = if uncompressed && self.num_records > 0 && head <= self.gap {
            let offset = self.gap - head;
            if let Some(out) = self.values.get_mut(offset..self.gap) {
                let (compression, rest) = out.split_at_mut(1);
                let (len, sizes) = rest.split_at_mut(prefix_len);
                compression.fill(CompressionType::None.to_byte());
                len.copy_from_slice(prefix.get(..prefix_len).unwrap_or_default());
                sizes.copy_from_slice(&self.sizes);
            }
            std::mem::swap(buffer, &mut self.values);
            self.clear();
            offset
        } else {
            buffer.clear();
            self.encode(buffer)?;
            0
        };
        if uncompressed {
            // Room for this chunk's prefix and a quarter more, within reason.
            self.gap = self.gap.max(head.saturating_add(head / 4)).min(MAX_GAP);
        }
        Ok(offset)
    }

    /// Appends the data of a simple chunk holding `record` alone to `out`,
    /// as [`add_record`](Self::add_record) then [`encode`](Self::encode)
    /// would (the same bytes), without copying the record into the encoder:
    /// for a record as large as a chunk, which is then held once. Records
    /// added and not encoded stay for the next `encode`. On error `out` is
    /// left as it was.
    pub fn encode_single(&mut self, record: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        let mut size = [0u8; varint::MAX_VARINT64_LEN];
        let size_len = varint::encode_u64_to_array(record.len() as u64, &mut size);
        let start = out.len();
        let result = encode_data(
            self.compression_type,
            &mut self.compressor,
            &mut self.scratch,
            size.get(..size_len).unwrap_or_default(),
            record,
            out,
        );
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn encode_impl(&mut self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let records = self.values.get(self.gap..).unwrap_or_default();
        encode_data(self.compression_type, &mut self.compressor, &mut self.scratch, &self.sizes, records, out)
    }
}

/// Appends simple chunk data to `out`: the compression type, the (compressed)
/// `sizes` with their length, and the (compressed) `records`.
fn encode_data(
    compression_type: CompressionType,
    compressor: &mut Compressor,
    scratch: &mut Vec<u8>,
    sizes: &[u8],
    records: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    out.push(compression_type.to_byte());
    if compression_type == CompressionType::None {
        out.reserve(varint::MAX_VARINT64_LEN + sizes.len() + records.len());
        varint::encode_u64(sizes.len() as u64, out);
        out.extend_from_slice(sizes);
        out.extend_from_slice(records);
        return Ok(());
    }
    scratch.clear();
    compressor.compress(sizes, scratch)?;
    varint::encode_u64(scratch.len() as u64, out);
    out.extend_from_slice(scratch);
    compressor.compress(records, out)
}

/// Decodes the data of simple chunks into [`DecodedRecords`].
///
/// Keeps its decompressor and scratch buffers from chunk to chunk; the
/// buffers of decoded records come back to it when the records are dropped
/// (see [`Recycler`]), to decode later chunks into.
#[derive(Debug, Default)]
pub struct SimpleChunkDecoder {
    decompressor: Decompressor,
    /// Decompressed sizes.
    sizes: Vec<u8>,
    /// Buffers of record ends and of decompressed values, back from records dropped.
    buffers: Arc<Recycler<Buffers>>,
    /// Where the ends of an uncompressed chunk of a few records are parsed,
    /// to be held inline by its records (see [`DecodedRecords`]).
    few: Buffers,
}

impl SimpleChunkDecoder {
    /// A decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder whose records' buffers go to `buffers` when dropped, and
    /// which decodes into buffers taken from there (see [`RecordBuffers`]).
    pub fn with_buffers(buffers: &RecordBuffers) -> Self {
        Self { buffers: Arc::clone(&buffers.0), ..Self::default() }
    }

    /// Decodes the data of a simple chunk whose header states `num_records`
    /// and `decoded_data_size`.
    ///
    /// Both are checked against `limits` before anything is allocated, and
    /// against what the data holds. Uncompressed records are slices of `data`
    /// (no copy); compressed values are decompressed into one buffer which the
    /// records are slices of.
    ///
    /// Errors name what is wrong and where: `what` is `"simple chunk"` with an
    /// offset within `data`, or `"simple chunk decompressed sizes"` with an
    /// offset within the decompressed sizes.
    pub fn decode(
        &mut self,
        data: Bytes,
        num_records: u64,
        decoded_data_size: u64,
        limits: &DecodeLimits,
    ) -> Result<DecodedRecords, CodecError> {
        self.decode_prefix(data, num_records, decoded_data_size, limits, u64::MAX)
    }

    /// [`decode`](Self::decode), but only the first `wanted` records (all of
    /// them if the chunk has fewer): the sizes are decoded and checked as by
    /// `decode`, and the values are decompressed only as far as those records
    /// end (see [`Decompressor::decompress_prefix`]). Reading one record from
    /// the middle of a zstd chunk of many zstd blocks (1 MiB, say) costs about
    /// half of decoding it all.
    pub fn decode_prefix(
        &mut self,
        data: Bytes,
        num_records: u64,
        decoded_data_size: u64,
        limits: &DecodeLimits,
        wanted: u64,
    ) -> Result<DecodedRecords, CodecError> {
        limits.check_chunk(WHAT, num_records, decoded_data_size)?;
        let (Ok(num_records), Ok(decoded_data_size)) =
            (usize::try_from(num_records), usize::try_from(decoded_data_size))
        else {
            return Err(CodecError::limit(
                WHAT,
                0,
                "address space",
                num_records.max(decoded_data_size),
                usize::MAX as u64,
            ));
        };

        let wanted = usize::try_from(wanted).unwrap_or(usize::MAX).min(num_records);
        let inconsistent = || CodecError::invalid(WHAT, 0, "inconsistent record ends");
        if num_records <= INLINE_ENDS && data.first() == Some(&CompressionType::None.to_byte()) {
            // Records sliced from `data`, their ends held by the records: no
            // buffer to take or to send home.
            let mut few = std::mem::take(&mut self.few);
            few.ends.clear();
            let decoded = self.decode_impl(&data, num_records, decoded_data_size, limits, wanted, &mut few);
            let records = decoded.and_then(|values| {
                let values = values.ok_or_else(inconsistent)?;
                DecodedRecords::inline(values, &few.ends).ok_or_else(inconsistent)
            });
            self.few = few;
            return records;
        }
        let mut buffers = self.buffers.take().unwrap_or_default();
        buffers.ends.clear();
        buffers.values.clear();
        match self.decode_impl(&data, num_records, decoded_data_size, limits, wanted, &mut buffers) {
            Ok(values) => {
                DecodedRecords::decoded(Homing::new(buffers, &self.buffers), values, 0).ok_or_else(inconsistent)
            }
            Err(e) => {
                self.buffers.give(buffers);
                Err(e)
            }
        }
    }

    /// Fills `buffers.ends` with the ends of the first `wanted` (at most
    /// `num_records`) records and returns their values: a slice of `data`,
    /// or `None` for values decompressed into `buffers.values`.
    fn decode_impl(
        &mut self,
        data: &Bytes,
        num_records: usize,
        decoded_data_size: usize,
        limits: &DecodeLimits,
        wanted: usize,
        buffers: &mut Buffers,
    ) -> Result<Option<Bytes>, CodecError> {
        let ends = &mut buffers.ends;
        let Some((&type_byte, rest)) = data.split_first() else {
            return Err(CodecError::truncated(WHAT, 0, 2));
        };
        let compression_type = CompressionType::from_byte(type_byte).map_err(|e| e.within(WHAT, 0))?;
        let (sizes_size, varint_len) = varint::decode_u64(rest).map_err(|e| e.within(WHAT, 1))?;
        let sizes_start = 1 + varint_len;
        let available = data.len() - sizes_start;
        let sizes_end = match usize::try_from(sizes_size) {
            Ok(size) if size <= available => sizes_start + size,
            _ => {
                return Err(CodecError::truncated(WHAT, data.len() as u64, sizes_size - available as u64));
            }
        };
        let sizes_block = data.get(sizes_start..sizes_end).unwrap_or_default();
        let values_block = data.get(sizes_end..).unwrap_or_default();

        if compression_type == CompressionType::None {
            // Every varint takes at least one byte.
            if num_records > sizes_block.len() {
                return Err(CodecError::invalid(WHAT, sizes_start as u64, "sizes too short for num_records varints"));
            }
            ends.reserve(num_records);
            parse_sizes(sizes_block, num_records, decoded_data_size, ends)
                .map_err(|e| e.within(WHAT, sizes_start as u64))?;
            return match values_block.len().cmp(&decoded_data_size) {
                std::cmp::Ordering::Less => {
                    Err(CodecError::truncated(WHAT, data.len() as u64, (decoded_data_size - values_block.len()) as u64))
                }
                std::cmp::Ordering::Greater => Err(CodecError::invalid(
                    WHAT,
                    (sizes_end + decoded_data_size) as u64,
                    "bytes after decoded_data_size bytes of values",
                )),
                // Zero-copy: the records are slices of `data`.
                std::cmp::Ordering::Equal => Ok(Some(data.slice(sizes_end..sizes_end + keep_prefix(ends, wanted)))),
            };
        }

        self.decompress_sizes(compression_type, sizes_block, sizes_start, num_records, limits)?;
        // `num_records` is at most the decompressed sizes' length now.
        ends.reserve(num_records);
        parse_sizes(&self.sizes, num_records, decoded_data_size, ends)?;

        let (declared, _) = Decompressor::declared_size(compression_type, values_block)
            .map_err(|e| e.within(WHAT, sizes_end as u64))?;
        if declared != decoded_data_size as u64 {
            return Err(CodecError::invalid(
                WHAT,
                sizes_end as u64,
                "decompressed size of values differs from decoded_data_size",
            ));
        }
        let prefix = keep_prefix(ends, wanted) as u64;
        self.decompressor
            .decompress_prefix(compression_type, values_block, declared, prefix, &mut buffers.values)
            .map_err(|e| e.within(WHAT, sizes_end as u64))?;
        Ok(None)
    }

    /// Decompresses the sizes into `self.sizes`, after checking that their
    /// declared size can hold exactly `num_records` varints.
    fn decompress_sizes(
        &mut self,
        compression_type: CompressionType,
        block: &[u8],
        block_start: usize,
        num_records: usize,
        limits: &DecodeLimits,
    ) -> Result<(), CodecError> {
        let (declared, _) =
            Decompressor::declared_size(compression_type, block).map_err(|e| e.within(WHAT, block_start as u64))?;
        let min = num_records as u64;
        let max = min.saturating_mul(varint::MAX_VARINT64_LEN as u64);
        if declared < min {
            return Err(CodecError::invalid(
                WHAT,
                block_start as u64,
                "decompressed sizes too short for num_records varints",
            ));
        }
        if declared > max {
            return Err(CodecError::invalid(
                WHAT,
                block_start as u64,
                "decompressed sizes too long for num_records varints",
            ));
        }
        self.sizes.clear();
        self.decompressor
            .decompress(compression_type, block, limits.max_decoded_size, &mut self.sizes)
            .map_err(|e| e.within(WHAT, block_start as u64))
    }
}

/// Keeps the ends of the first `wanted` records and returns where the last
/// of them ends (0 for none).
fn keep_prefix(ends: &mut Vec<usize>, wanted: usize) -> usize {
    ends.truncate(wanted);
    ends.last().copied().unwrap_or(0)
}

/// Reads `num_records` record sizes from `sizes` into `ends` (as end offsets),
/// requiring that they add up to `decoded_data_size` and fill `sizes` exactly.
/// Offsets in errors are within `sizes` (`what` is
/// `"simple chunk decompressed sizes"`).
fn parse_sizes(
    sizes: &[u8],
    num_records: usize,
    decoded_data_size: usize,
    ends: &mut Vec<usize>,
) -> Result<(), CodecError> {
    let mut pos = 0;
    let mut end = 0usize;
    for _ in 0..num_records {
        let rest = sizes.get(pos..).unwrap_or_default();
        let (size, len) = match varint::decode_u64(rest) {
            Ok(decoded) => decoded,
            Err(_) if rest.is_empty() => {
                return Err(CodecError::invalid(WHAT_SIZES, pos as u64, "sizes hold fewer than num_records varints"));
            }
            Err(e) => return Err(e.within(WHAT_SIZES, pos as u64)),
        };
        match usize::try_from(size) {
            Ok(size) if size <= decoded_data_size - end => end += size,
            _ => {
                return Err(CodecError::invalid(
                    WHAT_SIZES,
                    pos as u64,
                    "record sizes add up to more than decoded_data_size",
                ));
            }
        }
        pos += len;
        ends.push(end);
    }
    if pos != sizes.len() {
        return Err(CodecError::invalid(WHAT_SIZES, pos as u64, "sizes hold more than num_records varints"));
    }
    if end != decoded_data_size {
        return Err(CodecError::invalid(WHAT_SIZES, pos as u64, "record sizes add up to less than decoded_data_size"));
    }
    Ok(())
}
