//! tf.train.Example records as columns, checked against prost-reflect's
//! decoding with a hand-built `tensorflow/core/example` descriptor.

use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use prost::Message;
use prost_reflect::{DynamicMessage, MapKey, MessageDescriptor, Value};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, FieldDescriptorProto, FieldOptions, FileDescriptorProto, MessageOptions, OneofDescriptorProto,
};
use riegeli_arrow::{ArrowReader, ArrowReaderOptions, BadRecords, ExampleDecoder, FeatureKind, RecordFormat};
use riegeli_records::{RecordReader, RecordWriter};

use crate::common::Rng;

fn field(name: &str, number: i32, label: Label, ty: Type, type_name: Option<&str>) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(label as i32),
        r#type: Some(ty as i32),
        type_name: type_name.map(Into::into),
        ..Default::default()
    }
}

/// `tensorflow.Example`, as tensorflow/core/example/{example,feature}.proto define it.
fn example_type() -> MessageDescriptor {
    let list = |name: &str, ty: Type| {
        let mut value = field("value", 1, Label::Repeated, ty, None);
        if ty != Type::Bytes {
            value.options = Some(FieldOptions { packed: Some(true), ..Default::default() });
        }
        DescriptorProto { name: Some(name.into()), field: vec![value], ..Default::default() }
    };
    let mut feature = DescriptorProto {
        name: Some("Feature".into()),
        field: vec![
            field("bytes_list", 1, Label::Optional, Type::Message, Some(".tensorflow.BytesList")),
            field("float_list", 2, Label::Optional, Type::Message, Some(".tensorflow.FloatList")),
            field("int64_list", 3, Label::Optional, Type::Message, Some(".tensorflow.Int64List")),
        ],
        oneof_decl: vec![OneofDescriptorProto { name: Some("kind".into()), ..Default::default() }],
        ..Default::default()
    };
    for f in &mut feature.field {
        f.oneof_index = Some(0);
    }
    let features = DescriptorProto {
        name: Some("Features".into()),
        field: vec![field("feature", 1, Label::Repeated, Type::Message, Some(".tensorflow.Features.FeatureEntry"))],
        nested_type: vec![DescriptorProto {
            name: Some("FeatureEntry".into()),
            field: vec![
                field("key", 1, Label::Optional, Type::String, None),
                field("value", 2, Label::Optional, Type::Message, Some(".tensorflow.Feature")),
            ],
            options: Some(MessageOptions { map_entry: Some(true), ..Default::default() }),
            ..Default::default()
        }],
        ..Default::default()
    };
    let example = DescriptorProto {
        name: Some("Example".into()),
        field: vec![field("features", 1, Label::Optional, Type::Message, Some(".tensorflow.Features"))],
        ..Default::default()
    };
    let file = FileDescriptorProto {
        name: Some("tensorflow/core/example/example.proto".into()),
        package: Some("tensorflow".into()),
        syntax: Some("proto3".into()),
        message_type: vec![
            list("BytesList", Type::Bytes),
            list("FloatList", Type::Float),
            list("Int64List", Type::Int64),
            feature,
            features,
            example,
        ],
        ..Default::default()
    };
    riegeli_arrow::message_type(vec![file], "tensorflow.Example").unwrap()
}

const NAMES: [(&str, FeatureKind); 5] = [
    ("label", FeatureKind::Int64),
    ("image", FeatureKind::Bytes),
    ("score", FeatureKind::Float),
    ("ids", FeatureKind::Int64),
    ("text", FeatureKind::Bytes),
];

/// A random Example: each feature of `NAMES` present with some chance (with
/// its kind, or now and then with no kind set).
fn random_example(desc: &MessageDescriptor, rng: &mut Rng) -> DynamicMessage {
    let pool = desc.parent_pool();
    let feature_type = pool.get_message_by_name("tensorflow.Feature").unwrap();
    let mut map = std::collections::HashMap::new();
    for (name, kind) in NAMES {
        if rng.below(100) < 30 {
            continue;
        }
        let mut feature = DynamicMessage::new(feature_type.clone());
        if rng.below(10) > 0 {
            let (field, list_type) = match kind {
                FeatureKind::Int64 => ("int64_list", "tensorflow.Int64List"),
                FeatureKind::Float => ("float_list", "tensorflow.FloatList"),
                _ => ("bytes_list", "tensorflow.BytesList"),
            };
            let mut list = DynamicMessage::new(pool.get_message_by_name(list_type).unwrap());
            let values = (0..rng.below(4))
                .map(|_| match kind {
                    FeatureKind::Int64 => Value::I64(rng.next() as i64 >> rng.below(64)),
                    FeatureKind::Float => Value::F32(f32::from_bits(rng.next() as u32)),
                    _ => Value::Bytes((0..rng.below(5)).map(|_| rng.next() as u8).collect::<Vec<_>>().into()),
                })
                .collect();
            list.set_field_by_name("value", Value::List(values));
            feature.set_field_by_name(field, Value::Message(list));
        }
        map.insert(MapKey::String(name.into()), Value::Message(feature));
    }
    let mut features = DynamicMessage::new(pool.get_message_by_name("tensorflow.Features").unwrap());
    features.set_field_by_name("feature", Value::Map(map));
    let mut example = DynamicMessage::new(desc.clone());
    example.set_field_by_name("features", Value::Message(features));
    example
}

