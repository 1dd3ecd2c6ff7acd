//! The decode stream: the one way chunks get decoded on the worker pool.
//!
//! Every reader that decodes on threads (the read-ahead of [`RecordReader`]
//! and [`ChunkReader`], the batches and the sequential read-ahead of
//! [`ArrayRecordReader`]) hands its chunks to a [`DecodeStream`] in the order
//! it wants them back, in jobs of one or more [`Piece`]s, and takes the
//! outcomes back in that order. The stream owns the pool, its threads and
//! their decoders, and the tickets the pool hands out; nothing outside it
//! sees one.
//!
//! Invariants:
//! - **Order**: outcomes come back in submission order, one per job, with one
//!   [`Decoded`] per piece (a job stops at its first failed piece).
//! - **Hash checks**: a chunk read by a scan comes unchecked and is checked
//!   here before it is decoded ([`Decoded::hash`]); a chunk read through an
//!   index is checked against its entry where it is read, and its data hash
//!   where it is decoded, if the options ask for it.
//! - **Panics**: a piece whose decoding panics (a bug) makes its job's outcome
//!   [`Panicked`]; the thread's decoder is rebuilt and the stream goes on.
//!   Readers report it as an internal error, never as corruption.
//! - **Buffers**: records are decoded into buffers of the worker's decoder,
//!   which go back to that decoder when the records are dropped, on whatever
//!   thread (see `riegeli_codec::Recycler`).
//! - **Forks**: in a child forked since the pool started, the outcomes of the
//!   jobs in flight are lost with the parent's threads: [`next`](DecodeStream::next)
//!   says so (`None`), and the reader decodes those chunks itself.
//!
//! [`RecordReader`]: crate::RecordReader
//! [`ChunkReader`]: crate::ChunkReader
//! [`ArrayRecordReader`]: crate::ArrayRecordReader

use std::collections::VecDeque;
use std::sync::Arc;

use riegeli_codec::{DecodedRecords, FieldProjection, RecordBuffers};
use smallvec::SmallVec;

use crate::chunk_reader::{Damage, LazyChunk, RawChunk, verify_hash};
use crate::decode::ChunkDecoder;
use crate::error::{Error, Result};
use crate::indexed::{ChunkEntry, Reading, read_entry};
use crate::options::ChunkReadOptions;
use crate::pool::{Help, Panicked, Plug, Plugged, Pool, Worker};
use crate::positional::{AtCursor, SharedFile};
use crate::source::Source;

/// One chunk of a job, and how it gets to the thread that decodes it.
#[derive(Debug)]
pub(crate) enum Piece {
    /// Read by a scan, its data hash not checked yet: checked, then decoded
    /// whole (records, or none for chunks without records).
    Scanned(RawChunk),
    /// Read through an index by the caller, its data not gathered yet:
    /// decoded as far as its first `wanted` records.
    Read(LazyChunk, u64),
    /// Read through an index by the thread that decodes it, from the shared
    /// file; decoded as far as its first `wanted` records.
    At(ChunkEntry, u64),
}

impl Piece {
    /// The chunk's bytes in the file.
    pub(crate) fn raw_bytes(&self) -> u64 {
        match self {
            Self::Scanned(chunk) => chunk.end - chunk.begin,
            Self::Read(chunk, _) => chunk.end() - chunk.begin(),
            Self::At(entry, _) => entry.raw_bytes(),
        }
    }
}

/// A decoded piece: its hash check (a scanned chunk whose hash fails is not
/// decoded) and the decoder's result. A piece read through an index yields
/// its records (`Some`) or an error. A scanned transposed chunk that the
/// job's [`ChunkDecodeFn`] took yields what it made instead of records
/// (`result` is then `Ok(None)`).
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) hash: std::result::Result<(), Damage>,
    pub(crate) result: Result<Option<DecodedRecords>>,
    pub(crate) made: Option<Made>,
}

impl Decoded {
    /// The records of a piece read through an index, or its error.
    pub(crate) fn indexed(self) -> Result<DecodedRecords> {
        self.hash.map_err(|damage| damage.error)?;
        self.result?.ok_or_else(|| Error::internal("an indexed chunk decoded without records"))
    }
}

/// The pieces of a job, or what they decoded to: held inline when there is
/// one (a sequential read's jobs), so that a job costs no allocation.
pub(crate) type Pieces<T> = SmallVec<[T; 1]>;

