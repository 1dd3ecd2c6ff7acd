//! `RecordsMetadata`: what a file's metadata chunk holds, and the record type
//! it can name (`set_record_type`, `record_type`).

use std::collections::{HashMap, HashSet};

use prost_types::{DescriptorProto, FileDescriptorProto};

use crate::error::{Error, ErrorKind, Result};

/// File metadata (google/riegeli `records_metadata.proto`), stored in a
/// metadata chunk right after the file signature.
///
/// Extensions (field numbers 1000 and up) are not kept by this type; read the
/// serialized form with
/// [`RecordReader::read_serialized_metadata`](crate::RecordReader::read_serialized_metadata)
/// to see them.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RecordsMetadata {
    /// Human-readable explanation of what the file contains.
    #[prost(string, tag = "1")]
    pub file_comment: String,
    /// If records are proto messages of a fixed type, the full name of their type.
    #[prost(string, tag = "2")]
    pub record_type_name: String,
    /// Proto file descriptors defining `record_type_name` and its
    /// dependencies, each file after all its dependencies.
    #[prost(message, repeated, tag = "3")]
    pub file_descriptor: Vec<prost_types::FileDescriptorProto>,
    /// Options originally used to write the file (informative).
    #[prost(string, tag = "4")]
    pub record_writer_options: String,
    /// Number of records in the file (informative; the actual number may differ).
    #[prost(int64, tag = "5")]
    pub num_records: i64,
}

/// Stores the record type in `metadata`, as Python's
/// `riegeli.set_record_type(metadata, message_type)`: `record_type_name`
/// becomes `type_name` (the full name of a message type, a leading `.`
/// allowed), and `file_descriptor` (replacing what it held) the file of
/// `files` that defines it and, before it, the files it depends on,
/// transitively, each file after all its dependencies.
///
/// `files` are the file descriptors to take them from, in any order (e.g.
/// the `file` of a `FileDescriptorSet` from `protoc --include_imports -o`);
/// files nothing depends on are left out. A dependency not among `files`
/// (e.g. a well-known type `google/protobuf/*.proto` the set does not carry)
/// is left out too: a reader must know it already.
///
/// An [`ErrorKind::InvalidArgument`] error, leaving `metadata` unchanged, if
/// no file of `files` defines a message type of that name, or if the files
/// that define it depend on each other in a cycle.
///
/// ```
/// use prost_types::{DescriptorProto, FileDescriptorProto};
/// use riegeli_records::{RecordsMetadata, record_type, set_record_type};
///
/// let file = FileDescriptorProto {
///     name: Some("a/b.proto".into()),
///     package: Some("a".into()),
///     message_type: vec![DescriptorProto { name: Some("B".into()), ..Default::default() }],
///     ..Default::default()
/// };
/// let mut metadata = RecordsMetadata::default();
/// set_record_type(&mut metadata, "a.B", &[file.clone()])?;
/// assert_eq!(record_type(&metadata), Some(("a.B", &[file][..])));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn set_record_type(metadata: &mut RecordsMetadata, type_name: &str, files: &[FileDescriptorProto]) -> Result<()> {
    let name = type_name.strip_prefix('.').unwrap_or(type_name);
    let invalid = |message: String| Error::new(ErrorKind::InvalidArgument(message));
    let defining = files
        .iter()
        .position(|file| defines_message(file, name))
        .ok_or_else(|| invalid(format!("message type {name:?} is not defined in the file descriptors")))?;
    let by_name: HashMap<&str, usize> =
        files.iter().enumerate().rev().filter_map(|(i, file)| Some((file.name.as_deref()?, i))).collect();
    // Depth-first, dependencies before dependents (Python's
    // `FileDescriptorCollector`), without recursion: a file is emitted when
    // its last dependency is.
    let mut order = Vec::new();
    let mut done = HashSet::new();
    let mut on_path = HashSet::new();
    let mut stack = vec![(defining, 0usize)];
    on_path.insert(defining);
    while let Some((file, next)) = stack.last_mut() {
        let (file, dependency) = (*file, files.get(*file).and_then(|f| f.dependency.get(*next)));
        let Some(dependency) = dependency else {
            stack.pop();
            on_path.remove(&file);
            done.insert(file);
            order.push(file);
            continue;
        };
        *next += 1;
        let Some(&index) = by_name.get(dependency.as_str()) else { continue };
        if done.contains(&index) {
            continue;
        }
        if !on_path.insert(index) {
            return Err(invalid(format!("file descriptor {dependency:?} depends on itself")));
        }
        stack.push((index, 0));
    }
    metadata.record_type_name = name.to_owned();
    metadata.file_descriptor = order.into_iter().filter_map(|i| files.get(i).cloned()).collect();
    Ok(())
}

/// The record type stored in `metadata` (by [`set_record_type`], or by
/// Google's `riegeli.set_record_type`): the full name of the records'
/// message type and the file descriptors defining it, each after its
/// dependencies; `None` if `record_type_name` is empty.
pub fn record_type(metadata: &RecordsMetadata) -> Option<(&str, &[FileDescriptorProto])> {
    let name = metadata.record_type_name.as_str();
    (!name.is_empty()).then_some((name, metadata.file_descriptor.as_slice()))
}