/// Records of 1 to `parts` random Examples concatenated (merged), and
/// prost-reflect's decoding of each.
fn records(seed: u64, count: usize, parts: u64) -> (Vec<Vec<u8>>, Vec<DynamicMessage>) {
    let desc = example_type();
    let mut rng = Rng(seed);
    let records: Vec<Vec<u8>> = (0..count)
        .map(|_| (0..1 + rng.below(parts)).flat_map(|_| random_example(&desc, &mut rng).encode_to_vec()).collect())
        .collect();
    let messages = records.iter().map(|r| DynamicMessage::decode(desc.clone(), r.as_slice()).unwrap()).collect();
    (records, messages)
}

/// Checks the columns of `batch` against the decoded Examples.
fn check(batch: &RecordBatch, messages: &[DynamicMessage]) {
    assert_eq!(batch.num_rows(), messages.len());
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let list = column.as_list::<i32>();
        for (row, message) in messages.iter().enumerate() {
            let features = message.get_field_by_name("features").unwrap();
            let features = features.as_message().unwrap().get_field_by_name("feature").unwrap();
            let Some(Value::Message(feature)) = features.as_map().unwrap().get(&MapKey::String(field.name().clone()))
            else {
                assert!(list.is_null(row), "{} row {row}: null expected", field.name());
                continue;
            };
            assert!(!list.is_null(row), "{} row {row}: a list expected", field.name());
            let values = list.value(row);
            let expected: Vec<Value> = ["int64_list", "float_list", "bytes_list"]
                .iter()
                .find(|k| feature.has_field_by_name(k))
                .map(|k| {
                    let l = feature.get_field_by_name(k).unwrap();
                    l.as_message().unwrap().get_field_by_name("value").unwrap().as_list().unwrap().to_vec()
                })
                .unwrap_or_default();
            assert_eq!(values.len(), expected.len(), "{} row {row}", field.name());
            for (i, v) in expected.iter().enumerate() {
                match (values.data_type(), v) {
                    (DataType::Int64, Value::I64(x)) => assert_eq!(values.as_primitive::<Int64Type>().value(i), *x),
                    (DataType::Float32, Value::F32(x)) => {
                        assert_eq!(values.as_primitive::<Float32Type>().value(i).to_bits(), x.to_bits())
                    }
                    (DataType::Binary, Value::Bytes(x)) => assert_eq!(values.as_binary::<i32>().value(i), &x[..]),
                    (t, v) => panic!("{} row {row}: {t} column, value {v:?}", field.name()),
                }
            }
        }
    }
}

fn decode(decoder: &mut ExampleDecoder, records: &[Vec<u8>]) -> RecordBatch {
    for record in records {
        decoder.push(record, None).unwrap();
    }
    decoder.flush().unwrap()
}

#[test]
fn inferred_features_match_prost_reflect() {
    let (records, messages) = records(1, 300, 3);
    let mut decoder = ExampleDecoder::new(None, BadRecords::Fail);
    assert!(decoder.schema().is_none());
    let batch = decode(&mut decoder, &records[..100]);
    let schema = decoder.schema().unwrap();
    assert_eq!(schema.fields().len(), 5);
    for (name, kind) in NAMES {
        let item = match schema.field_with_name(name).unwrap().data_type() {
            DataType::List(item) => item.data_type().clone(),
            other => panic!("{other}"),
        };
        let want = match kind {
            FeatureKind::Int64 => DataType::Int64,
            FeatureKind::Float => DataType::Float32,
            _ => DataType::Binary,
        };
        assert_eq!(item, want, "{name}");
    }
    check(&batch, &messages[..100]);
    // Later batches keep the schema.
    let batch = decode(&mut decoder, &records[100..]);
    assert_eq!(batch.schema(), schema);
    check(&batch, &messages[100..]);
}

