//! Read-ahead for [`RecordReader`](crate::RecordReader) with `parallelism > 0`:
//! raw chunks are read (framing, header and data hash checks) on the calling
//! thread, and data chunks are decoded on persistent background threads while
//! the caller consumes records. A caller that would wait for a chunk decodes
//! one itself: the chunk it wants if no worker has taken it yet, else the last
//! one queued. Results are handed back strictly in file order.
//!
//! The queue holds the results of consecutive `read_chunk` calls, exactly as a
//! serial reader would have made them: reading ahead stops at the first result
//! that is not a chunk (the end of the file, damage, an I/O error), which is
//! queued too and returned in its turn, so nothing is read past damage and the
//! source is then where a serial reader's would be.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use riegeli_codec::{ChunkType, CodecError, CompressionType, DecodedRecords, FieldProjection};

use crate::chunk_reader::{RawChunk, ReadError, read_chunk};
use crate::options::RecordReaderOptions;
use crate::reader::ChunkDecoder;
use crate::source::Source;
use crate::work_queue::WorkQueue;

/// A chunk as the reader gets it: read and hash-checked, and, if its decoding
/// was handed to a background thread, the ticket of that decoding.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) chunk: RawChunk,
    pub(crate) ticket: Option<u64>,
}

impl Fetched {
    /// A chunk to be decoded on the calling thread.
    pub(crate) fn serial(chunk: RawChunk) -> Self {
        Self { chunk, ticket: None }
    }
}

/// One result of `read_chunk`, in file order.
#[derive(Debug)]
enum Item {
    Chunk(Fetched),
    /// The end of the file (`Ok`), or damage or an I/O error; nothing is read after it.
    End(Result<(), ReadError>),
}

/// What a background decoding produced.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The decoder's result; `transposed` tells which decoder made the records.
    Decoded { result: Result<Option<DecodedRecords>, CodecError>, transposed: bool },
    /// The decoder panicked (a bug); the worker carries on with a fresh decoder.
    Panicked,
    /// No result can come: the worker threads are gone.
    Stopped,
}

/// Buffers of records already consumed, going back to a worker's decoder.
#[derive(Debug)]
struct Spare {
    records: DecodedRecords,
    transposed: bool,
}

/// A chunk to decode: ticket, chunk, projection and buffers to reuse.
type Job = (u64, RawChunk, Arc<FieldProjection>, Option<Spare>);
/// A decoded chunk: ticket and outcome.
type Done = (u64, Outcome);

/// A decoder and the projection it is set to.
struct Decoding {
    decoder: ChunkDecoder,
    projection: Arc<FieldProjection>,
}

impl Decoding {
    fn new() -> Self {
        let projection = Arc::new(FieldProjection::all());
        Self { decoder: ChunkDecoder::new((*projection).clone()), projection }
    }

    /// Decodes a job. A panic in the decoder (a bug, never expected) is
    /// reported as such, and the decoder replaced.
    fn run(&mut self, job: Job, options: &RecordReaderOptions) -> Done {
        let (ticket, chunk, wanted, spare) = job;
        if let Some(spare) = spare {
            self.decoder.recycle_as(spare.records, spare.transposed);
        }
        if !Arc::ptr_eq(&self.projection, &wanted) {
            self.decoder.set_projection((*wanted).clone());
            self.projection = wanted;
        }
        let transposed = chunk.header.chunk_type() == ChunkType::Transposed.to_byte();
        let decoder = &mut self.decoder;
        let decode = || {
            #[cfg(test)]
            assert_ne!(chunk.header.decoded_data_size(), tests::PANIC_ON_DECODED_SIZE, "a decoder bug");
            decoder.decode(&chunk, options)
        };
        let outcome = match catch_unwind(AssertUnwindSafe(decode)) {
            Ok(result) => Outcome::Decoded { result, transposed },
            Err(_) => {
                self.decoder = ChunkDecoder::new((*self.projection).clone());
                Outcome::Panicked
            }
        };
        (ticket, outcome)
    }
}

/// The background decoder threads.
struct Pool {
    /// Jobs not yet taken by a worker; the caller takes them back too, rather
    /// than wait for a worker to get to them.
    queue: Arc<WorkQueue<Job>>,
    results: Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
    /// Jobs queued or being decoded by a worker, whose result has not been received.
    in_flight: usize,
    /// The decoder of the jobs the caller takes back from the queue.
    caller: Decoding,
    options: RecordReaderOptions,
    /// Each worker holds a clone while it runs (for tests of thread shutdown).
    #[cfg(test)]
    alive: Arc<()>,
}