/// Whether `file` defines the message type of full name `name` (no leading `.`).
fn defines_message(file: &FileDescriptorProto, name: &str) -> bool {
    let rest = match file.package.as_deref() {
        None | Some("") => Some(name),
        Some(package) => name.strip_prefix(package).and_then(|rest| rest.strip_prefix('.')),
    };
    rest.is_some_and(|rest| defines_nested(&file.message_type, rest))
}

/// Whether `messages` or the types nested in them define `name`, relative to them.
fn defines_nested(messages: &[DescriptorProto], name: &str) -> bool {
    messages.iter().any(|message| {
        let Some(own) = message.name.as_deref() else { return false };
        match name.strip_prefix(own) {
            Some("") => true,
            Some(rest) => rest.strip_prefix('.').is_some_and(|rest| defines_nested(&message.nested_type, rest)),
            None => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn file(name: &str, package: &str, dependency: &[&str], messages: &[&str]) -> FileDescriptorProto {
        FileDescriptorProto {
            name: Some(name.to_owned()),
            package: Some(package.to_owned()),
            dependency: dependency.iter().map(|d| (*d).to_owned()).collect(),
            message_type: messages
                .iter()
                .map(|m| DescriptorProto {
                    name: Some((*m).to_owned()),
                    nested_type: vec![DescriptorProto { name: Some("Inner".to_owned()), ..Default::default() }],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn names(metadata: &RecordsMetadata) -> Vec<&str> {
        metadata.file_descriptor.iter().filter_map(|f| f.name.as_deref()).collect()
    }

    #[test]
    fn record_type_takes_the_file_and_its_dependencies_first() {
        // c depends on b and a, b on a; d is unrelated; e is not given.
        let files = [
            file("c.proto", "p.q", &["b.proto", "a.proto", "e.proto"], &["C"]),
            file("d.proto", "p", &[], &["D"]),
            file("b.proto", "p", &["a.proto"], &["B"]),
            file("a.proto", "", &[], &["A"]),
        ];
        let mut metadata = RecordsMetadata { file_descriptor: vec![files[1].clone()], ..Default::default() };
        set_record_type(&mut metadata, ".p.q.C", &files).unwrap();
        assert_eq!(metadata.record_type_name, "p.q.C");
        assert_eq!(names(&metadata), ["a.proto", "b.proto", "c.proto"]);
        assert_eq!(record_type(&metadata).map(|(name, files)| (name, files.len())), Some(("p.q.C", 3)));

        set_record_type(&mut metadata, "p.q.C.Inner", &files).unwrap();
        assert_eq!(names(&metadata), ["a.proto", "b.proto", "c.proto"]);
        set_record_type(&mut metadata, "A", &files).unwrap();
        assert_eq!(names(&metadata), ["a.proto"]);

        for missing in ["p.C", "p.q", "q.C", "p.q.C.Outer", "Inner", "p.DD", ""] {
            let error = set_record_type(&mut metadata, missing, &files).unwrap_err();
            assert!(matches!(error.kind(), ErrorKind::InvalidArgument(_)), "{missing}: {error}");
        }
        assert_eq!(metadata.record_type_name, "A", "unchanged by a failure");
        assert_eq!(record_type(&RecordsMetadata::default()), None);
    }

    #[test]
    fn record_type_dependency_cycles_are_errors() {
        let files = [file("a.proto", "p", &["b.proto"], &["A"]), file("b.proto", "p", &["a.proto"], &["B"])];
        let mut metadata = RecordsMetadata::default();
        let error = set_record_type(&mut metadata, "p.A", &files).unwrap_err();
        assert!(error.to_string().contains("depends on itself"), "{error}");
        assert_eq!(metadata, RecordsMetadata::default());
        // A file naming itself, or a dependency twice, in a long chain: no recursion.
        let chain: Vec<FileDescriptorProto> = (0..100_000)
            .map(|i| {
                let dependency = format!("f{}.proto", i + 1);
                file(&format!("f{i}.proto"), "p", &[&dependency, &dependency], &[&format!("M{i}")])
            })
            .collect();
        set_record_type(&mut metadata, "p.M0", &chain).unwrap();
        assert_eq!(metadata.file_descriptor.len(), 100_000);
        assert_eq!(names(&metadata).first(), Some(&"f99999.proto"));
    }

    #[test]
    fn wire_format() {
        let metadata = RecordsMetadata {
            file_comment: "hi".into(),
            record_type_name: "a.B".into(),
            num_records: 3,
            ..Default::default()
        };
        // Field 1 string "hi", field 2 string "a.B", field 5 varint 3.
        assert_eq!(metadata.encode_to_vec(), b"\x0a\x02hi\x12\x03a.B\x28\x03");
        assert_eq!(RecordsMetadata::decode(&b"\x0a\x02hi\x12\x03a.B\x28\x03"[..]).unwrap(), metadata);
    }
}
