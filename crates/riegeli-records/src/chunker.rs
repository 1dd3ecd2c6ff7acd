//! `Chunker`: records in, framed chunks out. It encodes the open chunk
//! (serially, or in batches on the [worker pool](crate::pool) with
//! `parallelism`), writes finished chunks to a [`ChunkSink`] in order, and
//! tells a [`Layout`] about each data chunk written. When a chunk closes is
//! not its business: [`RecordWriter`](crate::RecordWriter) closes chunks by
//! size, [`ArrayRecordWriter`](crate::ArrayRecordWriter) by record count.

use std::io::Write;
use std::sync::Arc;

use riegeli_codec::{ChunkType, CodecError, CompressorOptions, Recycler, SimpleChunkEncoder, TransposedChunkEncoder};
use riegeli_framing::{CHUNK_HEADER_SIZE, ChunkHeader, add_with_overhead, chunk_end};

use crate::error::{EncodeError, Error, ErrorKind, Result};
use crate::pool::{Help, Plug, Plugged, Pool, Worker};
use crate::sink::{ChunkSink, FORKED, encode_error};

/// How data chunks are encoded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EncoderConfig {
    pub(crate) transpose: bool,
    pub(crate) compressor: CompressorOptions,
    pub(crate) bucket_size: u64,
}

/// What a file layout does after each data chunk is written (e.g. remember
/// where it begins, pad after it).
pub(crate) trait Layout {
    /// The data chunk number `seq` (counted from 0 in file order) was framed
    /// at `begin` with `header`.
    fn chunk_written<W: Write>(
        &mut self,
        sink: &mut ChunkSink<W>,
        seq: u64,
        begin: u64,
        header: &ChunkHeader,
    ) -> Result<()>;
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
                let offset = e.encode_reusing(&mut data).map_err(EncodeError::Codec)?;
                (ChunkType::Simple, counts.0, counts.1, offset)
            }
            Self::Transposed(e) => {
                let counts = (e.num_records(), e.decoded_data_size());
                data.clear();
                e.encode(&mut data).map_err(EncodeError::Codec)?;
                (ChunkType::Transposed, counts.0, counts.1, 0)
            }
        };
        let payload = data.get(offset..).unwrap_or_default();
        let header =
            ChunkHeader::for_data(chunk_type.to_byte(), payload, num_records, decoded).map_err(EncodeError::Framing)?;
        Ok(EncodedChunk { header, data, offset })
    }
}

/// The encoder of a chunk.
enum ChunkEncoder {
    Now(Immediate),
    /// A transposed chunk's records, to be parsed and encoded by a pool thread.
    Deferred(Deferred),
}

impl ChunkEncoder {
    fn new(config: &EncoderConfig, defer: bool) -> Self {
        if config.transpose && defer { Self::Deferred(Deferred::default()) } else { Self::Now(Immediate::new(config)) }
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
    /// A deferred chunk's records are fed to `helper`, the encoding thread's
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
            Err(e) => Err(EncodeError::Codec(e)),
        };
        if encoded.is_err() {
            *helper = None;
        }
        encoded
    }
}

