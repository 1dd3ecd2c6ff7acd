//! Parallel batch reads of an [`ArrayRecordReader`](super::ArrayRecordReader):
//! the reader's client of the [worker pool](crate::pool).
//!
//! The calling thread groups the chunks of a batch into tasks of consecutive
//! chunks and submits them; a thread (or the caller, while it waits) decodes
//! a task with the decoder it keeps from task to task, after reading its
//! chunks itself by positional reads when the reader was opened on a file.
//! Results come back in file order; the first error ends the batch, and the
//! tasks still queued or running are abandoned.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use riegeli_codec::{DecodedRecords, FieldProjection};

use super::entry::{ChunkEntry, Reading, estimated_decoded_size, read_entry};
use super::positional::{AtCursor, SharedFile};
use crate::chunk_reader::LazyChunk;
use crate::decode::ChunkDecoder;
use crate::error::{Error, Result};
use crate::options::ChunkReadOptions;
use crate::pool::{Help, Pool, Worker};
use crate::source::Source;

/// A batch is cut into about this many tasks per thread (for balance),
/// within [`MIN_TASK_BYTES`] and [`MAX_TASK_BYTES`] of decoded data each.
const TASKS_PER_THREAD: u64 = 8;
/// The least decoded data per task (a task is at least one chunk); also what
/// a chunk whose size the index lacks counts as.
pub(crate) const MIN_TASK_BYTES: u64 = 64 << 10;
/// The most decoded data per task (unless one chunk holds more).
const MAX_TASK_BYTES: u64 = 1 << 20;

/// A chunk of a task: read by the calling thread, or to be read (by
/// positional reads of the shared file) where it is decoded.
pub(crate) enum TaskChunk {
    Read(LazyChunk),
    At(ChunkEntry),
}

impl TaskChunk {
    /// The chunk's raw size (for a chunk not read yet, the room the index gives it).
    fn raw_bytes(&self) -> u64 {
        match self {
            Self::Read(chunk) => chunk.end() - chunk.begin(),
            Self::At(entry) => entry.raw_bytes(),
        }
    }
}

/// What a task yields: one result per chunk, in order, ending at the first error.
pub(crate) struct TaskDone {
    results: Vec<Result<DecodedRecords>>,
}

/// Decoded chunks whose records were all read and let go of, handed back so
/// that the threads decode into their buffers rather than into fresh ones:
/// a scan that allocates every chunk anew spends as much as a third of its
/// time in page faults.
#[derive(Clone, Default)]
pub(crate) struct Spares(Arc<Mutex<SpareList>>);

#[derive(Default)]
struct SpareList {
    chunks: Vec<DecodedRecords>,
    /// Decoded bytes of `chunks`.
    bytes: u64,
    /// Spares taken to decode into.
    #[cfg(test)]
    reused: u64,
}

impl Spares {
    /// The list, unless another thread holds it: a spare missed costs an
    /// allocation, while waiting could mean waiting forever in a forked
    /// child (for a thread of the parent that held it at the fork).
    fn try_lock(&self) -> Option<std::sync::MutexGuard<'_, SpareList>> {
        match self.0.try_lock() {
            Ok(list) => Some(list),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Keeps `records` for reuse, if nothing else shares its buffer and the
    /// spares stay within `max_bytes`.
    pub(crate) fn give(&self, records: DecodedRecords, max_bytes: u64) {
        if !records.values().is_unique() {
            return;
        }
        let size = records.decoded_data_size() as u64;
        let Some(mut list) = self.try_lock() else { return };
        if list.bytes.saturating_add(size) <= max_bytes {
            list.bytes += size;
            list.chunks.push(records);
        }
    }

    fn take(&self) -> Option<DecodedRecords> {
        let mut list = self.try_lock()?;
        let records = list.chunks.pop()?;
        list.bytes = list.bytes.saturating_sub(records.decoded_data_size() as u64);
        #[cfg(test)]
        {
            list.reused += 1;
        }
        Some(records)
    }

    #[cfg(test)]
    pub(crate) fn reused(&self) -> u64 {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).reused
    }
}

/// A decoding thread's state: its decoder, and its cursor over the shared
/// file when chunks are read where they are decoded.
pub(crate) struct BatchWorker {
    decoder: ChunkDecoder,
    reading: Option<Source<AtCursor>>,
    options: ChunkReadOptions,
    spares: Spares,
}

impl Worker for BatchWorker {
    /// Chunks, each with how many of its first records are needed.
    type Job = Vec<(TaskChunk, u64)>;
    type Output = TaskDone;

