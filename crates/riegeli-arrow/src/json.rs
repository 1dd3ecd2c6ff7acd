//! `JsonEncoder`: rows of a [`ProtoDecoder`](crate::ProtoDecoder)'s batches
//! as protobuf JSON, the message type's canonical mapping.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Fields};
use prost_reflect::{EnumDescriptor, Kind, MessageDescriptor};
use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::error::{Error, Result};

/// Writes rows of the batches of a [`ProtoDecoder`](crate::ProtoDecoder)
/// (of the same message type) as protobuf JSON, as protobuf's JSON mapping
/// prints the messages the records hold (and as prost-reflect's
/// `DynamicMessage` serializes them with its default options):
///
/// - fields by their JSON names (lowerCamelCase), in field number order;
///   fields without presence that hold their default value, empty repeated
///   fields and empty maps are left out, absent fields with presence too;
/// - enums by the name of their value (their number when the type has no
///   such value), `google.protobuf.NullValue` as `null`;
/// - 64-bit integers as strings, bytes in base64, non-finite floats as
///   `"NaN"`, `"Infinity"`, `"-Infinity"`; map keys as strings;
/// - `google.protobuf.Timestamp` and `Duration` as RFC 3339 text and
///   seconds (an error if out of range), the wrapper types as their value,
///   `Empty` as `{}`.
///
/// Not every type can be printed this way: [`new`](Self::new) is an
/// [`ErrorKind::Type`](crate::ErrorKind::Type) error for a type that
/// reaches `google.protobuf.Any`, `Struct`, `Value`, `ListValue` or
/// `FieldMask`, or a message with extensions declared (the columns do not
/// hold what these print), and for a schema that is not the type's
/// unprojected one.
///
/// ```
/// use riegeli_arrow::{BadRecords, JsonEncoder, ProtoDecoder, message_type};
/// # use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
/// # use prost_types::field_descriptor_proto::{Label, Type};
/// # let field = |name: &str, number, ty: Type| FieldDescriptorProto {
/// #     name: Some(name.into()), number: Some(number), label: Some(Label::Optional as i32),
/// #     r#type: Some(ty as i32), ..Default::default()
/// # };
/// # let file = FileDescriptorProto {
/// #     name: Some("demo.proto".into()), package: Some("demo".into()), syntax: Some("proto3".into()),
/// #     message_type: vec![DescriptorProto {
/// #         name: Some("Point".into()),
/// #         field: vec![field("x_pos", 1, Type::Int32), field("big", 2, Type::Int64)],
/// #         ..Default::default()
/// #     }],
/// #     ..Default::default()
/// # };
/// // `message Point { int32 x_pos = 1; int64 big = 2; }` (proto3).
/// let message = message_type(vec![file], "demo.Point")?;
/// let mut decoder = ProtoDecoder::new(&message, None::<&[&str]>, BadRecords::Fail)?;
/// decoder.push(&[0x08, 0x03, 0x10, 0x05], None)?; // x_pos: 3, big: 5
/// decoder.push(&[], None)?;
/// let batch = decoder.flush()?;
/// let encoder = JsonEncoder::new(&message, &batch.schema())?;
/// let mut out = Vec::new();
/// encoder.write_row(&batch, 0, false, &mut out)?;
/// assert_eq!(out, br#"{"xPos":3,"big":"5"}"#);
/// out.clear();
/// encoder.write_row(&batch, 1, false, &mut out)?;
/// assert_eq!(out, b"{}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct JsonEncoder {
    root: MessageJson,
}

impl JsonEncoder {
    /// An encoder of the rows of batches of `schema`, what a
    /// [`ProtoDecoder`](crate::ProtoDecoder) of `message` without a
    /// projection makes.
    pub fn new(message: &MessageDescriptor, schema: &arrow_schema::Schema) -> Result<Self> {
        Ok(Self { root: MessageJson::new(message, schema.fields(), &mut Vec::new())? })
    }

