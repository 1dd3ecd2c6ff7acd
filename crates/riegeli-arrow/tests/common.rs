//! Test helpers: message types built by hand (there is no protoc here), random
//! messages, and the check of Arrow columns against prost-reflect's decoding.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, ListArray, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Fields};
use prost::Message;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto, FieldOptions,
    FileDescriptorProto, MessageOptions, OneofDescriptorProto,
};
use riegeli_records::{RecordWriter, RecordWriterOptions, RecordsMetadata, set_record_type};

fn field(name: &str, number: i32, label: Label, ty: Type, type_name: Option<&str>) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.to_owned()),
        number: Some(number),
        label: Some(label as i32),
        r#type: Some(ty as i32),
        type_name: type_name.map(str::to_owned),
        ..Default::default()
    }
}

fn opt(name: &str, number: i32, ty: Type) -> FieldDescriptorProto {
    field(name, number, Label::Optional, ty, None)
}

fn rep(name: &str, number: i32, ty: Type) -> FieldDescriptorProto {
    field(name, number, Label::Repeated, ty, None)
}

fn msg(name: &str, number: i32, label: Label, type_name: &str) -> FieldDescriptorProto {
    field(name, number, label, Type::Message, Some(type_name))
}

fn map_entry(name: &str, key: Type, value: Type, value_type: Option<&str>) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.to_owned()),
        field: vec![opt("key", 1, key), field("value", 2, Label::Optional, value, value_type)],
        options: Some(MessageOptions { map_entry: Some(true), ..Default::default() }),
        ..Default::default()
    }
}

