//! Records as protobuf messages: the record type and file descriptors stored in a
//! file's `RecordsMetadata` (or given to `write --descriptor-set`) become a
//! `prost_reflect::DescriptorPool`, and records become dynamic messages printed
//! in text format or canonical JSON.

use anyhow::{Context, Result, anyhow};
use arrow_array::RecordBatch;
use prost_reflect::text_format::FormatOptions;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use riegeli_arrow::{BadRecords, JsonEncoder, ProtoDecoder};
use riegeli_records::RecordsMetadata;

use crate::exit::Usage;

/// Builds the descriptor pool of `files` and finds `type_name` in it
/// ([`riegeli_arrow::message_type`]: files importing well-known types without
/// carrying them resolve against prost-reflect's copies). `source` names where
/// the descriptors come from, for error messages.
pub(crate) fn message_type(
    files: Vec<FileDescriptorProto>,
    type_name: &str,
    source: &str,
) -> Result<MessageDescriptor> {
    riegeli_arrow::message_type(files, type_name).map_err(|e| anyhow!("{source}: {e}"))
}

/// The record type of a file from its metadata; a usage error when the file has none.
pub(crate) fn from_metadata(metadata: Option<RecordsMetadata>, name: &str, format: &str) -> Result<MessageDescriptor> {
    let metadata = metadata.unwrap_or_default();
    if metadata.record_type_name.is_empty() {
        return Err(Usage(format!(
            "{name}: --format {format} needs a record type in the file metadata, and this file has none \
             (write it with --record-type NAME --descriptor-set FILE)"
        ))
        .into());
    }
    if metadata.file_descriptor.is_empty() {
        return Err(Usage(format!(
            "{name}: --format {format}: the file metadata names record type {:?} but carries no file descriptors",
            metadata.record_type_name
        ))
        .into());
    }
    message_type(metadata.file_descriptor, &metadata.record_type_name, name)
}

/// Prints records of one message type.
pub(crate) struct ProtoPrinter {
    desc: MessageDescriptor,
    text: FormatOptions,
    json: SerializeOptions,
    pretty: bool,
}

impl ProtoPrinter {
    pub(crate) fn new(desc: MessageDescriptor, pretty: bool) -> Self {
        Self {
            desc,
            // Unknown fields are printed (by number) so that nothing in a record is hidden.
            text: FormatOptions::new().pretty(pretty).skip_unknown_fields(false),
            json: SerializeOptions::new(),
            pretty,
        }
    }

    fn decode(&self, record: &[u8]) -> Result<DynamicMessage> {
        DynamicMessage::decode(self.desc.clone(), record)
            .map_err(|e| anyhow!("is not a valid {}: {}", self.desc.full_name(), one_line(&e.to_string())))
    }

    /// The record in protobuf text format (one line unless pretty).
    pub(crate) fn text(&self, record: &[u8]) -> Result<String> {
        Ok(self.decode(record)?.to_text_format_with_options(&self.text))
    }

    /// The record in canonical protobuf JSON (one line unless pretty).
    pub(crate) fn json(&self, record: &[u8]) -> Result<String> {
        let message = self.decode(record)?;
        let mut out = Vec::new();
        if self.pretty {
            let mut serializer = serde_json::Serializer::pretty(&mut out);
            message.serialize_with_options(&mut serializer, &self.json)?;
        } else {
            let mut serializer = serde_json::Serializer::new(&mut out);
            message.serialize_with_options(&mut serializer, &self.json)?;
        }
        String::from_utf8(out).context("JSON output")
    }
}

/// Records of one message type decoded by riegeli-arrow (its wire walker,
/// into Arrow columns) and printed as protobuf JSON from the columns: what
/// `cat --format proto-json` prints.
pub(crate) struct JsonRows {
    type_name: String,
    decoder: ProtoDecoder,
    encoder: JsonEncoder,
}

