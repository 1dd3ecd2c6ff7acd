//! Parallel batch reads of an [`ArrayRecordReader`](super::ArrayRecordReader):
//! plans of chunks submitted to the reader's [decode stream](crate::stream).
//!
//! The calling thread groups the chunks of a batch into tasks of consecutive
//! chunks and submits them; a thread (or the caller, while it waits) decodes
//! a task with the decoder it keeps from task to task, after reading its
//! chunks itself by positional reads when the reader was opened on a file.
//! Results come back in file order; the first error ends the batch, and the
//! tasks still queued or running are abandoned.

use std::collections::VecDeque;

use riegeli_codec::DecodedRecords;

use super::compact::Cursor;
use super::plan::{ChunkIndex, Step};
use crate::error::{Error, Result};
use crate::stream::{DecodeStream, Decoded, Piece, Pieces};

/// A batch is cut into about this many tasks per thread (for balance),
/// within [`MIN_TASK_BYTES`] and [`MAX_TASK_BYTES`] of decoded data each.
const TASKS_PER_THREAD: u64 = 8;
/// The least decoded data per task (a task is at least one chunk); also what
/// a chunk whose size the index lacks counts as.
pub(crate) const MIN_TASK_BYTES: u64 = 64 << 10;
/// The most decoded data per task (unless one chunk holds more).
const MAX_TASK_BYTES: u64 = 1 << 20;

/// Reads the chunk of a step for a batch (or leaves it to be read where it
/// is decoded), to be decoded as far as the step needs.
pub(crate) type ReadPiece<'a> = dyn FnMut(Step) -> Result<Piece> + 'a;

/// A submitted task (its outcome comes in submission order): the batch
/// position of its first chunk, and its raw bytes.
struct Submitted {
    first: usize,
    raw_bytes: u64,
}

/// One parallel batch: decodes the chunks of `steps` in tasks on the pool
/// and hands each chunk's records to `sink` with its position in `steps`, in
/// order. `read` reads a step's chunk (or leaves it to be read where it is
/// decoded); at most `window` raw bytes are read ahead of what `sink` got.
/// Errors are those serial reading would return: the first in file order,
/// whether reading or decoding failed.
pub(crate) fn run(
    stream: &mut DecodeStream,
    read: &mut ReadPiece<'_>,
    index: &ChunkIndex,
    steps: &[Step],
    window: u64,
    sink: &mut dyn FnMut(usize, DecodedRecords),
) -> Result<()> {
    let mut batch = Batch { stream, sink, submitted: VecDeque::new(), in_flight: 0 };
    let result = batch.submit_all(read, index, steps, Some(window)).and_then(|()| batch.finish());
    if result.is_err() {
        // Nobody wants the rest of this batch.
        batch.stream.abandon();
    }
    result
}

/// A batch handed to the threads in full, to be collected later by
/// [`finish`]: a read-ahead that the threads decode while the caller does
/// something else. Nothing else may use the stream until it is finished or
/// abandoned ([`DecodeStream::abandon`]).
pub(crate) struct Started {
    submitted: VecDeque<Submitted>,
}

/// Submits the tasks of `steps`, as [`run`] would, without waiting for
/// any: `read` should leave the chunks to be read where they are decoded
/// ([`Piece::At`]). If `read` fails, nothing stays submitted.
pub(crate) fn start(
    stream: &mut DecodeStream,
    read: &mut ReadPiece<'_>,
    index: &ChunkIndex,
    steps: &[Step],
) -> Result<Started> {
    let mut batch = Batch { stream, sink: &mut |_, _| {}, submitted: VecDeque::new(), in_flight: 0 };
    match batch.submit_all(read, index, steps, None) {
        Ok(()) => Ok(Started { submitted: batch.submitted }),
        Err(e) => {
            batch.stream.abandon();
            Err(e)
        }
    }
}

