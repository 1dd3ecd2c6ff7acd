//! The plan of a message type as columns: which fields are read (the
//! projection), how each is typed in Arrow, and how the wire walker finds a
//! field by its number.
//!
//! Arrow types: int32/sint32/sfixed32 and enums → Int32, int64/sint64/sfixed64
//! → Int64, uint32/fixed32 → UInt32, uint64/fixed64 → UInt64, float →
//! Float32, double → Float64, bool → Boolean, string → Utf8, bytes → Binary,
//! messages → Struct, repeated fields → List (items not null), maps → Map
//! (entries `key`, `value`, neither null). A singular field is nullable
//! exactly when it has presence.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Fields, Schema};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use riegeli_codec::FieldProjection;

use crate::error::{Error, Result};
use crate::wire::{FIXED32, FIXED64, MAX_DEPTH, VARINT};

/// The scalar types of protobuf, by how they are read from the wire and stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Fixed32,
    Fixed64,
    Sfixed32,
    Sfixed64,
    Float,
    Double,
    Bool,
    Enum,
    String,
    Bytes,
}

impl Scalar {
    /// The wire type of one value (strings and bytes: length-delimited).
    #[inline]
    pub(crate) fn wire_type(self) -> u8 {
        match self {
            Self::Fixed32 | Self::Sfixed32 | Self::Float => FIXED32,
            Self::Fixed64 | Self::Sfixed64 | Self::Double => FIXED64,
            Self::String | Self::Bytes => crate::wire::LEN,
            _ => VARINT,
        }
    }

    /// Whether repeated values of this type may be packed.
    pub(crate) fn packable(self) -> bool {
        !matches!(self, Self::String | Self::Bytes)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Int32 => "int32",
            Self::Int64 => "int64",
            Self::Uint32 => "uint32",
            Self::Uint64 => "uint64",
            Self::Sint32 => "sint32",
            Self::Sint64 => "sint64",
            Self::Fixed32 => "fixed32",
            Self::Fixed64 => "fixed64",
            Self::Sfixed32 => "sfixed32",
            Self::Sfixed64 => "sfixed64",
            Self::Float => "float",
            Self::Double => "double",
            Self::Bool => "bool",
            Self::Enum => "enum",
            Self::String => "string",
            Self::Bytes => "bytes",
        }
    }

    pub(crate) fn data_type(self) -> DataType {
        match self {
            Self::Int32 | Self::Sint32 | Self::Sfixed32 | Self::Enum => DataType::Int32,
            Self::Int64 | Self::Sint64 | Self::Sfixed64 => DataType::Int64,
            Self::Uint32 | Self::Fixed32 => DataType::UInt32,
            Self::Uint64 | Self::Fixed64 => DataType::UInt64,
            Self::Float => DataType::Float32,
            Self::Double => DataType::Float64,
            Self::Bool => DataType::Boolean,
            Self::String => DataType::Utf8,
            Self::Bytes => DataType::Binary,
        }
    }
}

/// How many values a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// One value; with presence, absent is null, else the default.
    Singular { presence: bool },
    /// A list of values (never null: absent is empty).
    Repeated,
    /// A map: the field's message type is the entry (key 1, value 2).
    Map,
}

/// A field's values: a scalar, or a message with its own plan.
#[derive(Debug)]
pub(crate) enum Value {
    Scalar(Scalar),
    Message(Box<MessagePlan>),
}

/// One column (a projected field).
#[derive(Debug)]
pub(crate) struct FieldPlan {
    /// The field's path from the record, for error messages ("a.b").
    pub(crate) path: String,
    pub(crate) number: u32,
    pub(crate) shape: Shape,
    pub(crate) value: Value,
    /// The oneof it is a member of (its index in the message's plan).
    pub(crate) oneof: Option<usize>,
    /// The column's Arrow field.
    pub(crate) arrow: FieldRef,
}

/// What a field number means in a message: a column, and/or a oneof member.
/// Oneof members outside the projection are kept here: a later member clears
/// an earlier one, projected or not.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Slot {
    pub(crate) field: Option<usize>,
    pub(crate) oneof: Option<usize>,
    /// The field's type if it is a singular scalar: what the walker needs
    /// to read and push it without looking at its [`FieldPlan`].
    pub(crate) singular_scalar: Option<Scalar>,
}

