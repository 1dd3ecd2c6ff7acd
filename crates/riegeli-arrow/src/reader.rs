//! `ArrowReader`: a `RecordReader`'s records as `RecordBatch`es.

use std::collections::VecDeque;
use std::io::{Read, Seek};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use prost_reflect::MessageDescriptor;
use riegeli_codec::{DecodeLimits, FieldProjection};
use riegeli_records::{ChunkDecodeFn, ChunkReadOptions, Made, RecordPosition, RecordReader};

use crate::decoder::{BadRecords, ChunkBatches, ProtoDecoder, SkippedRecords};
use crate::descriptor::message_type_from_metadata;
use crate::error::{Error, Result};
use crate::example::{ExampleDecoder, FeatureKind};
use crate::stream::BatchSource;

/// What the records are.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum RecordFormat {
    /// Protobuf messages of the type the file's metadata names (the
    /// default); an [`ErrorKind::Type`](crate::ErrorKind::Type) error if it
    /// names none.
    #[default]
    FromMetadata,
    /// Protobuf messages of this type.
    Proto(MessageDescriptor),
    /// `tf.train.Example`s, with the columns of this feature spec, or
    /// inferred from the first batch (see [`ExampleDecoder`]).
    Example(Option<Vec<(String, FeatureKind)>>),
}

/// Options of an [`ArrowReader`], set as fields.
#[derive(Debug, Clone)]
pub struct ArrowReaderOptions {
    /// Rows per batch (default 8192; the last batch may have fewer).
    pub batch_size: usize,
    /// The fields to read (default `None`: all): field paths as
    /// [`ProtoDecoder::new`] takes them, or feature names for
    /// [`RecordFormat::Example`] (the spec's, or those inferred, that are
    /// listed, in their order).
    pub projection: Option<Vec<String>>,
    /// What to do with a record that cannot be decoded (default: fail).
    pub bad_records: BadRecords,
    /// What the records are (default: the type in the file's metadata).
    pub format: RecordFormat,
    /// Decode transposed chunks of protobuf messages straight into the
    /// columns, no serialized message in between (default `true`); a chunk
    /// this cannot do exactly (maps or oneofs among the columns, a record
    /// that is not a valid message, ...) is read through its records all the
    /// same. `false` reads every chunk through its records: the same batches.
    pub direct: bool,
    /// Threads on which the record reader decodes transposed chunks straight
    /// into columns ahead of the batches asking for them (with `direct`), if
    /// it decodes on no threads of its own (its
    /// [`parallelism`](riegeli_records::RecordReaderOptions::parallelism) 0);
    /// the calling thread decodes too while it waits. Default: the cores
    /// less one (0 on one core: all on the calling thread). A reader started
    /// with threads of its own keeps those.
    pub parallelism: usize,
    /// Every batch but the last has exactly `batch_size` rows (the default,
    /// `true`). `false`: a batch may have fewer, as a transposed chunk's rows
    /// then come as a batch of their own rather than copied into one with
    /// others' (`concat_batches`): for a caller that gathers every batch
    /// into one table anyway.
    pub exact_batch_size: bool,
}

impl Default for ArrowReaderOptions {
    fn default() -> Self {
        Self {
            batch_size: 8192,
            projection: None,
            bad_records: BadRecords::Fail,
            format: RecordFormat::FromMetadata,
            direct: true,
            parallelism: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get) - 1,
            exact_batch_size: true,
        }
    }
}

