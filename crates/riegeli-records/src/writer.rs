//! `RecordWriter`: records in chunks of about `chunk_size`, serially or
//! encoded on the worker pool.

use std::collections::BTreeMap;
use std::io::Write;

use riegeli_codec::{ChunkType, CompressorOptions, TransposedChunkEncoder};
use riegeli_framing::ChunkHeader;

use crate::chunker::{Chunker, EncoderConfig, Layout, Tuning};
use crate::error::{EncodeError, Error, ErrorKind, Result};
use crate::flush::{FlushType, SyncWrite};
use crate::options::RecordWriterOptions;
use crate::position::RecordPosition;
use crate::sink::{ChunkSink, Dest, encode_error, pos_after_padding};
use crate::write_behind::WriteBehind;

/// Largest number of records a chunk header can count.
const MAX_NUM_RECORDS: u64 = riegeli_framing::MAX_NUM_RECORDS;

/// The plain Riegeli/records layout: nothing after each chunk; where recent
/// chunks began is remembered, for [`RecordWriter::last_pos`].
#[derive(Debug, Default)]
struct Positions {
    /// Where recently written chunks began, by sequence number.
    chunk_begins: BTreeMap<u64, u64>,
}

impl Layout for Positions {
    fn chunk_written<W: Write>(&mut self, _: &mut ChunkSink<W>, seq: u64, begin: u64, _: &ChunkHeader) -> Result<()> {
        self.chunk_begins.insert(seq, begin);
        while self.chunk_begins.len() > 64 {
            self.chunk_begins.pop_first();
        }
        Ok(())
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
/// [`close`](Self::close); should an encoding thread panic (a bug), the
/// writer reports an [`ErrorKind::Internal`]
/// error and writes nothing more. [`pos`](Self::pos) and [`last_pos`](Self::last_pos)
/// then wait for earlier chunks to be written.
///
/// [`with_io_thread`](Self::with_io_thread) moves the destination's writes to
/// a thread of their own as well, so that the caller's thread does not wait
/// for them.
pub struct RecordWriter<W: Write> {
    chunker: Chunker<W, Positions>,
    options: RecordWriterOptions,
    desired_chunk_size: u64,
    chunk_size_so_far: u64,
    /// The last record written: (chunk sequence number, index in chunk).
    last_record: Option<(u64, u64)>,
}

impl<W: Write> std::fmt::Debug for RecordWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordWriter")
            .field("pos", &self.chunker.sink.pos())
            .field("options", &self.options)
            .finish_non_exhaustive()
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
        Self::start(Dest::Behind(WriteBehind::new(dest)?), 0, options, Tuning::default())
    }
}

impl<W: Write> RecordWriter<W> {
    /// Starts a new file: writes the file signature and, if the options carry
    /// metadata, the metadata chunk.
    pub fn new(dest: W, options: RecordWriterOptions) -> Result<Self> {
        Self::start(Dest::Direct(dest), 0, options, Tuning::default())
    }

    /// Appends to an existing file of `existing_size` bytes, with `dest`
    /// positioned at its end (e.g. a file opened in append mode). Writes no
    /// second signature; honours `initial_padding`. An empty file gets a signature.
    pub fn append(dest: W, existing_size: u64, options: RecordWriterOptions) -> Result<Self> {
        Self::start(Dest::Direct(dest), existing_size, options, Tuning::default())
    }

    /// A writer of `options` at `pos` of `dest`; its chunker is built with
    /// `tuning` (production: the default).
    fn start(dest: Dest<W>, pos: u64, options: RecordWriterOptions, tuning: Tuning) -> Result<Self> {
        options.validate()?;
        let mut sink = ChunkSink::new(dest, pos);
        start_file(&mut sink, options.metadata.as_deref(), options.compression, options.initial_padding)?;
        let desired_chunk_size = options.effective_chunk_size().min(MAX_NUM_RECORDS.saturating_mul(8));
        let config = EncoderConfig {
            transpose: options.transpose,
            compressor: options.compression,
            bucket_size: options.bucket_size(),
        };
        let chunker = Chunker::new(sink, Positions::default(), config, options.parallelism, desired_chunk_size, tuning);
        Ok(Self { chunker, options, desired_chunk_size, chunk_size_so_far: 0, last_record: None })
    }

