//! The wire walker: a serialized message straight into column builders, by
//! its plan, with protobuf's merge semantics and no per-record message
//! object.
//!
//! A message (the record, or a nested one) is walked in two steps:
//! 1. Its bytes are scanned once. A singular scalar's value goes straight
//!    into its column as the row's value (a later occurrence replaces it:
//!    last one wins; a oneof member that another clears is taken back out),
//!    a singular message's or a map entry's bytes are noted (their offsets),
//!    and repeated values go straight into the list's child column, as do
//!    the elements of a repeated message (each walked as it comes: elements
//!    are never merged). A oneof member clears what its oneof held unless it
//!    was that same member.
//! 2. Every projected field then gets its row: a singular scalar that step 1
//!    did not find gets a null or the default, a singular message walked over all its occurrences in
//!    order (merging them, as parsing their concatenation does), a map's
//!    entries (the last entry of each key), a list's end offset.
//!
//! Items of one row of a list therefore stay contiguous: the only nested
//! walks during step 1 are whole repeated elements, and those of step 2 go
//! one field at a time.

use std::collections::HashMap;

use crate::columns::{Column, ListCol};
use crate::plan::{FieldPlan, MessagePlan, Scalar, Shape, Value};
use crate::wire::{Cursor, FIXED32, FIXED64, LEN, MAX_DEPTH, VARINT, WireError, zigzag32, zigzag64};

/// The state of one message being walked, reused by every message at its depth.
#[derive(Debug, Default)]
struct Level {
    /// The occurrences of the message being walked (offsets in the record).
    parts: Vec<(usize, usize)>,
    /// Whether step 1 pushed the row of each singular scalar field.
    pushed: Vec<bool>,
    /// The field number each oneof holds (0: none).
    oneofs: Vec<u32>,
    /// Singular messages and map entries: (field index, offsets), in order.
    deferred: Vec<(usize, usize, usize)>,
    /// Occurrences of oneof message members that a later member cleared:
    /// checked (walked into scratch columns) but not kept.
    cleared: Vec<(usize, usize, usize)>,
}

/// Walks records into columns; holds the scratch state of every depth.
#[derive(Debug, Default)]
pub(crate) struct Walker {
    levels: Vec<Level>,
}

impl Walker {
    /// Walks `record`, a message of `plan`, into `columns` (one per field of
    /// `plan`) as one row. On error, the columns may hold part of the row:
    /// the caller truncates them.
    pub(crate) fn walk_record(
        &mut self,
        plan: &MessagePlan,
        columns: &mut [Column],
        record: &[u8],
    ) -> Result<(), WireError> {
        self.set_parts(0, [(0, record.len())].into_iter());
        self.walk(plan, columns, record, 0)
    }

    fn set_parts(&mut self, depth: usize, parts: impl Iterator<Item = (usize, usize)>) {
        if self.levels.len() <= depth {
            self.levels.resize_with(depth + 1, Level::default);
        }
        if let Some(level) = self.levels.get_mut(depth) {
            level.parts.clear();
            level.parts.extend(parts);
        }
    }

    /// Walks the message whose parts are in level `depth` into `columns`.
    fn walk(
        &mut self,
        plan: &MessagePlan,
        columns: &mut [Column],
        record: &[u8],
        depth: usize,
    ) -> Result<(), WireError> {
        if depth >= MAX_DEPTH {
            return Err(WireError::new(0, format!("messages nest deeper than {MAX_DEPTH}")));
        }
        let Some(level) = self.levels.get_mut(depth) else { return Ok(()) };
        let mut level = std::mem::take(level);
        let result = self.walk_level(plan, columns, record, depth, &mut level);
        if let Some(slot) = self.levels.get_mut(depth) {
            *slot = level;
        }
        result
    }