/// Reads a Riegeli/records file's records as Arrow [`RecordBatch`]es.
///
/// Errors of the file (I/O, corruption) are the `RecordReader`'s: give it a
/// recovery callback (`set_recovery`) to skip damage. Errors of records are
/// this crate's, under [`ArrowReaderOptions::bad_records`]. After an error,
/// reading can go on: the next call continues after the bad record.
///
/// ```
/// use riegeli_arrow::{ArrowReader, ArrowReaderOptions};
/// use riegeli_records::{RecordReader, RecordWriter, RecordWriterOptions, RecordsMetadata, set_record_type};
/// use prost::Message;
/// # use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
/// # use prost_types::field_descriptor_proto::{Label, Type};
/// # let field = |name: &str, number| FieldDescriptorProto {
/// #     name: Some(name.into()), number: Some(number), label: Some(Label::Optional as i32),
/// #     r#type: Some(Type::Int32 as i32), ..Default::default()
/// # };
/// // `file` defines `message Point { int32 x = 1; int32 y = 2; }` (proto3).
/// # let file = FileDescriptorProto {
/// #     name: Some("demo.proto".into()), package: Some("demo".into()), syntax: Some("proto3".into()),
/// #     message_type: vec![DescriptorProto {
/// #         name: Some("Point".into()), field: vec![field("x", 1), field("y", 2)], ..Default::default()
/// #     }],
/// #     ..Default::default()
/// # };
/// let mut metadata = RecordsMetadata::default();
/// set_record_type(&mut metadata, "demo.Point", &[file])?;
/// let mut options = RecordWriterOptions::default();
/// options.metadata = Some(metadata.encode_to_vec());
/// let mut writer = RecordWriter::new(Vec::new(), options)?;
/// writer.write_record(&[0x08, 0x03, 0x10, 0x04])?; // x: 3, y: 4
/// let file = writer.close()?;
///
/// let mut options = ArrowReaderOptions::default();
/// options.projection = Some(vec!["y".to_owned()]);
/// let reader = ArrowReader::new(RecordReader::new(std::io::Cursor::new(file)), options)?;
/// let batches = reader.collect::<Result<Vec<_>, _>>()?;
/// assert_eq!(batches[0].num_rows(), 1);
/// assert_eq!(batches[0].schema().fields().len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ArrowReader<R> {
    reader: RecordReader<R>,
    decoder: Decoder,
    batch_size: usize,
    /// Makes the batches of transposed chunks, if they go straight into
    /// columns: on the reader's decoding threads, or here.
    chunk_batches: Option<Arc<ChunkBatches>>,
    /// Rows decoded but not yet returned, in order: a transposed chunk is
    /// decoded whole, and may fill more than a batch.
    ready: VecDeque<RecordBatch>,
    /// Their rows.
    ready_rows: usize,
    /// Whether batches are joined to make `batch_size` rows.
    exact_batch_size: bool,
    /// Chunks decoded straight into the columns so far.
    direct_chunks: u64,
    done: bool,
}

impl<R: Read + Seek> ArrowReader<R> {
    /// Reads `reader`'s records as described by `options`, from its next
    /// record. The record type, unless given, comes from the file's metadata
    /// (read now). A projected read of protobuf messages tells the reader the
    /// field numbers it needs, so that transposed chunks decompress only
    /// those fields' buckets.
    pub fn new(reader: RecordReader<R>, options: ArrowReaderOptions) -> Result<Self> {
        Self::try_new(reader, options).map_err(|failed| failed.0)
    }

    /// [`new`](ArrowReader::new), giving the reader back with the error if
    /// it fails (boxed: a reader is large).
    pub fn try_new(
        mut reader: RecordReader<R>,
        options: ArrowReaderOptions,
    ) -> Result<Self, Box<(Error, RecordReader<R>)>> {
        let shape = (options.direct, options.parallelism, options.exact_batch_size);
        let (decoder, batch_size) = match Self::decoder(&mut reader, options) {
            Ok(decoder) => decoder,
            Err(error) => return Err(Box::new((error, reader))),
        };
        if let Some(projection) = decoder.field_projection()
            && let Err(error) = reader.set_field_projection(projection.clone())
        {
            return Err(Box::new((error.into(), reader)));
        }
        Ok(Self::assemble(reader, decoder, batch_size, shape))
    }
}

impl<R: Read> ArrowReader<R> {
    /// [`new`](ArrowReader::new) for a reader that cannot seek: the same
    /// batches, but every field of transposed chunks is decoded unless the
    /// reader was built with `field_projection` set (as
    /// [`ProtoDecoder::field_projection`] gives it).
    pub fn without_seeking(reader: RecordReader<R>, options: ArrowReaderOptions) -> Result<Self> {
        Self::try_without_seeking(reader, options).map_err(|failed| failed.0)
    }