/// What a job yields: one [`Decoded`] per piece up to the first that failed.
pub(crate) type Outcome = std::result::Result<Pieces<Decoded>, Panicked>;

/// A job: its pieces and the projection to decode them with, and what
/// decodes its scanned transposed chunks instead of the decoder, if anything.
pub(crate) struct Job {
    pieces: Pieces<Piece>,
    projection: Arc<FieldProjection>,
    chunk_decode: Option<ChunkDecodeFn>,
}

/// What a [`ChunkDecodeFn`] makes of a chunk.
pub type Made = Box<dyn std::any::Any + Send + Sync>;

/// Decodes a transposed chunk with records into something other than
/// records (say, columns), on a decoding thread of the reader it is given to
/// ([`RecordReader::set_chunk_decode`](crate::RecordReader::set_chunk_decode)),
/// after the chunk's hashes were checked. `None`: the chunk is decoded into
/// records as usual (the function could not make sense of it).
pub type ChunkDecodeFn = Arc<dyn Fn(&crate::Chunk, &ChunkReadOptions) -> Option<Made> + Send + Sync>;

/// A decoding thread's state.
pub(crate) struct DecodeWorker {
    decoder: ChunkDecoder,
    projection: Arc<FieldProjection>,
    /// Limits and whether data hashes are checked.
    options: ChunkReadOptions,
    /// Its own cursor over the shared file, for [`Piece::At`].
    reading: Option<Source<AtCursor>>,
}

impl Worker for DecodeWorker {
    type Job = Job;
    type Output = Pieces<Decoded>;

    fn run(&mut self, job: Job) -> Pieces<Decoded> {
        if !Arc::ptr_eq(&self.projection, &job.projection) {
            self.decoder.set_field_projection((*job.projection).clone());
            self.projection = job.projection;
        }
        let mut out = Pieces::with_capacity(job.pieces.len());
        let mut pieces = job.pieces.into_iter().peekable();
        while let Some(piece) = pieces.next() {
            let decoded = match piece {
                Piece::Scanned(mut chunk) => {
                    let hash = verify_hash(&mut chunk, &self.options);
                    let made = match &job.chunk_decode {
                        Some(decode) if hash.is_ok() && chunk.is_transposed_data() => decode(&chunk, &self.options),
                        _ => None,
                    };
                    let result = if hash.is_ok() && made.is_none() {
                        self.decoder.checked_decode(&chunk, false)
                    } else {
                        Ok(None)
                    };
                    Decoded { hash, result, made }
                }
                Piece::Read(chunk, wanted) => self.indexed(Ok(chunk), wanted),
                Piece::At(entry, wanted) => {
                    let next = match pieces.peek() {
                        Some(Piece::At(next, _)) => Some(next),
                        _ => None,
                    };
                    let reading = Reading::before(&entry, next);
                    let chunk = match self.reading.as_mut() {
                        Some(source) => read_entry(source, &self.options, &entry, reading),
                        None => Err(Error::internal("a decoding thread has no file to read")),
                    };
                    let decoded = self.indexed(chunk, wanted);
                    // Damage in bytes fetched over a network: fetched again, read once more.
                    let damaged = decoded.result.as_ref().is_err_and(Error::is_corruption);
                    match self.reading.as_mut() {
                        Some(source) if damaged && source.get_ref().file().refetch(entry.offset..entry.limit) => {
                            let chunk = source
                                .release_buffers()
                                .map_err(Error::from)
                                .and_then(|()| read_entry(source, &self.options, &entry, reading));
                            self.indexed(chunk, wanted)
                        }
                        _ => decoded,
                    }
                }
            };
            let failed = decoded.hash.is_err() || decoded.result.is_err();
            out.push(decoded);
            if failed {
                break;
            }
        }
        out
    }
}

impl DecodeWorker {
    /// Decodes the first `wanted` records of a chunk read through an index.
    fn indexed(&mut self, chunk: Result<LazyChunk>, wanted: u64) -> Decoded {
        let verify = self.options.verify_hashes;
        let result = chunk.and_then(|chunk| self.decoder.data_records_prefix(&chunk.gather(), verify, wanted));
        Decoded { hash: Ok(()), result: result.map(Some), made: None }
    }
}

