//! `RecordWriter`: writing records in chunks, serially or with background encoding.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use riegeli_codec::{ChunkType, CodecError, CompressorOptions, SimpleChunkEncoder, TransposedChunkEncoder};
use riegeli_framing::{
    BLOCK_SIZE, CHUNK_HEADER_SIZE, ChunkHeader, FramedChunk, Piece, distance_without_overhead,
    is_possible_chunk_boundary, remaining_in_block,
};

use crate::error::{Error, ErrorKind, Result};
use crate::options::RecordWriterOptions;
use crate::position::RecordPosition;

/// Bytes gathered before writing to the destination.
const OUT_BUFFER: usize = 64 << 10;
/// Largest number of records a chunk header can count.
const MAX_NUM_RECORDS: u64 = riegeli_framing::MAX_NUM_RECORDS;

/// How data chunks are encoded.
#[derive(Debug, Clone, Copy)]
struct EncoderConfig {
    transpose: bool,
    compressor: CompressorOptions,
    bucket_size: u64,
}

/// How an ArrayRecord writer groups records into chunks, instead of the
/// RecordWriter's `chunk_size` rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grouping {
    /// Records per data chunk (the last chunk may hold fewer).
    pub(crate) group_size: u64,
    /// Bucket size of transposed chunks.
    pub(crate) bucket_size: u64,
    /// Pad to a block boundary after every data chunk.
    pub(crate) pad_to_block_boundary: bool,
}

/// A data chunk as written: where it begins, its decoded size and record count
/// (an ArrayRecord footer entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WrittenChunk {
    pub(crate) begin: u64,
    pub(crate) decoded_data_size: u64,
    pub(crate) num_records: u64,
}

/// Encodes one chunk's records.
enum ChunkEncoder {
    Simple(SimpleChunkEncoder),
    Transposed(Box<TransposedChunkEncoder>),
}

impl ChunkEncoder {
    fn new(config: &EncoderConfig) -> Self {
        if config.transpose {
            Self::Transposed(Box::new(TransposedChunkEncoder::new(config.compressor, config.bucket_size)))
        } else {
            Self::Simple(SimpleChunkEncoder::new(config.compressor))
        }
    }

    fn add_record(&mut self, record: &[u8]) -> std::result::Result<(), CodecError> {
        match self {
            Self::Simple(e) => {
                e.add_record(record);
                Ok(())
            }
            Self::Transposed(e) => e.add_record(record),
        }
    }

    fn num_records(&self) -> u64 {
        match self {
            Self::Simple(e) => e.num_records(),
            Self::Transposed(e) => e.num_records(),
        }
    }

    /// Encodes the chunk (resetting the encoder) into a header and data,
    /// filling `data` (a recycled buffer: its contents are discarded, and an
    /// uncompressed simple chunk may swap it for the encoder's own).
    fn encode(&mut self, mut data: Vec<u8>) -> std::result::Result<EncodedChunk, CodecError> {
        let (chunk_type, num_records, decoded, offset) = match self {
            Self::Simple(e) => {
                let counts = (e.num_records(), e.decoded_data_size());
                let offset = e.encode_reusing(&mut data)?;
                (ChunkType::Simple, counts.0, counts.1, offset)
            }
            Self::Transposed(e) => {
                let counts = (e.num_records(), e.decoded_data_size());
                data.clear();
                e.encode(&mut data)?;
                (ChunkType::Transposed, counts.0, counts.1, 0)
            }
        };
        Ok(EncodedChunk { chunk_type: chunk_type.to_byte(), num_records, decoded_data_size: decoded, data, offset })
    }
}

/// Chunk data ready to frame: `data[offset..]`.
struct EncodedChunk {
    chunk_type: u8,
    num_records: u64,
    decoded_data_size: u64,
    data: Vec<u8>,
    offset: usize,
}

impl EncodedChunk {
    fn data(&self) -> &[u8] {
        self.data.get(self.offset..).unwrap_or_default()
    }
}