#[test]
fn a_feature_spec_gives_the_columns() {
    let (records, messages) = records(2, 200, 2);
    let spec = vec![
        ("score".to_owned(), FeatureKind::Float),
        ("missing".to_owned(), FeatureKind::Bytes),
        ("label".to_owned(), FeatureKind::Int64),
    ];
    let mut decoder = ExampleDecoder::new(Some(spec), BadRecords::Fail);
    let names: Vec<String> = decoder.schema().unwrap().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["score", "missing", "label"]);
    let batch = decode(&mut decoder, &records);
    check(&batch, &messages);
    assert_eq!(batch.column(1).null_count(), 200);
}

#[test]
fn unpacked_values_and_unknown_fields_are_read() {
    // features { feature { key: "x" value { int64_list { value: 1 value: [2, 3] value: 4 } } } }, written
    // by hand: unpacked, packed, unpacked; an unknown field 9 in every message.
    let int64_list = [&[0x08, 0x01][..], &[0x0a, 0x02, 0x02, 0x03], &[0x08, 0x04], &[0x48, 0x00]].concat();
    let feature = [&[0x1a, int64_list.len() as u8][..], &int64_list, &[0x48, 0x00]].concat();
    let entry = [&[0x0a, 0x01, b'x', 0x12, feature.len() as u8][..], &feature, &[0x48, 0x00]].concat();
    let features = [&[0x0a, entry.len() as u8][..], &entry, &[0x48, 0x00]].concat();
    let example = [&[0x0a, features.len() as u8][..], &features, &[0x48, 0x00]].concat();
    // Floats unpacked: float_list { value: 1.5 value: 2.5 }.
    let float_list = [&[0x0d][..], &1.5f32.to_le_bytes(), &[0x0d], &2.5f32.to_le_bytes()].concat();
    let feature = [&[0x12, float_list.len() as u8][..], &float_list].concat();
    let entry = [&[0x0a, 0x01, b'y', 0x12, feature.len() as u8][..], &feature].concat();
    let features = [&[0x0a, entry.len() as u8][..], &entry].concat();
    let floats = [&[0x0a, features.len() as u8][..], &features].concat();
    let desc = example_type();
    let records = vec![example, floats];
    let messages: Vec<DynamicMessage> =
        records.iter().map(|r| DynamicMessage::decode(desc.clone(), r.as_slice()).unwrap()).collect();
    let batch = decode(&mut ExampleDecoder::new(None, BadRecords::Fail), &records);
    check(&batch, &messages);
    let x = batch.column_by_name("x").unwrap().as_list::<i32>().value(0);
    assert_eq!(x.as_primitive::<Int64Type>().values(), &[1, 2, 3, 4]);
}

#[test]
fn conflicting_kinds_are_bad_records() {
    // "a" is an int64_list in the first record and a float_list in the second.
    let int64 = [0x0a, 0x0b, 0x0a, 0x09, 0x0a, 0x01, b'a', 0x12, 0x04, 0x1a, 0x02, 0x08, 0x07];
    let float = [0x0a, 0x0e, 0x0a, 0x0c, 0x0a, 0x01, b'a', 0x12, 0x07, 0x12, 0x05, 0x0d, 0, 0, 0x80, 0x3f];
    let other = [0x0a, 0x0b, 0x0a, 0x09, 0x0a, 0x01, b'b', 0x12, 0x04, 0x1a, 0x02, 0x08, 0x07];
    // In the first batch: the conflicting record fails when the batch is flushed.
    let mut decoder = ExampleDecoder::new(None, BadRecords::Fail);
    decoder.push(&int64, None).unwrap();
    decoder.push(&float, None).unwrap();
    let err = decoder.flush().unwrap_err();
    assert!(err.is_bad_record());
    assert!(
        err.to_string().contains("record 1: feature \"a\" is a float_list where its column holds int64_list"),
        "{err}"
    );
    assert_eq!(decoder.flush().unwrap().num_rows(), 1);
    // Each conflicting record of the first batch is an error of its own;
    // the records after one stay for the next flush.
    let mut decoder = ExampleDecoder::new(None, BadRecords::Fail);
    for record in [&int64[..], &float, &int64, &float, &int64] {
        decoder.push(record, None).unwrap();
    }
    assert!(decoder.flush().unwrap_err().to_string().starts_with("record 1: "));
    assert!(decoder.flush().unwrap_err().to_string().starts_with("record 3: "));
    assert_eq!(decoder.flush().unwrap().num_rows(), 3);
    // In a later batch: when pushed; an unknown feature too.
    let err = decoder.push(&float, None).unwrap_err();
    assert!(err.to_string().contains("is a float_list where its column holds int64_list"), "{err}");
    let err = decoder.push(&other, None).unwrap_err();
    assert!(err.to_string().contains("feature \"b\" is not among the features inferred"), "{err}");
    // Skipped and counted.
    let mut decoder = ExampleDecoder::new(None, BadRecords::Skip);
    for record in [&int64[..], &float, &int64, &float, &other, &[0x0a, 0x05]] {
        decoder.push(record, None).unwrap();
    }
    // All in the first batch: "b" is one of its features; the truncated
    // record fails when pushed, the conflicting ones when flushed.
    assert_eq!(decoder.flush().unwrap().num_rows(), 3);
    assert_eq!(decoder.skipped().count, 3);
    assert!(decoder.skipped().first_errors[0].starts_with("record 5: "), "{:?}", decoder.skipped());
}

