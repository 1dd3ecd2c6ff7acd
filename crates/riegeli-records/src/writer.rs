//! `RecordWriter`: writing records in chunks, serially or with background encoding.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use riegeli_codec::{ChunkType, CodecError, CompressorOptions, SimpleChunkEncoder, TransposedChunkEncoder};
use riegeli_framing::{
    BLOCK_SIZE, CHUNK_HEADER_SIZE, ChunkHeader, FramedChunk, FramingError, Piece, distance_without_overhead,
    is_possible_chunk_boundary, remaining_in_block,
};

use crate::error::{Error, ErrorKind, Result};
use crate::options::RecordWriterOptions;
use crate::position::RecordPosition;
use crate::write_behind::WriteBehind;

/// Bytes gathered before writing to the destination: a write of 1 MiB costs
/// the kernel ~7% less per byte than one of 64 KiB (uncompressed writes to tmpfs).
const OUT_BUFFER: usize = 1 << 20;
/// Bytes gathered before handing them to the I/O thread of
/// [`RecordWriter::with_io_thread`].
const BEHIND_BUFFER: usize = 256 << 10;
/// Largest number of records a chunk header can count.
const MAX_NUM_RECORDS: u64 = riegeli_framing::MAX_NUM_RECORDS;

/// How data chunks are encoded.
#[derive(Debug, Clone, Copy)]
struct EncoderConfig {
    transpose: bool,
    compressor: CompressorOptions,
    bucket_size: u64,
    /// Transposed chunks are encoded in the background: the caller only gathers their records.
    defer: bool,
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

/// Encodes one chunk's records as they are added (simple chunks gather them;
/// transposed chunks parse them).
enum Immediate {
    Simple(SimpleChunkEncoder),
    Transposed(Box<TransposedChunkEncoder>),
}

impl Immediate {
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

    /// Encodes the chunk (resetting the encoder) into a header and data,
    /// filling `data` (a recycled buffer: its contents are discarded, and an
    /// uncompressed simple chunk may swap it for the encoder's own). Hashing
    /// the data for the header happens here too, so that with parallel
    /// encoding it is the background thread's work.
    fn encode(&mut self, mut data: Vec<u8>) -> Encoded {
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
        let payload = data.get(offset..).unwrap_or_default();
        let header = ChunkHeader::for_data(chunk_type.to_byte(), payload, num_records, decoded)?;
        Ok(EncodedChunk { header, data, offset })
    }
}

/// The encoder of the open chunk.
enum ChunkEncoder {
    Now(Immediate),
    /// A transposed chunk's records, to be parsed and encoded by a background thread.
    Deferred(Deferred),
}

impl ChunkEncoder {
    fn new(config: &EncoderConfig) -> Self {
        if config.transpose && config.defer {
            Self::Deferred(Deferred::default())
        } else {
            Self::Now(Immediate::new(config))
        }
    }

    fn add_record(&mut self, record: &[u8]) -> std::result::Result<(), CodecError> {
        match self {
            Self::Now(e) => e.add_record(record),
            Self::Deferred(d) => {
                d.values.extend_from_slice(record);
                d.ends.push(d.values.len());
                Ok(())
            }
        }
    }

    fn num_records(&self) -> u64 {
        match self {
            Self::Now(Immediate::Simple(e)) => e.num_records(),
            Self::Now(Immediate::Transposed(e)) => e.num_records(),
            Self::Deferred(d) => d.ends.len() as u64,
        }
    }

    fn decoded_data_size(&self) -> u64 {
        match self {
            Self::Now(Immediate::Simple(e)) => e.decoded_data_size(),
            Self::Now(Immediate::Transposed(e)) => e.decoded_data_size(),
            Self::Deferred(d) => d.values.len() as u64,
        }
    }

