//! Records of Riegeli/records files as Apache Arrow columns.
//!
//! Most Riegeli files hold serialized protocol buffers, and many carry their
//! type in the file's metadata. This crate turns such records into Arrow
//! [`RecordBatch`](arrow_array::RecordBatch)es, one column per field:
//!
//! - [`ArrowReader`] reads a `RecordReader`'s records in batches, finding the
//!   message type in the file's metadata when none is given. A projection
//!   (field paths such as `a` and `b.c`) keeps only some columns, and makes a
//!   transposed chunk decompress only the buckets of those fields.
//! - [`ProtoDecoder`] is the same on records from anywhere (an
//!   `ArrayRecordReader`'s, for example): push records, flush batches.
//! - [`ArrayRecordArrowReader`] reads records by index (all, a range or a
//!   list of indices of an `ArrayRecordReader`, or of `ArrayRecordShards`),
//!   with the same pushdown of the projection to transposed chunks.
//! - [`ArrowStream`] makes either an Arrow `RecordBatchReader` (for the C
//!   stream interface), its schema known before the first batch, with an
//!   optional row limit.
//! - [`JsonEncoder`] prints the rows of a [`ProtoDecoder`]'s batches as
//!   protobuf JSON (what `riegeli cat --format proto-json` prints).
//! - [`ExampleDecoder`] does it for `tf.train.Example` records (what TFDS
//!   writes, usually with no descriptor): a column per feature.
//!
//! Records are parsed by a hand-written protobuf wire walker that writes
//! straight into Arrow buffers; a record that is not a valid message is an
//! error naming it, or is skipped and counted ([`BadRecords`]). An
//! [`ArrowReader`] takes transposed chunks of protobuf messages straight
//! into the same buffers, with no serialized record in between: the field
//! values the chunk's decoder hands out (only those of the projected fields'
//! buckets, the others not even decompressed) are replayed through the
//! walker's code. Columns with maps or real oneofs, and chunks with anything
//! the walker would have to judge (a bad record, damage), go through their
//! records as above ([`ArrowReaderOptions::direct`]).
//!
//! # Example
//!
//! ```
//! use prost::Message;
//! use riegeli_arrow::{ArrowReader, ArrowReaderOptions};
//! use riegeli_records::{RecordReader, RecordWriter, RecordWriterOptions, RecordsMetadata, set_record_type};
//! # use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
//! # use prost_types::field_descriptor_proto::{Label, Type};
//! # let field = |name: &str, number| FieldDescriptorProto {
//! #     name: Some(name.into()), number: Some(number), label: Some(Label::Optional as i32),
//! #     r#type: Some(Type::Int32 as i32), ..Default::default()
//! # };
//! // `file` defines `message Point { int32 x = 1; int32 y = 2; }` (proto3).
//! # let file = FileDescriptorProto {
//! #     name: Some("demo.proto".into()), package: Some("demo".into()), syntax: Some("proto3".into()),
//! #     message_type: vec![DescriptorProto {
//! #         name: Some("Point".into()), field: vec![field("x", 1), field("y", 2)], ..Default::default()
//! #     }],
//! #     ..Default::default()
//! # };
//! let mut metadata = RecordsMetadata::default();
//! set_record_type(&mut metadata, "demo.Point", &[file])?;
//! let options: RecordWriterOptions = "transpose".parse()?;
//! let mut writer = RecordWriter::new(Vec::new(), RecordWriterOptions { metadata: Some(metadata.encode_to_vec()), ..options })?;
//! for i in 0..10 {
//!     writer.write_record(&[0x08, i, 0x10, 2 * i])?; // x: i, y: 2i
//! }
//! let file = writer.close()?;
//!
//! let reader = RecordReader::new(std::io::Cursor::new(file));
//! let options = ArrowReaderOptions { batch_size: 4, ..Default::default() };
//! let batches = ArrowReader::new(reader, options)?.collect::<Result<Vec<_>, _>>()?;
//! assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), [4, 4, 2]);
//! assert_eq!(batches[0].schema().field(1).name(), "y");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Columns
//!
//! See [`ProtoDecoder::new`] for the Arrow type of each protobuf type. In
//! short: scalars as the Arrow type of their width and sign, strings Utf8,
//! bytes Binary, enums Int32 (their numbers), messages Struct, repeated
//! fields List, maps Map; a field is nullable exactly when it has presence.

#![forbid(unsafe_code)]

mod array_record;
mod columns;
mod decoder;
mod descriptor;
mod direct;
mod error;
mod example;
mod json;
mod plan;
mod reader;
mod stream;
mod walker;
mod wire;

pub use crate::{
    array_record::{ArrayRecordArrowReader, RecordSelection, RecordsByIndex},
    decoder::{BadRecords, ProtoDecoder, SkippedRecords},
    descriptor::{message_type, message_type_from_metadata, message_type_from_set, message_type_of_file},
    error::{Error, ErrorKind, Result},
    example::{ExampleDecoder, FeatureKind},
    json::JsonEncoder,
    reader::{ArrowReader, ArrowReaderOptions, RecordFormat},
    stream::{ArrowStream, BatchSource},
};