#[test]
fn examples_read_from_files_simple_or_transposed() {
    let (records, messages) = records(3, 250, 2);
    let mut reference = None;
    for (options, spec) in [("", false), ("transpose", false), ("transpose,uncompressed,chunk_size:2k", true)] {
        let mut writer = RecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
        for record in &records {
            writer.write_record(record).unwrap();
        }
        let file = writer.close().unwrap();
        let options = ArrowReaderOptions {
            batch_size: 100,
            format: RecordFormat::Example(spec.then(|| NAMES.iter().map(|(n, k)| (n.to_string(), *k)).collect())),
            projection: Some(vec!["text".into(), "label".into()]),
            ..Default::default()
        };
        let mut reader = ArrowReader::new(RecordReader::new(Cursor::new(&file)), options).unwrap();
        assert_eq!(reader.schema().is_some(), spec);
        let batches: Vec<RecordBatch> = reader.by_ref().collect::<Result<_, _>>().unwrap();
        let names: Vec<String> = reader.schema().unwrap().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["text", "label"]);
        assert_eq!(batches.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(), [100, 100, 50]);
        let mut offset = 0;
        for batch in &batches {
            check(batch, &messages[offset..offset + batch.num_rows()]);
            offset += batch.num_rows();
        }
        match &reference {
            None => reference = Some(batches),
            Some(reference) => assert_eq!(&batches, reference),
        }
    }
}

/// `record` changed at random: bytes flipped, cut, inserted or repeated.
fn mutate(record: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = record.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = if out.is_empty() { 0 } else { rng.below(out.len() as u64) as usize };
        match rng.below(4) {
            0 if !out.is_empty() => out[at] ^= 1 << rng.below(8),
            1 => out.truncate(at),
            2 => out.splice(at..at, (0..1 + rng.below(4)).map(|_| rng.next() as u8)).for_each(drop),
            _ => {
                let end = (at + 1 + rng.below(8) as usize).min(out.len());
                let copy = out[at..end].to_vec();
                out.splice(at..at, copy).for_each(drop);
            }
        }
    }
    out
}

#[test]
fn damaged_examples_fail_exactly_when_prost_reflect_fails() {
    let desc = example_type();
    let (records, _) = records(4, 3000, 2);
    let mut rng = Rng(44);
    let (mut accepted, mut refused) = (0, 0);
    for record in &records {
        let damaged = mutate(record, &mut rng);
        // One record per decoder: its features are inferred from it, so no
        // kind can conflict.
        let mut decoder = ExampleDecoder::new(None, BadRecords::Fail);
        let ours = decoder.push(&damaged, None).and_then(|()| decoder.flush());
        match (ours, DynamicMessage::decode(desc.clone(), damaged.as_slice())) {
            (Ok(batch), Ok(message)) => {
                check(&batch, &[message]);
                accepted += 1;
            }
            (Err(e), Err(_)) => {
                assert!(e.is_bad_record(), "{e}");
                refused += 1;
            }
            // prost-reflect reads a map entry whatever its wire type.
            (Err(e), Ok(_)) if e.to_string().contains("Features.feature: wire type") => refused += 1,
            (ours, theirs) => panic!("{damaged:?}: ours {ours:?}, prost-reflect {theirs:?}"),
        }
    }
    assert!(accepted > 100 && refused > 100, "{accepted} accepted, {refused} refused");
}