    /// Writes one record.
    pub fn write_record(&mut self, record: &[u8]) -> Result<()> {
        let added = (record.len() as u64).saturating_add(8);
        if added.saturating_add(8) > self.desired_chunk_size && self.chunker.writes_alone(record.len() as u64) {
            // A huge record filling a chunk alone (as below): encoded straight
            // from `record`, so that it is not held twice.
            self.close_chunk()?;
            let seq = self.chunker.write_single(record)?;
            self.last_record = Some((seq, 0));
            return Ok(());
        }
        if self.chunk_size_so_far > 0 && self.chunk_size_so_far.saturating_add(added) > self.desired_chunk_size {
            self.close_chunk()?;
        }
        self.chunker.add_record(record)?;
        self.chunk_size_so_far = self.chunk_size_so_far.saturating_add(added);
        self.last_record = Some((self.chunker.open_seq(), self.chunker.num_records() - 1));
        if self.chunk_size_so_far.saturating_add(8) > self.desired_chunk_size {
            // No more records fit: write the chunk now rather than keep it in memory.
            self.close_chunk()?;
        }
        Ok(())
    }

    fn close_chunk(&mut self) -> Result<()> {
        self.chunk_size_so_far = 0;
        self.chunker.close_chunk()
    }

    /// The position the next record will have.
    ///
    /// With parallel encoding this waits for the chunks being encoded.
    pub fn pos(&mut self) -> Result<RecordPosition> {
        self.chunker.drain(0)?;
        let pos = self.chunker.sink.pos();
        RecordPosition::new(pos, self.chunker.num_records())
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument(format!("record position at {pos} overflows"))))
    }

    /// The position of the last record written, if any.
    ///
    /// With parallel encoding this may wait for its chunk to be written.
    pub fn last_pos(&mut self) -> Result<Option<RecordPosition>> {
        let Some((seq, index)) = self.last_record else { return Ok(None) };
        self.chunker.drain(0)?;
        let begin = if seq == self.chunker.open_seq() {
            self.chunker.sink.pos()
        } else {
            *self.chunker.layout.chunk_begins.get(&seq).ok_or(Error::internal("a chunk position was forgotten"))?
        };
        Ok(RecordPosition::new(begin, index))
    }

    /// An estimate of the size the file would have if it were closed now,
    /// without closing the open chunk and without waiting for anything.
    ///
    /// It counts the bytes framed so far (written, or gathered to be
    /// written), then the chunks being encoded with `parallelism` and the
    /// open chunk, each as a chunk header and its records' decoded size
    /// scaled by the ratio of encoded to decoded bytes of the chunks written
    /// so far (before the first chunk is written: the decoded size, which
    /// overestimates compressed chunks), then the block headers all of these
    /// would meet, and the final padding. Uncompressed, it is within a few
    /// bytes per chunk of the size.
    ///
    /// C++ `RecordWriter::EstimatedSize` (and Python's `estimated_size`)
    /// counts only the bytes framed so far, an underestimate; the exact size
    /// is [`flush`](Self::flush) then [`pos`](Self::pos).
    pub fn estimated_size(&self) -> u64 {
        let end = self.chunker.estimated_end();
        pos_after_padding(end, self.options.final_padding).unwrap_or(end)
    }

    /// Writes the open chunk, pads to `final_padding`, and flushes the
    /// destination: everything written so far becomes readable
    /// ([`FlushType::FromProcess`]; see [`flush_with`](Self::flush_with)).
    pub fn flush(&mut self) -> Result<()> {
        self.flush_chunks()?;
        self.chunker.sink.flush()
    }

    /// Writes the open chunk and every chunk being encoded, and pads to `final_padding`.
    fn flush_chunks(&mut self) -> Result<()> {
        self.close_chunk()?;
        self.chunker.drain(0)?;
        self.chunker.sink.write_padding(self.options.final_padding)
    }

    /// Finishes the file (open chunk, final padding, flush) and returns the destination.
    pub fn close(mut self) -> Result<W> {
        self.flush()?;
        self.chunker.sink.take_dest()
    }
}

impl<W: SyncWrite> RecordWriter<W> {
    /// Writes the open chunk, pads to `final_padding`, and pushes the bytes
    /// as far as `flush_type` says: to the destination
    /// ([`FlushType::FromObject`]), through its `flush`
    /// ([`FlushType::FromProcess`], as [`flush`](Self::flush)), or to
    /// durable storage ([`FlushType::FromMachine`]: then
    /// [`SyncWrite::sync`], e.g. `fsync` of a [`File`](std::fs::File), also
    /// behind [`with_io_thread`](Self::with_io_thread)).
    ///
    /// ```no_run
    /// use riegeli_records::{FlushType, RecordWriter};
    ///
    /// let file = std::fs::File::create("records.riegeli")?;
    /// let mut writer = RecordWriter::with_io_thread(file, "zstd".parse()?)?;
    /// writer.write_record(b"hello")?;
    /// writer.flush_with(FlushType::FromMachine)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flush_with(&mut self, flush_type: FlushType) -> Result<()> {
        self.flush_chunks()?;
        self.chunker.sink.flush_or_sync(flush_type)
    }
}