    fn walk_level(
        &mut self,
        plan: &MessagePlan,
        columns: &mut [Column],
        record: &[u8],
        depth: usize,
        level: &mut Level,
    ) -> Result<(), WireError> {
        level.pushed.clear();
        level.pushed.resize(plan.fields.len(), false);
        level.oneofs.clear();
        level.oneofs.resize(plan.num_oneofs, 0);
        level.deferred.clear();
        level.cleared.clear();
        // Step 1: scan.
        for i in 0..level.parts.len() {
            let Some(&(start, end)) = level.parts.get(i) else { break };
            let mut cursor = Cursor::new(record, start, end);
            while !cursor.is_empty() {
                let (number, wire_type) = cursor.tag()?;
                let slot = plan.lookup.get(number);
                if let Some(o) = slot.oneof
                    && let Some(held) = level.oneofs.get_mut(o)
                    && *held != number
                {
                    // Another member of the oneof: this one starts afresh,
                    // and the value of the one it clears is taken back.
                    let old = std::mem::replace(held, number);
                    if old != 0
                        && let Some(g) = plan.lookup.get(old).field
                    {
                        unpush(&mut level.pushed, columns, g);
                    }
                    if let Some(f) = slot.field {
                        unpush(&mut level.pushed, columns, f);
                        let (cleared, deferred) = (&mut level.cleared, &mut level.deferred);
                        deferred.retain(|&entry| {
                            entry.0 != f || {
                                cleared.push(entry);
                                false
                            }
                        });
                    }
                }
                // The common case first: a singular scalar of the right wire type.
                if let (Some(f), Some(scalar)) = (slot.field, slot.singular_scalar)
                    && wire_type == scalar.wire_type()
                    && let (Some(field), Some(column)) = (plan.fields.get(f), columns.get_mut(f))
                {
                    if let Some(pushed) = level.pushed.get_mut(f) {
                        if *pushed {
                            // Last one wins.
                            column.pop();
                        }
                        *pushed = true;
                    }
                    read_push(&mut cursor, scalar, field, record, column)?;
                    continue;
                }
                let (Some(f), Some(field)) = (slot.field, slot.field.and_then(|f| plan.fields.get(f))) else {
                    cursor.skip(number, wire_type, depth)?;
                    continue;
                };
                let column = columns.get_mut(f);
                match (&field.shape, &field.value, column) {
                    (Shape::Singular { .. }, Value::Scalar(scalar), Some(column)) => {
                        expect_wire_type(&cursor, field, wire_type, scalar.wire_type(), scalar.name())?;
                        if let Some(pushed) = level.pushed.get_mut(f) {
                            if *pushed {
                                // Last one wins.
                                column.pop();
                            }
                            *pushed = true;
                        }
                        read_push(&mut cursor, *scalar, field, record, column)?;
                    }
                    (Shape::Singular { .. } | Shape::Map, Value::Message(_), _) => {
                        expect_wire_type(&cursor, field, wire_type, LEN, "a message")?;
                        let (s, e) = cursor.len_delimited()?;
                        level.deferred.push((f, s, e));
                    }
                    (Shape::Repeated, Value::Scalar(scalar), Some(Column::List(list))) => {
                        read_repeated(&mut cursor, *scalar, wire_type, field, record, &mut list.child)?;
                    }
                    (Shape::Repeated, Value::Message(child), Some(Column::List(list))) => {
                        expect_wire_type(&cursor, field, wire_type, LEN, "a message")?;
                        let part = cursor.len_delimited()?;
                        let Column::Struct(items) = &mut *list.child else { return Err(mismatch(field)) };
                        self.set_parts(depth + 1, std::iter::once(part));
                        self.walk(child, &mut items.children, record, depth + 1)?;
                        items.push_row(true);
                    }
                    _ => return Err(mismatch(field)),
                }
            }
        }
        // Cleared oneof members are still checked, as a parser that builds
        // messages would have parsed them (and failed) before clearing them.
        for i in 0..level.cleared.len() {
            let Some(&(f, s, e)) = level.cleared.get(i) else { break };
            if let Some(FieldPlan { value: Value::Message(child), .. }) = plan.fields.get(f) {
                self.check(child, (s, e), record, depth + 1)?;
            }
        }
        // Step 2: one row for every field. The singular scalars that step 1
        // did not push are absent (a member of a oneof that another cleared
        // was taken back out in step 1, so what is pushed is held).
        for &f in &plan.singular_scalars {
            if level.pushed.get(f) != Some(&true)
                && let Some(column) = columns.get_mut(f)
            {
                push_absent(column);
            }
        }
        for &f in &plan.others {
            let (Some(field), Some(column)) = (plan.fields.get(f), columns.get_mut(f)) else { continue };
            let held = field.oneof.is_none_or(|o| level.oneofs.get(o) == Some(&field.number));
            match (&field.shape, &field.value, column) {
                (Shape::Singular { presence }, Value::Message(child), Column::Struct(s)) => {
                    let parts = || level.deferred.iter().filter(move |&&(g, _, _)| g == f).map(|&(_, s, e)| (s, e));
                    if !held {
                        // A member another one cleared: checked, not kept.
                        for part in parts() {
                            self.check(child, part, record, depth + 1)?;
                        }
                    }
                    self.set_parts(depth + 1, parts().filter(|_| held));
                    let present = self.levels.get(depth + 1).is_some_and(|l| !l.parts.is_empty());
                    self.walk(child, &mut s.children, record, depth + 1)?;
                    s.push_row(present || !presence);
                }
                (Shape::Repeated, _, Column::List(list)) => list.push_row(true),
                (Shape::Map, Value::Message(entry), Column::Map(map)) => {
                    self.walk_map(f, entry, &level.deferred, map, record, depth)?;
                }
                _ => return Err(mismatch(field)),
            }
        }
        Ok(())
    }