impl Pool {
    fn new(threads: usize, options: &RecordReaderOptions) -> std::io::Result<Self> {
        let queue = Arc::new(WorkQueue::new());
        let (done_tx, results) = channel::<Done>();
        #[cfg(test)]
        let alive = Arc::new(());
        let mut pool = Self {
            queue: Arc::clone(&queue),
            results,
            threads: Vec::with_capacity(threads),
            in_flight: 0,
            caller: Decoding::new(),
            options: options.clone(),
            #[cfg(test)]
            alive: Arc::clone(&alive),
        };
        for i in 0..threads {
            let queue = Arc::clone(&queue);
            let done_tx = done_tx.clone();
            let options = options.clone();
            #[cfg(test)]
            let alive = Arc::clone(&alive);
            let thread = std::thread::Builder::new().name(format!("riegeli-decode-{i}")).spawn(move || {
                #[cfg(test)]
                let _alive = alive;
                work(&queue, &done_tx, &options);
            })?;
            // On error, `pool` is dropped: the threads started so far are joined.
            pool.threads.push(thread);
        }
        Ok(pool)
    }

    /// Queues a job for the workers.
    fn submit(&mut self, job: Job) {
        self.queue.push(job);
        self.in_flight += 1;
    }

    /// Takes back the queued job with `ticket`, or else (with `any`) the last
    /// queued one, and decodes it on the calling thread.
    fn decode_queued(&mut self, ticket: u64, any: bool) -> Option<Done> {
        let job = self.queue.take(|job| job.0 == ticket).or_else(|| if any { self.queue.pop_back() } else { None })?;
        self.in_flight -= 1;
        Some(self.caller.run(job, &self.options))
    }

    /// Drops the queued jobs (their results are not wanted).
    fn clear_queue(&mut self) {
        self.in_flight -= self.queue.clear().len();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Workers end after their current job once the queue is closed.
        self.queue.close();
        for thread in self.threads.drain(..) {
            // A worker cannot panic outside `catch_unwind`; if it did, its
            // panic has been reported and there is nothing more to do.
            let _ = thread.join();
        }
    }
}

/// A worker: decodes queued jobs until the pool closes.
fn work(queue: &WorkQueue<Job>, done: &Sender<Done>, options: &RecordReaderOptions) {
    let mut decoding = Decoding::new();
    while let Some(job) = queue.wait_pop() {
        if done.send(decoding.run(job, options)).is_err() {
            return;
        }
    }
}

/// Whether a chunk's decoding goes to a worker: simple and transposed chunks
/// of at least `min_size` decoded bytes (the chunk at 0 is checked
/// as the file signature, never decoded), except uncompressed simple chunks,
/// whose decoding only splits the data (records are slices of it): handing
/// them over would cost more than it saves.
fn worth_a_worker(chunk: &RawChunk, min_size: u64) -> bool {
    if chunk.begin == 0 || chunk.header.decoded_data_size() < min_size {
        return false;
    }
    match ChunkType::from_byte(chunk.header.chunk_type()) {
        Some(ChunkType::Simple) => chunk.data.first().is_some_and(|&byte| byte != CompressionType::None.to_byte()),
        Some(ChunkType::Transposed) => true,
        _ => false,
    }
}

/// Largest data of a chunk without records (padding, unknown types) that
/// reading ahead goes past; this bounds what such chunks hold in the queue.
const MAX_SMALL_CHUNK: usize = 64 << 10;

/// Whether reading ahead stops after this chunk: the caller decodes it and
/// it has records, or it is large.
fn holds_back(fetched: &Fetched) -> bool {
    fetched.ticket.is_none() && (fetched.chunk.header.num_records() > 0 || fetched.chunk.data.len() > MAX_SMALL_CHUNK)
}

/// The read-ahead state of a parallel [`RecordReader`](crate::RecordReader).
pub(crate) struct ReadAhead {
    parallelism: usize,
    /// Consecutive `read_chunk` results not yet taken, in file order.
    queue: VecDeque<Item>,
    /// How many chunks in `queue` have a ticket.
    ticketed: usize,
    /// Started on the first data chunk.
    pool: Option<Pool>,
    next_ticket: u64,
    /// Outcomes received before their turn.
    ready: BTreeMap<u64, Outcome>,
    spare: Vec<Spare>,
    projection: Arc<FieldProjection>,
}