    /// [`without_seeking`](ArrowReader::without_seeking), giving the reader
    /// back with the error if it fails.
    pub fn try_without_seeking(
        mut reader: RecordReader<R>,
        options: ArrowReaderOptions,
    ) -> Result<Self, Box<(Error, RecordReader<R>)>> {
        let shape = (options.direct, options.parallelism, options.exact_batch_size);
        match Self::decoder(&mut reader, options) {
            Ok((decoder, batch_size)) => Ok(Self::assemble(reader, decoder, batch_size, shape)),
            Err(error) => Err(Box::new((error, reader))),
        }
    }

    /// The reader of `decoder`'s batches from `reader`; with `direct`,
    /// transposed chunks are decoded into columns on its decoding threads
    /// (started on `parallelism` threads if it has none); see
    /// [`ArrowReaderOptions::exact_batch_size`].
    fn assemble(
        mut reader: RecordReader<R>,
        decoder: Decoder,
        batch_size: usize,
        (direct, parallelism, exact_batch_size): (bool, usize, bool),
    ) -> Self {
        let chunk_batches = if direct { decoder.chunk_batches().map(Arc::new) } else { None };
        if let Some(batches) = &chunk_batches {
            let batches = Arc::clone(batches);
            // What a thread makes of a chunk: its batch, or `None` if the
            // direct path gave it up (not tried again here: its records are
            // read instead).
            let decode: ChunkDecodeFn = Arc::new(move |chunk, options| {
                let header = (chunk.header.num_records(), chunk.header.decoded_data_size());
                let batch = batches.batch(&chunk.data, header, &limits(options), &FieldProjection::all());
                Some(Box::new(batch) as Made)
            });
            reader.set_chunk_decode(Some(decode), parallelism);
        }
        Self {
            reader,
            decoder,
            batch_size,
            chunk_batches,
            ready: VecDeque::new(),
            ready_rows: 0,
            exact_batch_size,
            direct_chunks: 0,
            done: false,
        }
    }

    fn decoder(reader: &mut RecordReader<R>, options: ArrowReaderOptions) -> Result<(Decoder, usize)> {
        let batch_size = options.batch_size.max(1);
        let decoder =
            Decoder::new(options, || message_type_from_metadata(&reader.read_metadata()?.unwrap_or_default()))?;
        Ok((decoder, batch_size))
    }

    /// The schema of the batches; for `tf.train.Example`s with inferred
    /// features, known once the first batch was read.
    pub fn schema(&self) -> Option<SchemaRef> {
        self.decoder.schema()
    }

