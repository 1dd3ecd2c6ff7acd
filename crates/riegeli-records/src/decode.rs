//! Chunk decoding, in one place: every reader (sequential, read-ahead,
//! ArrayRecord, the CLI's inspection through [`Chunk::decode`]) turns a chunk
//! read from the file into records, metadata or a checked signature here.

use bytes::Bytes;
use riegeli_codec::{
    ChunkType, CodecError, DecodeLimits, DecodedRecords, FieldProjection, RecordBuffers, SimpleChunkDecoder,
    TransposedChunkDecoder,
};

use crate::chunk_reader::{Chunk, RawChunk};
use crate::error::{Corruption, Error, Result};
use crate::metadata::RecordsMetadata;
use crate::options::ChunkReadOptions;

/// Decodes chunk data into records, reusing its buffers from chunk to chunk
/// (the buffers of records come back to it when they are dropped). Every
/// reader uses one; inspection tools decode a [`Chunk`] through
/// [`Chunk::decode`].
#[derive(Debug)]
pub(crate) struct ChunkDecoder {
    simple: SimpleChunkDecoder,
    transposed: TransposedChunkDecoder,
    projection: FieldProjection,
    limits: DecodeLimits,
}

impl ChunkDecoder {
    /// A decoder of whole records, within the limits of `options`.
    pub(crate) fn new(options: &ChunkReadOptions) -> Self {
        Self::with_projection(options, FieldProjection::all())
    }

    /// A decoder reading the fields `projection` selects from transposed chunks.
    pub(crate) fn with_projection(options: &ChunkReadOptions, projection: FieldProjection) -> Self {
        Self {
            simple: SimpleChunkDecoder::new(),
            transposed: TransposedChunkDecoder::new(),
            projection,
            limits: options.decode_limits(),
        }
    }

    /// [`with_projection`](Self::with_projection), decoding into (and
    /// sending its records' buffers home to) `buffers`, which other decoders
    /// may share.
    pub(crate) fn with_buffers(
        options: &ChunkReadOptions,
        projection: FieldProjection,
        buffers: &RecordBuffers,
    ) -> Self {
        Self {
            simple: SimpleChunkDecoder::with_buffers(buffers),
            transposed: TransposedChunkDecoder::with_buffers(buffers),
            projection,
            limits: options.decode_limits(),
        }
    }

    /// Reads only the fields `projection` selects from later transposed chunks.
    pub(crate) fn set_field_projection(&mut self, projection: FieldProjection) {
        self.projection = projection;
    }

    /// The records of a chunk, or `None` for chunks without records (signature,
    /// metadata, padding, unknown types without records).
    pub(crate) fn records(&mut self, chunk: &Chunk) -> Result<Option<DecodedRecords>> {
        let raw = chunk.raw();
        match self.decode(raw) {
            Ok(records) => Ok(records),
            Err(e) => Err(Error::codec(raw.begin, e)),
        }
    }

    /// The serialized `RecordsMetadata` of a metadata chunk, checked to parse.
    pub(crate) fn serialized_metadata(&mut self, chunk: &Chunk) -> Result<Bytes> {
        let serialized = self.metadata(chunk.raw())?;
        parse_metadata(serialized.clone(), chunk.begin)?;
        Ok(serialized)
    }

    /// The records of a chunk, or `None` for chunks without records.
    pub(crate) fn decode(&mut self, chunk: &RawChunk) -> std::result::Result<Option<DecodedRecords>, CodecError> {
        self.decode_prefix(chunk, u64::MAX)
    }