    /// Walks the entries of map field `f` (the last entry of each key, in
    /// the order of those) as rows of the map's entries, and ends its row.
    fn walk_map(
        &mut self,
        f: usize,
        entry: &MessagePlan,
        deferred: &[(usize, usize, usize)],
        map: &mut ListCol,
        record: &[u8],
        depth: usize,
    ) -> Result<(), WireError> {
        let Column::Struct(entries) = &mut *map.child else {
            return Err(WireError::new(0, "map entries are not a struct column"));
        };
        let mine = || deferred.iter().filter(|&&(g, _, _)| g == f).map(|&(_, s, e)| (s, e));
        let count = mine().count();
        let key_scalar = match entry.fields.first().map(|k| &k.value) {
            Some(Value::Scalar(scalar)) => *scalar,
            _ => Scalar::Bytes,
        };
        // The last entry of each key wins: found by comparing keys when the
        // entries are few (the usual case), through a hash map otherwise.
        const FEW: usize = 16;
        let mut keys = [Key::Bits(0); FEW];
        let mut last: HashMap<Key<'_>, usize> = HashMap::new();
        if count > 1 {
            for (i, (s, e)) in mine().enumerate() {
                let key = map_key(record, s, e, key_scalar)?;
                if count <= FEW {
                    if let Some(k) = keys.get_mut(i) {
                        *k = key;
                    }
                } else {
                    last.insert(key, i);
                }
            }
        }
        let replaced = |i: usize, key: &Key<'_>| {
            if count <= FEW {
                keys.get(i + 1..count).is_some_and(|later| later.contains(key))
            } else {
                last.get(key) != Some(&i)
            }
        };
        for (i, (s, e)) in mine().enumerate() {
            if count > 1 {
                let key = keys.get(i).copied().filter(|_| count <= FEW);
                let key = match key {
                    Some(key) => key,
                    None => map_key(record, s, e, key_scalar)?,
                };
                if replaced(i, &key) {
                    // Replaced by a later entry, but checked all the same.
                    self.check(entry, (s, e), record, depth + 1)?;
                    continue;
                }
            }
            self.set_parts(depth + 1, std::iter::once((s, e)));
            self.walk(entry, &mut entries.children, record, depth + 1)?;
            entries.push_row(true);
        }
        map.push_row(true);
        Ok(())
    }
}

impl Walker {
    /// Checks the message at `part` (of type `plan`) by walking it into
    /// scratch columns that are then dropped: for values that are parsed
    /// but not kept (rare: replaced map entries, cleared oneof members).
    #[cold]
    fn check(
        &mut self,
        plan: &MessagePlan,
        part: (usize, usize),
        record: &[u8],
        depth: usize,
    ) -> Result<(), WireError> {
        let mut scratch: Vec<Column> = plan.fields.iter().map(|f| Column::new(&f.arrow)).collect();
        self.set_parts(depth, std::iter::once(part));
        self.walk(plan, &mut scratch, record, depth)
    }
}

/// A map key, to find the last entry of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key<'a> {
    Bits(u64),
    Bytes(&'a [u8]),
}

/// The key (field 1, the last occurrence; the default if none) of the map
/// entry at `record[start..end]`.
fn map_key(record: &[u8], start: usize, end: usize, scalar: Scalar) -> Result<Key<'_>, WireError> {
    let mut key = match scalar {
        Scalar::String | Scalar::Bytes => Key::Bytes(&[]),
        _ => Key::Bits(0),
    };
    let mut cursor = Cursor::new(record, start, end);
    while !cursor.is_empty() {
        let (number, wire_type) = cursor.tag()?;
        if number != 1 || wire_type != scalar.wire_type() {
            // Errors in the entry are reported when it is walked.
            cursor.skip(number, wire_type, MAX_DEPTH - 1)?;
            continue;
        }
        key = match scalar {
            Scalar::String | Scalar::Bytes => {
                let (s, e) = cursor.len_delimited()?;
                Key::Bytes(record.get(s..e).unwrap_or_default())
            }
            _ => Key::Bits(read_scalar(&mut cursor, scalar)?),
        };
    }
    Ok(key)
}