/// Field numbers to slots: a table for small numbers, a map for the others.
#[derive(Debug, Default)]
pub(crate) struct Lookup {
    dense: Vec<Slot>,
    sparse: HashMap<u32, Slot>,
}

impl Lookup {
    const DENSE_MAX: u32 = 1024;

    fn insert(&mut self, number: u32, update: impl FnOnce(&mut Slot)) {
        if number < Self::DENSE_MAX {
            let i = number as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, Slot::default());
            }
            if let Some(slot) = self.dense.get_mut(i) {
                update(slot);
            }
        } else {
            update(self.sparse.entry(number).or_default());
        }
    }

    #[inline]
    pub(crate) fn get(&self, number: u32) -> Slot {
        if number < Self::DENSE_MAX {
            self.dense.get(number as usize).copied().unwrap_or_default()
        } else {
            self.sparse.get(&number).copied().unwrap_or_default()
        }
    }
}

/// The columns of one message type.
#[derive(Debug)]
pub(crate) struct MessagePlan {
    /// The projected fields, in the order of the message's descriptor.
    pub(crate) fields: Vec<FieldPlan>,
    pub(crate) lookup: Lookup,
    pub(crate) num_oneofs: usize,
    /// The number of members of each oneof (1 for proto3 `optional`).
    pub(crate) oneof_members: Vec<usize>,
    /// Indices in `fields` of the singular scalars (which the walker's step
    /// 1 pushes) and of the others (messages, lists, maps: step 2's work).
    pub(crate) singular_scalars: Vec<usize>,
    pub(crate) others: Vec<usize>,
    /// The Arrow fields of `fields`.
    pub(crate) arrow: Fields,
}

/// Which fields of a message are selected: all of them, or some by name.
#[derive(Debug, Default)]
enum Selection {
    #[default]
    All,
    Some(BTreeMap<String, Selection>),
}

impl Selection {
    fn from_paths<S: AsRef<str>>(paths: &[S]) -> Result<Self> {
        let mut root = BTreeMap::new();
        for path in paths {
            let path = path.as_ref();
            if path.is_empty() || path.split('.').any(str::is_empty) {
                return Err(Error::projection(format!("{path:?} is not a field path (names joined by '.')")));
            }
            let mut node = &mut root;
            let mut parts = path.split('.').peekable();
            while let Some(part) = parts.next() {
                let child = node.entry(part.to_owned()).or_insert_with(|| Self::Some(BTreeMap::new()));
                if parts.peek().is_none() {
                    *child = Self::All;
                    break;
                }
                match child {
                    Self::All => break,
                    Self::Some(children) => node = children,
                }
            }
        }
        Ok(Self::Some(root))
    }
}

/// The plan of a record type, with its schema and the field numbers of its
/// projection.
#[derive(Debug)]
pub(crate) struct RecordPlan {
    pub(crate) root: MessagePlan,
    pub(crate) schema: Arc<Schema>,
    pub(crate) field_projection: FieldProjection,
}

impl RecordPlan {
    /// Plans `message` with the fields of `projection` (all with `None`).
    pub(crate) fn new<S: AsRef<str>>(message: &MessageDescriptor, projection: Option<&[S]>) -> Result<Self> {
        let selection = match projection {
            None => Selection::All,
            Some(paths) => Selection::from_paths(paths)?,
        };
        let mut builder = Builder {
            stack: vec![message.full_name().to_owned()],
            numbers: Vec::new(),
            paths: Vec::new(),
            covered: false,
            planned: 0,
        };
        let root = builder.message(message, &selection, "", false)?;
        let field_projection = match projection {
            None => FieldProjection::all(),
            Some(_) => FieldProjection::from_paths(&builder.paths)
                .map_err(|e| Error::projection(format!("field numbers of the projection: {e}")))?,
        };
        let schema = Arc::new(Schema::new(root.arrow.clone()));
        Ok(Self { root, schema, field_projection })
    }
}