impl JsonRows {
    /// `None` for a type whose JSON the columns cannot give (see
    /// [`JsonEncoder::new`]): [`ProtoPrinter::json`] prints those.
    pub(crate) fn new(desc: &MessageDescriptor) -> Option<Self> {
        let decoder = ProtoDecoder::new(desc, None::<&[&str]>, BadRecords::Fail).ok()?;
        let encoder = JsonEncoder::new(desc, &decoder.schema()).ok()?;
        Some(Self { type_name: desc.full_name().to_owned(), decoder, encoder })
    }

    /// Decodes `record` into the batch; an error says why it is not a valid message.
    pub(crate) fn push(&mut self, record: &[u8]) -> Result<()> {
        self.decoder.push(record, None).map_err(|e| match e.kind() {
            riegeli_arrow::ErrorKind::BadRecord { reason, .. } => {
                anyhow!("is not a valid {}: {}", self.type_name, one_line(reason))
            }
            _ => anyhow::Error::new(e),
        })
    }

    /// The batch of the records pushed since the last flush.
    pub(crate) fn flush(&mut self) -> Result<RecordBatch> {
        Ok(self.decoder.flush()?)
    }

    /// Appends row `row` of `batch` as JSON (on one line unless `pretty`).
    pub(crate) fn write_row(&self, batch: &RecordBatch, row: usize, pretty: bool, out: &mut Vec<u8>) -> Result<()> {
        Ok(self.encoder.write_row(batch, row, pretty, out)?)
    }
}

/// `riegeli.RecordsMetadata` (google/riegeli `riegeli/records/records_metadata.proto`) as a
/// descriptor, so that a metadata chunk, extensions included, can be printed in text format.
fn records_metadata_type() -> Result<MessageDescriptor> {
    let field = |name: &str, number: i32, r#type: Type, label: Label, type_name: Option<&str>| FieldDescriptorProto {
        name: Some(name.to_owned()),
        number: Some(number),
        label: Some(label as i32),
        r#type: Some(r#type as i32),
        type_name: type_name.map(str::to_owned),
        ..Default::default()
    };
    let file = FileDescriptorProto {
        name: Some("riegeli/records/records_metadata.proto".to_owned()),
        package: Some("riegeli".to_owned()),
        dependency: vec!["google/protobuf/descriptor.proto".to_owned()],
        message_type: vec![DescriptorProto {
            name: Some("RecordsMetadata".to_owned()),
            field: vec![
                field("file_comment", 1, Type::String, Label::Optional, None),
                field("record_type_name", 2, Type::String, Label::Optional, None),
                field(
                    "file_descriptor",
                    3,
                    Type::Message,
                    Label::Repeated,
                    Some(".google.protobuf.FileDescriptorProto"),
                ),
                field("record_writer_options", 4, Type::String, Label::Optional, None),
                field("num_records", 5, Type::Int64, Label::Optional, None),
            ],
            ..Default::default()
        }],
        syntax: Some("proto2".to_owned()),
        ..Default::default()
    };
    // The global pool holds the well-known types, descriptor.proto included.
    let mut pool = DescriptorPool::global();
    pool.add_file_descriptor_proto(file).map_err(|e| anyhow!("records_metadata.proto: {e}"))?;
    pool.get_message_by_name("riegeli.RecordsMetadata").context("riegeli.RecordsMetadata")
}

/// Serialized `RecordsMetadata` in multi-line text format, each line indented by `indent`.
pub(crate) fn metadata_text(serialized: &[u8], indent: &str) -> Result<String> {
    let message = DynamicMessage::decode(records_metadata_type()?, serialized)
        .map_err(|e| anyhow!("metadata is not a valid RecordsMetadata: {e}"))?;
    let text = message.to_text_format_with_options(&FormatOptions::new().pretty(true).skip_unknown_fields(false));
    Ok(text.lines().map(|line| format!("{indent}{line}\n")).collect())
}