#[cold]
fn mismatch(field: &FieldPlan) -> WireError {
    WireError::new(0, format!("internal error: field {} has a column of another type", field.path))
}

fn expect_wire_type(cursor: &Cursor<'_>, field: &FieldPlan, got: u8, want: u8, what: &str) -> Result<(), WireError> {
    if got == want {
        Ok(())
    } else {
        Err(WireError::new(
            cursor.pos,
            format!("field {}: wire type {got} where {what} has wire type {want}", field.path),
        ))
    }
}

/// Reads one number of `scalar` (not a string or bytes) as the bits the
/// columns store: 32-bit values in the low half, floats as their bits,
/// booleans as 0 or 1, signed values as two's complement.
#[inline]
fn read_scalar(cursor: &mut Cursor<'_>, scalar: Scalar) -> Result<u64, WireError> {
    Ok(match scalar {
        Scalar::Int32 | Scalar::Enum | Scalar::Uint32 => cursor.varint()? & 0xffff_ffff,
        Scalar::Int64 | Scalar::Uint64 => cursor.varint()?,
        #[allow(clippy::cast_possible_truncation, reason = "sint32 is the low 32 bits, as in protobuf")]
        Scalar::Sint32 => u64::from(zigzag32(cursor.varint()? as u32).cast_unsigned()),
        Scalar::Sint64 => zigzag64(cursor.varint()?).cast_unsigned(),
        Scalar::Bool => u64::from(cursor.varint()? != 0),
        Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => u64::from(cursor.fixed32()?),
        Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => cursor.fixed64()?,
        Scalar::String | Scalar::Bytes => 0,
    })
}

/// Takes back the value step 1 pushed for singular field `f`, if any.
#[cold]
fn unpush(pushed: &mut [bool], columns: &mut [Column], f: usize) {
    if let Some(p) = pushed.get_mut(f)
        && *p
    {
        *p = false;
        if let Some(column) = columns.get_mut(f) {
            column.pop();
        }
    }
}

/// Reads one value of `scalar` (whose wire type was checked) and pushes it
/// onto `column`.
#[inline]
fn read_push(
    cursor: &mut Cursor<'_>,
    scalar: Scalar,
    field: &FieldPlan,
    record: &[u8],
    column: &mut Column,
) -> Result<(), WireError> {
    match scalar.wire_type() {
        VARINT => push_varint(scalar, column, cursor.varint()?),
        FIXED32 => push_fixed32(column, cursor.fixed32()?),
        FIXED64 => push_fixed64(column, cursor.fixed64()?),
        _ => {
            let (s, e) = cursor.len_delimited()?;
            push_len(scalar, field, record.get(s..e).unwrap_or_default(), s, column)?;
        }
    }
    Ok(())
}

// The per-value code of the walker, shared with the direct path
// (`crate::direct`), which gets values already read from the wire. The
// plans give each scalar type its column type, so the matches below always
// go one way.

/// Pushes the varint `v`, a value of `scalar`, onto `column`.
#[inline]
#[allow(clippy::cast_possible_truncation, reason = "32-bit values are the low 32 bits, as in protobuf")]
pub(crate) fn push_varint(scalar: Scalar, column: &mut Column, v: u64) {
    match (scalar, column) {
        (Scalar::Int64, Column::Int64(p)) => p.push(v.cast_signed()),
        (Scalar::Uint64, Column::UInt64(p)) => p.push(v),
        (Scalar::Int32 | Scalar::Enum, Column::Int32(p)) => p.push((v as u32).cast_signed()),
        (Scalar::Uint32, Column::UInt32(p)) => p.push(v as u32),
        (Scalar::Sint32, Column::Int32(p)) => p.push(zigzag32(v as u32)),
        (Scalar::Sint64, Column::Int64(p)) => p.push(zigzag64(v)),
        (Scalar::Bool, Column::Bool(p)) => p.push(v != 0),
        // The plans give numbers these columns.
        _ => {}
    }
}

/// Pushes the fixed32 value `v` onto `column`.
#[inline]
pub(crate) fn push_fixed32(column: &mut Column, v: u32) {
    match column {
        Column::UInt32(p) => p.push(v),
        Column::Int32(p) => p.push(v.cast_signed()),
        Column::Float32(p) => p.push(f32::from_bits(v)),
        _ => {}
    }
}

