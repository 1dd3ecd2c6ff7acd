//! `ProtoDecoder`: serialized messages in, `RecordBatch`es out; and the
//! policy for bad records, shared with the `tf.train.Example` decoder.

use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::{Schema, SchemaRef};
use prost_reflect::MessageDescriptor;
use riegeli_codec::{DecodeLimits, FieldProjection, TransposedChunkDecoder};
use riegeli_records::RecordPosition;

use crate::columns::Column;
use crate::direct::Tape;
use crate::error::{Error, ErrorKind, Result};
use crate::plan::RecordPlan;
use crate::walker::Walker;
use crate::wire::WireError;

/// What to do with a record that cannot be decoded (not a valid message of
/// the type, or a `tf.train.Example` that does not fit the features).
///
/// This is about records only; damage to the file itself is the business of
/// the `RecordReader` (its `set_recovery`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BadRecords {
    /// Fail with [`ErrorKind::BadRecord`] (the default). The bad record is
    /// consumed: decoding can go on with the next record.
    #[default]
    Fail,
    /// Leave the record out of the batch, and count it in [`SkippedRecords`].
    Skip,
}

/// The records left out under [`BadRecords::Skip`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkippedRecords {
    /// How many records were left out.
    pub count: u64,
    /// Why, for the first [`SkippedRecords::KEPT_MESSAGES`] of them (each
    /// message names the record, as [`ErrorKind::BadRecord`] does).
    pub first_errors: Vec<String>,
}

impl SkippedRecords {
    /// How many error messages are kept.
    pub const KEPT_MESSAGES: usize = 10;

    pub(crate) fn note(&mut self, error: &Error) {
        self.count += 1;
        if self.first_errors.len() < Self::KEPT_MESSAGES {
            self.first_errors.push(error.to_string());
        }
    }

    /// What `policy` makes of the bad record `error`: the error, or noted here.
    pub(crate) fn handle(&mut self, policy: BadRecords, error: Error) -> Result<()> {
        match policy {
            BadRecords::Fail => Err(error),
            BadRecords::Skip => {
                self.note(&error);
                Ok(())
            }
        }
    }
}

/// The bad-record error of record `index` at `position`.
pub(crate) fn bad_record(index: u64, position: Option<RecordPosition>, error: &WireError) -> Error {
    Error::new(ErrorKind::BadRecord { index, position, reason: error.to_string() })
}

/// Serialized protobuf messages of one type, decoded into Arrow columns.
///
/// Records are parsed by the crate's own wire walker straight into column
/// builders (no `DynamicMessage` per record), with protobuf's semantics:
/// unknown fields are skipped, repeated scalars are accepted packed and
/// unpacked, the last occurrence of a singular field wins, occurrences of a
/// singular message field are merged, a map keeps the last entry of a key,
/// and a oneof member clears the others. Fields outside the projection are
/// skipped without being checked.
///
/// The schema: see [`ProtoDecoder::new`].
///
/// ```
/// use prost_reflect::{DynamicMessage, Value};
/// use prost::Message;
/// use riegeli_arrow::{BadRecords, ProtoDecoder, message_type};
/// # use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
/// # use prost_types::field_descriptor_proto::{Label, Type};
/// # let field = |name: &str, number| FieldDescriptorProto {
/// #     name: Some(name.into()), number: Some(number), label: Some(Label::Optional as i32),
/// #     r#type: Some(Type::Int32 as i32), ..Default::default()
/// # };
/// # let file = FileDescriptorProto {
/// #     name: Some("demo.proto".into()), package: Some("demo".into()), syntax: Some("proto3".into()),
/// #     message_type: vec![DescriptorProto {
/// #         name: Some("Point".into()), field: vec![field("x", 1), field("y", 2)], ..Default::default()
/// #     }],
/// #     ..Default::default()
/// # };
/// let message = message_type(vec![file], "demo.Point")?;
/// // `message` is `message Point { int32 x = 1; int32 y = 2; }` (proto3).
/// let mut decoder = ProtoDecoder::new(&message, None::<&[&str]>, BadRecords::Fail)?;
/// let mut point = DynamicMessage::new(message.clone());
/// point.set_field_by_name("x", Value::I32(3));
/// decoder.push(&point.encode_to_vec(), None)?;
/// let batch = decoder.flush()?;
/// assert_eq!(batch.num_rows(), 1);
/// assert_eq!(batch.schema().field(0).name(), "x");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ProtoDecoder {
    plan: Arc<RecordPlan>,
    columns: Vec<Column>,
    rows: usize,
    walker: Walker,
    bad_records: BadRecords,
    skipped: SkippedRecords,
    /// Records pushed so far, bad ones included: the index of the next.
    index: u64,
}