impl std::fmt::Debug for ReadAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadAhead")
            .field("parallelism", &self.parallelism)
            .field("queued", &self.queue.len())
            .field("ticketed", &self.ticketed)
            .finish_non_exhaustive()
    }
}

impl ReadAhead {
    /// Read-ahead decoding on `parallelism` threads (at least one).
    pub(crate) fn new(parallelism: usize, projection: FieldProjection) -> Self {
        Self {
            parallelism: parallelism.max(1),
            queue: VecDeque::new(),
            ticketed: 0,
            pool: None,
            next_ticket: 0,
            ready: BTreeMap::new(),
            spare: Vec::new(),
            projection: Arc::new(projection),
        }
    }

    /// Where the first queued chunk begins, if a chunk is queued. (If a final
    /// item or nothing is queued, the source is where the next read begins.)
    pub(crate) fn front_begin(&self) -> Option<u64> {
        match self.queue.front() {
            Some(Item::Chunk(fetched)) => Some(fetched.chunk.begin),
            _ => None,
        }
    }

    /// Whether nothing is queued.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The next `read_chunk` result, reading ahead and starting the decoding
    /// of data chunks on the workers.
    pub(crate) fn fetch<R: Read>(
        &mut self,
        source: &mut Source<R>,
        options: &RecordReaderOptions,
    ) -> Result<Option<Fetched>, ReadError> {
        if self.queue.is_empty() {
            self.top_up(source, options);
        }
        match self.queue.pop_front() {
            Some(Item::Chunk(fetched)) => {
                if fetched.ticket.is_some() {
                    self.ticketed -= 1;
                }
                if !holds_back(&fetched) {
                    // Keep the workers busy while the caller consumes this chunk.
                    self.top_up(source, options);
                }
                Ok(Some(fetched))
            }
            Some(Item::End(result)) => result.map(|()| None),
            // `top_up` queues at least one item when the queue is empty.
            None => read_chunk(source, options).map(|chunk| chunk.map(Fetched::serial)),
        }
    }

    /// Reads chunks until `parallelism + 1` of them are being decoded, or
    /// the reading has to stop (the end, damage, an I/O error), or a chunk
    /// with records is to be decoded by the caller (then reading ahead would
    /// only hold buffers: it resumes when a chunk goes to a worker again).
    fn top_up<R: Read>(&mut self, source: &mut Source<R>, options: &RecordReaderOptions) {
        // Non-data chunks (padding, unknown types) do not count against the
        // decoding window; this bounds how many of them wait in the queue.
        let max_queued = 4 * (self.parallelism + 1);
        while self.ticketed <= self.parallelism
            && self.queue.len() < max_queued
            && !self.queue.back().is_some_and(|item| match item {
                Item::Chunk(fetched) => holds_back(fetched),
                Item::End(_) => true,
            })
        {
            match read_chunk(source, options) {
                Ok(Some(chunk)) => {
                    let ticket = if worth_a_worker(&chunk, options.parallel_min_chunk_size) {
                        self.dispatch(&chunk, options)
                    } else {
                        Ok(None)
                    };
                    match ticket {
                        Ok(ticket) => {
                            self.ticketed += usize::from(ticket.is_some());
                            self.queue.push_back(Item::Chunk(Fetched { chunk, ticket }));
                        }
                        Err(e) => {
                            // Reported after the chunk, which the caller decodes.
                            self.queue.push_back(Item::Chunk(Fetched::serial(chunk)));
                            self.queue.push_back(Item::End(Err(ReadError::from(e))));
                        }
                    }
                }
                Ok(None) => self.queue.push_back(Item::End(Ok(()))),
                Err(e) => self.queue.push_back(Item::End(Err(e))),
            }
        }
    }

    /// Hands a chunk to the workers, starting them first if needed; `None`
    /// if they cannot take it (then the caller decodes it).
    fn dispatch(&mut self, chunk: &RawChunk, options: &RecordReaderOptions) -> std::io::Result<Option<u64>> {
        if self.pool.is_none() {
            let pool = Pool::new(self.parallelism, options)
                .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start chunk decoder threads: {e}")))?;
            self.pool = Some(pool);
        }
        let Some(pool) = &mut self.pool else { return Ok(None) };
        let ticket = self.next_ticket;
        pool.submit((ticket, chunk.clone(), Arc::clone(&self.projection), self.spare.pop()));
        self.next_ticket += 1;
        Ok(Some(ticket))
    }