/// Pushes the fixed64 value `v` onto `column`.
#[inline]
pub(crate) fn push_fixed64(column: &mut Column, v: u64) {
    match column {
        Column::UInt64(p) => p.push(v),
        Column::Int64(p) => p.push(v.cast_signed()),
        Column::Float64(p) => p.push(f64::from_bits(v)),
        _ => {}
    }
}

/// Pushes `bytes`, a string or bytes value of `field` (at offset `at` of its
/// record, for errors), onto `column`: a string must be UTF-8.
#[inline]
pub(crate) fn push_len(
    scalar: Scalar,
    field: &FieldPlan,
    bytes: &[u8],
    at: usize,
    column: &mut Column,
) -> Result<(), WireError> {
    if scalar == Scalar::String {
        check_utf8(bytes, at, field)?;
    }
    push_bytes(column, bytes);
    Ok(())
}

/// Pushes the packed values of `scalar` in `bytes` onto `child`.
pub(crate) fn push_packed(scalar: Scalar, bytes: &[u8], child: &mut Column) -> Result<(), WireError> {
    let mut packed = Cursor::new(bytes, 0, bytes.len());
    while !packed.is_empty() {
        let bits = read_scalar(&mut packed, scalar)?;
        push_bits(child, bits);
    }
    Ok(())
}

/// Checks that a string (at offset `start` of its record) is UTF-8: ASCII
/// (the usual case) inline, anything else by the standard library.
#[inline]
fn check_utf8(bytes: &[u8], start: usize, field: &FieldPlan) -> Result<(), WireError> {
    if bytes.is_ascii() {
        return Ok(());
    }
    check_utf8_slow(bytes, start, field)
}

#[inline(never)]
fn check_utf8_slow(bytes: &[u8], start: usize, field: &FieldPlan) -> Result<(), WireError> {
    match std::str::from_utf8(bytes) {
        Ok(_) => Ok(()),
        Err(e) => {
            Err(WireError::new(start + e.valid_up_to(), format!("field {}: invalid UTF-8 in a string", field.path)))
        }
    }
}

/// Reads the values of one occurrence of a repeated scalar field (packed or
/// not) into the list's child column.
fn read_repeated(
    cursor: &mut Cursor<'_>,
    scalar: Scalar,
    wire_type: u8,
    field: &FieldPlan,
    record: &[u8],
    child: &mut Column,
) -> Result<(), WireError> {
    if wire_type == LEN && scalar.packable() {
        let (s, e) = cursor.len_delimited()?;
        return push_packed(scalar, record.get(s..e).unwrap_or_default(), child).map_err(|e| e.at(s));
    }
    expect_wire_type(cursor, field, wire_type, scalar.wire_type(), scalar.name())?;
    read_push(cursor, scalar, field, record, child)
}

#[inline]
#[allow(clippy::cast_possible_truncation, reason = "32-bit values are the low half of the bits")]
fn push_bits(column: &mut Column, bits: u64) {
    match column {
        Column::Bool(p) => p.push(bits != 0),
        Column::Int32(p) => p.push((bits as u32).cast_signed()),
        Column::Int64(p) => p.push(bits.cast_signed()),
        Column::UInt32(p) => p.push(bits as u32),
        Column::UInt64(p) => p.push(bits),
        Column::Float32(p) => p.push(f32::from_bits(bits as u32)),
        Column::Float64(p) => p.push(f64::from_bits(bits)),
        // The plans give numbers number columns.
        _ => {}
    }
}

#[inline]
fn push_bytes(column: &mut Column, bytes: &[u8]) {
    if let Column::Utf8(b) | Column::Binary(b) = column {
        b.push(bytes);
    }
}

/// A null if the column is nullable, else the default value.
pub(crate) fn push_absent(column: &mut Column) {
    match column {
        Column::Bool(p) => p.push_absent(),
        Column::Int32(p) => p.push_absent(),
        Column::Int64(p) => p.push_absent(),
        Column::UInt32(p) => p.push_absent(),
        Column::UInt64(p) => p.push_absent(),
        Column::Float32(p) => p.push_absent(),
        Column::Float64(p) => p.push_absent(),
        Column::Utf8(b) | Column::Binary(b) => b.push_absent(),
        // Messages, lists and maps have rows of their own (step 2).
        Column::Struct(_) | Column::List(_) | Column::Map(_) => {}
    }
}