/// The records of a transposed chunk, gathered by the caller and encoded
/// later on a pool thread (as C++ `DeferredEncoder`): parsing them as
/// protocol buffers is most of a transposed chunk's work. The limit on
/// records per chunk is checked by the transposed encoder they are fed to.
#[derive(Debug, Default)]
struct Deferred {
    values: Vec<u8>,
    /// Where each record ends in `values`.
    ends: Vec<usize>,
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

/// Chunks are handed to the pool in batches of at least this many decoded
/// bytes (or one chunk, if larger): a batch costs two thread hand-offs, which
/// would cost more than encoding a 4 KiB chunk.
const BATCH_BYTES: u64 = 1 << 20;

/// With parallel encoding, the records of the chunks closed and not yet
/// written stay below this (or are one chunk, if larger): then the caller
/// waits before gathering more. Chunks of up to a third of it are encoded
/// two or more at a time; a chunk of hundreds of MiB (one huge record) is
/// written before the next is gathered, so that memory stays bounded by a
/// few chunks whatever the parallelism.
const MAX_IN_FLIGHT_BYTES: u64 = 256 << 20;

/// What a [`Chunker`] is built with besides its encoding: production uses
/// [`Tuning::default`]; tests vary it to reach what sizes and timing decide
/// otherwise, and to plug in a worker of their own.
pub(crate) struct Tuning {
    /// [`MAX_IN_FLIGHT_BYTES`].
    in_flight_budget: u64,
    /// Whether the pool starts its threads; without them the caller encodes
    /// every batch, as when no thread can be started.
    start_threads: bool,
    /// What the encoding workers run in.
    plug: Plug<Encoding>,
}

impl Default for Tuning {
    fn default() -> Self {
        Self { in_flight_budget: MAX_IN_FLIGHT_BYTES, start_threads: true, plug: Plug::default() }
    }
}

/// A pool thread's state: its transposed encoder for deferred chunks.
struct Encoding {
    helper: Option<Immediate>,
    config: EncoderConfig,
}

impl Worker for Encoding {
    /// Consecutive chunks, each with its full encoder and a recycled buffer for its data.
    type Job = Vec<(ChunkEncoder, Vec<u8>)>;
    /// Their results in order, with the encoders returned for reuse.
    type Output = Vec<(Encoded, ChunkEncoder)>;

    fn run(&mut self, chunks: Self::Job) -> Self::Output {
        chunks
            .into_iter()
            .map(|(mut encoder, data)| (encoder.encode(data, &mut self.helper, &self.config), encoder))
            .collect()
    }
}

/// Parallel encoding: the pool, and the batch being gathered for it.
struct Parallel {
    pool: Pool<Plugged<Encoding>>,
    /// Encoders of chunks written, to reuse.
    spare: Vec<ChunkEncoder>,
    /// Batches encoded at once at most (besides the one the caller may encode).
    parallelism: usize,
    /// Closed chunks not yet handed over, and their decoded size.
    batch: Vec<(ChunkEncoder, Vec<u8>)>,
    batch_bytes: u64,
}

/// Encodes chunks and writes them, in order, to a [`ChunkSink`].
pub(crate) struct Chunker<W: Write, L> {
    pub(crate) sink: ChunkSink<W>,
    pub(crate) layout: L,
    config: EncoderConfig,
    /// The open chunk's encoder.
    encoder: ChunkEncoder,
    parallel: Option<Parallel>,
    /// Sequence number of the open chunk; chunks are written in this order.
    open_seq: u64,
    /// The next sequence number to write.
    next_to_write: u64,
    /// Chunk data buffers already written, kept to encode later chunks into:
    /// without them every chunk would allocate (and page-fault) a fresh buffer.
    /// (Up to about what can be in flight at once.)
    spare_data: Arc<Recycler<Vec<u8>>>,
    /// Closed chunks not yet written (with parallel encoding), and the sum of
    /// their decoded sizes: for [`estimated_end`](Self::estimated_end).
    pending_chunks: u64,
    pending_decoded: u64,
    /// [`MAX_IN_FLIGHT_BYTES`] (smaller in tests: [`Tuning`]).
    in_flight_budget: u64,
    /// Decoded and encoded (`data_size`) bytes of the data chunks this
    /// chunker encoded and wrote: their ratio estimates the open chunk's size.
    written_decoded: u64,
    written_encoded: u64,
}

impl<W: Write, L: Layout> Chunker<W, L> {
    /// Encodes chunks as `config` says, on `parallelism` pool threads (0:
    /// on the calling thread), into `sink`. `chunk_size` is about the decoded
    /// size of a chunk (it bounds the buffers kept for reuse).
    pub(crate) fn new(
        sink: ChunkSink<W>,
        layout: L,
        config: EncoderConfig,
        parallelism: usize,
        chunk_size: u64,
        tuning: Tuning,
    ) -> Self {
        let Tuning { in_flight_budget, start_threads, plug } = tuning;
        let parallel = (parallelism > 0).then(|| {
            // The caller encodes a batch itself when every thread is busy, if
            // the machine has a core left for it besides theirs (with none,
            // that measured slower: three encoders on two cores).
            let spare_core = crate::pool::cores() > parallelism;
            let help = if spare_core { Help::Always } else { Help::WantedOnly };
            let threads = if start_threads { parallelism } else { 0 };
            let factory = move || plug.wrap(Encoding { helper: None, config });
            Parallel {
                pool: Pool::new("riegeli-encode", threads, help, factory),
                spare: Vec::new(),
                parallelism,
                batch: Vec::new(),
                batch_bytes: 0,
            }
        });
        Self {
            sink,
            layout,
            encoder: ChunkEncoder::new(&config, parallelism > 0),
            config,
            parallel,
            open_seq: 0,
            next_to_write: 0,
            spare_data: Recycler::new(
                usize::MAX,
                usize::try_from((parallelism as u64 + 1).saturating_mul(chunk_size.max(BATCH_BYTES)))
                    .unwrap_or(usize::MAX),
            ),
            pending_chunks: 0,
            pending_decoded: 0,
            in_flight_budget,
            written_decoded: 0,
            written_encoded: 0,
        }
    }

