//! Message types from file descriptors: those stored in a file's metadata, or
//! a `FileDescriptorSet` given by the caller. The same approach as the CLI's
//! `proto.rs` (`riegeli cat --format proto-text`): the files alone, or, when
//! they import well-known types without carrying them, on top of
//! prost-reflect's global pool that holds those.

use std::io::Read;

use prost::Message;
use prost_reflect::{DescriptorPool, MessageDescriptor};
use prost_types::{FileDescriptorProto, FileDescriptorSet};
use riegeli_records::{RecordReader, RecordsMetadata, record_type};

use crate::error::{Error, Result};

/// Builds the descriptor pool of `files` and finds the message type
/// `type_name` (a full name, a leading `.` allowed) in it.
///
/// Files that import well-known types (`google/protobuf/*.proto`) without
/// carrying them are resolved against prost-reflect's copies of those.
/// [`ErrorKind::Type`](crate::ErrorKind::Type) if the files are not valid or
/// do not define the type.
pub fn message_type(files: Vec<FileDescriptorProto>, type_name: &str) -> Result<MessageDescriptor> {
    let own: Vec<String> = files.iter().filter_map(|f| f.name.clone()).collect();
    let pool = match DescriptorPool::from_file_descriptor_set(prost_types::FileDescriptorSet { file: files.clone() }) {
        Ok(pool) => pool,
        Err(alone) => {
            let mut pool = DescriptorPool::global();
            pool.add_file_descriptor_protos(files).map_err(|_| {
                Error::type_error(format!("invalid file descriptors: {}", one_line(&alone.to_string())))
            })?;
            pool
        }
    };
    let name = type_name.strip_prefix('.').unwrap_or(type_name);
    pool.get_message_by_name(name).ok_or_else(|| {
        let known: Vec<String> = pool
            .all_messages()
            .filter(|m| own.iter().any(|f| f == m.parent_file().name()))
            .map(|m| m.full_name().to_owned())
            .take(10)
            .collect();
        let known = if known.is_empty() { "no messages".to_owned() } else { known.join(", ") };
        Error::type_error(format!(
            "message type {name:?} is not defined in the file descriptors (they define: {known})"
        ))
    })
}

/// The record type stored in a file's metadata (by `set_record_type`), as a
/// message descriptor; [`ErrorKind::Type`](crate::ErrorKind::Type) if the
/// metadata names no type or carries no descriptors for it.
pub fn message_type_from_metadata(metadata: &RecordsMetadata) -> Result<MessageDescriptor> {
    let Some((name, files)) = record_type(metadata) else {
        return Err(Error::type_error(
            "no message type given and the file metadata names none (write it with set_record_type)",
        ));
    };
    if files.is_empty() {
        return Err(Error::type_error(format!(
            "the file metadata names record type {name:?} but carries no file descriptors"
        )));
    }
    message_type(files.to_vec(), name)
}

/// [`message_type`] of a serialized `FileDescriptorSet` (what `protoc
/// --descriptor_set_out` writes); [`ErrorKind::Type`](crate::ErrorKind::Type)
/// if it does not parse.
pub fn message_type_from_set(serialized: &[u8], type_name: &str) -> Result<MessageDescriptor> {
    let set = FileDescriptorSet::decode(serialized)
        .map_err(|e| Error::type_error(format!("the file descriptor set does not parse: {e}")))?;
    message_type(set.file, type_name)
}

/// The record type named in the metadata of the Riegeli/records file that
/// `src` reads from its beginning (an ArrayRecord file too), as
/// [`message_type_from_metadata`] makes it.
pub fn message_type_of_file<R: Read>(src: R) -> Result<MessageDescriptor> {
    let metadata = RecordReader::new(src).read_metadata()?;
    message_type_from_metadata(&metadata.unwrap_or_default())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
