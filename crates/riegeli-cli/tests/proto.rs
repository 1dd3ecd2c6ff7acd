//! `write --record-type --descriptor-set`, then `cat --format proto-text|proto-json`
//! and `describe --show-records-metadata`.
//!
//! There is no protoc here, so the descriptors of these two files are built by hand:
//!
//! ```proto
//! // test/address.proto
//! syntax = "proto3";
//! package test.people;
//! message Address { string city = 1; }
//!
//! // test/person.proto
//! syntax = "proto3";
//! package test.people;
//! import "test/address.proto";
//! message Person {
//!   enum Kind { UNKNOWN = 0; HUMAN = 1; ROBOT = 2; }
//!   string name = 1;
//!   int32 id = 2;
//!   repeated string tags = 3;
//!   Address home = 4;
//!   Kind kind = 5;
//! }
//! ```

use std::path::{Path, PathBuf};

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
    FileDescriptorSet,
};

use crate::{assert_one_line_error, riegeli, scratch_dir, text};

fn field(name: &str, number: i32, r#type: Type, label: Label, type_name: Option<&str>) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(label as i32),
        r#type: Some(r#type as i32),
        type_name: type_name.map(Into::into),
        json_name: None,
        ..Default::default()
    }
}

fn descriptor_set() -> FileDescriptorSet {
    let address = FileDescriptorProto {
        name: Some("test/address.proto".into()),
        package: Some("test.people".into()),
        message_type: vec![DescriptorProto {
            name: Some("Address".into()),
            field: vec![field("city", 1, Type::String, Label::Optional, None)],
            ..Default::default()
        }],
        syntax: Some("proto3".into()),
        ..Default::default()
    };
    let person = FileDescriptorProto {
        name: Some("test/person.proto".into()),
        package: Some("test.people".into()),
        dependency: vec!["test/address.proto".into()],
        message_type: vec![DescriptorProto {
            name: Some("Person".into()),
            field: vec![
                field("name", 1, Type::String, Label::Optional, None),
                field("id", 2, Type::Int32, Label::Optional, None),
                field("tags", 3, Type::String, Label::Repeated, None),
                field("home", 4, Type::Message, Label::Optional, Some(".test.people.Address")),
                field("kind", 5, Type::Enum, Label::Optional, Some(".test.people.Person.Kind")),
            ],
            enum_type: vec![EnumDescriptorProto {
                name: Some("Kind".into()),
                value: ["UNKNOWN", "HUMAN", "ROBOT"]
                    .iter()
                    .zip(0..)
                    .map(|(name, number)| EnumValueDescriptorProto {
                        name: Some((*name).into()),
                        number: Some(number),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
        syntax: Some("proto3".into()),
        ..Default::default()
    };
    FileDescriptorSet { file: vec![address, person] }
}

/// Three `test.people.Person` records, wire format written out by hand.
const PEOPLE: &[&[u8]] = &[
    // name: "alice" (field 1), id: 7 (2), tags: "x", "y" (3), home { city: "Paris" } (4), kind: ROBOT (5).
    b"\x0a\x05alice\x10\x07\x1a\x01x\x1a\x01y\x22\x07\x0a\x05Paris\x28\x02",
    // id: 300 (varint ac 02).
    b"\x10\xac\x02",
    // The empty message.
    b"",
];

fn delimited(records: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for record in records {
        assert!(record.len() < 0x80);
        out.push(record.len() as u8);
        out.extend_from_slice(record);
    }
    out
}

struct Files {
    dir: PathBuf,
    set: PathBuf,
}

impl Files {
    fn new(name: &str) -> Self {
        let dir = scratch_dir(name);
        let set = dir.join("people.pb");
        std::fs::write(&set, descriptor_set().encode_to_vec()).unwrap();
        Self { dir, set }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_owned()
    }

    /// Writes `records` as `test.people.Person` into `name`.
    fn write(&self, name: &str, options: &str, records: &[&[u8]]) -> String {
        let file = self.path(name);
        let out = riegeli(
            &[
                "write",
                "--options",
                options,
                "--metadata-comment",
                "people",
                "--record-type",
                "test.people.Person",
                "--descriptor-set",
                self.set.to_str().unwrap(),
                &file,
            ],
            &delimited(records),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        file
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn cat_proto_text_and_json_decode_with_the_stored_descriptors() {
    let files = Files::new("proto-cat");
    for options in ["default", "transpose,zstd:3", "uncompressed,chunk_size:8"] {
        let file = files.write("people.riegeli", options, PEOPLE);
        let out = riegeli(&["cat", "--format", "proto-text", &file], b"");
        assert!(out.status.success(), "{options}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            concat!("name:\"alice\",id:7,tags:[\"x\",\"y\"],home{city:\"Paris\"},kind:ROBOT\n", "id:300\n", "\n"),
            "{options}"
        );
        let out = riegeli(&["cat", "--format", "proto-json", &file], b"");
        assert!(out.status.success(), "{options}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            concat!(
                r#"{"name":"alice","id":7,"tags":["x","y"],"home":{"city":"Paris"},"kind":"ROBOT"}"#,
                "\n",
                r#"{"id":300}"#,
                "\n",
                "{}\n"
            ),
            "{options}"
        );
    }
    // Standard input, a start position and a limit combine with the proto formats.
    let file = files.write("people.riegeli", "default", PEOPLE);
    let bytes = std::fs::read(&file).unwrap();
    let out = riegeli(&["cat", "--format", "proto-json", "--from", "1", "--limit", "1", "-"], &bytes);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Numeric position 1 lies before the first record (the first chunk begins past it).
    assert_eq!(
        text(&out.stdout),
        "{\"name\":\"alice\",\"id\":7,\"tags\":[\"x\",\"y\"],\"home\":{\"city\":\"Paris\"},\"kind\":\"ROBOT\"}\n"
    );
    // --pretty: several lines per record, a blank line between records.
    let out = riegeli(&["cat", "--format", "proto-text", "--pretty", "--limit", "2", &file], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "name: \"alice\"\nid: 7\ntags: [\"x\", \"y\"]\nhome {\n  city: \"Paris\"\n}\nkind: ROBOT\n\nid: 300\n"
    );
}

#[test]
fn convert_recover_and_concat_keep_the_record_type() {
    let files = Files::new("proto-keep");
    let file = files.write("people.riegeli", "uncompressed", PEOPLE);
    let want = concat!(
        r#"{"name":"alice","id":7,"tags":["x","y"],"home":{"city":"Paris"},"kind":"ROBOT"}"#,
        "\n",
        r#"{"id":300}"#,
        "\n",
        "{}\n"
    );
    for (args, output) in [
        (vec!["convert", "--options", "transpose,brotli:2", &file], "converted.riegeli"),
        (vec!["recover", &file], "recovered.riegeli"),
        (vec!["concat", "--records"], "concatenated.riegeli"),
    ] {
        let out_path = files.path(output);
        let mut args = args.clone();
        if args[0] == "concat" {
            args.push(&out_path);
            args.push(&file);
        } else {
            args.push(&out_path);
        }
        let out = riegeli(&args, b"");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let out = riegeli(&["cat", "--format", "proto-json", &out_path], b"");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), want, "{args:?}");
    }
    // The converted file records its own writer options.
    let out = riegeli(&["describe", "--json", "--show-records-metadata", &files.path("converted.riegeli")], b"");
    let metadata: serde_json::Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|c| c["chunk_type"] == "FILE_METADATA")
        .unwrap();
    assert_eq!(metadata["records_metadata"]["record_writer_options"], "transpose,brotli:2");
}

#[test]
fn describe_shows_the_records_metadata() {
    let files = Files::new("proto-describe");
    let file = files.write("people.riegeli", "zstd:1", PEOPLE);
    let out = riegeli(&["describe", "--show-records-metadata", &file], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for expected in [
        "    records_metadata {\n      file_comment: \"people\"\n      record_type_name: \"test.people.Person\"\n",
        "        name: \"test/address.proto\"\n        package: \"test.people\"\n",
        "        name: \"test/person.proto\"\n",
        "        dependency: [\"test/address.proto\"]\n",
        "      record_writer_options: \"zstd:1\"\n",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
    let out = riegeli(&["describe", "--json", "--show-records-metadata", &file], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let chunks: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let metadata = chunks.iter().find(|c| c["chunk_type"] == "FILE_METADATA").expect("a metadata chunk");
    let m = &metadata["records_metadata"];
    assert_eq!(m["file_comment"], "people");
    assert_eq!(m["record_type_name"], "test.people.Person");
    assert_eq!(m["file_descriptor"][1]["name"], "test/person.proto");
    assert_eq!(m["file_descriptor"][1]["message_type"][0]["field"][3]["type_name"], ".test.people.Address");
}

#[test]
fn proto_errors_are_one_line_with_the_documented_exit_code() {
    let files = Files::new("proto-errors");
    // A file without a record type: usage error.
    let plain = crate::testdata("valid/simple_none.riegeli");
    let out = riegeli(&["cat", "--format", "proto-text", plain.to_str().unwrap()], b"");
    assert_one_line_error(&out, 2, "needs a record type in the file metadata");
    let out = riegeli(&["cat", "--format", "proto-json", "-"], &std::fs::read(&plain).unwrap());
    assert_one_line_error(&out, 2, "<stdin>: --format proto-json needs a record type");
    // --pretty only means something for the proto formats.
    let out = riegeli(&["cat", "--pretty", plain.to_str().unwrap()], b"");
    assert_one_line_error(&out, 2, "--pretty");

    // A record that is not a Person (field 1 claims 5 bytes, 1 follows): exit 1 naming its position.
    let file = files.write("bad.riegeli", "uncompressed", &[PEOPLE[0], PEOPLE[1], b"\x0a\x05a", PEOPLE[2]]);
    let out = riegeli(&["cat", "--format", "proto-text", &file], b"");
    assert_one_line_error(&out, 1, "/2: is not a valid test.people.Person");
    assert_eq!(text(&out.stdout).lines().count(), 2, "the records before it are printed");
    // With --skip-corrupted the record is reported and skipped.
    let out = riegeli(&["cat", "--format", "proto-json", "--skip-corrupted", &file], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().collect::<Vec<_>>()[1..], ["{\"id\":300}", "{}"]);
    assert!(text(&out.stderr).contains("/2: is not a valid test.people.Person"), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("skipped"), "{}", text(&out.stderr));

    // write: an unknown type, a descriptor set that does not parse, --record-type alone.
    let out = riegeli(
        &[
            "write",
            "--record-type",
            "test.people.Robot",
            "--descriptor-set",
            files.set.to_str().unwrap(),
            &files.path("x"),
        ],
        b"",
    );
    assert_one_line_error(&out, 2, "\"test.people.Robot\" is not defined");
    assert!(text(&out.stderr).contains("test.people.Person"), "lists the types it has: {}", text(&out.stderr));
    let garbage = files.path("garbage.pb");
    std::fs::write(&garbage, b"\xff\xff\xff").unwrap();
    let out = riegeli(&["write", "--record-type", "a.B", "--descriptor-set", &garbage, &files.path("x")], b"");
    assert_one_line_error(&out, 2, "not a serialized FileDescriptorSet");
    let out = riegeli(&["write", "--record-type", "a.B", &files.path("x")], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--descriptor-set"), "{}", text(&out.stderr));
    assert!(!Path::new(&files.path("x")).exists(), "no file is created on a usage error");
}
