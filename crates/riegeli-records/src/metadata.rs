//! `RecordsMetadata`: what a file's metadata chunk holds.

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

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

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