    /// Reads (if needed) and decodes a task's chunks; stops at the first error.
    fn run(&mut self, chunks: Vec<(TaskChunk, u64)>) -> TaskDone {
        let mut results = Vec::with_capacity(chunks.len());
        let mut chunks = chunks.into_iter().peekable();
        while let Some((chunk, wanted)) = chunks.next() {
            let chunk = match chunk {
                TaskChunk::Read(chunk) => Ok(chunk),
                TaskChunk::At(entry) => match self.reading.as_mut() {
                    Some(source) => {
                        let next = match chunks.peek() {
                            Some((TaskChunk::At(next), _)) => Some(next),
                            _ => None,
                        };
                        read_entry(source, &self.options, &entry, Reading::before(&entry, next))
                    }
                    None => Err(Error::internal("a decoding thread has no file to read")),
                },
            };
            if let Some(spare) = self.spares.take() {
                self.decoder.recycle(spare);
            }
            let verify = self.options.verify_hashes;
            let result = chunk.and_then(|chunk| self.decoder.data_records_prefix(&chunk.gather(), verify, wanted));
            let failed = result.is_err();
            results.push(result);
            if failed {
                break;
            }
        }
        TaskDone { results }
    }
}

/// The pool of an [`ArrayRecordReader`](super::ArrayRecordReader)'s parallel reads.
pub(crate) type BatchPool = Pool<BatchWorker>;

/// Starts `threads` decoding threads (fewer if some cannot be spawned),
/// decoding with `projection` (into buffers from `spares` when there are
/// some) and reading chunks given as [`TaskChunk::At`] from `file`.
pub(crate) fn start_pool(
    threads: usize,
    projection: &FieldProjection,
    options: &ChunkReadOptions,
    file: Option<&SharedFile>,
    spares: &Spares,
) -> BatchPool {
    let (projection, options, file, spares) = (projection.clone(), options.clone(), file.cloned(), spares.clone());
    Pool::new("array-record-decode", threads, Help::Always, move || BatchWorker {
        decoder: ChunkDecoder::with_projection(&options, projection.clone()),
        reading: file.as_ref().map(|file| Source::new(AtCursor::new(Arc::clone(file)), 0)),
        options: options.clone(),
        spares: spares.clone(),
    })
}

/// A submitted task (its outcome comes in submission order): the batch
/// position of its first chunk, and its raw bytes.
struct Submitted {
    first: usize,
    raw_bytes: u64,
}

/// One parallel batch: decodes chunks `ks` of the index `chunks` in tasks on
/// the pool and hands each chunk's records to `sink` with its position in
/// `ks`, in order. `read` reads chunk `k` (or leaves it to be read where it
/// is decoded); at most `window` raw bytes are read ahead of what `sink` got. Errors are those serial reading would return: the first in
/// file order, whether reading or decoding failed.
pub(crate) fn run(
    pool: &mut BatchPool,
    read: impl FnMut(usize) -> Result<TaskChunk>,
    chunks: &[ChunkEntry],
    ks: &[usize],
    needed: &[u64],
    window: u64,
    sink: &mut dyn FnMut(usize, DecodedRecords),
) -> Result<()> {
    let mut batch = Batch { pool, sink, submitted: VecDeque::new(), in_flight: 0 };
    let result = batch.submit_all(read, chunks, ks, needed, Some(window)).and_then(|()| batch.finish());
    if result.is_err() {
        // Nobody wants the rest of this batch.
        batch.pool.abandon();
    }
    result
}

/// A batch handed to the threads in full, to be collected later by
/// [`finish`]: a read-ahead that the threads decode while the caller does
/// something else. Nothing else may use the pool until it is finished or
/// abandoned ([`BatchPool::abandon`]).
pub(crate) struct Started {
    submitted: VecDeque<Submitted>,
}

/// Submits the tasks of chunks `ks`, as [`run`] would, without waiting for
/// any: `read` should leave the chunks to be read where they are decoded
/// ([`TaskChunk::At`]). If `read` fails, nothing stays submitted.
pub(crate) fn start(
    pool: &mut BatchPool,
    read: impl FnMut(usize) -> Result<TaskChunk>,
    chunks: &[ChunkEntry],
    ks: &[usize],
    needed: &[u64],
) -> Result<Started> {
    let mut batch = Batch { pool, sink: &mut |_, _| {}, submitted: VecDeque::new(), in_flight: 0 };
    match batch.submit_all(read, chunks, ks, needed, None) {
        Ok(()) => Ok(Started { submitted: batch.submitted }),
        Err(e) => {
            batch.pool.abandon();
            Err(e)
        }
    }
}