/// The state of the direct path: a decoder of transposed chunks and its tape.
#[derive(Debug, Default)]
struct Direct {
    decoder: TransposedChunkDecoder,
    tape: Tape,
}

/// Decodes transposed chunks straight into batches of their own, the fields
/// outside the projection not even decompressed (see `crate::direct`), on
/// whichever thread asks: what an [`ArrowReader`](crate::ArrowReader) hands
/// its record reader's decoding threads. Shared by them; each call takes the
/// scratch state of a direct path that no other call is using.
#[derive(Debug)]
pub(crate) struct ChunkBatches {
    plan: Arc<RecordPlan>,
    /// The scratch states not in use.
    idle: Mutex<Vec<Direct>>,
}

impl ChunkBatches {
    /// Whether a reader projecting fields by `projection` gets the batches
    /// that [`batch`](Self::batch) makes given no projection.
    pub(crate) fn projects_as(&self, projection: &FieldProjection) -> bool {
        projection.includes_all() || *projection == self.plan.field_projection
    }

    /// The rows of the records of a transposed chunk (its data and header
    /// values), projected by `projection` (or, if it includes all, by the
    /// columns): `None` if the direct path does not handle the chunk (a
    /// damaged chunk, a record that is not a valid message, ...). Its
    /// records are then to be [`push`](ProtoDecoder::push)ed as usual, which
    /// reports what is wrong.
    pub(crate) fn batch(
        &self,
        data: &[u8],
        (num_records, decoded_data_size): (u64, u64),
        limits: &DecodeLimits,
        projection: &FieldProjection,
    ) -> Option<RecordBatch> {
        // `try_lock`, never `lock`: in a child forked while another thread
        // held it, the lock stays held forever; a fresh state does then.
        let mut direct = self.idle.try_lock().ok().and_then(|mut idle| idle.pop()).unwrap_or_default();
        let projection = if projection.includes_all() { &self.plan.field_projection } else { projection };
        let mut columns: Vec<Column> = self.plan.root.fields.iter().map(|f| Column::new(&f.arrow)).collect();
        let sizes = (num_records, decoded_data_size, data.len() as u64);
        let rows = match direct.tape.flat(&self.plan.root, &mut columns, sizes) {
            Some(mut flat) => {
                match direct.decoder.decode_to_sink(data, sizes.0, sizes.1, limits, projection, &mut flat) {
                    Ok(std::ops::ControlFlow::Continue(())) => flat.finish().ok(),
                    _ => None,
                }
            }
            None => match direct.tape.recorder(&self.plan.root, &mut columns, sizes) {
                Some(mut recorder) => {
                    match direct.decoder.decode_to_sink(data, sizes.0, sizes.1, limits, projection, &mut recorder) {
                        Ok(std::ops::ControlFlow::Continue(())) => recorder
                            .finish()
                            .ok()
                            .and_then(|rows| direct.tape.replay(&self.plan.root, &mut columns, rows).ok()),
                        _ => None,
                    }
                }
                // No columns: the walker counts the rows.
                None => None,
            },
        };
        if let Ok(mut idle) = self.idle.try_lock() {
            idle.push(direct);
        }
        let arrays = columns
            .iter_mut()
            .zip(self.plan.root.fields.iter())
            .map(|(column, field)| column.finish(&field.arrow))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        finish_batch(self.plan.schema.clone(), arrays, rows?).ok()
    }
}