    /// Appends row `row` of `batch` to `out` as a JSON object: on one line,
    /// or with `pretty` over several lines indented by two spaces. An
    /// error for a timestamp or duration out of the range JSON can express
    /// (`out` may then hold part of the row).
    pub fn write_row(&self, batch: &RecordBatch, row: usize, pretty: bool, out: &mut Vec<u8>) -> Result<()> {
        let value = MessageRow { plan: &self.root, columns: batch.columns(), row };
        let written = if pretty {
            value.serialize(&mut serde_json::Serializer::pretty(out))
        } else {
            value.serialize(&mut serde_json::Serializer::new(out))
        };
        written.map_err(|e| Error::type_error(format!("cannot print as JSON: {e}")))
    }
}

/// How a message prints: its fields, or a well-known type's own form.
#[derive(Debug)]
struct MessageJson {
    /// The fields in field-number order.
    fields: Vec<FieldJson>,
    special: Special,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    None,
    Timestamp,
    Duration,
    /// A wrapper type (`google.protobuf.Int32Value`, ...): its `value`.
    Wrapper,
    Empty,
}

#[derive(Debug)]
struct FieldJson {
    /// The column of the field among its message's columns.
    column: usize,
    json_name: String,
    shape: Shape,
    value: ValueJson,
}

#[derive(Debug)]
enum Shape {
    /// Null when absent (`presence`), or left out when its default.
    Singular {
        presence: bool,
    },
    List,
    Map {
        key: ValueJson,
    },
}

#[derive(Debug)]
enum ValueJson {
    Bool,
    I32,
    I64,
    U32,
    U64,
    F32,
    F64,
    String,
    Bytes,
    /// An enum, and the number of its default value.
    Enum(EnumDescriptor, i32),
    Message(Box<MessageJson>),
}

impl MessageJson {
    /// The plan of `message` over the columns `fields`; `stack` holds the
    /// messages being planned (a type in it is recursive, and has no columns).
    fn new(message: &MessageDescriptor, fields: &Fields, stack: &mut Vec<String>) -> Result<Self> {
        let name = message.full_name();
        let special = match name {
            "google.protobuf.Timestamp" => Special::Timestamp,
            "google.protobuf.Duration" => Special::Duration,
            "google.protobuf.Empty" => Special::Empty,
            "google.protobuf.DoubleValue"
            | "google.protobuf.FloatValue"
            | "google.protobuf.Int64Value"
            | "google.protobuf.UInt64Value"
            | "google.protobuf.Int32Value"
            | "google.protobuf.UInt32Value"
            | "google.protobuf.BoolValue"
            | "google.protobuf.StringValue"
            | "google.protobuf.BytesValue" => Special::Wrapper,
            "google.protobuf.Any"
            | "google.protobuf.Struct"
            | "google.protobuf.Value"
            | "google.protobuf.ListValue"
            | "google.protobuf.FieldMask" => {
                return Err(Error::type_error(format!("{name} has a JSON form the columns do not hold")));
            }
            _ => Special::None,
        };
        if message.extensions().next().is_some() {
            return Err(Error::type_error(format!("{name} has extensions, which the columns do not hold")));
        }
        if stack.iter().any(|s| s == name) {
            return Err(Error::type_error(format!("{name} contains itself")));
        }
        if fields.len() != message.fields().len() {
            return Err(Error::type_error(format!("the columns of {name} are not all of its fields")));
        }
        stack.push(name.to_owned());
        let mut planned = Vec::with_capacity(fields.len());
        for (column, arrow) in fields.iter().enumerate() {
            let field = message
                .get_field_by_name(arrow.name())
                .ok_or_else(|| Error::type_error(format!("{name} has no field {:?}", arrow.name())))?;
            let (shape, value) = if field.is_map() {
                let (Kind::Message(entry), DataType::Map(entries, _)) = (field.kind(), arrow.data_type()) else {
                    return Err(mismatch(name, arrow.name()));
                };
                let DataType::Struct(children) = entries.data_type() else { return Err(mismatch(name, arrow.name())) };
                let (key_field, value_field) = (entry.map_entry_key_field(), entry.map_entry_value_field());
                let key = value_json(&key_field.kind(), None, stack)?;
                let value_type = children.get(1).ok_or_else(|| mismatch(name, arrow.name()))?;
                (Shape::Map { key }, value_json(&value_field.kind(), Some(value_type.data_type()), stack)?)
            } else if field.is_list() {
                let DataType::List(item) = arrow.data_type() else { return Err(mismatch(name, arrow.name())) };
                (Shape::List, value_json(&field.kind(), Some(item.data_type()), stack)?)
            } else {
                let shape = Shape::Singular { presence: field.supports_presence() };
                (shape, value_json(&field.kind(), Some(arrow.data_type()), stack)?)
            };
            planned.push((field.number(), FieldJson { column, json_name: field.json_name().to_owned(), shape, value }));
        }
        stack.pop();
        planned.sort_by_key(|(number, _)| *number);
        let fields: Vec<FieldJson> = planned.into_iter().map(|(_, f)| f).collect();
        if special == Special::Wrapper && fields.len() != 1 {
            return Err(Error::type_error(format!("{name} is not a wrapper of one value")));
        }
        Ok(Self { fields, special })
    }
}