    /// Encodes the chunk as [`Immediate::encode`] does, resetting the encoder.
    /// A deferred chunk's records are fed to `helper`, the calling thread's
    /// transposed encoder (made on first use, dropped if encoding fails).
    fn encode(&mut self, data: Vec<u8>, helper: &mut Option<Immediate>, config: &EncoderConfig) -> Encoded {
        let deferred = match self {
            Self::Now(e) => return e.encode(data),
            Self::Deferred(deferred) => deferred,
        };
        let encoder = helper.get_or_insert_with(|| Immediate::new(config));
        let mut start = 0;
        let mut result = Ok(());
        for &end in &deferred.ends {
            result = encoder.add_record(deferred.values.get(start..end).unwrap_or_default());
            if result.is_err() {
                break;
            }
            start = end;
        }
        deferred.values.clear();
        deferred.ends.clear();
        let encoded = match result {
            Ok(()) => encoder.encode(data),
            Err(e) => Err(e.into()),
        };
        if encoded.is_err() {
            *helper = None;
        }
        encoded
    }
}

/// The records of a transposed chunk, gathered by the caller and encoded
/// later on a background thread (as C++ `DeferredEncoder`): parsing them as
/// protocol buffers is most of a transposed chunk's work. The limit on
/// records per chunk is checked by the transposed encoder they are fed to.
#[derive(Debug, Default)]
struct Deferred {
    values: Vec<u8>,
    /// Where each record ends in `values`.
    ends: Vec<usize>,
}

/// Why a chunk could not be encoded; its position is added when it is reported.
#[derive(Debug)]
enum EncodeError {
    Codec(CodecError),
    Framing(FramingError),
}

impl From<CodecError> for EncodeError {
    fn from(e: CodecError) -> Self {
        Self::Codec(e)
    }
}

impl From<FramingError> for EncodeError {
    fn from(e: FramingError) -> Self {
        Self::Framing(e)
    }
}

impl EncodeError {
    fn at(self, pos: u64) -> Error {
        match self {
            Self::Codec(e) => Error::codec(pos, e),
            Self::Framing(e) => e.into(),
        }
    }
}

/// A chunk ready to frame: its header and data `data[offset..]`.
struct EncodedChunk {
    header: ChunkHeader,
    data: Vec<u8>,
    offset: usize,
}

impl EncodedChunk {
    fn data(&self) -> &[u8] {
        self.data.get(self.offset..).unwrap_or_default()
    }
}

type Encoded = std::result::Result<EncodedChunk, EncodeError>;

/// Chunks are handed to the background threads in batches of at least this
/// many decoded bytes (or one chunk, if larger): a batch costs two thread
/// hand-offs, which would cost more than encoding a 4 KiB chunk.
const BATCH_BYTES: u64 = 1 << 20;

/// A batch of consecutive chunks to encode in the background: the sequence
/// number of the first, and each chunk's full encoder with a recycled buffer
/// for its data.
type Job = (u64, Vec<(ChunkEncoder, Vec<u8>)>);
/// Its results in order, with the encoders returned for reuse.
type Done = (u64, Vec<(Encoded, ChunkEncoder)>);

/// When the caller encodes a batch itself.
#[derive(Debug, Clone, Copy)]
enum Help {
    Never,
    /// When every thread has a batch.
    WhenBusy,
    /// Every full batch (tests: the caller's share of the work, whatever the timing).
    #[cfg(test)]
    Always,
}

/// Background encoding threads (`parallelism > 0`).
struct Pool {
    jobs: Option<Sender<Job>>,
    results: Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
    /// Finished chunks waiting for their turn to be written, by sequence number.
    ready: BTreeMap<u64, Encoded>,
    spare: Vec<ChunkEncoder>,
    /// Whether the caller encodes a batch itself when the threads are busy:
    /// when the machine has a core left for it besides theirs.
    caller_helps: Help,
    /// The caller's transposed encoder for deferred chunks it encodes itself.
    helper: Option<Immediate>,
    /// Batches being encoded.
    in_flight: usize,
    /// Closed chunks not yet handed over, and their decoded size.
    batch: Vec<(ChunkEncoder, Vec<u8>)>,
    batch_first_seq: u64,
    batch_bytes: u64,
}

impl Pool {
    fn new(threads: usize, config: EncoderConfig) -> Self {
        let spare_core = std::thread::available_parallelism().is_ok_and(|cores| cores.get() > threads);
        let caller_helps = if spare_core { Help::WhenBusy } else { Help::Never };
        let (jobs, job_rx) = channel::<Job>();
        let (done_tx, results) = channel::<Done>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let threads = (0..threads)
            .map(|_| {
                let job_rx = Arc::clone(&job_rx);
                let done_tx = done_tx.clone();
                std::thread::spawn(move || {
                    let mut helper = None;
                    loop {
                        let job = match job_rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok((first_seq, chunks)) = job else { return };
                        let results = chunks
                            .into_iter()
                            .map(|(mut encoder, data)| (encoder.encode(data, &mut helper, &config), encoder))
                            .collect();
                        if done_tx.send((first_seq, results)).is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        Self {
            jobs: Some(jobs),
            results,
            threads,
            ready: BTreeMap::new(),
            spare: Vec::new(),
            caller_helps,
            helper: None,
            in_flight: 0,
            batch: Vec::new(),
            batch_first_seq: 0,
            batch_bytes: 0,
        }
    }

    /// Hands the open batch to the threads; false if they have stopped.
    fn submit(&mut self) -> bool {
        if self.batch.is_empty() {
            return true;
        }
        let chunks = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        let sent = self.jobs.as_ref().is_some_and(|jobs| jobs.send((self.batch_first_seq, chunks)).is_ok());
        if sent {
            self.in_flight += 1;
        }
        sent
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
/// records keep arriving, and written in order. They are handed over in
/// batches of at least 1 MiB of records (a batch of 4 KiB chunks costs one
/// hand-off, not hundreds); at most about N batches, or N chunks if larger,
/// are in memory. When all N threads are busy and the machine has a core to
/// spare (N is below its core count), the caller encodes the next batch
/// itself rather than wait. Transposed chunks are parsed in the background
/// too: the caller only copies their records (as C++'s `DeferredEncoder`
/// does).
/// Encoding errors are reported no later than [`flush`](Self::flush) or
/// [`close`](Self::close). [`pos`](Self::pos) and [`last_pos`](Self::last_pos)
/// then wait for earlier chunks to be written.
///
/// [`with_io_thread`](Self::with_io_thread) moves the destination's writes to
/// a thread of their own as well, so that the caller's thread does not wait
/// for them.
pub struct RecordWriter<W: Write> {
    dest: Option<Dest<W>>,
    /// `out` is written when it holds this many bytes.
    out_limit: usize,
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
    /// Total capacity of `spare_data`.
    spare_bytes: usize,
    /// ArrayRecord mode: every data chunk written, in file order.
    written: Vec<WrittenChunk>,
}

impl<W: Write> std::fmt::Debug for RecordWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordWriter").field("pos", &self.pos).field("options", &self.options).finish_non_exhaustive()
    }
}

impl<W: Write + Send + 'static> RecordWriter<W> {
    /// [`new`](Self::new), writing to `dest` on a thread of its own (as
    /// C++'s writer does with `parallelism`): the calling thread only adds
    /// records, encodes chunks (unless `parallelism` does that in the
    /// background too) and frames them, and the destination's writes, which
    /// for a file are the kernel's copying, happen beside it. Errors of those
    /// writes are reported by a later call, at the latest by
    /// [`flush`](Self::flush) or [`close`](Self::close).
    ///
    /// ```no_run
    /// use riegeli_records::RecordWriter;
    ///
    /// let file = std::fs::File::create("records.riegeli")?;
    /// let mut writer = RecordWriter::with_io_thread(file, "zstd,parallelism:2".parse()?)?;
    /// writer.write_record(b"hello")?;
    /// writer.close()?.sync_all()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_io_thread(dest: W, options: RecordWriterOptions) -> Result<Self> {
        Self::start(Dest::Behind(WriteBehind::new(dest)), 0, options)
    }

    /// [`append`](Self::append), writing to `dest` on a thread of its own
    /// (see [`with_io_thread`](Self::with_io_thread)).
    pub fn append_with_io_thread(dest: W, existing_size: u64, options: RecordWriterOptions) -> Result<Self> {
        Self::start(Dest::Behind(WriteBehind::new(dest)), existing_size, options)
    }

    /// [`grouped`](Self::grouped), writing on a thread of its own.
    pub(crate) fn grouped_with_io_thread(dest: W, options: RecordWriterOptions, grouping: Grouping) -> Result<Self> {
        Self::start_with(Dest::Behind(WriteBehind::new(dest)), 0, options, Some(grouping))
    }
}

impl<W: Write> RecordWriter<W> {
    /// Starts a new file: writes the file signature and, if the options carry
    /// metadata, the metadata chunk.
    pub fn new(dest: W, options: RecordWriterOptions) -> Result<Self> {
        Self::start(Dest::Direct(dest), 0, options)
    }

    /// Appends to an existing file of `existing_size` bytes, with `dest`
    /// positioned at its end (e.g. a file opened in append mode). Writes no
    /// second signature; honours `initial_padding`. An empty file gets a signature.
    pub fn append(dest: W, existing_size: u64, options: RecordWriterOptions) -> Result<Self> {
        Self::start(Dest::Direct(dest), existing_size, options)
    }

    /// Starts a new file whose data chunks hold `grouping.group_size` records
    /// each (the ArrayRecord layout), remembering every data chunk written.
    pub(crate) fn grouped(dest: W, options: RecordWriterOptions, grouping: Grouping) -> Result<Self> {
        Self::start_with(Dest::Direct(dest), 0, options, Some(grouping))
    }

    fn start(dest: Dest<W>, pos: u64, options: RecordWriterOptions) -> Result<Self> {
        Self::start_with(dest, pos, options, None)
    }

    fn start_with(dest: Dest<W>, pos: u64, options: RecordWriterOptions, grouping: Option<Grouping>) -> Result<Self> {
        let out_limit = match dest {
            Dest::Direct(_) => OUT_BUFFER,
            Dest::Behind(_) => BEHIND_BUFFER,
        };
        let desired_chunk_size = options.effective_chunk_size().min(MAX_NUM_RECORDS.saturating_mul(8));
        let config = EncoderConfig {
            transpose: options.transpose(),
            compressor: options.compressor_options(),
            bucket_size: grouping.map_or_else(|| options.bucket_size(), |g| g.bucket_size),
            defer: options.parallelism() > 0,
        };
        let pool = (options.parallelism() > 0).then(|| Pool::new(options.parallelism(), config));
        let mut writer = Self {
            dest: Some(dest),
            out_limit,
            encoder: ChunkEncoder::new(&config),
            options,
            pos,
            out: Vec::with_capacity(out_limit),
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
            spare_bytes: 0,
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
            self.submit()?;
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
        self.guard(|w| w.dest.as_mut().map_or(Ok(()), Dest::flush).map_err(Error::from))
    }

    /// Finishes the file (open chunk, final padding, flush) and returns the destination.
    pub fn close(mut self) -> Result<W> {
        self.flush()?;
        self.take_dest()
    }

    /// Stops the threads and takes the destination back.
    fn take_dest(&mut self) -> Result<W> {
        self.pool = None;
        let dest = self.dest.take().ok_or(Error::new(ErrorKind::Usage("writer already closed")))?;
        self.guard(|_| dest.into_inner().map_err(Error::from))
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

    /// Ends the open chunk: encodes it now, or adds it to the pool's batch.
    fn close_chunk(&mut self) -> Result<()> {
        if self.encoder.num_records() == 0 {
            return Ok(());
        }
        self.chunk_size_so_far = 0;
        let seq = self.open_seq;
        self.open_seq += 1;
        let data = self.take_spare_data();
        if let Some(pool) = &mut self.pool {
            let fresh = pool.spare.pop().unwrap_or_else(|| ChunkEncoder::new(&self.config));
            let full = std::mem::replace(&mut self.encoder, fresh);
            if pool.batch.is_empty() {
                pool.batch_first_seq = seq;
            }
            pool.batch_bytes = pool.batch_bytes.saturating_add(full.decoded_data_size());
            pool.batch.push((full, data));
            if pool.batch_bytes < BATCH_BYTES {
                return Ok(());
            }
            let parallelism = self.options.parallelism();
            let help = match pool.caller_helps {
                Help::Never => false,
                Help::WhenBusy => pool.in_flight >= parallelism,
                #[cfg(test)]
                Help::Always => true,
            };
            if help {
                // The threads are busy: encode this batch here rather than wait for them.
                self.encode_batch_here()?;
            } else {
                self.submit()?;
            }
            return self.drain(parallelism);
        }
        // Serially no chunk is deferred: no helper encoder is needed.
        let encoded = self.encoder.encode(data, &mut None, &self.config).map_err(|e| e.at(self.pos));
        let encoded = self.guard(|_| encoded)?;
        self.write_encoded(seq, encoded)
    }

    /// A recycled buffer for a chunk's data.
    fn take_spare_data(&mut self) -> Vec<u8> {
        let data = self.spare_data.pop().unwrap_or_default();
        self.spare_bytes -= data.capacity();
        data
    }

    /// Hands the open batch of chunks to the background threads.
    fn submit(&mut self) -> Result<()> {
        if self.pool.as_mut().is_some_and(|pool| !pool.submit()) {
            self.failed = true;
            return Err(Error::invalid(self.pos, "background encoder threads stopped"));
        }
        Ok(())
    }

    /// Waits until at most `max_in_flight` batches are being encoded, writing
    /// finished chunks in order. With 0, every closed chunk is written.
    fn drain(&mut self, max_in_flight: usize) -> Result<()> {
        if max_in_flight == 0 {
            self.submit()?;
        }
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

    /// Waits for one background batch and writes what is ready.
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

    /// Encodes the pool's open batch on the calling thread; its chunks are
    /// written when those before them are.
    fn encode_batch_here(&mut self) -> Result<()> {
        let config = self.config;
        let Some(pool) = &mut self.pool else { return Ok(()) };
        let chunks = std::mem::take(&mut pool.batch);
        pool.batch_bytes = 0;
        for (seq, (mut encoder, data)) in (pool.batch_first_seq..).zip(chunks) {
            let result = encoder.encode(data, &mut pool.helper, &config);
            pool.spare.push(encoder);
            pool.ready.insert(seq, result);
        }
        self.write_ready()
    }

    fn accept(&mut self, (first_seq, results): Done) -> Result<()> {
        let Some(pool) = &mut self.pool else { return Ok(()) };
        pool.in_flight -= 1;
        for (seq, (result, encoder)) in (first_seq..).zip(results) {
            pool.spare.push(encoder);
            pool.ready.insert(seq, result);
        }
        self.write_ready()
    }

    /// Writes the finished chunks that are next in order.
    fn write_ready(&mut self) -> Result<()> {
        while let Some(result) = self.pool.as_mut().and_then(|p| p.ready.remove(&self.next_to_write)) {
            let seq = self.next_to_write;
            let encoded = result.map_err(|e| e.at(self.pos));
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
        self.write_chunk_with_header(&chunk.header, chunk.data())?;
        // Keep the buffer for a later chunk, up to about what can be in flight at once.
        let keep = (self.options.parallelism() as u64 + 1).saturating_mul(self.desired_chunk_size.max(BATCH_BYTES));
        if (self.spare_bytes + chunk.data.capacity()) as u64 <= keep {
            self.spare_bytes += chunk.data.capacity();
            self.spare_data.push(chunk.data);
        }
        self.after_data_chunk(begin, chunk.header.num_records(), chunk.header.decoded_data_size())
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
        self.guard(|w| w.dest.as_mut().map_or(Ok(()), Dest::flush).map_err(Error::from))?;
        self.take_dest()
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
                // Data pieces end at block boundaries, so they are smaller than `out_limit`.
                match piece {
                    Piece::Data(bytes) => w.out.extend_from_slice(bytes),
                    Piece::Inline(bytes) => w.out.extend_from_slice(bytes.as_slice()),
                    Piece::Zeros(n) => {
                        let n = usize::try_from(n).map_err(|_| Error::invalid(w.pos, "padding too large"))?;
                        w.out.resize(w.out.len() + n, 0);
                    }
                }
                if w.out.len() >= w.out_limit {
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
            let result = match dest {
                Dest::Direct(dest) => dest.write_all(&self.out),
                Dest::Behind(behind) => {
                    let full = std::mem::take(&mut self.out);
                    behind.write_buffer(full).map(|mut next| {
                        next.reserve(self.out_limit);
                        self.out = next;
                    })
                }
            };
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

/// Where a [`RecordWriter`] writes.
enum Dest<W> {
    /// Writes on the calling thread.
    Direct(W),
    /// Buffers go to a thread of their own.
    Behind(WriteBehind<W>),
}

impl<W: Write> Dest<W> {
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Direct(dest) => dest.flush(),
            Self::Behind(behind) => behind.flush(),
        }
    }

    fn into_inner(self) -> std::io::Result<W> {
        match self {
            Self::Direct(dest) => Ok(dest),
            Self::Behind(behind) => behind.into_inner(),
        }
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

    fn records() -> Vec<Vec<u8>> {
        (0..20_000u32)
            .map(|i| {
                if i % 3 == 0 {
                    // A small protocol buffer message: field 1 varint, field 2 string.
                    let mut m = vec![0x08, (i % 100) as u8, 0x12, 4];
                    m.extend_from_slice(&i.to_le_bytes());
                    m
                } else {
                    format!("record {i} {}", "x".repeat((i % 300) as usize)).into_bytes()
                }
            })
            .collect()
    }

    fn write(records: &[Vec<u8>], options: &str, help: Option<Help>) -> Vec<u8> {
        let mut writer = RecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
        if let (Some(pool), Some(help)) = (writer.pool.as_mut(), help) {
            pool.caller_helps = help;
        }
        for record in records {
            writer.write_record(record).unwrap();
        }
        writer.close().unwrap()
    }

    #[test]
    fn batches_the_caller_encodes_give_the_serial_bytes() {
        let records = records();
        for options in ["uncompressed", "snappy,chunk_size:100k", "transpose,zstd:1,chunk_size:300k"] {
            let serial = write(&records, options, None);
            for help in [Help::Always, Help::Never] {
                let parallel = write(&records, &format!("{options},parallelism:1"), Some(help));
                assert!(parallel == serial, "{options}, {help:?}: {} bytes, serially {}", parallel.len(), serial.len());
            }
        }
    }

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