    /// Waits for the outcome of `ticket`. Outcomes of earlier tickets still
    /// around were abandoned (their chunks were skipped): they are recycled.
    pub(crate) fn take(&mut self, ticket: u64) -> Outcome {
        while let Some(entry) = self.ready.first_entry() {
            if *entry.key() >= ticket {
                break;
            }
            let outcome = entry.remove();
            self.recycle_outcome(outcome);
        }
        loop {
            if let Some(outcome) = self.ready.remove(&ticket) {
                return outcome;
            }
            let Some(pool) = &mut self.pool else { return Outcome::Stopped };
            if pool.in_flight == 0 {
                return Outcome::Stopped;
            }
            // Rather than wait, decode here: the chunk wanted if no worker has
            // it yet, else a later one, while a worker decodes the one wanted.
            if let Some((done, outcome)) = pool.decode_queued(ticket, true) {
                self.ready.insert(done, outcome);
                continue;
            }
            match pool.results.recv() {
                Ok((done, outcome)) => {
                    pool.in_flight -= 1;
                    if done < ticket {
                        self.recycle_outcome(outcome);
                    } else {
                        self.ready.insert(done, outcome);
                    }
                }
                Err(_) => return Outcome::Stopped,
            }
        }
    }

    fn recycle_outcome(&mut self, outcome: Outcome) {
        if let Outcome::Decoded { result: Ok(Some(records)), transposed } = outcome {
            self.recycle(records, transposed);
        }
    }

    /// Gives consumed records back, to be decoded into again.
    pub(crate) fn recycle(&mut self, records: DecodedRecords, transposed: bool) {
        // Each dispatch takes one back, so a couple suffice.
        if self.spare.len() < 2 {
            self.spare.push(Spare { records, transposed });
        }
    }

    /// Forgets everything queued and waits for the workers to finish what
    /// they are decoding (at most `parallelism + 1` chunks). The threads stay.
    pub(crate) fn discard(&mut self) {
        self.queue.clear();
        self.ticketed = 0;
        let ready = std::mem::take(&mut self.ready);
        for outcome in ready.into_values() {
            self.recycle_outcome(outcome);
        }
        if let Some(pool) = &mut self.pool {
            pool.clear_queue();
        }
        while let Some(pool) = &mut self.pool {
            if pool.in_flight == 0 {
                break;
            }
            match pool.results.recv() {
                Ok((_, outcome)) => {
                    pool.in_flight -= 1;
                    self.recycle_outcome(outcome);
                }
                Err(_) => {
                    pool.in_flight = 0;
                    break;
                }
            }
        }
    }

    /// Decodes later chunks with `projection`. Chunks already handed to the
    /// workers lose their tickets: the caller decodes them.
    pub(crate) fn set_projection(&mut self, projection: FieldProjection) {
        self.projection = Arc::new(projection);
        for item in &mut self.queue {
            if let Item::Chunk(fetched) = item {
                fetched.ticket = None;
            }
        }
        self.ticketed = 0;
    }