fn mismatch(message: &str, field: &str) -> Error {
    Error::type_error(format!("column {field} of {message} is not of the field's type"))
}

/// How a value of `kind` prints; a message's columns are the children of
/// `data_type`, a struct.
fn value_json(kind: &Kind, data_type: Option<&DataType>, stack: &mut Vec<String>) -> Result<ValueJson> {
    Ok(match kind {
        Kind::Bool => ValueJson::Bool,
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => ValueJson::I32,
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => ValueJson::I64,
        Kind::Uint32 | Kind::Fixed32 => ValueJson::U32,
        Kind::Uint64 | Kind::Fixed64 => ValueJson::U64,
        Kind::Float => ValueJson::F32,
        Kind::Double => ValueJson::F64,
        Kind::String => ValueJson::String,
        Kind::Bytes => ValueJson::Bytes,
        Kind::Enum(e) => ValueJson::Enum(e.clone(), e.default_value().number()),
        Kind::Message(m) => {
            let Some(DataType::Struct(children)) = data_type else {
                return Err(Error::type_error(format!("the column of a {} is not a struct", m.full_name())));
            };
            ValueJson::Message(Box::new(MessageJson::new(m, children, stack)?))
        }
    })
}

/// One row of a message's columns.
struct MessageRow<'a> {
    plan: &'a MessageJson,
    columns: &'a [ArrayRef],
    row: usize,
}

/// One value: item `index` of `array`.
struct ValueAt<'a> {
    plan: &'a ValueJson,
    array: &'a ArrayRef,
    index: usize,
}

/// A map key: item `index` of `array`, always a string in JSON.
struct KeyAt<'a> {
    plan: &'a ValueJson,
    array: &'a ArrayRef,
    index: usize,
}

/// The items `range` of `array`.
struct ListAt<'a> {
    plan: &'a ValueJson,
    array: &'a ArrayRef,
    range: std::ops::Range<usize>,
}

/// Entries `range` of a map's `keys` and `values`.
struct MapAt<'a> {
    key: &'a ValueJson,
    value: &'a ValueJson,
    keys: &'a ArrayRef,
    values: &'a ArrayRef,
    range: std::ops::Range<usize>,
}

fn column<E: serde::ser::Error>(columns: &[ArrayRef], index: usize) -> Result<&ArrayRef, E> {
    columns.get(index).ok_or_else(|| E::custom("a column is missing"))
}

