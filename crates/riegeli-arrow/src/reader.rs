//! `ArrowReader`: a `RecordReader`'s records as `RecordBatch`es.

use std::io::{Read, Seek};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use prost_reflect::MessageDescriptor;
use riegeli_codec::{DecodeLimits, FieldProjection};
use riegeli_records::{RecordPosition, RecordReader};

use crate::decoder::{BadRecords, ProtoDecoder, SkippedRecords};
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
}

impl Default for ArrowReaderOptions {
    fn default() -> Self {
        Self {
            batch_size: 8192,
            projection: None,
            bad_records: BadRecords::Fail,
            format: RecordFormat::FromMetadata,
            direct: true,
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
    /// Whether transposed chunks go straight into the columns.
    direct: bool,
    /// Rows decoded but not yet returned: a transposed chunk is decoded
    /// whole, and may fill more than a batch.
    pending: Option<RecordBatch>,
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
        let direct = options.direct;
        let (decoder, batch_size) = match Self::decoder(&mut reader, options) {
            Ok(decoder) => decoder,
            Err(error) => return Err(Box::new((error, reader))),
        };
        if let Some(projection) = decoder.field_projection()
            && let Err(error) = reader.set_field_projection(projection.clone())
        {
            return Err(Box::new((error.into(), reader)));
        }
        Ok(Self { reader, decoder, batch_size, direct, pending: None, direct_chunks: 0, done: false })
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
        let direct = options.direct;
        match Self::decoder(&mut reader, options) {
            Ok((decoder, batch_size)) => {
                Ok(Self { reader, decoder, batch_size, direct, pending: None, direct_chunks: 0, done: false })
            }
            Err(error) => Err(Box::new((error, reader))),
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
        let pending_rows = |pending: &Option<RecordBatch>| pending.as_ref().map_or(0, RecordBatch::num_rows);
        let direct = self.direct && self.decoder.has_direct_path();
        while !self.done && pending_rows(&self.pending) + self.decoder.num_rows() < max_rows {
            if direct {
                let (decoder, taken) = (&mut self.decoder, &mut self.direct_chunks);
                let left = self.reader.decode_next_chunk_with(|chunk, options| {
                    let limits = DecodeLimits {
                        max_decoded_size: options.chunks.max_decoded_size,
                        max_num_records: options.chunks.max_num_records,
                    };
                    let header = (chunk.header.num_records(), chunk.header.decoded_data_size());
                    let took = decoder.push_transposed(&chunk.data, header, &limits, &options.field_projection);
                    *taken += u64::from(took);
                    took
                })?;
                let Some(left) = left else {
                    self.done = true;
                    break;
                };
                // The records of a chunk not taken, as many as the batch needs.
                let wanted = max_rows - (pending_rows(&self.pending) + self.decoder.num_rows()).min(max_rows);
                for _ in 0..left.min(wanted) {
                    let Some(record) = self.reader.read_record()? else { break };
                    let position = self.reader.last_pos();
                    self.decoder.push(&record, position)?;
                }
                continue;
            }
            let Some(record) = self.reader.read_record()? else {
                self.done = true;
                break;
            };
            let position = self.reader.last_pos();
            self.decoder.push(&record, position)?;
        }
        let batch = match self.pending.take() {
            None if self.decoder.num_rows() == 0 && self.done => return Ok(None),
            None => self.decoder.flush()?,
            Some(pending) if pending.num_rows() >= max_rows => pending,
            Some(pending) if self.decoder.num_rows() == 0 => pending,
            Some(pending) => {
                let rest = self.decoder.flush()?;
                arrow_select::concat::concat_batches(&pending.schema(), [&pending, &rest])?
            }
        };
        if batch.num_rows() > max_rows {
            self.pending = Some(batch.slice(max_rows, batch.num_rows() - max_rows));
            return Ok(Some(batch.slice(0, max_rows)));
        }
        Ok(Some(batch))
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

    /// The underlying record reader.
    pub fn into_inner(self) -> RecordReader<R> {
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

    /// Whether transposed chunks can go straight into the columns.
    pub(crate) fn has_direct_path(&self) -> bool {
        matches!(self, Self::Proto(d) if d.has_direct_path())
    }

    /// See [`ProtoDecoder::push_transposed`]; always `false` for
    /// `tf.train.Example`s.
    pub(crate) fn push_transposed(
        &mut self,
        data: &[u8],
        header: (u64, u64),
        limits: &DecodeLimits,
        projection: &FieldProjection,
    ) -> bool {
        match self {
            Self::Proto(d) => d.push_transposed(data, header, limits, projection),
            Self::Example { .. } => false,
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