struct Builder {
    /// Full names of the message types from the root to the one being planned.
    stack: Vec<String>,
    /// Field numbers from the root to the field being planned.
    numbers: Vec<u32>,
    /// The paths of field numbers a transposed decoder must keep.
    paths: Vec<Vec<u32>>,
    /// Whether a path in `paths` already keeps the field being planned whole.
    covered: bool,
    /// The fields planned so far, at every depth (see [`MAX_PLANNED_FIELDS`]).
    planned: usize,
}

/// The most fields a plan has in all, a field of a message type planned once
/// for each place the type is in. A type that contains no type twice on a path
/// can still have exponentially many: a file's descriptors (untrusted, like
/// the records) could name a type whose thirty nested levels of two fields each
/// make a billion columns, and planning them would never end. Far beyond real
/// schemas; a projection plans only what it selects.
const MAX_PLANNED_FIELDS: usize = 1 << 16;

impl Builder {
    fn message(
        &mut self,
        message: &MessageDescriptor,
        selection: &Selection,
        prefix: &str,
        map_entry: bool,
    ) -> Result<MessagePlan> {
        if self.stack.len() > MAX_DEPTH {
            return Err(Error::type_error(format!("{prefix}: messages nest deeper than {MAX_DEPTH}")));
        }
        if let Selection::Some(names) = selection {
            for name in names.keys() {
                if message.get_field_by_name(name).is_none() {
                    let at = if prefix.is_empty() { String::new() } else { format!(" (in {prefix})") };
                    return Err(Error::projection(format!("{} has no field {name:?}{at}", message.full_name())));
                }
            }
        }
        let mut plan = MessagePlan {
            fields: Vec::new(),
            lookup: Lookup::default(),
            num_oneofs: message.oneofs().len(),
            oneof_members: message.oneofs().map(|o| o.fields().len()).collect(),
            singular_scalars: Vec::new(),
            others: Vec::new(),
            arrow: Fields::empty(),
        };
        // Which oneofs have a projected member: their other members are kept
        // by a transposed decoder too (existence only), to clear it.
        let mut oneofs_used = vec![false; plan.num_oneofs];
        for field in message.fields() {
            let child_selection = match selection {
                Selection::All => Some(&Selection::All),
                Selection::Some(names) => names.get(field.name()),
            };
            let oneof = field.containing_oneof().and_then(|o| message.oneofs().position(|x| x.name() == o.name()));
            if let Some(o) = oneof {
                plan.lookup.insert(field.number(), |slot| slot.oneof = Some(o));
            }
            let Some(child_selection) = child_selection else { continue };
            self.planned += 1;
            if self.planned > MAX_PLANNED_FIELDS {
                return Err(Error::type_error(format!(
                    "{}: the columns have more than {MAX_PLANNED_FIELDS} fields in all, counting those of a \
                     message type once for each place it is in; select fewer with a projection",
                    self.stack.first().map_or("", String::as_str)
                )));
            }
            if let Some(used) = oneof.and_then(|o| oneofs_used.get_mut(o)) {
                *used = true;
            }
            let index = plan.fields.len();
            plan.lookup.insert(field.number(), |slot| slot.field = Some(index));
            let path = if prefix.is_empty() { field.name().to_owned() } else { format!("{prefix}.{}", field.name()) };
            self.numbers.push(field.number());
            let planned = self.field(&field, child_selection, path, oneof, map_entry);
            self.numbers.pop();
            let planned = planned?;
            if let (Shape::Singular { .. }, Value::Scalar(scalar)) = (planned.shape, &planned.value) {
                let scalar = *scalar;
                plan.lookup.insert(field.number(), |slot| slot.singular_scalar = Some(scalar));
                plan.singular_scalars.push(index);
            } else {
                plan.others.push(index);
            }
            plan.fields.push(planned);
        }
        for (o, oneof) in message.oneofs().enumerate() {
            if !self.covered && oneofs_used.get(o) == Some(&true) {
                for member in oneof.fields() {
                    let mut path = self.numbers.clone();
                    path.extend([member.number(), FieldProjection::EXISTENCE_ONLY]);
                    self.paths.push(path);
                }
            }
        }
        plan.arrow = plan.fields.iter().map(|f| f.arrow.clone()).collect();
        Ok(plan)
    }