impl Serialize for MessageRow<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (plan, row) = (self.plan, self.row);
        match plan.special {
            Special::None => {}
            Special::Empty => return serializer.collect_map(std::iter::empty::<((), ())>()),
            Special::Wrapper => {
                let field = plan.fields.first().ok_or_else(|| S::Error::custom("a wrapper without its value"))?;
                let array = column::<S::Error>(self.columns, field.column)?;
                return ValueAt { plan: &field.value, array, index: row }.serialize(serializer);
            }
            Special::Timestamp | Special::Duration => {
                // Fields in number order: seconds = 1, nanos = 2.
                let int = |number: usize| -> Result<i64, S::Error> {
                    let field = plan.fields.get(number).ok_or_else(|| S::Error::custom("a field is missing"))?;
                    let array = column::<S::Error>(self.columns, field.column)?;
                    match array.data_type() {
                        DataType::Int64 => Ok(array.as_primitive::<Int64Type>().value(row)),
                        DataType::Int32 => Ok(i64::from(array.as_primitive::<Int32Type>().value(row))),
                        _ => Err(S::Error::custom("timestamp or duration columns of another type")),
                    }
                };
                let (seconds, nanos) = (int(0)?, int(1)?);
                let nanos = i32::try_from(nanos).map_err(S::Error::custom)?;
                return if plan.special == Special::Timestamp {
                    if !(-62_135_596_800..=253_402_300_799).contains(&seconds) {
                        return Err(S::Error::custom("timestamp out of range"));
                    }
                    serializer.collect_str(&prost_types::Timestamp { seconds, nanos })
                } else {
                    if seconds.unsigned_abs() > 315_576_000_000 || nanos.unsigned_abs() > 999_999_999 {
                        return Err(S::Error::custom("duration out of range"));
                    }
                    serializer.collect_str(&prost_types::Duration { seconds, nanos })
                };
            }
        }
        let mut map = serializer.serialize_map(None)?;
        for field in &plan.fields {
            let array = column::<S::Error>(self.columns, field.column)?;
            match &field.shape {
                Shape::Singular { presence: true } => {
                    if array.is_valid(row) {
                        map.serialize_entry(&field.json_name, &ValueAt { plan: &field.value, array, index: row })?;
                    }
                }
                Shape::Singular { presence: false } => {
                    if !is_default(&field.value, array, row) {
                        map.serialize_entry(&field.json_name, &ValueAt { plan: &field.value, array, index: row })?;
                    }
                }
                Shape::List => {
                    let list = array.as_list::<i32>();
                    let range = range_of(list.value_offsets(), row);
                    if !range.is_empty() {
                        let items = ListAt { plan: &field.value, array: list.values(), range };
                        map.serialize_entry(&field.json_name, &items)?;
                    }
                }
                Shape::Map { key } => {
                    let entries = array.as_map();
                    let range = range_of(entries.value_offsets(), row);
                    if !range.is_empty() {
                        let value =
                            MapAt { key, value: &field.value, keys: entries.keys(), values: entries.values(), range };
                        map.serialize_entry(&field.json_name, &value)?;
                    }
                }
            }
        }
        map.end()
    }
}

fn range_of(offsets: &[i32], row: usize) -> std::ops::Range<usize> {
    let at = |i: usize| offsets.get(i).and_then(|&o| usize::try_from(o).ok()).unwrap_or(0);
    at(row)..at(row + 1).max(at(row))
}

/// Whether the value at `row` is its type's default (a field without
/// presence then prints nothing). A float is default when it compares
/// equal to 0, so `-0.0` is and NaN is not, as in prost-reflect.
fn is_default(plan: &ValueJson, array: &ArrayRef, row: usize) -> bool {
    match plan {
        ValueJson::Bool => !array.as_boolean().value(row),
        ValueJson::I32 => array.as_primitive::<Int32Type>().value(row) == 0,
        ValueJson::I64 => array.as_primitive::<Int64Type>().value(row) == 0,
        ValueJson::U32 => array.as_primitive::<UInt32Type>().value(row) == 0,
        ValueJson::U64 => array.as_primitive::<UInt64Type>().value(row) == 0,
        ValueJson::F32 => array.as_primitive::<Float32Type>().value(row) == 0.0,
        ValueJson::F64 => array.as_primitive::<Float64Type>().value(row) == 0.0,
        ValueJson::String => array.as_string::<i32>().value(row).is_empty(),
        ValueJson::Bytes => array.as_binary::<i32>().value(row).is_empty(),
        ValueJson::Enum(_, default) => array.as_primitive::<Int32Type>().value(row) == *default,
        // Messages have presence.
        ValueJson::Message(_) => false,
    }
}