/// Serialized `RecordsMetadata` as protobuf JSON, with the proto field names (like the
/// other keys of `describe --json`) and 64-bit integers as numbers.
pub(crate) fn metadata_json(serialized: &[u8]) -> Result<serde_json::Value> {
    let message = DynamicMessage::decode(records_metadata_type()?, serialized)
        .map_err(|e| anyhow!("metadata is not a valid RecordsMetadata: {e}"))?;
    let options = SerializeOptions::new().use_proto_field_name(true).stringify_64_bit_integers(false);
    Ok(message.serialize_with_options(serde_json::value::Serializer, &options)?)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, number: i32, r#type: Type, type_name: Option<&str>) -> FieldDescriptorProto {
        FieldDescriptorProto {
            name: Some(name.to_owned()),
            number: Some(number),
            label: Some(Label::Optional as i32),
            r#type: Some(r#type as i32),
            type_name: type_name.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn metadata_in_text_format_keeps_extensions() {
        // file_comment "hi", record_type_name "a.B", num_records 3, and extension
        // field 1000 = varint 5 (tag 1000 << 3 = 0x1f40 = c0 3e).
        let serialized = b"\x0a\x02hi\x12\x03a.B\x28\x03\xc0\x3e\x05";
        assert_eq!(
            metadata_text(serialized, "  ").unwrap(),
            "  file_comment: \"hi\"\n  record_type_name: \"a.B\"\n  num_records: 3\n  1000: 5\n"
        );
        let json = metadata_json(serialized).unwrap();
        assert_eq!(json, serde_json::json!({"file_comment": "hi", "record_type_name": "a.B", "num_records": 3}));
        assert!(metadata_text(b"\x0a\x05hi", "").is_err(), "truncated");
    }

    #[test]
    fn message_types_resolve_well_known_imports_and_name_what_is_missing() {
        let file = FileDescriptorProto {
            name: Some("t.proto".to_owned()),
            package: Some("t".to_owned()),
            dependency: vec!["google/protobuf/timestamp.proto".to_owned()],
            message_type: vec![DescriptorProto {
                name: Some("Event".to_owned()),
                field: vec![
                    field("at", 1, Type::Message, Some(".google.protobuf.Timestamp")),
                    field("what", 2, Type::String, None),
                ],
                ..Default::default()
            }],
            syntax: Some("proto3".to_owned()),
            ..Default::default()
        };
        let desc = message_type(vec![file.clone()], ".t.Event", "test").unwrap();
        assert_eq!(desc.full_name(), "t.Event");
        let printer = ProtoPrinter::new(desc.clone(), false);
        // at { seconds: 1 } (field 1, 2 bytes: 08 01), what: "x".
        assert_eq!(printer.text(b"\x0a\x02\x08\x01\x12\x01x").unwrap(), "at{seconds:1},what:\"x\"");
        assert_eq!(printer.json(b"\x0a\x02\x08\x01\x12\x01x").unwrap(), r#"{"at":"1970-01-01T00:00:01Z","what":"x"}"#);
        // The same through riegeli-arrow's columns (what `cat --format proto-json` uses).
        let mut rows = JsonRows::new(&desc).expect("a type with a JSON form in columns");
        rows.push(b"\x0a\x02\x08\x01\x12\x01x").unwrap();
        let err = rows.push(b"\x12\x05x").unwrap_err().to_string();
        assert!(err.starts_with("is not a valid t.Event: "), "{err}");
        let batch = rows.flush().unwrap();
        let mut out = Vec::new();
        rows.write_row(&batch, 0, false, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), r#"{"at":"1970-01-01T00:00:01Z","what":"x"}"#);
        let err = message_type(vec![file.clone()], "t.Nope", "test").unwrap_err().to_string();
        assert!(err.contains("\"t.Nope\" is not defined") && err.contains("t.Event"), "{err}");
        let mut broken = file;
        broken.dependency = vec!["missing.proto".to_owned()];
        let err = message_type(vec![broken], "t.Event", "test").unwrap_err().to_string();
        assert!(err.starts_with("test: invalid file descriptors") && !err.contains('\n'), "{err}");
    }
}