/// Waits for a batch [`start`] submitted and hands each chunk's records to
/// `sink`, as [`run`] does.
pub(crate) fn finish(
    pool: &mut BatchPool,
    started: Started,
    sink: &mut dyn FnMut(usize, DecodedRecords),
) -> Result<()> {
    let mut batch = Batch { pool, sink, submitted: started.submitted, in_flight: 0 };
    let result = batch.finish();
    if result.is_err() {
        batch.pool.abandon();
    }
    result
}

impl Batch<'_> {
    /// Reads and submits the chunks of `ks` in tasks; with a `window`, reads
    /// at most that many raw bytes ahead of what `sink` got (handing out what
    /// is done, and decoding here when the threads lag behind); without one,
    /// submits everything at once. A read error comes after the errors of
    /// the chunks before it (then those are waited for), except without a window.
    fn submit_all(
        &mut self,
        mut read: impl FnMut(usize) -> Result<TaskChunk>,
        chunks: &[ChunkEntry],
        ks: &[usize],
        needed: &[u64],
        window: Option<u64>,
    ) -> Result<()> {
        let threads = self.pool.threads() as u64 + 1;
        let estimate = estimated_decoded_size(chunks, ks, MIN_TASK_BYTES);
        let task_bytes = (estimate / (threads * TASKS_PER_THREAD)).clamp(MIN_TASK_BYTES, MAX_TASK_BYTES);
        let batch = self;
        let mut task = Vec::new();
        let mut task_first = 0;
        let mut task_bytes_so_far = 0u64;
        for (i, &k) in ks.iter().enumerate() {
            let chunk = match read(k) {
                Ok(chunk) => chunk,
                Err(e) => {
                    // Errors of earlier chunks come first, as when reading serially.
                    if window.is_some() {
                        batch.submit(task_first, std::mem::take(&mut task));
                        batch.finish()?;
                    }
                    return Err(e);
                }
            };
            if task.is_empty() {
                task_first = i;
            }
            task_bytes_so_far = task_bytes_so_far.saturating_add(estimated_decoded_size(chunks, &[k], MIN_TASK_BYTES));
            task.push((chunk, needed.get(i).copied().unwrap_or(u64::MAX)));
            if task_bytes_so_far >= task_bytes {
                batch.submit(task_first, std::mem::take(&mut task));
                task_bytes_so_far = 0;
                let Some(window) = window else { continue };
                // Read ahead only a little: decode here too when the threads lag behind.
                while batch.pool.queued() > 2 * batch.pool.threads() || batch.in_flight > window {
                    batch.pool.step();
                    batch.poll()?;
                }
                batch.poll()?;
            }
        }
        batch.submit(task_first, task);
        Ok(())
    }
}

struct Batch<'a> {
    pool: &'a mut BatchPool,
    sink: &'a mut dyn FnMut(usize, DecodedRecords),
    /// Tasks submitted and not yet handed to `sink`, in order.
    submitted: VecDeque<Submitted>,
    /// Raw bytes of those tasks.
    in_flight: u64,
}

impl Batch<'_> {
    fn submit(&mut self, first: usize, chunks: Vec<(TaskChunk, u64)>) {
        if chunks.is_empty() {
            return;
        }
        let raw_bytes = chunks.iter().map(|(chunk, _)| chunk.raw_bytes()).sum::<u64>();
        self.in_flight += raw_bytes;
        self.pool.submit(chunks);
        self.submitted.push_back(Submitted { first, raw_bytes });
    }

    /// Hands out the tasks that have finished in order, without waiting.
    fn poll(&mut self) -> Result<()> {
        while !self.submitted.is_empty() {
            let Some(outcome) = self.pool.try_next() else { break };
            self.emit(outcome.map_err(|_| Error::internal("a chunk decoding thread panicked"))?)?;
        }
        Ok(())
    }

    /// Waits for every submitted task, decoding queued ones here meanwhile.
    fn finish(&mut self) -> Result<()> {
        self.poll()?;
        while !self.submitted.is_empty() {
            if self.pool.pending() == 0 {
                return Err(Error::internal("a batch task was lost"));
            }
            self.pool.step();
            self.poll()?;
        }
        Ok(())
    }

    /// Hands the oldest task's records to `sink`.
    fn emit(&mut self, done: TaskDone) -> Result<()> {
        let Some(task) = self.submitted.pop_front() else { return Ok(()) };
        self.in_flight = self.in_flight.saturating_sub(task.raw_bytes);
        for (j, result) in done.results.into_iter().enumerate() {
            (self.sink)(task.first + j, result?);
        }
        Ok(())
    }
}