/// A chunk to encode in the background: sequence number, full encoder, and a
/// recycled buffer for the chunk data.
type Job = (u64, ChunkEncoder, Vec<u8>);
/// Its result, with the encoder returned for reuse.
type Done = (u64, std::result::Result<EncodedChunk, CodecError>, ChunkEncoder);

/// Background encoding threads (`parallelism > 0`).
struct Pool {
    jobs: Option<Sender<Job>>,
    results: Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
    /// Finished chunks waiting for their turn to be written.
    ready: BTreeMap<u64, std::result::Result<EncodedChunk, CodecError>>,
    spare: Vec<ChunkEncoder>,
    in_flight: usize,
}

impl Pool {
    fn new(threads: usize) -> Self {
        let (jobs, job_rx) = channel::<Job>();
        let (done_tx, results) = channel::<Done>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let threads = (0..threads)
            .map(|_| {
                let job_rx = Arc::clone(&job_rx);
                let done_tx = done_tx.clone();
                std::thread::spawn(move || {
                    loop {
                        let job = match job_rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok((seq, mut encoder, data)) = job else { return };
                        let result = encoder.encode(data);
                        if done_tx.send((seq, result, encoder)).is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        Self { jobs: Some(jobs), results, threads, ready: BTreeMap::new(), spare: Vec::new(), in_flight: 0 }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.jobs = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Writes records to a Riegeli/records file.
///
/// Records are gathered into chunks of about `chunk_size` decoded bytes, each
/// encoded (simple or transposed, compressed), hashed and framed with block
/// headers as it is written. [`close`](Self::close) finishes the file and
/// reports every error; dropping the writer without closing it closes it too
/// but can only ignore errors.
///
/// With `parallelism:N`, chunks are encoded on N background threads while
/// records keep arriving, and written in order; at most about N chunks are in
/// memory. Encoding errors are reported no later than [`flush`](Self::flush)
/// or [`close`](Self::close). [`pos`](Self::pos) and
/// [`last_pos`](Self::last_pos) then wait for earlier chunks to be written.
pub struct RecordWriter<W: Write> {
    dest: Option<W>,
    options: RecordWriterOptions,
    /// File position of the end of everything framed so far (written or in `out`).
    pos: u64,
    out: Vec<u8>,
    encoder: ChunkEncoder,
    desired_chunk_size: u64,
    chunk_size_so_far: u64,
    pool: Option<Pool>,
    /// Sequence number of the open chunk; chunks are written in this order.
    open_seq: u64,
    /// The next sequence number to write.
    next_to_write: u64,
    /// Where recently written chunks began, by sequence number.
    chunk_begins: BTreeMap<u64, u64>,
    /// The last record written: (chunk sequence number, index in chunk).
    last_record: Option<(u64, u64)>,
    failed: bool,
    config: EncoderConfig,
    /// ArrayRecord mode: records per chunk and padding after each chunk.
    grouping: Option<Grouping>,
    /// Chunk data buffers already written, kept to encode later chunks into:
    /// without them every chunk would allocate (and page-fault) a fresh buffer.
    spare_data: Vec<Vec<u8>>,
    /// ArrayRecord mode: every data chunk written, in file order.
    written: Vec<WrittenChunk>,
}

impl<W: Write> std::fmt::Debug for RecordWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordWriter").field("pos", &self.pos).field("options", &self.options).finish_non_exhaustive()
    }
}

impl<W: Write> RecordWriter<W> {
    /// Starts a new file: writes the file signature and, if the options carry
    /// metadata, the metadata chunk.
    pub fn new(dest: W, options: RecordWriterOptions) -> Result<Self> {
        Self::start(dest, 0, options)
    }

    /// Appends to an existing file of `existing_size` bytes, with `dest`
    /// positioned at its end (e.g. a file opened in append mode). Writes no
    /// second signature; honours `initial_padding`. An empty file gets a signature.
    pub fn append(dest: W, existing_size: u64, options: RecordWriterOptions) -> Result<Self> {
        Self::start(dest, existing_size, options)
    }

    /// Starts a new file whose data chunks hold `grouping.group_size` records
    /// each (the ArrayRecord layout), remembering every data chunk written.
    pub(crate) fn grouped(dest: W, options: RecordWriterOptions, grouping: Grouping) -> Result<Self> {
        Self::start_with(dest, 0, options, Some(grouping))
    }

    fn start(dest: W, pos: u64, options: RecordWriterOptions) -> Result<Self> {
        Self::start_with(dest, pos, options, None)
    }

    fn start_with(dest: W, pos: u64, options: RecordWriterOptions, grouping: Option<Grouping>) -> Result<Self> {
        let desired_chunk_size = options.effective_chunk_size().min(MAX_NUM_RECORDS.saturating_mul(8));
        let pool = (options.parallelism() > 0).then(|| Pool::new(options.parallelism()));
        let config = EncoderConfig {
            transpose: options.transpose(),
            compressor: options.compressor_options(),
            bucket_size: grouping.map_or_else(|| options.bucket_size(), |g| g.bucket_size),
        };
        let mut writer = Self {
            dest: Some(dest),
            encoder: ChunkEncoder::new(&config),
            options,
            pos,
            out: Vec::with_capacity(OUT_BUFFER),
            desired_chunk_size,
            chunk_size_so_far: 0,
            pool,
            open_seq: 0,
            next_to_write: 0,
            chunk_begins: BTreeMap::new(),
            last_record: None,
            failed: false,
            config,
            grouping,
            written: Vec::new(),
            spare_data: Vec::new(),
        };
        if pos == 0 {
            writer.write_chunk_now(ChunkType::FileSignature.to_byte(), &[], 0, 0)?;
            if let Some(metadata) = writer.options.metadata().cloned() {
                let serialized = prost::Message::encode_to_vec(&metadata);
                let mut data = Vec::new();
                TransposedChunkEncoder::encode_metadata(&serialized, writer.options.compressor_options(), &mut data)
                    .map_err(|e| Error::codec(writer.pos, e))?;
                writer.write_chunk_now(ChunkType::FileMetadata.to_byte(), &data, 0, serialized.len() as u64)?;
            }
        } else {
            if !is_possible_chunk_boundary(pos) {
                // Inside or right after a block header: fill up to the next block.
                let zeros = remaining_in_block(pos);
                writer.out.resize(writer.out.len() + zeros as usize, 0);
                writer.pos += zeros;
            }
            writer.write_padding(writer.options.initial_padding())?;
        }
        Ok(writer)
    }

    /// The options.
    pub fn options(&self) -> &RecordWriterOptions {
        &self.options
    }

    /// Writes one record.
    pub fn write_record(&mut self, record: &[u8]) -> Result<()> {
        self.check_usable()?;
        if let Some(grouping) = self.grouping {
            self.encoder.add_record(record).map_err(|e| Error::codec(self.pos, e))?;
            self.last_record = Some((self.open_seq, self.encoder.num_records() - 1));
            if self.encoder.num_records() >= grouping.group_size {
                self.close_chunk()?;
            }
            return Ok(());
        }
        let added = (record.len() as u64).saturating_add(8);
        if self.chunk_size_so_far > 0 && self.chunk_size_so_far.saturating_add(added) > self.desired_chunk_size {
            self.close_chunk()?;
        }
        self.chunk_size_so_far = self.chunk_size_so_far.saturating_add(added);
        self.encoder.add_record(record).map_err(|e| Error::codec(self.pos, e))?;
        self.last_record = Some((self.open_seq, self.encoder.num_records() - 1));
        if self.chunk_size_so_far.saturating_add(8) > self.desired_chunk_size {
            // No more records fit: write the chunk now rather than keep it in memory.
            self.close_chunk()?;
        }
        Ok(())
    }

    /// Serializes and writes a protobuf message as one record.
    pub fn write_message(&mut self, message: &impl prost::Message) -> Result<()> {
        let bytes = message.encode_to_vec();
        self.write_record(&bytes)
    }

    /// The position the next record will have.
    ///
    /// With parallel encoding this waits for the chunks being encoded.
    pub fn pos(&mut self) -> Result<RecordPosition> {
        self.drain(0)?;
        RecordPosition::new(self.pos, self.encoder.num_records())
            .ok_or_else(|| Error::invalid(self.pos, "position overflows"))
    }

    /// The position of the last record written, if any.
    ///
    /// With parallel encoding this may wait for its chunk to be written.
    pub fn last_pos(&mut self) -> Result<Option<RecordPosition>> {
        let Some((seq, index)) = self.last_record else { return Ok(None) };
        let begin = if seq == self.open_seq {
            self.drain(0)?;
            self.pos
        } else {
            while self.next_to_write <= seq {
                self.wait_one()?;
            }
            *self.chunk_begins.get(&seq).ok_or(Error::new(ErrorKind::Usage("chunk position forgotten")))?
        };
        Ok(RecordPosition::new(begin, index))
    }

    /// Writes the open chunk, pads to `final_padding`, and flushes the
    /// destination: everything written so far becomes readable.
    pub fn flush(&mut self) -> Result<()> {
        self.check_usable()?;
        self.close_chunk()?;
        self.drain(0)?;
        self.write_padding(self.options.final_padding())?;
        self.flush_out()?;
        self.guard(|w| w.dest.as_mut().map_or(Ok(()), Write::flush).map_err(Error::from))
    }

    /// Finishes the file (open chunk, final padding, flush) and returns the destination.
    pub fn close(mut self) -> Result<W> {
        self.flush()?;
        self.pool = None;
        self.dest.take().ok_or(Error::new(ErrorKind::Usage("writer already closed")))
    }

    fn check_usable(&self) -> Result<()> {
        if self.failed {
            return Err(Error::new(ErrorKind::Usage("the writer failed earlier; nothing more can be written")));
        }
        Ok(())
    }

    /// Runs `f`, marking the writer failed if it fails.
    fn guard<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let result = f(self);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    /// Ends the open chunk: encodes it now, or hands it to the pool.
    fn close_chunk(&mut self) -> Result<()> {
        if self.encoder.num_records() == 0 {
            return Ok(());
        }
        self.chunk_size_so_far = 0;
        let seq = self.open_seq;
        self.open_seq += 1;
        if let Some(pool) = &mut self.pool {
            let fresh = pool.spare.pop().unwrap_or_else(|| ChunkEncoder::new(&self.config));
            let full = std::mem::replace(&mut self.encoder, fresh);
            let data = self.spare_data.pop().unwrap_or_default();
            let sent = pool.jobs.as_ref().is_some_and(|jobs| jobs.send((seq, full, data)).is_ok());
            if !sent {
                self.failed = true;
                return Err(Error::invalid(self.pos, "background encoder threads stopped"));
            }
            pool.in_flight += 1;
            let parallelism = self.options.parallelism();
            return self.drain(parallelism);
        }
        let data = self.spare_data.pop().unwrap_or_default();
        let encoded = self.encoder.encode(data).map_err(|e| Error::codec(self.pos, e));
        let encoded = self.guard(|_| encoded)?;
        self.write_encoded(seq, encoded)
    }

    /// Waits until at most `max_in_flight` chunks are being encoded, writing
    /// finished chunks in order.
    fn drain(&mut self, max_in_flight: usize) -> Result<()> {
        while self.pool.as_ref().is_some_and(|p| p.in_flight > max_in_flight) {
            self.wait_one()?;
        }
        // Also write whatever is already finished.
        while let Some(pool) = &mut self.pool {
            match pool.results.try_recv() {
                Ok(done) => self.accept(done)?,
                Err(_) => break,
            }
        }
        Ok(())
    }

    /// Waits for one background chunk and writes what is ready.
    fn wait_one(&mut self) -> Result<()> {
        let Some(pool) = &mut self.pool else { return Ok(()) };
        if pool.in_flight == 0 {
            return Ok(());
        }
        match pool.results.recv() {
            Ok(done) => self.accept(done),
            Err(_) => {
                self.failed = true;
                Err(Error::invalid(self.pos, "background encoder threads stopped"))
            }
        }
    }

    fn accept(&mut self, (seq, result, encoder): Done) -> Result<()> {
        let Some(pool) = &mut self.pool else { return Ok(()) };
        pool.in_flight -= 1;
        pool.spare.push(encoder);
        pool.ready.insert(seq, result);
        while let Some(result) = self.pool.as_mut().and_then(|p| p.ready.remove(&self.next_to_write)) {
            let seq = self.next_to_write;
            let encoded = result.map_err(|e| Error::codec(self.pos, e));
            let encoded = self.guard(|_| encoded)?;
            self.write_encoded(seq, encoded)?;
        }
        Ok(())
    }

    fn write_encoded(&mut self, seq: u64, chunk: EncodedChunk) -> Result<()> {
        self.chunk_begins.insert(seq, self.pos);
        while self.chunk_begins.len() > 64 {
            self.chunk_begins.pop_first();
        }
        self.next_to_write = seq + 1;
        let begin = self.pos;
        self.write_chunk_now(chunk.chunk_type, chunk.data(), chunk.num_records, chunk.decoded_data_size)?;
        // Keep the buffer for a later chunk: as many as can be in flight at once.
        if self.spare_data.len() <= self.options.parallelism() {
            self.spare_data.push(chunk.data);
        }
        self.after_data_chunk(begin, chunk.num_records, chunk.decoded_data_size)
    }

    /// ArrayRecord mode: remembers a data chunk just written and pads after it if asked.
    fn after_data_chunk(&mut self, begin: u64, num_records: u64, decoded_data_size: u64) -> Result<()> {
        if let Some(grouping) = self.grouping {
            self.written.push(WrittenChunk { begin, decoded_data_size, num_records });
            if grouping.pad_to_block_boundary {
                self.write_padding(BLOCK_SIZE)?;
            }
        }
        Ok(())
    }

    /// Writes the open chunk and waits for every chunk being encoded: all
    /// records given so far are then framed at known positions.
    pub(crate) fn finish_data(&mut self) -> Result<()> {
        self.check_usable()?;
        self.close_chunk()?;
        self.drain(0)
    }

    /// ArrayRecord mode: the data chunks written so far, in file order.
    pub(crate) fn written_chunks(&self) -> &[WrittenChunk] {
        &self.written
    }

    /// The file position after everything framed so far (after
    /// [`finish_data`](Self::finish_data): where the next chunk begins).
    pub(crate) fn framed_pos(&self) -> u64 {
        self.pos
    }

    /// Writes an already encoded data chunk (e.g. copied from another file)
    /// after [`finish_data`](Self::finish_data); in ArrayRecord mode it is
    /// remembered and padded like the chunks the writer encodes.
    pub(crate) fn write_encoded_data_chunk(&mut self, header: &ChunkHeader, data: &[u8]) -> Result<()> {
        self.finish_data()?;
        let begin = self.pos;
        self.write_chunk_with_header(header, data)?;
        self.open_seq += 1;
        self.next_to_write = self.open_seq;
        self.after_data_chunk(begin, header.num_records(), header.decoded_data_size())
    }

    /// Frames and writes a chunk other than a data chunk (ArrayRecord footer,
    /// postscript) at the current position.
    pub(crate) fn write_other_chunk(
        &mut self,
        chunk_type: u8,
        data: &[u8],
        num_records: u64,
        decoded: u64,
    ) -> Result<()> {
        self.check_usable()?;
        self.write_chunk_now(chunk_type, data, num_records, decoded)
    }

    /// Pads with a padding chunk up to the next block boundary (C++
    /// `ChunkWriter::PadToBlockBoundary`).
    pub(crate) fn pad_to_block_boundary(&mut self) -> Result<()> {
        self.check_usable()?;
        self.write_padding(BLOCK_SIZE)
    }

    /// Flushes everything and returns the destination, without closing a
    /// chunk or padding (ArrayRecord's close has done both).
    pub(crate) fn into_dest(mut self) -> Result<W> {
        self.check_usable()?;
        self.flush_out()?;
        self.guard(|w| w.dest.as_mut().map_or(Ok(()), Write::flush).map_err(Error::from))?;
        self.pool = None;
        self.dest.take().ok_or(Error::new(ErrorKind::Usage("writer already closed")))
    }

    /// Marks the writer unusable: dropping it then writes nothing more.
    pub(crate) fn abandon(&mut self) {
        self.failed = true;
    }

    /// Frames and writes one chunk at the current position.
    fn write_chunk_now(&mut self, chunk_type: u8, data: &[u8], num_records: u64, decoded: u64) -> Result<()> {
        let header = ChunkHeader::for_data(chunk_type, data, num_records, decoded);
        let header = self.guard(|_| header.map_err(Error::from))?;
        self.write_chunk_with_header(&header, data)
    }

    /// Frames and writes one chunk with a ready header at the current position.
    fn write_chunk_with_header(&mut self, header: &ChunkHeader, data: &[u8]) -> Result<()> {
        self.guard(|w| {
            let framed = FramedChunk::new(w.pos, header, data)?;
            let end = framed.chunk_end();
            for piece in framed {
                match piece {
                    Piece::Data(bytes) if bytes.len() >= OUT_BUFFER => {
                        w.flush_out()?;
                        if let Some(dest) = w.dest.as_mut() {
                            dest.write_all(bytes)?;
                        }
                    }
                    Piece::Data(bytes) => w.out.extend_from_slice(bytes),
                    Piece::Inline(bytes) => w.out.extend_from_slice(bytes.as_slice()),
                    Piece::Zeros(n) => {
                        let n = usize::try_from(n).map_err(|_| Error::invalid(w.pos, "padding too large"))?;
                        w.out.resize(w.out.len() + n, 0);
                    }
                }
                if w.out.len() >= OUT_BUFFER {
                    w.flush_out()?;
                }
            }
            w.pos = end;
            Ok(())
        })
    }

    fn flush_out(&mut self) -> Result<()> {
        if let Some(dest) = self.dest.as_mut()
            && !self.out.is_empty()
        {
            let result = dest.write_all(&self.out);
            self.out.clear();
            if let Err(e) = result {
                self.failed = true;
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// Writes a padding chunk so that the position becomes a multiple of `padding` (C++ `WritePadding`).
    fn write_padding(&mut self, padding: u64) -> Result<()> {
        let Some(target) = pos_after_padding(self.pos, padding) else {
            return Err(Error::invalid(self.pos, "padding overflows the file position"));
        };
        if target == self.pos {
            return Ok(());
        }
        let length = distance_without_overhead(self.pos, target)
            .ok()
            .and_then(|d| d.checked_sub(CHUNK_HEADER_SIZE))
            .and_then(|d| usize::try_from(d).ok())
            .ok_or_else(|| Error::invalid(self.pos, "padding chunk size"))?;
        let zeros = vec![0u8; length];
        self.write_chunk_now(ChunkType::Padding.to_byte(), &zeros, 0, 0)
    }
}

/// C++ `PosAfterPadding`: the first position after `pos` that is a multiple of
/// `padding`, leaves room for a chunk header, and is a possible chunk boundary.
fn pos_after_padding(pos: u64, padding: u64) -> Option<u64> {
    if padding <= 1 {
        return Some(pos);
    }
    let remainder = pos % padding;
    if remainder == 0 {
        return Some(pos);
    }
    let mut length = padding - remainder;
    while length < CHUNK_HEADER_SIZE {
        length = length.checked_add(padding)?;
    }
    let mut end = pos.checked_add(length)?;
    while !is_possible_chunk_boundary(end) {
        end = end.checked_add(padding)?;
    }
    Some(end)
}

impl<W: Write> Drop for RecordWriter<W> {
    fn drop(&mut self) {
        if self.dest.is_some() && !self.failed {
            // Best effort: errors can only be reported by `close`.
            let _ = self.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_positions() {
        assert_eq!(pos_after_padding(64, 1), Some(64));
        assert_eq!(pos_after_padding(65536, 65536), Some(65536));
        assert_eq!(pos_after_padding(64, 65536), Some(65536));
        // Less than a chunk header before the boundary: go one more period.
        assert_eq!(pos_after_padding(65536 - 10, 65536), Some(131072));
        // Padding 100 from 95: 100 leaves 5 < 40 bytes, so 200.
        assert_eq!(pos_after_padding(95, 100), Some(200));
    }
}