    /// Adds a record to the open chunk.
    pub(crate) fn add_record(&mut self, record: &[u8]) -> Result<()> {
        self.sink.check_usable()?;
        self.encoder.add_record(record).map_err(|e| encode_error(self.sink.pos(), EncodeError::Codec(e)))
    }

    /// Records in the open chunk.
    pub(crate) fn num_records(&self) -> u64 {
        self.encoder.num_records()
    }

    /// Sequence number of the open chunk.
    pub(crate) fn open_seq(&self) -> u64 {
        self.open_seq
    }

    /// Ends the open chunk (if it has records): encodes and writes it now,
    /// or adds it to the batch for the pool.
    pub(crate) fn close_chunk(&mut self) -> Result<()> {
        self.sink.check_usable()?;
        if self.encoder.num_records() == 0 {
            return Ok(());
        }
        let seq = self.open_seq;
        self.open_seq += 1;
        let data = self.take_spare_data();
        let Some(parallel) = &mut self.parallel else {
            // Serially no chunk is deferred: no helper encoder is needed.
            let encoded = self.encoder.encode(data, &mut None, &self.config);
            return self.write_encoded(seq, encoded);
        };
        let fresh = parallel.spare.pop().unwrap_or_else(|| ChunkEncoder::new(&self.config, true));
        let full = std::mem::replace(&mut self.encoder, fresh);
        self.pending_chunks += 1;
        self.pending_decoded = self.pending_decoded.saturating_add(full.decoded_data_size());
        parallel.batch_bytes = parallel.batch_bytes.saturating_add(full.decoded_data_size());
        parallel.batch.push((full, data));
        if parallel.batch_bytes < BATCH_BYTES {
            return Ok(());
        }
        self.submit()?;
        let parallelism = self.parallel.as_ref().map_or(0, |p| p.parallelism);
        self.drain(parallelism)
    }

    /// Fails (and so does the sink) in a child forked since the pool
    /// started: the batches its threads were encoding are lost, and the
    /// destination is the parent's (see [`ChunkSink`]).
    fn check_pool(&mut self) -> Result<()> {
        if let Some(parallel) = &mut self.parallel
            && parallel.pool.renew_if_forked()
        {
            self.sink.fail();
            return Err(Error::new(ErrorKind::Usage(FORKED)));
        }
        Ok(())
    }

    /// Hands the open batch to the pool.
    fn submit(&mut self) -> Result<()> {
        self.check_pool()?;
        let Some(parallel) = &mut self.parallel else { return Ok(()) };
        if parallel.batch.is_empty() {
            return Ok(());
        }
        let chunks = std::mem::take(&mut parallel.batch);
        parallel.batch_bytes = 0;
        parallel.pool.submit(chunks);
        Ok(())
    }