impl ProtoDecoder {
    /// A decoder of messages of type `message`, with the columns of the
    /// fields named by `projection` (all fields with `None`).
    ///
    /// A projection is a list of field paths: names joined by `.` (`a`,
    /// `b.c`), each going through message fields (singular or repeated; a
    /// map is selected whole). The schema keeps the fields of the message's
    /// descriptor, in its order, that are selected or have selected fields
    /// below them; a struct keeps only its selected children.
    ///
    /// Column types: int32/sint32/sfixed32 → Int32, int64/sint64/sfixed64 →
    /// Int64, uint32/fixed32 → UInt32, uint64/fixed64 → UInt64, float →
    /// Float32, double → Float64, bool → Boolean, string → Utf8, bytes →
    /// Binary, **enums → Int32** (their numbers: unknown values of open enums
    /// survive), messages → Struct, repeated fields → List (items never
    /// null), maps → Map of non-null `key` and `value` (a missing value is
    /// its default). A singular field is nullable exactly when it has
    /// presence (proto2 `optional`/`required`, proto3 `optional`, messages,
    /// oneof members); one without presence that is absent is its default.
    ///
    /// [`ErrorKind::Type`] for a type with no Arrow form (a recursive type
    /// selected whole, group fields), [`ErrorKind::Projection`] for a path
    /// that names no field.
    pub fn new<S: AsRef<str>>(
        message: &MessageDescriptor,
        projection: Option<&[S]>,
        bad_records: BadRecords,
    ) -> Result<Self> {
        let plan = RecordPlan::new(message, projection)?;
        let columns = plan.root.fields.iter().map(|f| Column::new(&f.arrow)).collect();
        Ok(Self {
            plan: Arc::new(plan),
            columns,
            rows: 0,
            walker: Walker::default(),
            bad_records,
            skipped: SkippedRecords::default(),
            index: 0,
        })
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.plan.schema.clone()
    }

    /// The field numbers of the projection, for a `RecordReader`'s
    /// `field_projection`: a transposed chunk then decompresses only what the
    /// columns need (the members of a oneof with a selected member are kept,
    /// by their existence only, as a later member clears an earlier one).
    pub fn field_projection(&self) -> &FieldProjection {
        &self.plan.field_projection
    }

    /// Decodes one record into the batch being built. `position`, where the
    /// record is in its file if known, goes into error messages.
    ///
    /// A bad record is an [`ErrorKind::BadRecord`] error under
    /// [`BadRecords::Fail`], and is counted in [`skipped`](Self::skipped)
    /// under [`BadRecords::Skip`]; either way it leaves no row.
    pub fn push(&mut self, record: &[u8], position: Option<RecordPosition>) -> Result<()> {
        let index = self.index;
        self.index += 1;
        match self.walker.walk_record(&self.plan.root, &mut self.columns, record) {
            Ok(()) => {
                self.rows += 1;
                Ok(())
            }
            Err(wire) => {
                for column in &mut self.columns {
                    column.truncate(self.rows);
                }
                self.skipped.handle(self.bad_records, bad_record(index, position, &wire))
            }
        }
    }

    /// The maker of batches of transposed chunks for the columns of this
    /// decoder, if the direct path can fill them (see [`ChunkBatches`]).
    pub(crate) fn chunk_batches(&self) -> Option<ChunkBatches> {
        crate::direct::supported(&self.plan.root)
            .then(|| ChunkBatches { plan: Arc::clone(&self.plan), idle: Mutex::default() })
    }

    /// Counts `rows` records decoded elsewhere (by [`ChunkBatches`]) as
    /// pushed: the next record pushed has the index after them.
    pub(crate) fn count_rows(&mut self, rows: u64) {
        self.index += rows;
    }

    /// Makes `index` the index of the next record pushed (in error
    /// messages), for records that come from elsewhere than in order.
    pub(crate) fn set_next_index(&mut self, index: u64) {
        self.index = index;
    }

    /// The number of rows of the batch being built.
    pub fn num_rows(&self) -> usize {
        self.rows
    }

    /// The batch of the records pushed since the last flush (possibly empty).
    pub fn flush(&mut self) -> Result<RecordBatch> {
        let rows = std::mem::take(&mut self.rows);
        let arrays = self
            .columns
            .iter_mut()
            .zip(self.plan.root.fields.iter())
            .map(|(column, field)| column.finish(&field.arrow))
            .collect::<Result<Vec<_>, _>>()?;
        finish_batch(self.plan.schema.clone(), arrays, rows)
    }

    /// The records left out so far under [`BadRecords::Skip`].
    pub fn skipped(&self) -> &SkippedRecords {
        &self.skipped
    }
}

/// A batch of `rows` rows (also when there are no columns).
pub(crate) fn finish_batch(
    schema: Arc<Schema>,
    arrays: Vec<arrow_array::ArrayRef>,
    rows: usize,
) -> Result<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(schema, arrays, &options)?)
}