    /// The next batch, or `None` at the end of the file.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        self.next_batch_up_to(self.batch_size)
    }

    /// The next batch of at most `max_rows` rows (at least 1), or `None` at
    /// the end of the file.
    pub fn next_batch_up_to(&mut self, max_rows: usize) -> Result<Option<RecordBatch>> {
        let max_rows = max_rows.max(1);
        while !self.done && self.ready_rows + self.decoder.num_rows() < max_rows {
            let Some(batches) = &self.chunk_batches else {
                let Some(record) = self.reader.read_record()? else {
                    self.done = true;
                    break;
                };
                let position = self.reader.last_pos();
                self.decoder.push(&record, position)?;
                continue;
            };
            let mut taken = None;
            let left = self.reader.decode_next_chunk_with(|chunk, options, made| {
                taken = match made {
                    // Made on a decoding thread, projected by the columns.
                    Some(made) if batches.projects_as(&options.field_projection) => {
                        made.downcast::<Option<RecordBatch>>().ok().and_then(|batch| *batch)
                    }
                    _ => {
                        let header = (chunk.header.num_records(), chunk.header.decoded_data_size());
                        batches.batch(&chunk.data, header, &limits(&options.chunks), &options.field_projection)
                    }
                };
                taken.is_some()
            })?;
            let Some(left) = left else {
                self.done = true;
                break;
            };
            if let Some(batch) = taken {
                self.direct_chunks += 1;
                // The rows of records pushed before it go first.
                self.flush_decoder()?;
                self.decoder.count_rows(batch.num_rows() as u64);
                self.ready_rows += batch.num_rows();
                self.ready.push_back(batch);
                continue;
            }
            // The records of a chunk not taken, as many as the batch needs.
            let wanted = max_rows - (self.ready_rows + self.decoder.num_rows()).min(max_rows);
            for _ in 0..left.min(wanted) {
                let Some(record) = self.reader.read_record()? else { break };
                let position = self.reader.last_pos();
                self.decoder.push(&record, position)?;
            }
        }
        self.flush_decoder()?;
        self.take_ready(max_rows)
    }

    /// Moves the rows the decoder holds to the batches ready.
    fn flush_decoder(&mut self) -> Result<()> {
        if self.decoder.num_rows() > 0 {
            let batch = self.decoder.flush()?;
            self.ready_rows += batch.num_rows();
            self.ready.push_back(batch);
        }
        Ok(())
    }

    /// The first `max_rows` rows ready (all if fewer; without
    /// `exact_batch_size`, the first batch ready if it has no more), or
    /// `None` if none is.
    fn take_ready(&mut self, max_rows: usize) -> Result<Option<RecordBatch>> {
        if !self.exact_batch_size
            && let Some(first) = self.ready.front()
            && first.num_rows() <= max_rows
        {
            self.ready_rows -= first.num_rows();
            return Ok(self.ready.pop_front());
        }
        let mut parts = Vec::new();
        let mut rows = 0;
        while rows < max_rows {
            let Some(batch) = self.ready.pop_front() else { break };
            let want = max_rows - rows;
            if batch.num_rows() > want {
                self.ready.push_front(batch.slice(want, batch.num_rows() - want));
                parts.push(batch.slice(0, want));
            } else {
                parts.push(batch);
            }
            rows += parts.last().map_or(0, RecordBatch::num_rows);
        }
        self.ready_rows -= rows;
        match parts.len() {
            0 => Ok(None),
            1 => Ok(parts.pop()),
            _ => Ok(Some(arrow_select::concat::concat_batches(&parts[0].schema(), &parts)?)),
        }
    }

    /// The records left out so far under [`BadRecords::Skip`].
    pub fn skipped(&self) -> &SkippedRecords {
        self.decoder.skipped()
    }

    /// How many transposed chunks were decoded straight into the columns so
    /// far (see [`ArrowReaderOptions::direct`]); the other chunks were read
    /// through their records.
    pub fn direct_chunks(&self) -> u64 {
        self.direct_chunks
    }

    /// The field numbers the columns need, if not all: what
    /// [`new`](ArrowReader::new) set as the reader's field projection.
    pub fn field_projection(&self) -> Option<&FieldProjection> {
        self.decoder.field_projection()
    }

    /// The underlying record reader, e.g. to call its `recover()` after a
    /// corruption error (reading then goes on past the damage).
    pub fn get_mut(&mut self) -> &mut RecordReader<R> {
        &mut self.reader
    }

    /// The underlying record reader (its transposed chunks no longer
    /// decoded into columns on its decoding threads).
    pub fn into_inner(mut self) -> RecordReader<R> {
        self.reader.set_chunk_decode(None, 0);
        self.reader
    }
}

impl<R: Read> Iterator for ArrowReader<R> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}

impl<R: Read> BatchSource for ArrowReader<R> {
    fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn schema(&self) -> Option<SchemaRef> {
        self.decoder.schema()
    }

    fn next_batch_up_to(&mut self, max_rows: usize) -> Result<Option<RecordBatch>> {
        ArrowReader::next_batch_up_to(self, max_rows)
    }

    fn skipped(&self) -> &SkippedRecords {
        self.decoder.skipped()
    }
}

/// The decoder of an [`ArrowReader`] or an
/// [`ArrayRecordArrowReader`](crate::ArrayRecordArrowReader): protobuf
/// messages or `tf.train.Example`s, projected.
#[derive(Debug)]
pub(crate) enum Decoder {
    Proto(ProtoDecoder),
    Example { decoder: ExampleDecoder, projection: Option<Vec<String>> },
}

