//! `ArrayRecordArrowReader`: records read by index (an `ArrayRecordReader`'s,
//! or `ArrayRecordShards`') as `RecordBatch`es.

use std::collections::VecDeque;
use std::io::{Read, Seek};
use std::ops::Range;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use riegeli_codec::FieldProjection;
use riegeli_records::{ArrayRecordReader, ArrayRecordShards, ReadHints, Selection};

use crate::decoder::SkippedRecords;
use crate::error::{Error, ErrorKind, Result};
use crate::reader::{ArrowReaderOptions, Decoder};
use crate::stream::BatchSource;

/// Records that can be read by index, in batches: what an
/// [`ArrayRecordArrowReader`] reads from.
pub trait RecordsByIndex {
    /// How many records there are (indices are `0..num_records`).
    fn num_records(&self) -> u64;

    /// The records of `selection`, in its order (a range or a list of
    /// indices, all below [`num_records`](Self::num_records)).
    fn read_records(&mut self, selection: Selection<'_>) -> riegeli_records::Result<Vec<Bytes>>;
}

impl<R: Read + Seek + ReadHints> RecordsByIndex for ArrayRecordReader<R> {
    fn num_records(&self) -> u64 {
        ArrayRecordReader::num_records(self)
    }

    fn read_records(&mut self, selection: Selection<'_>) -> riegeli_records::Result<Vec<Bytes>> {
        self.read_batch(selection)
    }
}

/// The records of several files by key ([`ArrayRecordShards::read_batch`]).
impl<R: Read + Seek + ReadHints + Send> RecordsByIndex for ArrayRecordShards<R> {
    fn num_records(&self) -> u64 {
        ArrayRecordShards::num_records(self)
    }

    fn read_records(&mut self, selection: Selection<'_>) -> riegeli_records::Result<Vec<Bytes>> {
        match selection {
            Selection::Indices(keys) => self.read_batch(keys),
            Selection::Range(range) => self.read_batch(&range.collect::<Vec<_>>()),
            _ => self.read_batch(&(0..self.num_records()).collect::<Vec<_>>()),
        }
    }
}

/// Which records to read, and in which order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RecordSelection {
    /// Every record, in order (the default).
    #[default]
    All,
    /// The records of this range of indices, in order.
    Range(Range<u64>),
    /// The records of these indices, in this order (repeats allowed).
    Indices(Vec<u64>),
}

impl RecordSelection {
    fn len(&self, num_records: u64) -> u64 {
        match self {
            Self::All => num_records,
            Self::Range(range) => range.end.saturating_sub(range.start),
            Self::Indices(indices) => indices.len() as u64,
        }
    }

    /// The index of the `i`-th record selected.
    fn index(&self, i: u64) -> u64 {
        match self {
            Self::All => i,
            Self::Range(range) => range.start + i,
            Self::Indices(indices) => usize::try_from(i).ok().and_then(|i| indices.get(i)).copied().unwrap_or(u64::MAX),
        }
    }

    /// Checks that every index selected is below `num_records`.
    fn check(&self, num_records: u64) -> Result<()> {
        let bad = match self {
            Self::All => None,
            Self::Range(range) if range.start > range.end => {
                return Err(Error::new(ErrorKind::OutOfRange(format!(
                    "records [{}, {}) end before they start",
                    range.start, range.end
                ))));
            }
            Self::Range(range) => (range.end > num_records).then_some(range.end - 1),
            Self::Indices(indices) => indices.iter().copied().find(|&i| i >= num_records),
        };
        match bad {
            None => Ok(()),
            Some(index) => Err(Error::new(ErrorKind::OutOfRange(format!(
                "record {index} asked for, but there are {num_records} records"
            )))),
        }
    }
}

/// Reads records by index (from an ArrayRecord file, or several) as Arrow
/// [`RecordBatch`]es: the records of a [`RecordSelection`] pushed, a batch
/// at a time, into a [`ProtoDecoder`](crate::ProtoDecoder) or an
/// [`ExampleDecoder`](crate::ExampleDecoder).
///
/// The source is opened by the caller's function, given the field numbers
/// the columns need: set them as the reader's
/// [`field_projection`](riegeli_records::ArrayRecordReaderOptions::field_projection),
/// and transposed chunks decompress only those fields' buckets.
///
/// The message type must be given ([`RecordFormat::Proto`](crate::RecordFormat::Proto)) or the records
/// be `tf.train.Example`s ([`RecordFormat::FromMetadata`](crate::RecordFormat::FromMetadata) is an
/// [`ErrorKind::Type`] error): ArrayRecord readers do not read the file
/// metadata (a `RecordReader` over the same file does, and
/// [`message_type_from_metadata`](crate::message_type_from_metadata) makes
/// the type of it).
///
/// A bad record's error names its index in the source (its
/// [`ErrorKind::BadRecord`] `index`), and reading can go on after it. An
/// error reading the source ends reading.
///
/// ```
/// use riegeli_arrow::{ArrayRecordArrowReader, ArrowReaderOptions, RecordFormat, RecordSelection};
/// use riegeli_records::{ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter};
///
/// let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:4".parse()?)?;
/// for _ in 0..10 {
///     writer.write_record(b"")?; // empty `tf.train.Example`s
/// }
/// let file = writer.close()?;
/// let options = ArrowReaderOptions { format: RecordFormat::Example(None), ..Default::default() };
/// let selection = RecordSelection::Indices(vec![9, 0, 3]);
/// let mut reader = ArrayRecordArrowReader::new(options, selection, |field_projection| {
///     let options = ArrayRecordReaderOptions { field_projection, ..Default::default() };
///     ArrayRecordReader::with_options(std::io::Cursor::new(file), options)
/// })?;
/// assert_eq!(reader.next_batch()?.map(|b| b.num_rows()), Some(3));
/// assert!(reader.next_batch()?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ArrayRecordArrowReader<S> {
    source: S,
    decoder: Decoder,
    batch_size: usize,
    selection: RecordSelection,
    /// How many selected records were read from the source.
    read: u64,
    /// Of those, the ones not pushed to the decoder yet, with their indices.
    pending: VecDeque<(u64, Bytes)>,
    /// Reading the source failed: it ended.
    failed: bool,
}