/// Waits for a batch [`start`] submitted and hands each chunk's records to
/// `sink`, as [`run`] does.
pub(crate) fn finish(
    stream: &mut DecodeStream,
    started: Started,
    sink: &mut dyn FnMut(usize, DecodedRecords),
) -> Result<()> {
    let mut batch = Batch { stream, sink, submitted: started.submitted, in_flight: 0 };
    let result = batch.finish();
    if result.is_err() {
        batch.stream.abandon();
    }
    result
}

impl Batch<'_> {
    /// Reads and submits the chunks of `steps` in tasks; with a `window`, reads
    /// at most that many raw bytes ahead of what `sink` got (handing out what
    /// is done, and decoding here when the threads lag behind); without one,
    /// submits everything at once. A read error comes after the errors of
    /// the chunks before it (then those are waited for), except without a window.
    fn submit_all(
        &mut self,
        read: &mut ReadPiece<'_>,
        index: &ChunkIndex,
        steps: &[Step],
        window: Option<u64>,
    ) -> Result<()> {
        let threads = self.stream.planned_threads() as u64 + 1;
        let estimate = index.decoded_size(steps, MIN_TASK_BYTES);
        let task_bytes = (estimate / (threads * TASKS_PER_THREAD)).clamp(MIN_TASK_BYTES, MAX_TASK_BYTES);
        let batch = self;
        let mut task = Pieces::new();
        let mut task_first = 0;
        let mut task_bytes_so_far = 0u64;
        let mut cursor = Cursor::default();
        for (i, step) in steps.iter().enumerate() {
            let piece = match read(*step) {
                Ok(piece) => piece,
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
            let bytes = index.chunk_decoded_size(step.id, MIN_TASK_BYTES, &mut cursor);
            task_bytes_so_far = task_bytes_so_far.saturating_add(bytes);
            task.push(piece);
            if task_bytes_so_far >= task_bytes {
                batch.submit(task_first, std::mem::take(&mut task));
                task_bytes_so_far = 0;
                let Some(window) = window else { continue };
                // Read ahead only a little: decode here too when the threads lag behind.
                while batch.stream.queued() > 2 * batch.stream.threads() || batch.in_flight > window {
                    batch.stream.step();
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
    stream: &'a mut DecodeStream,
    sink: &'a mut dyn FnMut(usize, DecodedRecords),
    /// Tasks submitted and not yet handed to `sink`, in order.
    submitted: VecDeque<Submitted>,
    /// Raw bytes of those tasks.
    in_flight: u64,
}

impl Batch<'_> {
    fn submit(&mut self, first: usize, pieces: Pieces<Piece>) {
        if pieces.is_empty() {
            return;
        }
        let raw_bytes = pieces.iter().map(Piece::raw_bytes).sum::<u64>();
        self.in_flight += raw_bytes;
        self.stream.submit(pieces);
        self.submitted.push_back(Submitted { first, raw_bytes });
    }

    /// Hands out the tasks that have finished in order, without waiting.
    fn poll(&mut self) -> Result<()> {
        while !self.submitted.is_empty() {
            let Some(outcome) = self.stream.try_next() else { break };
            self.emit(outcome.map_err(|_| Error::internal("a chunk decoding thread panicked"))?)?;
        }
        Ok(())
    }

    /// Waits for every submitted task, decoding queued ones here meanwhile.
    fn finish(&mut self) -> Result<()> {
        while !self.submitted.is_empty() {
            let outcome = self.stream.next().ok_or_else(|| Error::internal("a batch task was lost"))?;
            self.emit(outcome.map_err(|_| Error::internal("a chunk decoding thread panicked"))?)?;
        }
        Ok(())
    }

    /// Hands the oldest task's records to `sink`.
    fn emit(&mut self, done: Pieces<Decoded>) -> Result<()> {
        let Some(task) = self.submitted.pop_front() else { return Ok(()) };
        self.in_flight = self.in_flight.saturating_sub(task.raw_bytes);
        for (j, decoded) in done.into_iter().enumerate() {
            (self.sink)(task.first + j, decoded.indexed()?);
        }
        Ok(())
    }
}