impl Decoder {
    /// The decoder `options` describe; `from_metadata` gives the message
    /// type for [`RecordFormat::FromMetadata`].
    pub(crate) fn new(
        options: ArrowReaderOptions,
        from_metadata: impl FnOnce() -> Result<MessageDescriptor>,
    ) -> Result<Self> {
        let message = match options.format {
            RecordFormat::Example(spec) => {
                // With a spec, only the projected features are decoded at all.
                let (spec, projection) = match (spec, options.projection) {
                    (Some(spec), Some(names)) => (Some(project_spec(&spec, &names)?), None),
                    other => other,
                };
                let decoder = ExampleDecoder::new(spec, options.bad_records);
                return Ok(Self::Example { decoder, projection });
            }
            RecordFormat::Proto(message) => message,
            RecordFormat::FromMetadata => from_metadata()?,
        };
        Ok(Self::Proto(ProtoDecoder::new(&message, options.projection.as_deref(), options.bad_records)?))
    }

    /// The field numbers a record reader needs to read, if not all.
    pub(crate) fn field_projection(&self) -> Option<&FieldProjection> {
        match self {
            Self::Proto(proto) if !proto.field_projection().includes_all() => Some(proto.field_projection()),
            _ => None,
        }
    }

    pub(crate) fn schema(&self) -> Option<SchemaRef> {
        match self {
            Self::Proto(d) => Some(d.schema()),
            Self::Example { decoder, projection } => {
                let schema = decoder.schema()?;
                match projection {
                    None => Some(schema),
                    Some(names) => project_schema(&schema, names).ok(),
                }
            }
        }
    }

    /// Makes `index` the index of the next record pushed (in error messages).
    pub(crate) fn set_next_index(&mut self, index: u64) {
        match self {
            Self::Proto(d) => d.set_next_index(index),
            Self::Example { decoder, .. } => decoder.set_next_index(index),
        }
    }

    /// The maker of batches of transposed chunks, if they can go straight
    /// into the columns (never for `tf.train.Example`s).
    pub(crate) fn chunk_batches(&self) -> Option<ChunkBatches> {
        match self {
            Self::Proto(d) => d.chunk_batches(),
            Self::Example { .. } => None,
        }
    }

    /// Counts `rows` records decoded by a [`ChunkBatches`] as pushed.
    pub(crate) fn count_rows(&mut self, rows: u64) {
        if let Self::Proto(d) = self {
            d.count_rows(rows);
        }
    }

    pub(crate) fn push(&mut self, record: &[u8], position: Option<RecordPosition>) -> Result<()> {
        match self {
            Self::Proto(d) => d.push(record, position),
            Self::Example { decoder, .. } => decoder.push(record, position),
        }
    }

    pub(crate) fn flush(&mut self) -> Result<RecordBatch> {
        match self {
            Self::Proto(d) => d.flush(),
            Self::Example { decoder, projection } => {
                let batch = decoder.flush()?;
                match projection {
                    None => Ok(batch),
                    Some(names) => {
                        let indices = project_indices(&batch.schema(), names)?;
                        Ok(batch.project(&indices)?)
                    }
                }
            }
        }
    }

    pub(crate) fn num_rows(&self) -> usize {
        match self {
            Self::Proto(d) => d.num_rows(),
            Self::Example { decoder, .. } => decoder.num_rows(),
        }
    }

    pub(crate) fn skipped(&self) -> &SkippedRecords {
        match self {
            Self::Proto(d) => d.skipped(),
            Self::Example { decoder, .. } => decoder.skipped(),
        }
    }
}

/// The decode limits of `options`.
fn limits(options: &ChunkReadOptions) -> DecodeLimits {
    DecodeLimits { max_decoded_size: options.max_decoded_size, max_num_records: options.max_num_records }
}

/// The features of `spec` named in `names`, in that order.
fn project_spec(spec: &[(String, FeatureKind)], names: &[String]) -> Result<Vec<(String, FeatureKind)>> {
    names
        .iter()
        .map(|name| {
            spec.iter()
                .find(|(n, _)| n == name)
                .cloned()
                .ok_or_else(|| crate::error::Error::projection(format!("no feature {name:?} in the feature spec")))
        })
        .collect()
}

fn project_indices(schema: &SchemaRef, names: &[String]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|name| schema.index_of(name).map_err(|_| crate::error::Error::projection(format!("no feature {name:?}"))))
        .collect()
}

fn project_schema(schema: &SchemaRef, names: &[String]) -> Result<SchemaRef> {
    Ok(std::sync::Arc::new(schema.project(&project_indices(schema, names)?)?))
}
