//! `DecodePool`: the worker threads an `ArrayRecordReader` decodes batches on.
//!
//! The pool is owned by the reader, created on the first parallel batch that
//! is worth it, and joined when the reader is dropped. The reader's thread
//! reads raw chunks (the file is one `R`, so reading is serial) or, for a
//! reader opened on a `File`, leaves them to be read by positional reads where
//! they are decoded; it groups them into [`Task`]s of consecutive chunks and
//! queues them; workers (and the
//! reader's thread, when it has nothing else to do) decode them with decoders
//! they keep from batch to batch, and send each [`Done`] back on the batch's
//! own channel, so that a task still running when a batch fails cannot reach
//! the next batch.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use riegeli_codec::{DecodedRecords, FieldProjection};

use super::positional::{AtCursor, SharedFile};
use super::reader::{ChunkEntry, read_entry};
use crate::chunk_reader::LazyChunk;
use crate::error::{Error, Result};
use crate::options::RecordReaderOptions;
use crate::reader::ChunkDecoder;
use crate::source::Source;
use crate::work_queue::WorkQueue;

/// A chunk of a task: read by the calling thread, or to be read (by
/// positional reads of the shared file) where it is decoded.
pub(crate) enum TaskChunk {
    Read(LazyChunk),
    At(ChunkEntry),
}

impl TaskChunk {
    /// The chunk's raw size (for a chunk not read yet, the room the index gives it).
    pub(crate) fn raw_bytes(&self) -> u64 {
        match self {
            Self::Read(chunk) => chunk.end() - chunk.begin(),
            Self::At(entry) => entry.limit.saturating_sub(entry.offset),
        }
    }

    pub(crate) fn begin(&self) -> u64 {
        match self {
            Self::Read(chunk) => chunk.begin(),
            Self::At(entry) => entry.offset,
        }
    }
}

/// A decoding thread's reading state: its cursor over the shared file, if
/// the batch's chunks are read where they are decoded.
pub(crate) type Reading = Option<Source<AtCursor>>;

/// A cursor of its own over `file`, for one decoding thread.
pub(crate) fn reading(file: Option<&SharedFile>) -> Reading {
    file.map(|file| Source::new(AtCursor::new(std::sync::Arc::clone(file)), 0))
}

/// Consecutive chunks of a batch, decoded together by one thread.
pub(crate) struct Task {
    /// The task's number in its batch (tasks are numbered in file order).
    pub(crate) seq: usize,
    /// The chunks, gathered (or read) where they are decoded; a chunk's
    /// position in the batch is its task's `first` plus its index here.
    pub(crate) chunks: Vec<TaskChunk>,
    /// Where the result goes.
    pub(crate) reply: mpsc::Sender<Done>,
}

/// A decoded task.
pub(crate) struct Done {
    /// The task's number in its batch.
    pub(crate) seq: usize,
    /// The raw bytes the task held (for the batch's memory bound).
    pub(crate) raw_bytes: u64,
    /// One result per chunk, in order, ending at the first error.
    pub(crate) results: Vec<Result<DecodedRecords>>,
}

/// Decodes a task's chunks with `decoder`; stops at the first error.
///
/// A panic in the decoder (a bug, never expected) becomes an error of the
/// chunk being decoded, and the decoder is replaced.
pub(crate) fn run(
    task: Task,
    decoder: &mut ChunkDecoder,
    reading: &mut Reading,
    projection: &FieldProjection,
    options: &RecordReaderOptions,
) -> (mpsc::Sender<Done>, Done) {
    let Task { seq, chunks, reply } = task;
    let raw_bytes = chunks.iter().map(TaskChunk::raw_bytes).sum();
    let mut results = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let begin = chunk.begin();
        let decode = || {
            let chunk = match chunk {
                TaskChunk::Read(chunk) => chunk,
                TaskChunk::At(entry) => match reading.as_mut() {
                    Some(source) => read_entry(source, options, &entry)?,
                    None => return Err(Error::invalid(begin, "a decoding thread has no file to read")),
                },
            };
            super::reader::decode_checked(decoder, &chunk.gather(), options)
        };
        let result = catch_unwind(AssertUnwindSafe(decode)).unwrap_or_else(|_| {
            *decoder = ChunkDecoder::new(projection.clone());
            Err(Error::invalid(begin, "a decoding thread panicked"))
        });
        let failed = result.is_err();
        results.push(result);
        if failed {
            break;
        }
    }
    (reply, Done { seq, raw_bytes, results })
}

/// Worker threads decoding [`Task`]s; joined on drop.
pub(crate) struct DecodePool {
    queue: Arc<WorkQueue<Task>>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for DecodePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodePool").field("workers", &self.workers.len()).finish_non_exhaustive()
    }
}

impl DecodePool {
    /// Starts up to `workers` threads decoding with `projection` and
    /// `options`, and reading the chunks given as [`TaskChunk::At`] from `file`.
    ///
    /// Threads that cannot be spawned are left out: the caller decodes what no
    /// worker takes, so a pool of no threads still finishes every batch.
    pub(crate) fn new(
        workers: usize,
        projection: &FieldProjection,
        options: &RecordReaderOptions,
        file: Option<&SharedFile>,
    ) -> Self {
        let queue = Arc::new(WorkQueue::new());
        let workers = (0..workers)
            .map_while(|i| {
                let queue = Arc::clone(&queue);
                let projection = projection.clone();
                let options = options.clone();
                let reading = reading(file);
                std::thread::Builder::new()
                    .name(format!("array-record-decode-{i}"))
                    .spawn(move || work(&queue, reading, &projection, &options))
                    .ok()
            })
            .collect();
        Self { queue, workers }
    }

    /// The number of worker threads.
    pub(crate) fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Queues a task for the workers.
    pub(crate) fn submit(&self, task: Task) {
        self.queue.push(task);
    }

    /// Takes the oldest queued task, for the caller to decode itself.
    pub(crate) fn take(&self) -> Option<Task> {
        self.queue.pop_front()
    }

    /// The number of queued tasks.
    pub(crate) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Drops every queued task (after a batch failed).
    pub(crate) fn clear(&self) {
        // Dropped outside the lock: a task's buffers may be large.
        drop(self.queue.clear());
    }

    /// A handle that outlives the pool only while a worker thread is running.
    #[cfg(all(test, feature = "zstd"))]
    pub(crate) fn liveness(&self) -> std::sync::Weak<impl Sized + use<>> {
        Arc::downgrade(&self.queue)
    }
}

impl Drop for DecodePool {
    fn drop(&mut self) {
        self.queue.close();
        for worker in self.workers.drain(..) {
            // A worker that panicked has nothing left to clean up.
            let _ = worker.join();
        }
    }
}

/// A worker's loop: decode queued tasks until the pool shuts down.
fn work(queue: &WorkQueue<Task>, mut reading: Reading, projection: &FieldProjection, options: &RecordReaderOptions) {
    let mut decoder = ChunkDecoder::new(projection.clone());
    while let Some(task) = queue.wait_pop() {
        let (reply, done) = run(task, &mut decoder, &mut reading, projection, options);
        // The batch may have ended (failed) meanwhile: then nobody listens.
        let _ = reply.send(done);
    }
}