    /// Writes the chunks encoded so far, in order, and waits (helping, if
    /// the caller may) until at most `max_in_flight` batches are being
    /// encoded, and until the chunks closed and not written hold at most
    /// [`MAX_IN_FLIGHT_BYTES`] of records (or none is being encoded). With 0,
    /// every closed chunk is written.
    pub(crate) fn drain(&mut self, max_in_flight: usize) -> Result<()> {
        self.check_pool()?;
        if max_in_flight == 0 {
            self.submit()?;
        }
        loop {
            let Some(parallel) = &mut self.parallel else { return Ok(()) };
            if let Some(outcome) = parallel.pool.try_next() {
                let Ok(results) = outcome else {
                    self.sink.fail();
                    return Err(Error::internal("a chunk encoding thread panicked; the writer stops"));
                };
                for (result, encoder) in results {
                    // An encoder keeps its buffers' room: one that held a huge
                    // chunk is dropped rather than kept idle.
                    let decoded = result.as_ref().map_or(0, |chunk| chunk.header.decoded_data_size());
                    if let Some(parallel) = &mut self.parallel
                        && decoded <= self.in_flight_budget / (parallel.parallelism as u64 + 1)
                    {
                        parallel.spare.push(encoder);
                    }
                    if let Ok(chunk) = &result {
                        self.pending_chunks = self.pending_chunks.saturating_sub(1);
                        self.pending_decoded = self.pending_decoded.saturating_sub(chunk.header.decoded_data_size());
                    }
                    self.write_encoded(self.next_to_write, result)?;
                }
                continue;
            }
            let busy = if max_in_flight == 0 { parallel.pool.pending() } else { parallel.pool.in_flight() };
            let over_budget = self.pending_decoded > self.in_flight_budget && parallel.pool.in_flight() > 0;
            if busy <= max_in_flight && !over_budget {
                return Ok(());
            }
            parallel.pool.step();
        }
    }

    /// Writes the open chunk and waits for every chunk being encoded: all
    /// records given so far are then framed at known positions.
    pub(crate) fn finish_data(&mut self) -> Result<()> {
        self.close_chunk()?;
        self.drain(0)
    }

    /// An estimate, without waiting for anything, of where the file would
    /// end if every record given so far were written now: the position
    /// after everything framed, plus the chunks being encoded and the open
    /// chunk, each a chunk header and its records' decoded size scaled by
    /// the ratio of encoded to decoded bytes of the chunks written so far
    /// (before the first: the decoded size, and for the open chunk a byte
    /// per record for the sizes), with the block headers these would meet.
    pub(crate) fn estimated_end(&self) -> u64 {
        let scaled = |decoded: u64| {
            if self.written_decoded == 0 {
                return decoded;
            }
            let scaled = u128::from(decoded) * u128::from(self.written_encoded) / u128::from(self.written_decoded);
            u64::try_from(scaled).unwrap_or(u64::MAX)
        };
        let mut pos = self.sink.pos();
        if self.pending_chunks > 0 {
            let pending =
                self.pending_chunks.saturating_mul(CHUNK_HEADER_SIZE).saturating_add(scaled(self.pending_decoded));
            pos = add_with_overhead(pos, pending).unwrap_or(u64::MAX);
        }
        let num_records = self.encoder.num_records();
        if num_records == 0 {
            return pos;
        }
        let decoded = self.encoder.decoded_data_size();
        let data_size = if self.written_decoded > 0 {
            scaled(decoded)
        } else {
            // Compression type, the sizes' length, a byte per size, the records.
            decoded.saturating_add(num_records).saturating_add(2)
        };
        chunk_end(pos, data_size, num_records).unwrap_or(u64::MAX)
    }

    /// Whether a record of `len` bytes is better written as a chunk of its
    /// own by [`write_single`](Self::write_single): one of simple chunks,
    /// larger than a quarter of the in-flight budget (64 MiB).
    pub(crate) fn writes_alone(&self, len: u64) -> bool {
        !self.config.transpose && len > self.in_flight_budget / 4
    }