/// A proto3 file `t3.proto` (package `t`) with `t.All`, which has a field of
/// every kind, and the recursive `t.Node`; and a proto2 file `t2.proto` with `t.P2`.
pub(crate) fn files() -> Vec<FileDescriptorProto> {
    let color = EnumDescriptorProto {
        name: Some("Color".into()),
        value: ["RED", "GREEN", "BLUE"]
            .iter()
            .enumerate()
            .map(|(i, n)| EnumValueDescriptorProto {
                name: Some((*n).into()),
                number: Some(i as i32),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let inner2 =
        DescriptorProto { name: Some("Inner2".into()), field: vec![opt("u", 1, Type::Uint64)], ..Default::default() };
    let mut ob = opt("ob", 4, Type::Bool);
    ob.proto3_optional = Some(true);
    ob.oneof_index = Some(0);
    let inner = DescriptorProto {
        name: Some("Inner".into()),
        field: vec![
            opt("a", 1, Type::Int32),
            opt("s", 2, Type::String),
            rep("r", 3, Type::Int64),
            ob,
            msg("deep", 5, Label::Optional, ".t.Inner2"),
        ],
        oneof_decl: vec![OneofDescriptorProto { name: Some("_ob".into()), ..Default::default() }],
        ..Default::default()
    };
    let mut fields = vec![
        opt("i32", 1, Type::Int32),
        opt("i64", 2, Type::Int64),
        opt("u32", 3, Type::Uint32),
        opt("u64", 4, Type::Uint64),
        opt("s32", 5, Type::Sint32),
        opt("s64", 6, Type::Sint64),
        opt("f32", 7, Type::Fixed32),
        opt("f64", 8, Type::Fixed64),
        opt("sf32", 9, Type::Sfixed32),
        opt("sf64", 10, Type::Sfixed64),
        opt("fl", 11, Type::Float),
        opt("db", 12, Type::Double),
        opt("b", 13, Type::Bool),
        opt("str", 14, Type::String),
        opt("byt", 15, Type::Bytes),
        field("color", 16, Label::Optional, Type::Enum, Some(".t.Color")),
        opt("opt_i32", 17, Type::Int32),
        opt("opt_str", 18, Type::String),
        msg("inner", 19, Label::Optional, ".t.Inner"),
        rep("r_i32", 20, Type::Int32),
        rep("r_s64", 21, Type::Sint64),
        rep("r_db", 22, Type::Double),
        rep("r_b", 23, Type::Bool),
        rep("r_str", 24, Type::String),
        rep("r_byt", 25, Type::Bytes),
        field("r_color", 26, Label::Repeated, Type::Enum, Some(".t.Color")),
        msg("r_inner", 27, Label::Repeated, ".t.Inner"),
        msg("m_si", 28, Label::Repeated, ".t.All.MSiEntry"),
        msg("m_im", 29, Label::Repeated, ".t.All.MImEntry"),
        msg("m_bs", 30, Label::Repeated, ".t.All.MBsEntry"),
        opt("c_int", 31, Type::Int32),
        opt("c_str", 32, Type::String),
        msg("c_msg", 33, Label::Optional, ".t.Inner"),
        rep("r_f32", 34, Type::Fixed32),
        rep("r_fl", 35, Type::Float),
        rep("r_unpacked", 36, Type::Uint32),
        msg("e", 37, Label::Optional, ".t.Empty"),
    ];
    // proto3 `optional`: synthetic oneofs 1 and 2; the real oneof `choice` is 0.
    for (f, oneof) in [(16, 1), (17, 2)] {
        fields[f].proto3_optional = Some(true);
        fields[f].oneof_index = Some(oneof);
    }
    for member in &mut fields[30..33] {
        member.oneof_index = Some(0);
    }
    fields[35].options = Some(FieldOptions { packed: Some(false), ..Default::default() });
    let all = DescriptorProto {
        name: Some("All".into()),
        field: fields,
        nested_type: vec![
            map_entry("MSiEntry", Type::String, Type::Int32, None),
            map_entry("MImEntry", Type::Int64, Type::Message, Some(".t.Inner")),
            map_entry("MBsEntry", Type::Bool, Type::String, None),
        ],
        oneof_decl: ["choice", "_opt_i32", "_opt_str"]
            .iter()
            .map(|n| OneofDescriptorProto { name: Some((*n).into()), ..Default::default() })
            .collect(),
        ..Default::default()
    };
    let empty = DescriptorProto { name: Some("Empty".into()), ..Default::default() };
    let node = DescriptorProto {
        name: Some("Node".into()),
        field: vec![
            opt("v", 1, Type::Int32),
            msg("next", 2, Label::Optional, ".t.Node"),
            msg("kids", 3, Label::Repeated, ".t.Node"),
        ],
        ..Default::default()
    };
    let t3 = FileDescriptorProto {
        name: Some("t3.proto".into()),
        package: Some("t".into()),
        syntax: Some("proto3".into()),
        message_type: vec![inner2, inner, all, empty, node],
        enum_type: vec![color],
        ..Default::default()
    };
    let mut packed = rep("packed", 4, Type::Sint32);
    packed.options = Some(FieldOptions { packed: Some(true), ..Default::default() });
    let p2 = DescriptorProto {
        name: Some("P2".into()),
        field: vec![
            opt("a", 1, Type::Int32),
            field("b", 2, Label::Required, Type::String, None),
            rep("c", 3, Type::Int32),
            packed,
            msg("n", 5, Label::Optional, ".t.Inner2"),
            rep("d", 6, Type::Double),
        ],
        ..Default::default()
    };
    let t2 = FileDescriptorProto {
        name: Some("t2.proto".into()),
        package: Some("t".into()),
        syntax: Some("proto2".into()),
        message_type: vec![p2],
        dependency: vec!["t3.proto".into()],
        ..Default::default()
    };
    vec![t3, t2]
}

/// A file `d.proto` whose type `d.L0` has two fields, `a` and `b`, of type
/// `d.L1`, which has two of `d.L2`, and so on to `d.L{depth}`, an `int32 x`:
/// no type contains itself, yet `d.L0` has 2^`depth` leaves.
pub(crate) fn doubling(depth: usize) -> FileDescriptorProto {
    let mut types: Vec<DescriptorProto> = (0..depth)
        .map(|i| {
            let next = format!(".d.L{}", i + 1);
            DescriptorProto {
                name: Some(format!("L{i}")),
                field: vec![msg("a", 1, Label::Optional, &next), msg("b", 2, Label::Optional, &next)],
                ..Default::default()
            }
        })
        .collect();
    types.push(DescriptorProto {
        name: Some(format!("L{depth}")),
        field: vec![opt("x", 1, Type::Int32)],
        ..Default::default()
    });
    FileDescriptorProto {
        name: Some("d.proto".into()),
        package: Some("d".into()),
        message_type: types,
        syntax: Some("proto3".into()),
        ..Default::default()
    }
}

/// The message type `name` of [`files`].
pub(crate) fn message(name: &str) -> MessageDescriptor {
    riegeli_arrow::message_type(files(), name).unwrap()
}

/// A tiny deterministic generator (splitmix64).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn random_scalar(kind: &Kind, rng: &mut Rng) -> Value {
    let wide = |rng: &mut Rng| match rng.below(4) {
        0 => 0,
        1 => rng.below(300),
        2 => u64::MAX - rng.below(3),
        _ => rng.next(),
    };
    match kind {
        Kind::Double => Value::F64(f64::from_bits(wide(rng))),
        Kind::Float => Value::F32(f32::from_bits(wide(rng) as u32)),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(wide(rng) as i32),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(wide(rng) as i64),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(wide(rng) as u32),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(wide(rng)),
        Kind::Bool => Value::Bool(rng.chance(50)),
        Kind::String => {
            let chars = ["a", "é", "字", "🦀", "", "z"];
            Value::String((0..rng.below(5)).map(|_| chars[rng.below(6) as usize]).collect())
        }
        Kind::Bytes => Value::Bytes((0..rng.below(6)).map(|_| rng.next() as u8).collect::<Vec<u8>>().into()),
        Kind::Enum(_) => Value::EnumNumber(rng.below(5) as i32 - 1),
        Kind::Message(_) => unreachable!("messages are made by random_message"),
    }
}

fn random_value(kind: &Kind, rng: &mut Rng, depth: usize) -> Value {
    match kind {
        Kind::Message(m) => Value::Message(random_message(m, rng, depth + 1)),
        other => random_scalar(other, rng),
    }
}

fn map_key(value: Value) -> MapKey {
    match value {
        Value::Bool(b) => MapKey::Bool(b),
        Value::I32(v) => MapKey::I32(v),
        Value::I64(v) => MapKey::I64(v),
        Value::U32(v) => MapKey::U32(v),
        Value::U64(v) => MapKey::U64(v),
        Value::String(s) => MapKey::String(s),
        other => panic!("not a map key: {other:?}"),
    }
}

/// A random message of type `desc`: each field set with some chance.
pub(crate) fn random_message(desc: &MessageDescriptor, rng: &mut Rng, depth: usize) -> DynamicMessage {
    let mut message = DynamicMessage::new(desc.clone());
    for field in desc.fields() {
        if !rng.chance(if depth > 2 { 25 } else { 60 }) {
            continue;
        }
        let value = if field.is_map() {
            let Kind::Message(entry) = field.kind() else { unreachable!() };
            let (k, v) = (entry.map_entry_key_field(), entry.map_entry_value_field());
            Value::Map(
                (0..rng.below(4))
                    .map(|_| (map_key(random_scalar(&k.kind(), rng)), random_value(&v.kind(), rng, depth)))
                    .collect(),
            )
        } else if field.is_list() {
            Value::List((0..rng.below(5)).map(|_| random_value(&field.kind(), rng, depth)).collect())
        } else {
            random_value(&field.kind(), rng, depth)
        };
        message.set_field(&field, value);
    }
    message
}

/// Writes `records` with `set_record_type` metadata and writer options `options`.
pub(crate) fn write_file(desc: &MessageDescriptor, records: &[Vec<u8>], options: &str) -> Vec<u8> {
    write_file_of(&files(), desc.full_name(), records, options)
}

/// [`write_file`] with the type `type_name` of `files` in its metadata.
pub(crate) fn write_file_of(
    files: &[FileDescriptorProto],
    type_name: &str,
    records: &[Vec<u8>],
    options: &str,
) -> Vec<u8> {
    let mut metadata = RecordsMetadata::default();
    set_record_type(&mut metadata, type_name, files).unwrap();
    let mut options: RecordWriterOptions = options.parse().unwrap();
    options.metadata = Some(metadata.encode_to_vec());
    let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.close().unwrap()
}

/// Checks every row of `batch` against `messages` (prost-reflect's decoding
/// of the same records), field by field, for the fields the batch has.
pub(crate) fn check_batch(batch: &RecordBatch, messages: &[DynamicMessage]) {
    assert_eq!(batch.num_rows(), messages.len());
    let root = StructArray::from(batch.clone());
    for (row, message) in messages.iter().enumerate() {
        check_struct(root.fields(), root.columns(), row, message, "");
    }
}

fn check_struct(fields: &Fields, columns: &[ArrayRef], row: usize, message: &DynamicMessage, path: &str) {
    for (field, column) in fields.iter().zip(columns) {
        let desc = message.descriptor().get_field_by_name(field.name()).unwrap();
        let path = format!("{path}.{}", field.name());
        if desc.supports_presence() && !message.has_field(&desc) {
            assert!(column.is_null(row), "{path} row {row}: null expected, got {:?}", column.slice(row, 1));
            continue;
        }
        assert!(!column.is_null(row), "{path} row {row}: value expected, got null");
        check_value(field, column, row, &desc, &message.get_field(&desc), &path);
    }
}

fn check_value(field: &Field, column: &ArrayRef, row: usize, desc: &FieldDescriptor, value: &Value, path: &str) {
    match (field.data_type(), value) {
        (DataType::List(item), Value::List(values)) => {
            let list: &ListArray = column.as_list();
            let items = list.value(row);
            assert_eq!(items.len(), values.len(), "{path} row {row}: list length");
            for (i, v) in values.iter().enumerate() {
                check_item(item, &items, i, desc, v, &format!("{path}[{i}]"));
            }
        }
        (DataType::Map(..), Value::Map(expected)) => {
            let map = column.as_map();
            let entries = map.value(row);
            assert_eq!(entries.len(), expected.len(), "{path} row {row}: map size");
            let Kind::Message(entry) = desc.kind() else { unreachable!() };
            let (kd, vd) = (entry.map_entry_key_field(), entry.map_entry_value_field());
            let (key_field, value_field) = (entries.fields()[0].clone(), entries.fields()[1].clone());
            for i in 0..entries.len() {
                let key = map_key(scalar_at(entries.column(0), i, &kd.kind()));
                let v = expected.get(&key).unwrap_or_else(|| panic!("{path} row {row}: key {key:?} not expected"));
                check_item(&value_field, entries.column(1), i, &vd, v, &format!("{path}[{key:?}]"));
                let _ = &key_field;
            }
        }
        _ => check_item(field, column, row, desc, value, path),
    }
}

/// One value (not a list or a map): a scalar or a struct.
fn check_item(field: &Field, column: &ArrayRef, row: usize, desc: &FieldDescriptor, value: &Value, path: &str) {
    match (field.data_type(), value) {
        (DataType::Struct(fields), Value::Message(m)) => {
            let s = column.as_struct();
            assert!(!s.is_null(row), "{path} row {row}: struct null");
            check_struct(fields, s.columns(), row, m, path);
        }
        (_, expected) => {
            let got = scalar_at(column, row, &desc.kind());
            let same = match (&got, expected) {
                (Value::F32(a), Value::F32(b)) => a.to_bits() == b.to_bits(),
                (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
                (a, b) => a == b,
            };
            assert!(same, "{path} row {row}: got {got:?}, expected {expected:?}");
        }
    }
}

fn scalar_at(column: &ArrayRef, row: usize, kind: &Kind) -> Value {
    match kind {
        Kind::Double => Value::F64(column.as_primitive::<Float64Type>().value(row)),
        Kind::Float => Value::F32(column.as_primitive::<Float32Type>().value(row)),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(column.as_primitive::<Int32Type>().value(row)),
        Kind::Enum(_) => Value::EnumNumber(column.as_primitive::<Int32Type>().value(row)),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(column.as_primitive::<Int64Type>().value(row)),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(column.as_primitive::<UInt32Type>().value(row)),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(column.as_primitive::<UInt64Type>().value(row)),
        Kind::Bool => Value::Bool(column.as_boolean().value(row)),
        Kind::String => Value::String(column.as_string::<i32>().value(row).to_owned()),
        Kind::Bytes => Value::Bytes(column.as_binary::<i32>().value(row).to_vec().into()),
        Kind::Message(_) => panic!("not a scalar"),
    }
}

/// `full` cut down to the fields of `projected` (a type the projection of
/// `full`'s type gives): struct children not in it are dropped.
pub(crate) fn restrict(full: &ArrayRef, projected: &DataType) -> ArrayRef {
    match projected {
        DataType::Struct(fields) => {
            let s = full.as_struct();
            let children =
                fields.iter().map(|f| restrict(s.column_by_name(f.name()).unwrap(), f.data_type())).collect();
            Arc::new(StructArray::new(fields.clone(), children, s.nulls().cloned()))
        }
        DataType::List(item) => {
            let l = full.as_list::<i32>();
            Arc::new(ListArray::new(
                item.clone(),
                l.offsets().clone(),
                restrict(l.values(), item.data_type()),
                l.nulls().cloned(),
            ))
        }
        _ => full.clone(),
    }
}