/// A float, or the string protobuf's JSON has for a non-finite one.
fn float<S: Serializer, F: Serialize>(
    serializer: S,
    value: F,
    finite: bool,
    nan: bool,
    positive: bool,
) -> Result<S::Ok, S::Error> {
    match (finite, nan, positive) {
        (true, _, _) => value.serialize(serializer),
        (false, true, _) => serializer.serialize_str("NaN"),
        (false, false, true) => serializer.serialize_str("Infinity"),
        (false, false, false) => serializer.serialize_str("-Infinity"),
    }
}

impl Serialize for ValueAt<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (array, i) = (self.array, self.index);
        match self.plan {
            ValueJson::Bool => serializer.serialize_bool(array.as_boolean().value(i)),
            ValueJson::I32 => serializer.serialize_i32(array.as_primitive::<Int32Type>().value(i)),
            ValueJson::I64 => serializer.collect_str(&array.as_primitive::<Int64Type>().value(i)),
            ValueJson::U32 => serializer.serialize_u32(array.as_primitive::<UInt32Type>().value(i)),
            ValueJson::U64 => serializer.collect_str(&array.as_primitive::<UInt64Type>().value(i)),
            ValueJson::F32 => {
                let v = array.as_primitive::<Float32Type>().value(i);
                float(serializer, v, v.is_finite(), v.is_nan(), v > 0.0)
            }
            ValueJson::F64 => {
                let v = array.as_primitive::<Float64Type>().value(i);
                float(serializer, v, v.is_finite(), v.is_nan(), v > 0.0)
            }
            ValueJson::String => serializer.serialize_str(array.as_string::<i32>().value(i)),
            ValueJson::Bytes => serializer.collect_str(&base64::display::Base64Display::new(
                array.as_binary::<i32>().value(i),
                &base64::engine::general_purpose::STANDARD,
            )),
            ValueJson::Enum(e, _) => {
                let number = array.as_primitive::<Int32Type>().value(i);
                if e.full_name() == "google.protobuf.NullValue" {
                    serializer.serialize_none()
                } else if let Some(value) = e.get_value(number) {
                    serializer.serialize_str(value.name())
                } else {
                    serializer.serialize_i32(number)
                }
            }
            ValueJson::Message(plan) => {
                let columns = array.as_struct().columns();
                MessageRow { plan, columns, row: i }.serialize(serializer)
            }
        }
    }
}

impl Serialize for KeyAt<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (array, i) = (self.array, self.index);
        match self.plan {
            ValueJson::Bool => serializer.collect_str(&array.as_boolean().value(i)),
            ValueJson::I32 => serializer.collect_str(&array.as_primitive::<Int32Type>().value(i)),
            ValueJson::I64 => serializer.collect_str(&array.as_primitive::<Int64Type>().value(i)),
            ValueJson::U32 => serializer.collect_str(&array.as_primitive::<UInt32Type>().value(i)),
            ValueJson::U64 => serializer.collect_str(&array.as_primitive::<UInt64Type>().value(i)),
            ValueJson::String => serializer.serialize_str(array.as_string::<i32>().value(i)),
            _ => Err(S::Error::custom("a map key of a type keys cannot have")),
        }
    }
}

impl Serialize for ListAt<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.range.len()))?;
        for index in self.range.clone() {
            seq.serialize_element(&ValueAt { plan: self.plan, array: self.array, index })?;
        }
        seq.end()
    }
}

impl Serialize for MapAt<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.range.len()))?;
        for index in self.range.clone() {
            map.serialize_entry(
                &KeyAt { plan: self.key, array: self.keys, index },
                &ValueAt { plan: self.value, array: self.values, index },
            )?;
        }
        map.end()
    }
}
