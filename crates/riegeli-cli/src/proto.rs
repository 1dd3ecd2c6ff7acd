//! Records as protobuf messages: the record type and file descriptors stored in a
//! file's `RecordsMetadata` (or given to `write --descriptor-set`) become a
//! `prost_reflect::DescriptorPool`, and records become dynamic messages printed
//! in text format or canonical JSON.

use anyhow::{Context, Result, anyhow};
use prost_reflect::text_format::FormatOptions;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use riegeli_records::RecordsMetadata;

use crate::Usage;

/// Builds the descriptor pool of `files` and finds `type_name` in it.
///
/// `source` names where the descriptors come from, for error messages.
pub(crate) fn message_type(
    files: Vec<FileDescriptorProto>,
    type_name: &str,
    source: &str,
) -> Result<MessageDescriptor> {
    let pool = DescriptorPool::from_file_descriptor_set(prost_types::FileDescriptorSet { file: files })
        .map_err(|e| anyhow!("{source}: invalid file descriptors: {}", one_line(&e.to_string())))?;
    let name = type_name.strip_prefix('.').unwrap_or(type_name);
    pool.get_message_by_name(name).ok_or_else(|| {
        let known: Vec<String> = pool.all_messages().map(|m| m.full_name().to_owned()).take(10).collect();
        anyhow!("{source}: message type {name:?} is not defined in the file descriptors (they define: {})", {
            if known.is_empty() { "no messages".to_owned() } else { known.join(", ") }
        })
    })
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