/// Writes the beginning of a file at the sink's position: at 0 the file
/// signature and, if there is `metadata` (a serialized `RecordsMetadata`),
/// the metadata chunk (compressed with `compressor`); elsewhere (appending)
/// `initial_padding`.
pub(crate) fn start_file<W: Write>(
    sink: &mut ChunkSink<W>,
    metadata: Option<&[u8]>,
    compressor: CompressorOptions,
    initial_padding: u64,
) -> Result<()> {
    if sink.pos() != 0 {
        return sink.write_padding(initial_padding);
    }
    sink.write_new_chunk(ChunkType::FileSignature, &[], 0, 0)?;
    if let Some(serialized) = metadata {
        let mut data = Vec::new();
        TransposedChunkEncoder::encode_metadata(serialized, compressor, &mut data)
            .map_err(|e| encode_error(sink.pos(), EncodeError::Codec(e)))?;
        sink.write_new_chunk(ChunkType::FileMetadata, &data, 0, serialized.len() as u64)?;
    }
    Ok(())
}

impl<W: Write> Drop for RecordWriter<W> {
    fn drop(&mut self) {
        if self.chunker.sink.is_open() {
            // Best effort: errors can only be reported by `close`.
            let _ = self.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

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

    /// A writer to memory whose chunker is built with `tuning`.
    fn tuned(options: &str, tuning: Tuning) -> RecordWriter<Vec<u8>> {
        RecordWriter::start(Dest::Direct(Vec::new()), 0, options.parse().unwrap(), tuning).unwrap()
    }

    /// Chunks closed and not written yet: those before the open one, less
    /// those whose position the layout was told.
    fn closed_not_written(writer: &RecordWriter<Vec<u8>>) -> u64 {
        let written = writer.chunker.layout.chunk_begins.last_key_value().map_or(0, |(&seq, _)| seq + 1);
        writer.chunker.open_seq() - written
    }

    /// Chunks larger than the in-flight budget are written one at a time:
    /// when a write returns, no closed chunk is waiting (its records would
    /// stay in memory); smaller chunks are still encoded several at a time.
    #[test]
    fn chunks_over_the_in_flight_budget_are_written_before_the_next_is_gathered() {
        // Chunks of about 1.5 MiB: each its own batch (over BATCH_BYTES), of
        // records of 3 KiB (too small to be written alone).
        let records: Vec<Vec<u8>> = (0..6000u16).map(|i| vec![i as u8; 3 << 10]).collect();
        let mut serial = RecordWriter::new(Vec::new(), "zstd:1,chunk_size:1572864".parse().unwrap()).unwrap();
        let options = "zstd:1,chunk_size:1572864,parallelism:2";
        let mut writer = tuned(options, Tuning::default().in_flight_budget(4 << 20));
        let mut most_pending = 0;
        for record in &records {
            serial.write_record(record).unwrap();
            writer.write_record(record).unwrap();
            most_pending = most_pending.max(closed_not_written(&writer));
        }
        // 1.5 MiB chunks against 4 MiB: up to 2 closed and not written (3 would be over).
        assert!(most_pending <= 2, "{most_pending} chunks pending");
        let mut writer = tuned(options, Tuning::default().in_flight_budget(1 << 20));
        for record in &records {
            writer.write_record(record).unwrap();
            assert_eq!(closed_not_written(&writer), 0, "a chunk over the budget is written at once");
        }
        assert_eq!(writer.close().unwrap(), serial.close().unwrap(), "the same bytes as serially");
    }

    #[test]
    fn records_written_alone_give_the_bytes_and_positions_of_the_encoder() {
        // Records over a quarter of a 1 MiB budget are written alone; mixed with small ones.
        let records: Vec<Vec<u8>> =
            (0..20u8).map(|i| vec![i; if i % 3 == 0 { 300_000 + usize::from(i) } else { 1000 }]).collect();
        let options = [
            "uncompressed,chunk_size:64k",
            "zstd:1,chunk_size:64k",
            "snappy,parallelism:1",
            "brotli:1,parallelism:2",
            "uncompressed,chunk_size:64k,parallelism:1",
            "zstd:1,chunk_size:64k,parallelism:2",
        ];
        for options in options {
            let mut plain = RecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
            // Its pool's workers count the chunks they encode.
            let encoded = Arc::new(AtomicU64::new(0));
            let tuning = Tuning::default().in_flight_budget(1 << 20).faulty(None, Arc::clone(&encoded));
            let mut alone = tuned(options, tuning);
            let chunk_size = plain.desired_chunk_size;
            for record in &records {
                plain.write_record(record).unwrap();
                alone.write_record(record).unwrap();
                assert_eq!(alone.last_pos().unwrap(), plain.last_pos().unwrap(), "{options}");
            }
            let parallel = alone.options.parallelism > 0;
            let file = alone.close().unwrap();
            assert_eq!(file, plain.close().unwrap(), "{options}: the same bytes");
            // With a pool, the chunks its workers did not encode were written
            // alone: those that fill a chunk alone, all the large ones unless
            // chunks are larger. (Serially no chunk goes to a worker: there
            // the bytes and positions above are what is checked.)
            if parallel {
                let chunks = crate::decode::tests::data_chunk_sizes(&file).len() as u64;
                let singles = chunks - encoded.load(Ordering::SeqCst);
                let large = records.iter().filter(|r| r.len() >= 300_000 && r.len() as u64 + 16 > chunk_size).count();
                assert_eq!(singles, large as u64, "{options}");
            }
        }
    }

    fn write(records: &[Vec<u8>], options: &str, tuning: Tuning) -> Vec<u8> {
        let mut writer = tuned(options, tuning);
        for record in records {
            writer.write_record(record).unwrap();
        }
        writer.close().unwrap()
    }

    #[test]
    fn batches_the_caller_encodes_give_the_serial_bytes() {
        let records = records();
        for options in ["uncompressed", "snappy,chunk_size:100k", "transpose,zstd:1,chunk_size:300k"] {
            let serial = write(&records, options, Tuning::default());
            for all_here in [true, false] {
                let tuning = if all_here { Tuning::default().without_threads() } else { Tuning::default() };
                let parallel = write(&records, &format!("{options},parallelism:1"), tuning);
                let (got, want) = (parallel.len(), serial.len());
                assert!(parallel == serial, "{options}, all here {all_here}: {got} bytes, serially {want}");
            }
        }
    }

    /// Records of an odd size (1037 bytes, one of 1038), so that the
    /// decoded size of the chunk holding the longer one is a size no other
    /// chunk has.
    fn odd_records() -> Vec<Vec<u8>> {
        (0..3000u32).map(|i| format!("{i:>width$}", width = if i == 1000 { 1038 } else { 1037 }).into_bytes()).collect()
    }

    #[test]
    fn a_panicking_encoding_thread_is_an_internal_error_not_a_hang() {
        use std::time::Duration;

        let records = odd_records();
        let options = "zstd:3,chunk_size:64k";
        let serial = write(&records, options, Tuning::default());
        // Encoding the one chunk holding the longer record panics; the others
        // are encoded (on the threads that did not panic, among others).
        let sizes = crate::decode::tests::data_chunk_sizes(&serial);
        let size = sizes.into_iter().find(|size| size % 1037 == 1).unwrap();
        for threads in [1, 2] {
            for all_here in [false, true] {
                let (done, result) = std::sync::mpsc::channel();
                let records = records.clone();
                std::thread::spawn(move || {
                    let tuning = Tuning::default().faulty(Some(size), Arc::new(AtomicU64::new(0)));
                    let tuning = if all_here { tuning.without_threads() } else { tuning };
                    let mut writer = tuned(&format!("{options},parallelism:{threads}"), tuning);
                    let written = records.iter().try_for_each(|r| writer.write_record(r));
                    let error = written.and_then(|()| writer.close().map(drop)).unwrap_err();
                    let _ = done.send(error);
                });
                // Before the one pool, a panic on an encoding thread left the
                // writer waiting for its batch for good.
                let error = result.recv_timeout(Duration::from_secs(60)).expect("the writer hung");
                assert!(matches!(error.kind(), ErrorKind::Internal(_)), "{threads} threads: {error}");
                assert!(!error.is_corruption() && error.position().is_none());
            }
        }
    }
}