/// Chunks decoded on worker threads, in the order they were submitted; see
/// the module docs.
pub(crate) struct DecodeStream {
    name: &'static str,
    threads: usize,
    options: ChunkReadOptions,
    projection: Arc<FieldProjection>,
    /// Decodes scanned transposed chunks instead of the decoder, if set.
    chunk_decode: Option<ChunkDecodeFn>,
    workers: Workers,
    /// Started by the first job.
    pool: Option<Pool<Plugged<DecodeWorker>>>,
    /// The tickets of the jobs whose outcomes are not taken yet, oldest first.
    tickets: VecDeque<u64>,
}

impl std::fmt::Debug for DecodeStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeStream")
            .field("name", &self.name)
            .field("threads", &self.threads)
            .field("in_flight", &self.tickets.len())
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

/// What the workers of a [`DecodeStream`] are made with.
#[derive(Clone, Default)]
pub(crate) struct Workers {
    /// Where the threads read [`Piece::At`] chunks from, for readers whose
    /// threads read their chunks themselves.
    pub(crate) file: Option<SharedFile>,
    /// What each [`DecodeWorker`] runs in (production: [`Plug::default`],
    /// itself; tests: a worker that panics on a chosen chunk, or that shows
    /// when its thread ends).
    pub(crate) plug: Plug<DecodeWorker>,
    /// The buffers the workers' decoders share, if they share them (else
    /// each decoder keeps its own).
    pub(crate) buffers: Option<RecordBuffers>,
}

impl DecodeStream {
    /// A stream decoding the fields of `projection` on up to `threads`
    /// threads named `name-i` (started by the first job) and on the calling
    /// thread while it waits, within the limits of `options`, by workers
    /// made with `workers`.
    pub(crate) fn new(
        name: &'static str,
        threads: usize,
        options: &ChunkReadOptions,
        projection: FieldProjection,
        workers: Workers,
    ) -> Self {
        Self {
            name,
            threads,
            options: options.clone(),
            projection: Arc::new(projection),
            chunk_decode: None,
            workers,
            pool: None,
            tickets: VecDeque::new(),
        }
    }

    /// Decodes later jobs with `projection`.
    pub(crate) fn set_projection(&mut self, projection: FieldProjection) {
        self.projection = Arc::new(projection);
    }

    /// Decodes the scanned transposed chunks of later jobs with `decode`
    /// (`None`: into records).
    pub(crate) fn set_chunk_decode(&mut self, decode: Option<ChunkDecodeFn>) {
        self.chunk_decode = decode;
    }

    fn pool(&mut self) -> &mut Pool<Plugged<DecodeWorker>> {
        let (threads, options) = (self.threads, &self.options);
        self.pool.get_or_insert_with(|| {
            let (options, Workers { file, plug, buffers }) = (options.clone(), self.workers.clone());
            Pool::new(self.name, threads, Help::Always, move || {
                let decoder = match &buffers {
                    Some(buffers) => ChunkDecoder::with_buffers(&options, FieldProjection::all(), buffers),
                    None => ChunkDecoder::new(&options),
                };
                plug.wrap(DecodeWorker {
                    decoder,
                    projection: Arc::new(FieldProjection::all()),
                    options: options.clone(),
                    reading: file.as_ref().map(|file| Source::new(AtCursor::new(Arc::clone(file)), 0)),
                })
            })
        })
    }

    /// Queues a job of `pieces` (not empty), decoded after those before it.
    pub(crate) fn submit(&mut self, pieces: Pieces<Piece>) {
        let projection = Arc::clone(&self.projection);
        let chunk_decode = self.chunk_decode.clone();
        let ticket = self.pool().submit(Job { pieces, projection, chunk_decode });
        self.tickets.push_back(ticket);
    }

    /// The outcome of the oldest job not taken yet, waiting for it (and
    /// running queued jobs here meanwhile). `None` if no job is in flight, or
    /// if the oldest one's outcome was lost (this process is a child forked
    /// since it was submitted): then its pieces are to be decoded by the caller.
    pub(crate) fn next(&mut self) -> Option<Outcome> {
        let ticket = self.tickets.pop_front()?;
        self.pool.as_mut()?.wait(ticket)
    }

