//! `JsonEncoder`: rows printed as protobuf JSON, checked against what
//! prost-reflect's `DynamicMessage` prints for the same records.

use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor, ReflectMessage, SerializeOptions};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use riegeli_arrow::{BadRecords, JsonEncoder, ProtoDecoder, message_type};

use crate::common::{Rng, message, random_message};

/// prost-reflect's JSON of `record` (default options: canonical protobuf JSON).
fn prost_reflect_json(desc: &MessageDescriptor, record: &[u8], pretty: bool) -> String {
    let message = DynamicMessage::decode(desc.clone(), record).unwrap();
    let mut out = Vec::new();
    if pretty {
        message
            .serialize_with_options(&mut serde_json::Serializer::pretty(&mut out), &SerializeOptions::new())
            .unwrap();
    } else {
        message.serialize_with_options(&mut serde_json::Serializer::new(&mut out), &SerializeOptions::new()).unwrap();
    }
    String::from_utf8(out).unwrap()
}

/// Each record as `JsonEncoder` prints it.
fn encoder_json(desc: &MessageDescriptor, records: &[Vec<u8>], pretty: bool) -> Vec<String> {
    let mut decoder = ProtoDecoder::new(desc, None::<&[&str]>, BadRecords::Fail).unwrap();
    for record in records {
        decoder.push(record, None).unwrap();
    }
    let batch = decoder.flush().unwrap();
    let encoder = JsonEncoder::new(desc, &batch.schema()).unwrap();
    (0..batch.num_rows())
        .map(|row| {
            let mut out = Vec::new();
            encoder.write_row(&batch, row, pretty, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        })
        .collect()
}

/// Whether every map in `value` has at most one entry (prost-reflect keeps
/// maps in a `HashMap`, so that the order of several entries varies).
fn maps_are_small(desc: &MessageDescriptor, message: &DynamicMessage) -> bool {
    desc.fields().all(|field| {
        let value = message.get_field(&field);
        match &*value {
            prost_reflect::Value::Map(map) => map.len() <= 1,
            prost_reflect::Value::Message(m) => maps_are_small(&m.descriptor(), m),
            prost_reflect::Value::List(items) => items.iter().all(|item| match item {
                prost_reflect::Value::Message(m) => maps_are_small(&m.descriptor(), m),
                _ => true,
            }),
            _ => true,
        }
    })
}

#[test]
fn every_field_kind_prints_as_prost_reflect_prints_it() {
    for name in ["t.All", "t.P2", "t.Inner"] {
        let desc = message(name);
        let mut rng = Rng(7);
        // Messages concatenated: fields repeated, messages merged, maps and oneofs overwritten.
        let records: Vec<Vec<u8>> = (0..400)
            .map(|_| (0..1 + rng.below(3)).flat_map(|_| random_message(&desc, &mut rng, 0).encode_to_vec()).collect())
            .collect();
        for pretty in [false, true] {
            let printed = encoder_json(&desc, &records, pretty);
            let mut exact = 0;
            for (record, got) in records.iter().zip(&printed) {
                let want = prost_reflect_json(&desc, record, pretty);
                let parsed = DynamicMessage::decode(desc.clone(), record.as_slice()).unwrap();
                if maps_are_small(&parsed.descriptor(), &parsed) {
                    assert_eq!(got, &want, "{name}: {record:?}");
                    exact += 1;
                } else {
                    let got: serde_json::Value = serde_json::from_str(got).unwrap();
                    let want: serde_json::Value = serde_json::from_str(&want).unwrap();
                    assert_eq!(got, want, "{name}: {record:?}");
                }
            }
            assert!(exact > 50, "{name}: only {exact} records compared as text");
        }
    }
}

#[test]
fn hand_written_rows() {
    let desc = message("t.All");
    // i64: -1 (a string), fl: NaN (fixed32 0x7fc00000), color: 7 (no such value: its number),
    // byt: "\x00\xff", str: "" (the default: left out), b: true.
    let record = [
        &[0x10][..],
        &[0xff; 9][..],
        &[0x01, 0x5d, 0x00, 0x00, 0xc0, 0x7f, 0x80, 0x01, 0x07, 0x7a, 0x02, 0x00, 0xff, 0x72, 0x00, 0x68, 0x01][..],
    ]
    .concat();
    let printed = encoder_json(&desc, &[record.clone(), Vec::new()], false);
    assert_eq!(printed, [r#"{"i64":"-1","fl":"NaN","b":true,"byt":"AP8=","color":7}"#, "{}"]);
    assert_eq!(printed[0], prost_reflect_json(&desc, &record, false));
}

fn field(name: &str, number: i32, ty: Type, type_name: Option<&str>) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(Label::Optional as i32),
        r#type: Some(ty as i32),
        type_name: type_name.map(Into::into),
        ..Default::default()
    }
}

/// `message W { Timestamp at = 1; Duration took = 2; Int64Value n = 3; Empty e = 4; BoolValue ok = 5; }`
fn well_known() -> MessageDescriptor {
    let file = FileDescriptorProto {
        name: Some("w.proto".into()),
        package: Some("w".into()),
        dependency: ["timestamp", "duration", "wrappers", "empty"]
            .iter()
            .map(|f| format!("google/protobuf/{f}.proto"))
            .collect(),
        message_type: vec![DescriptorProto {
            name: Some("W".into()),
            field: vec![
                field("at", 1, Type::Message, Some(".google.protobuf.Timestamp")),
                field("took", 2, Type::Message, Some(".google.protobuf.Duration")),
                field("n", 3, Type::Message, Some(".google.protobuf.Int64Value")),
                field("e", 4, Type::Message, Some(".google.protobuf.Empty")),
                field("ok", 5, Type::Message, Some(".google.protobuf.BoolValue")),
            ],
            ..Default::default()
        }],
        syntax: Some("proto3".into()),
        ..Default::default()
    };
    message_type(vec![file], "w.W").unwrap()
}

#[test]
fn well_known_types_print_their_json_forms() {
    let desc = well_known();
    let records: Vec<Vec<u8>> = vec![
        // at {seconds: 1, nanos: 500000000}, took {seconds: -2}, n {value: 0}, e {}, ok {}.
        vec![
            0x0a, 0x08, 0x08, 0x01, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01, 0x12, 0x0b, 0x08, 0xfe, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0x01, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x00,
        ],
        // n {value: 5}.
        vec![0x1a, 0x02, 0x08, 0x05],
    ];
    let printed = encoder_json(&desc, &records, false);
    assert_eq!(
        printed,
        [r#"{"at":"1970-01-01T00:00:01.500Z","took":"-2s","n":"0","e":{},"ok":false}"#, r#"{"n":"5"}"#]
    );
    for (record, got) in records.iter().zip(&printed) {
        assert_eq!(got, &prost_reflect_json(&desc, record, false));
    }
    // A timestamp JSON cannot express (seconds: -1e12) is an error, as in prost-reflect.
    let far = [0x0a, 0x00, 0x08, 0x80, 0xe0, 0xeb, 0xda, 0xf2, 0xe2, 0xff, 0xff, 0xff, 0x01];
    let mut far = far.to_vec();
    far[1] = (far.len() - 2) as u8;
    let mut decoder = ProtoDecoder::new(&desc, None::<&[&str]>, BadRecords::Fail).unwrap();
    decoder.push(&far, None).unwrap();
    let batch = decoder.flush().unwrap();
    let encoder = JsonEncoder::new(&desc, &batch.schema()).unwrap();
    assert!(encoder.write_row(&batch, 0, false, &mut Vec::new()).is_err());
}

#[test]
fn types_without_a_json_form_in_columns_are_refused() {
    let projected = ProtoDecoder::new(&message("t.All"), Some(&["i32"]), BadRecords::Fail).unwrap();
    assert!(JsonEncoder::new(&message("t.All"), &projected.schema()).is_err(), "a projected schema");
    let file = FileDescriptorProto {
        name: Some("a.proto".into()),
        package: Some("a".into()),
        dependency: vec!["google/protobuf/any.proto".into()],
        message_type: vec![DescriptorProto {
            name: Some("A".into()),
            field: vec![field("any", 1, Type::Message, Some(".google.protobuf.Any"))],
            ..Default::default()
        }],
        syntax: Some("proto3".into()),
        ..Default::default()
    };
    let desc = message_type(vec![file], "a.A").unwrap();
    let decoder = ProtoDecoder::new(&desc, None::<&[&str]>, BadRecords::Fail).unwrap();
    assert!(JsonEncoder::new(&desc, &decoder.schema()).is_err(), "Any");
}
