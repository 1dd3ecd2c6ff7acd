//! `ArrowStream`: the batches of a reader as an Arrow `RecordBatchReader`,
//! whose schema is known before the first batch is taken (what the Arrow C
//! stream interface and its consumers need), with an optional row limit.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};

use crate::decoder::SkippedRecords;
use crate::error::{Error, Result};

/// A reader of batches that an [`ArrowStream`] can drive: an
/// [`ArrowReader`](crate::ArrowReader) or an
/// [`ArrayRecordArrowReader`](crate::ArrayRecordArrowReader).
pub trait BatchSource {
    /// The rows of a full batch.
    fn batch_size(&self) -> usize;

    /// The schema of the batches, if known before the first batch (not for
    /// `tf.train.Example`s whose features are inferred).
    fn schema(&self) -> Option<SchemaRef>;

    /// The next batch of at most `max_rows` rows (at least one), or `None`
    /// at the end.
    fn next_batch_up_to(&mut self, max_rows: usize) -> Result<Option<RecordBatch>>;

    /// The records left out so far under [`BadRecords::Skip`](crate::BadRecords::Skip).
    fn skipped(&self) -> &SkippedRecords;
}

/// The batches of a [`BatchSource`], as an Arrow
/// [`RecordBatchReader`] (what `arrow_array::ffi_stream` exports to the C
/// stream interface), with a schema from the start: when the source knows
/// none yet, the first batch is read by [`new`](Self::new) to learn it (and
/// a source with no records gives a schema without fields).
///
/// The first error ends the stream (a consumer of an Arrow stream stops at
/// an error); [`next_batch`](Self::next_batch) can go on after a bad record.
/// Batches without rows are not given out.
///
/// ```
/// use riegeli_arrow::{ArrowReader, ArrowReaderOptions, ArrowStream, RecordFormat};
/// use riegeli_records::{RecordReader, RecordWriter};
///
/// // Two empty `tf.train.Example`s: no features, two rows.
/// let mut writer = RecordWriter::new(Vec::new(), Default::default())?;
/// writer.write_record(b"")?;
/// writer.write_record(b"")?;
/// let file = writer.close()?;
/// let options = ArrowReaderOptions { format: RecordFormat::Example(None), ..Default::default() };
/// let reader = ArrowReader::new(RecordReader::new(std::io::Cursor::new(file)), options)?;
/// let stream = ArrowStream::new(reader, Some(1))?;
/// assert_eq!(stream.schema().fields().len(), 0);
/// let rows: usize = stream.map(|batch| batch.map(|b| b.num_rows())).sum::<Result<_, _>>()?;
/// assert_eq!(rows, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ArrowStream<S> {
    source: S,
    schema: SchemaRef,
    /// The batch read to learn the schema, not given out yet.
    first: Option<RecordBatch>,
    /// Rows still to give out, if limited.
    remaining: Option<u64>,
    /// An error ended the stream (for the iterator).
    failed: bool,
}

impl<S: BatchSource> ArrowStream<S> {
    /// The batches of `source`, at most `limit` rows in all if given (the
    /// source is then asked for no more rows than are still wanted, so that
    /// reading stops there).
    pub fn new(source: S, limit: Option<u64>) -> Result<Self> {
        Self::try_new(source, limit).map_err(|(error, _)| error)
    }

    /// [`new`](Self::new), giving the source back with the error if it
    /// fails (reading the first batch).
    pub fn try_new(mut source: S, limit: Option<u64>) -> Result<Self, (Error, S)> {
        let (schema, first) = match source.schema() {
            Some(schema) => (schema, None),
            None => {
                let rows = limit.map_or(source.batch_size(), |limit| clamp(limit, source.batch_size()));
                let first = match source.next_batch_up_to(rows.max(1)) {
                    Ok(first) => first,
                    Err(error) => return Err((error, source)),
                };
                let schema = match (&first, source.schema()) {
                    (_, Some(schema)) => schema,
                    (Some(batch), None) => batch.schema(),
                    (None, None) => Arc::new(Schema::empty()),
                };
                (schema, first.filter(|batch| batch.num_rows() > 0))
            }
        };
        let mut stream = Self { source, schema, first: None, remaining: limit, failed: false };
        stream.first = first.map(|batch| stream.take_rows(batch));
        Ok(stream)
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The next batch, or `None` at the end (or once `limit` rows were given).
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(batch) = self.first.take() {
            return Ok(Some(batch));
        }
        loop {
            let rows = match self.remaining {
                Some(0) => return Ok(None),
                Some(remaining) => clamp(remaining, self.source.batch_size()),
                None => self.source.batch_size(),
            };
            let Some(batch) = self.source.next_batch_up_to(rows)? else { return Ok(None) };
            if batch.num_rows() > 0 {
                return Ok(Some(self.take_rows(batch)));
            }
        }
    }

    /// `batch`, counted against the limit (cut to it, though the source was
    /// asked for no more).
    fn take_rows(&mut self, batch: RecordBatch) -> RecordBatch {
        let Some(remaining) = &mut self.remaining else { return batch };
        let rows = clamp(*remaining, batch.num_rows());
        *remaining -= rows as u64;
        if rows < batch.num_rows() { batch.slice(0, rows) } else { batch }
    }

    /// The records left out so far under [`BadRecords::Skip`](crate::BadRecords::Skip).
    pub fn skipped(&self) -> &SkippedRecords {
        self.source.skipped()
    }

    /// The source.
    pub fn get_ref(&self) -> &S {
        &self.source
    }

    /// The source, to go on reading it.
    pub fn into_inner(self) -> S {
        self.source
    }
}

/// `value` as a `usize`, at most `max`.
fn clamp(value: u64, max: usize) -> usize {
    usize::try_from(value).map_or(max, |value| value.min(max))
}

impl<S: BatchSource> Iterator for ArrowStream<S> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_batch() {
            Ok(batch) => batch.map(Ok),
            Err(error) => {
                self.failed = true;
                Some(Err(to_arrow_error(error)))
            }
        }
    }
}

impl<S: BatchSource> RecordBatchReader for ArrowStream<S> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// This crate's error for Arrow: an Arrow error as it is, others as
/// [`ArrowError::ExternalError`] (the message names a bad record).
fn to_arrow_error(error: Error) -> ArrowError {
    match error.into_kind() {
        crate::ErrorKind::Arrow(error) => error,
        kind => ArrowError::ExternalError(Box::new(Error::new(kind))),
    }
}