    /// [`next`](Self::next) if that outcome has arrived, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<Outcome> {
        let &ticket = self.tickets.front()?;
        let pool = self.pool.as_mut()?;
        if pool.renew_if_forked() {
            // Lost with the parent's threads: `next` says so.
            return None;
        }
        let outcome = pool.try_next()?;
        debug_assert!(self.tickets.front() == Some(&ticket));
        self.tickets.pop_front();
        Some(outcome)
    }

    /// Makes progress while the caller has nothing else to do: runs the
    /// oldest queued job here, or waits for one outcome to arrive.
    pub(crate) fn step(&mut self) {
        if let Some(pool) = &mut self.pool {
            pool.step();
        }
    }

    /// Jobs queued that no thread has taken yet.
    pub(crate) fn queued(&mut self) -> usize {
        self.pool.as_mut().map_or(0, Pool::queued)
    }

    /// The threads running (0 before the first job).
    pub(crate) fn threads(&mut self) -> usize {
        self.pool.as_mut().map_or(0, Pool::threads)
    }

    /// The threads a job will find: those running, or those that the first
    /// job will start.
    pub(crate) fn planned_threads(&mut self) -> usize {
        match &mut self.pool {
            Some(pool) => pool.threads(),
            None => self.threads,
        }
    }

    /// Whether this process is a child forked since the jobs in flight were
    /// submitted (their outcomes are lost: see [`next`](Self::next)).
    pub(crate) fn renew_if_forked(&mut self) -> bool {
        let forked = self.pool.as_mut().is_some_and(Pool::renew_if_forked);
        if forked {
            self.tickets.clear();
        }
        forked
    }

    /// Forgets every job in flight: queued ones are dropped, running ones
    /// finish in the background and their outcomes are dropped. The threads stay.
    pub(crate) fn abandon(&mut self) {
        self.tickets.clear();
        if let Some(pool) = &mut self.pool {
            pool.abandon();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Weak;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    use super::*;

    /// A decoding worker of the tests: decodes as the one it wraps, but
    /// panics (an injected bug) on a job holding a chunk of the decoded size
    /// its [`Watch`] says, and shows the test when it is dropped.
    struct Faulty {
        inner: DecodeWorker,
        panic_on: Arc<AtomicU64>,
        dropped: Arc<AtomicUsize>,
        _token: Arc<()>,
    }

    impl Worker for Faulty {
        type Job = Job;
        type Output = Pieces<Decoded>;

        fn run(&mut self, job: Job) -> Pieces<Decoded> {
            let panic_on = self.panic_on.load(Ordering::SeqCst);
            for piece in &job.pieces {
                let size = match piece {
                    Piece::Scanned(chunk) => chunk.header.decoded_data_size(),
                    Piece::Read(chunk, _) => chunk.header().decoded_data_size(),
                    Piece::At(entry, _) => entry.decoded_data_size,
                };
                assert_ne!(size, panic_on, "a decoder bug (injected by a test)");
            }
            self.inner.run(job)
        }
    }

    impl Drop for Faulty {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// What a test sees of the workers of a [`plug`], and the fault it injects.
    pub(crate) struct Watch {
        /// Held by every worker and by the plug itself.
        token: Weak<()>,
        dropped: Arc<AtomicUsize>,
        panic_on: Arc<AtomicU64>,
    }

    impl Watch {
        /// Makes decoding a chunk of `size` decoded bytes panic from the next
        /// job on (`None`: no chunk).
        pub(crate) fn panic_on(&self, size: Option<u64>) {
            self.panic_on.store(size.unwrap_or(u64::MAX), Ordering::SeqCst);
        }

        /// Whether a worker, or the plug, still exists (a thread that
        /// outlived its reader holds both).
        pub(crate) fn alive(&self) -> bool {
            self.token.upgrade().is_some()
        }

        /// Workers dropped so far (with their thread, or rebuilt after a panic).
        pub(crate) fn dropped(&self) -> usize {
            self.dropped.load(Ordering::SeqCst)
        }
    }

    /// Decoding workers that decode as production's, with what the test
    /// sees of them; no chunk panics until [`Watch::panic_on`] says one.
    pub(crate) fn plug() -> (Plug<DecodeWorker>, Watch) {
        let token = Arc::new(());
        let watch = Watch {
            token: Arc::downgrade(&token),
            dropped: Arc::new(AtomicUsize::new(0)),
            panic_on: Arc::new(AtomicU64::new(u64::MAX)),
        };
        let (dropped, panic_on) = (Arc::clone(&watch.dropped), Arc::clone(&watch.panic_on));
        let plug = Plug::new(move |inner| {
            let (panic_on, dropped, _token) = (Arc::clone(&panic_on), Arc::clone(&dropped), Arc::clone(&token));
            Box::new(Faulty { inner, panic_on, dropped, _token })
        });
        (plug, watch)
    }
}