impl<S: RecordsByIndex> ArrayRecordArrowReader<S> {
    /// Reads the records of `selection` as `options` describe, from the
    /// source `open` opens, given the field numbers to read (all, for
    /// `tf.train.Example`s and unprojected messages). An
    /// [`ErrorKind::OutOfRange`] error if `selection` is not within the
    /// source's records.
    pub fn new(
        options: ArrowReaderOptions,
        selection: RecordSelection,
        open: impl FnOnce(FieldProjection) -> riegeli_records::Result<S>,
    ) -> Result<Self> {
        let batch_size = options.batch_size.max(1);
        let decoder = Decoder::new(options, || {
            Err(Error::type_error(
                "records read by index need their message type given, or to be tf.train.Examples \
                 (the type in the file metadata is read by a RecordReader)",
            ))
        })?;
        let projection = decoder.field_projection().cloned().unwrap_or_else(FieldProjection::all);
        let source = open(projection)?;
        selection.check(source.num_records())?;
        Ok(Self { source, decoder, batch_size, selection, read: 0, pending: VecDeque::new(), failed: false })
    }

    /// The schema of the batches; for `tf.train.Example`s with inferred
    /// features, known once the first batch was read.
    pub fn schema(&self) -> Option<SchemaRef> {
        self.decoder.schema()
    }

    /// The next batch, or `None` once every selected record was read.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        self.next_batch_up_to(self.batch_size)
    }

    /// The next batch of at most `max_rows` rows (at least 1), or `None`
    /// once every selected record was read.
    pub fn next_batch_up_to(&mut self, max_rows: usize) -> Result<Option<RecordBatch>> {
        let max_rows = max_rows.max(1);
        let total = self.selection.len(self.source.num_records());
        while self.decoder.num_rows() < max_rows {
            if self.pending.is_empty() {
                let want = (max_rows - self.decoder.num_rows()) as u64;
                let end = total.min(self.read.saturating_add(want));
                if self.failed || self.read >= end {
                    break;
                }
                self.fetch(self.read..end)?;
            }
            let Some((index, record)) = self.pending.pop_front() else { break };
            self.decoder.set_next_index(index);
            self.decoder.push(&record, None)?;
        }
        if self.decoder.num_rows() == 0 {
            return Ok(None);
        }
        self.decoder.flush().map(Some)
    }

    /// Reads the selected records `range` (positions in the selection) into `pending`.
    fn fetch(&mut self, range: Range<u64>) -> Result<()> {
        let records = match &self.selection {
            RecordSelection::All => self.source.read_records(Selection::Range(range.clone())),
            RecordSelection::Range(r) => {
                self.source.read_records(Selection::Range(r.start + range.start..r.start + range.end))
            }
            RecordSelection::Indices(indices) => {
                // Positions below `indices.len()`, which is a `usize`.
                let slice = indices.get(range.start as usize..range.end as usize).unwrap_or_default();
                self.source.read_records(Selection::Indices(slice))
            }
        };
        let records = records.inspect_err(|_| self.failed = true)?;
        let indices = (range.start..range.end).map(|i| self.selection.index(i));
        self.pending.extend(indices.zip(records));
        self.read = range.end;
        Ok(())
    }

    /// The records left out so far under [`BadRecords::Skip`](crate::BadRecords::Skip).
    pub fn skipped(&self) -> &SkippedRecords {
        self.decoder.skipped()
    }

    /// The source.
    pub fn get_ref(&self) -> &S {
        &self.source
    }

    /// The source.
    pub fn into_inner(self) -> S {
        self.source
    }
}

impl<S: RecordsByIndex> Iterator for ArrayRecordArrowReader<S> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}

impl<S: RecordsByIndex> BatchSource for ArrayRecordArrowReader<S> {
    fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn schema(&self) -> Option<SchemaRef> {
        self.decoder.schema()
    }

    fn next_batch_up_to(&mut self, max_rows: usize) -> Result<Option<RecordBatch>> {
        ArrayRecordArrowReader::next_batch_up_to(self, max_rows)
    }

    fn skipped(&self) -> &SkippedRecords {
        self.decoder.skipped()
    }
}