    /// Writes a chunk of `record` alone, after every chunk closed before it
    /// (the open chunk must have no records), encoded on the calling thread
    /// straight from `record` (the bytes of `add_record` and `close_chunk`):
    /// a record of hundreds of MiB is then held once, by the caller, rather
    /// than copied into an encoder and held twice while it is encoded and the
    /// caller goes on. Returns the chunk's sequence number.
    pub(crate) fn write_single(&mut self, record: &[u8]) -> Result<u64> {
        self.finish_data()?;
        let seq = self.open_seq;
        self.open_seq += 1;
        let mut data = self.take_spare_data();
        data.clear();
        let ChunkEncoder::Now(Immediate::Simple(encoder)) = &mut self.encoder else {
            return Err(Error::internal("a chunk of one record needs a simple chunk encoder"));
        };
        let encoded = match encoder.encode_single(record, &mut data) {
            Ok(()) => ChunkHeader::for_data(ChunkType::Simple.to_byte(), &data, 1, record.len() as u64)
                .map(|header| EncodedChunk { header, data, offset: 0 })
                .map_err(EncodeError::Framing),
            Err(e) => Err(EncodeError::Codec(e)),
        };
        self.write_encoded(seq, encoded)?;
        Ok(seq)
    }

    /// Writes an already encoded data chunk (e.g. copied from another file)
    /// after every chunk given so far.
    pub(crate) fn write_encoded_chunk(&mut self, header: &ChunkHeader, data: &[u8]) -> Result<()> {
        self.finish_data()?;
        let seq = self.open_seq;
        self.open_seq += 1;
        let begin = self.sink.write_chunk(header, data)?;
        self.next_to_write = self.open_seq;
        self.layout.chunk_written(&mut self.sink, seq, begin, header)
    }

    /// A recycled buffer for a chunk's data.
    fn take_spare_data(&mut self) -> Vec<u8> {
        self.spare_data.take().unwrap_or_default()
    }

    /// Writes chunk `seq` (the next in order), or fails the writer with its error.
    fn write_encoded(&mut self, seq: u64, encoded: Encoded) -> Result<()> {
        let chunk = match encoded {
            Ok(chunk) => chunk,
            Err(e) => {
                self.sink.fail();
                return Err(encode_error(self.sink.pos(), e));
            }
        };
        self.next_to_write = seq + 1;
        let begin = self.sink.write_chunk(&chunk.header, chunk.data())?;
        self.written_decoded = self.written_decoded.saturating_add(chunk.header.decoded_data_size());
        self.written_encoded = self.written_encoded.saturating_add(chunk.header.data_size());
        // Keep the buffer for a later chunk, up to about what can be in flight at once.
        self.spare_data.give(chunk.data);
        self.layout.chunk_written(&mut self.sink, seq, begin, &chunk.header)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    impl Tuning {
        /// Lowers [`MAX_IN_FLIGHT_BYTES`] to `bytes`.
        pub(crate) fn in_flight_budget(self, bytes: u64) -> Self {
            Self { in_flight_budget: bytes, ..self }
        }

        /// Starts no encoding thread: the caller encodes every batch, as
        /// when no thread can be started (the caller's share of the work,
        /// whatever the timing).
        pub(crate) fn without_threads(self) -> Self {
            Self { start_threads: false, ..self }
        }

        /// Encoding workers that count the chunks they encode into `encoded`
        /// and panic (an injected bug) on a batch holding a chunk of
        /// `panic_on` decoded bytes, if given.
        pub(crate) fn faulty(self, panic_on: Option<u64>, encoded: Arc<AtomicU64>) -> Self {
            let plug = Plug::new(move |inner| Box::new(Faulty { inner, panic_on, encoded: Arc::clone(&encoded) }));
            Self { plug, ..self }
        }
    }

    /// See [`Tuning::faulty`].
    struct Faulty {
        inner: Encoding,
        panic_on: Option<u64>,
        encoded: Arc<AtomicU64>,
    }

    impl Worker for Faulty {
        type Job = <Encoding as Worker>::Job;
        type Output = <Encoding as Worker>::Output;

        fn run(&mut self, chunks: Self::Job) -> Self::Output {
            for (encoder, _) in &chunks {
                assert_ne!(Some(encoder.decoded_data_size()), self.panic_on, "an encoder bug (injected by a test)");
            }
            self.encoded.fetch_add(chunks.len() as u64, Ordering::SeqCst);
            self.inner.run(chunks)
        }
    }
}