    fn field(
        &mut self,
        field: &FieldDescriptor,
        selection: &Selection,
        path: String,
        oneof: Option<usize>,
        in_map_entry: bool,
    ) -> Result<FieldPlan> {
        if field.is_group() {
            return Err(Error::type_error(format!("field {path}: groups are not supported")));
        }
        let shape = if field.is_map() {
            Shape::Map
        } else if field.is_list() {
            Shape::Repeated
        } else {
            // A map entry's value is its default when absent, never null.
            Shape::Singular { presence: field.supports_presence() && !in_map_entry }
        };
        let kind = field.kind();
        let selected_children = matches!(selection, Selection::Some(_));
        if selected_children && (shape == Shape::Map || !matches!(kind, Kind::Message(_))) {
            return Err(Error::projection(format!(
                "{path} is not a message field (maps are selected whole), so it has no fields to select"
            )));
        }
        let was_covered = self.covered;
        if !self.covered && (!selected_children || shape == Shape::Map) {
            // Kept whole by a transposed decoder.
            self.paths.push(self.numbers.clone());
            self.covered = true;
        }
        let planned = self.value(field, kind, selection, path, shape, oneof);
        self.covered = was_covered;
        planned
    }

    fn value(
        &mut self,
        field: &FieldDescriptor,
        kind: Kind,
        selection: &Selection,
        path: String,
        shape: Shape,
        oneof: Option<usize>,
    ) -> Result<FieldPlan> {
        let selected_children = matches!(selection, Selection::Some(_));
        let (value, data_type) = match kind {
            Kind::Message(message) => {
                if !selected_children && self.stack.iter().any(|name| name == message.full_name()) {
                    return Err(Error::type_error(format!(
                        "field {path}: message type {} contains itself, so it has no Arrow form; \
                         select fields below it with a projection",
                        message.full_name()
                    )));
                }
                self.stack.push(message.full_name().to_owned());
                let planned = self.message(&message, selection, &path, shape == Shape::Map);
                self.stack.pop();
                let planned = planned?;
                let data_type = DataType::Struct(planned.arrow.clone());
                (Value::Message(Box::new(planned)), data_type)
            }
            other => {
                let scalar = scalar_of(&other);
                (Value::Scalar(scalar), scalar.data_type())
            }
        };
        let name = field.name();
        let arrow = match shape {
            Shape::Singular { presence } => Field::new(name, data_type, presence),
            Shape::Repeated => Field::new(name, DataType::List(Arc::new(Field::new("item", data_type, false))), false),
            Shape::Map => {
                let entries = Field::new("entries", data_type, false);
                Field::new(name, DataType::Map(Arc::new(entries), false), false)
            }
        };
        Ok(FieldPlan { path, number: field.number(), shape, value, oneof, arrow: Arc::new(arrow) })
    }
}

fn scalar_of(kind: &Kind) -> Scalar {
    match kind {
        Kind::Double => Scalar::Double,
        Kind::Float => Scalar::Float,
        Kind::Int32 => Scalar::Int32,
        Kind::Int64 => Scalar::Int64,
        Kind::Uint32 => Scalar::Uint32,
        Kind::Uint64 => Scalar::Uint64,
        Kind::Sint32 => Scalar::Sint32,
        Kind::Sint64 => Scalar::Sint64,
        Kind::Fixed32 => Scalar::Fixed32,
        Kind::Fixed64 => Scalar::Fixed64,
        Kind::Sfixed32 => Scalar::Sfixed32,
        Kind::Sfixed64 => Scalar::Sfixed64,
        Kind::Bool => Scalar::Bool,
        Kind::String => Scalar::String,
        Kind::Bytes => Scalar::Bytes,
        Kind::Enum(_) => Scalar::Enum,
        // Messages are planned by the caller.
        Kind::Message(_) => Scalar::Bytes,
    }
}