    /// The liveness token the workers hold (tests of thread shutdown).
    #[cfg(test)]
    fn alive(&self) -> Option<std::sync::Weak<()>> {
        self.pool.as_ref().map(|pool| Arc::downgrade(&pool.alive))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use riegeli_framing::ChunkHeader;

    use crate::{RecordWriter, RecordWriterOptions};

    /// A chunk header with this decoded size makes a worker panic.
    pub(super) const PANIC_ON_DECODED_SIZE: u64 = 0xdead_beef;

    fn file() -> Vec<u8> {
        file_with("zstd:1,chunk_size:4k")
    }

    fn file_with(options: &str) -> Vec<u8> {
        let options: RecordWriterOptions = options.parse().unwrap();
        let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
        for i in 0..2000u32 {
            writer.write_record(format!("record {i} ").repeat(5).as_bytes()).unwrap();
        }
        writer.close().unwrap()
    }

    #[test]
    fn dropping_joins_the_workers() {
        let file = file();
        let options = RecordReaderOptions::default().set_parallel_min_chunk_size(0);
        let mut source = Source::new(&file[..], 0);
        let mut ahead = ReadAhead::new(3, FieldProjection::all());
        let mut tickets = Vec::new();
        for _ in 0..4 {
            let fetched = ahead.fetch(&mut source, &options).unwrap().unwrap();
            tickets.extend(fetched.ticket);
        }
        assert!(!tickets.is_empty());
        let first = tickets[0];
        assert!(matches!(ahead.take(first), Outcome::Decoded { result: Ok(Some(_)), .. }));
        let alive = ahead.alive().unwrap();
        assert!(alive.upgrade().is_some());
        // Dropped with jobs in flight: every worker has exited when drop returns.
        drop(ahead);
        assert!(alive.upgrade().is_none(), "a decoder thread outlived its reader");
    }

    #[test]
    fn decoding_window_is_bounded() {
        let file = file();
        let options = RecordReaderOptions::default().set_parallel_min_chunk_size(0);
        let mut source = Source::new(&file[..], 0);
        let mut ahead = ReadAhead::new(2, FieldProjection::all());
        let mut fetched = 0;
        while let Some(chunk) = ahead.fetch(&mut source, &options).unwrap() {
            assert!(ahead.ticketed <= 3, "{ahead:?}");
            assert!(ahead.pool.as_ref().is_none_or(|p| p.in_flight <= 4), "{ahead:?}");
            if let Some(ticket) = chunk.ticket {
                assert!(matches!(ahead.take(ticket), Outcome::Decoded { result: Ok(Some(_)), .. }));
            }
            fetched += 1;
        }
        assert!(fetched > 10);
        assert!(ahead.is_empty());
    }

    #[test]
    fn chunks_under_the_size_limit_stay_on_the_calling_thread() {
        // 4 KiB zstd chunks: under the default 64 KiB limit, over a 1 KiB one.
        let file = file_with("zstd:1,chunk_size:4k");
        for (min, dispatched) in [(RecordReaderOptions::default().parallel_min_chunk_size, false), (1 << 10, true)] {
            let options = RecordReaderOptions::default().set_parallel_min_chunk_size(min);
            let mut source = Source::new(&file[..], 0);
            let mut ahead = ReadAhead::new(2, FieldProjection::all());
            let mut tickets = 0;
            while let Some(fetched) = ahead.fetch(&mut source, &options).unwrap() {
                tickets += usize::from(fetched.ticket.is_some());
            }
            assert_eq!(tickets > 0, dispatched, "limit {min}: {tickets} chunks handed over");
            assert_eq!(ahead.pool.is_some(), dispatched, "limit {min}");
        }
    }

    #[test]
    fn uncompressed_simple_chunks_are_not_read_ahead() {
        let file = file_with("uncompressed,chunk_size:4k");
        let options = RecordReaderOptions::default().set_parallel_min_chunk_size(0);
        let mut source = Source::new(&file[..], 0);
        let mut ahead = ReadAhead::new(2, FieldProjection::all());
        let mut with_records = 0;
        while let Some(fetched) = ahead.fetch(&mut source, &options).unwrap() {
            assert!(fetched.ticket.is_none());
            if fetched.chunk.header.num_records() > 0 {
                with_records += 1;
                // Nothing is read past a chunk the caller decodes.
                assert!(ahead.is_empty(), "{ahead:?}");
                assert_eq!(source.pos(), fetched.chunk.end);
            }
        }
        assert!(with_records > 10);
        assert!(ahead.pool.is_none(), "threads started for nothing");
    }

    #[test]
    fn a_panicking_decoder_is_reported_and_the_worker_goes_on() {
        let file = file();
        let options = RecordReaderOptions::default().set_parallel_min_chunk_size(0);
        let mut source = Source::new(&file[..], 0);
        let mut ahead = ReadAhead::new(1, FieldProjection::all());
        let chunk = loop {
            let fetched = ahead.fetch(&mut source, &options).unwrap().unwrap();
            if fetched.ticket.is_some() {
                break fetched.chunk;
            }
        };
        ahead.discard();
        let h = chunk.header;
        let mut poisoned = chunk.clone();
        poisoned.header =
            ChunkHeader::new(h.chunk_type(), h.data_size(), h.data_hash(), h.num_records(), PANIC_ON_DECODED_SIZE)
                .unwrap();
        let bad = ahead.dispatch(&poisoned, &options).unwrap().unwrap();
        let good = ahead.dispatch(&chunk, &options).unwrap().unwrap();
        assert!(matches!(ahead.take(bad), Outcome::Panicked));
        assert!(matches!(ahead.take(good), Outcome::Decoded { result: Ok(Some(_)), .. }));
    }
}