    /// [`decode`](Self::decode), but of a simple chunk only the first `wanted`
    /// records (its values decompressed no further than they end); other
    /// chunks are decoded whole.
    fn decode_prefix(
        &mut self,
        chunk: &RawChunk,
        wanted: u64,
    ) -> std::result::Result<Option<DecodedRecords>, CodecError> {
        let header = &chunk.header;
        let data = chunk.data.clone();
        let (n, size) = (header.num_records(), header.decoded_data_size());
        match ChunkType::from_byte(header.chunk_type()) {
            Some(ChunkType::Simple) => self.simple.decode_prefix(data, n, size, &self.limits, wanted).map(Some),
            Some(ChunkType::Transposed) => {
                self.transposed.decode(data, n, size, &self.limits, &self.projection).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// [`decode`](Self::decode), checking the data hash first if `verify_hashes`
    /// and reading did not (a check left to the thread that decodes), with
    /// errors placed at the chunk.
    pub(crate) fn checked_decode(&mut self, chunk: &RawChunk, verify_hashes: bool) -> Result<Option<DecodedRecords>> {
        self.checked_decode_prefix(chunk, verify_hashes, u64::MAX)
    }

    fn checked_decode_prefix(
        &mut self,
        chunk: &RawChunk,
        verify_hashes: bool,
        wanted: u64,
    ) -> Result<Option<DecodedRecords>> {
        if verify_hashes && !chunk.hash_verified {
            riegeli_framing::verify_data_hash(&chunk.header, chunk.begin, &chunk.data)?;
        }
        self.decode_prefix(chunk, wanted).map_err(|e| Error::codec(chunk.begin, e))
    }

    /// The records of a data chunk read through an index (ArrayRecord):
    /// checks the data hash if reading did not, requires records, and checks
    /// their number against the header.
    pub(crate) fn data_records(&mut self, chunk: &RawChunk, verify_hashes: bool) -> Result<DecodedRecords> {
        self.data_records_prefix(chunk, verify_hashes, u64::MAX)
    }

    /// [`data_records`](Self::data_records), but only the first `wanted`
    /// records are needed: of a simple chunk, only those are decoded (its
    /// values decompressed no further than they end); other chunks are
    /// decoded whole. The count checked is that of the records decoded.
    pub(crate) fn data_records_prefix(
        &mut self,
        chunk: &RawChunk,
        verify_hashes: bool,
        wanted: u64,
    ) -> Result<DecodedRecords> {
        let Some(records) = self.checked_decode_prefix(chunk, verify_hashes, wanted)? else {
            let chunk_type = chunk.header.chunk_type();
            return Err(Error::corrupt(chunk.begin, Corruption::UnknownChunkType { chunk_type }));
        };
        let header = chunk.header.num_records();
        let decoded = records.len() as u64;
        // A prefix of a simple chunk holds `wanted` records; the decoder checked
        // that its sizes hold exactly `header`.
        let expected =
            if chunk.header.chunk_type() == ChunkType::Simple.to_byte() { header.min(wanted) } else { header };
        if decoded != expected {
            return Err(Error::corrupt(chunk.begin, Corruption::RecordCount { header, decoded }));
        }
        Ok(records)
    }

    /// The serialized `RecordsMetadata` of a metadata chunk, decoded by a
    /// decoder of its own: this one keeps no codec context for a chunk read
    /// once per file (a reader whose chunks are decoded elsewhere, such as
    /// an Arrow reader's, would hold a zstd context, 96 KB, for nothing).
    pub(crate) fn metadata(&mut self, chunk: &RawChunk) -> Result<Bytes> {
        let h = &chunk.header;
        TransposedChunkDecoder::new()
            .decode_metadata_chunk(chunk.data.clone(), h.num_records(), h.decoded_data_size(), &self.limits)
            .map_err(|e| Error::codec(chunk.begin, e))
    }
}

/// Decoding for inspection tools, on the chunks a [`ChunkReader`](crate::ChunkReader) returns.
impl Chunk {
    /// The chunk's records, or `None` for chunks without records (signature,
    /// metadata, padding, unknown types without records), decoded within the
    /// limits of `options` (for inspection tools: the readers decode on their
    /// own, reusing their buffers).
    ///
    /// ```
    /// use riegeli_records::{ChunkReadOptions, ChunkReader, CompressorOptions, RecordWriter, RecordWriterOptions};
    ///
    /// let mut writer = RecordWriter::new(Vec::new(), RecordWriterOptions { compression: CompressorOptions::zstd(), ..Default::default() })?;
    /// writer.write_record(b"hello")?;
    /// let file = writer.close()?;
    ///
    /// let options = ChunkReadOptions::default();
    /// let mut chunks = ChunkReader::new(&file[..], options.clone(), 0);
    /// let mut records = Vec::new();
    /// while let Some(chunk) = chunks.read_chunk()? {
    ///     if let Some(decoded) = chunk.decode(&options)? {
    ///         records.extend(decoded.iter());
    ///     }
    /// }
    /// assert_eq!(records, [&b"hello"[..]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decode(&self, options: &ChunkReadOptions) -> Result<Option<DecodedRecords>> {
        ChunkDecoder::new(options).records(self)
    }

    /// The serialized `RecordsMetadata` of a metadata chunk, checked to parse
    /// (within the limits of `options`).
    pub fn serialized_metadata(&self, options: &ChunkReadOptions) -> Result<Bytes> {
        ChunkDecoder::new(options).serialized_metadata(self)
    }
}

/// Parses serialized metadata read from the metadata chunk at `pos`.
pub(crate) fn parse_metadata(serialized: Bytes, pos: u64) -> Result<RecordsMetadata> {
    <RecordsMetadata as prost::Message>::decode(serialized)
        .map_err(|e| Error::corrupt(pos, Corruption::Metadata(e.to_string())))
}

/// Checks that the chunk at position 0 is a file signature.
pub(crate) fn check_signature(chunk: &RawChunk) -> Result<()> {
    let h = &chunk.header;
    if ChunkType::from_byte(h.chunk_type()) != Some(ChunkType::FileSignature)
        || h.data_size() != 0
        || h.num_records() != 0
        || h.decoded_data_size() != 0
    {
        return Err(Error::corrupt(chunk.begin, Corruption::MissingSignature));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    /// The decoded sizes of a file's data chunks, in file order.
    pub(crate) fn data_chunk_sizes(file: &[u8]) -> Vec<u64> {
        let mut chunks = crate::ChunkReader::new(file, crate::ChunkReadOptions::default(), 0);
        std::iter::from_fn(|| chunks.read_chunk().unwrap())
            .filter(crate::Chunk::holds_records)
            .map(|chunk| chunk.header.decoded_data_size())
            .collect()
    }
}
