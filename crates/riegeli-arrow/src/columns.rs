//! Column builders: the values of a batch being built, one `Column` per
//! Arrow field, finished into arrays.
//!
//! A batch that gets part of a bad record is cut back to its rows before
//! that record with [`Column::truncate`]: a struct's children and a list's
//! child hold exactly what the rows before it put there (a list's last
//! offset says how many items), so a row count is all it takes.

use std::sync::Arc;

use arrow_array::types::{ArrowPrimitiveType, Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{ArrayRef, BinaryArray, BooleanArray, ListArray, MapArray, PrimitiveArray, StringArray, StructArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field};

/// Values of a primitive column and, if nullable, their validity.
#[derive(Debug, Default)]
pub(crate) struct Prim<T> {
    pub(crate) values: Vec<T>,
    pub(crate) valid: Option<Vec<bool>>,
}

impl<T: Copy + Default> Prim<T> {
    fn new(nullable: bool) -> Self {
        Self { values: Vec::new(), valid: nullable.then(Vec::new) }
    }

    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        self.values.push(value);
        if let Some(valid) = &mut self.valid {
            valid.push(true);
        }
    }

    /// A null if nullable, else the default value.
    pub(crate) fn push_absent(&mut self) {
        self.values.push(T::default());
        if let Some(valid) = &mut self.valid {
            valid.push(false);
        }
    }

    fn truncate(&mut self, rows: usize) {
        self.values.truncate(rows);
        if let Some(valid) = &mut self.valid {
            valid.truncate(rows);
        }
    }

    fn reverse(&mut self) {
        self.values.reverse();
        if let Some(valid) = &mut self.valid {
            valid.reverse();
        }
    }

    fn reserve(&mut self, rows: usize) {
        self.values.reserve_exact(rows);
        if let Some(valid) = &mut self.valid {
            valid.reserve_exact(rows);
        }
    }
}

/// Variable-length values: Utf8 or Binary.
#[derive(Debug)]
pub(crate) struct ByteCol {
    pub(crate) offsets: Vec<i32>,
    data: Vec<u8>,
    valid: Option<Vec<bool>>,
    /// Set when the data outgrew 32-bit offsets; reported when finishing.
    overflow: bool,
}

impl ByteCol {
    fn new(nullable: bool) -> Self {
        Self { offsets: vec![0], data: Vec::new(), valid: nullable.then(Vec::new), overflow: false }
    }

    #[inline]
    pub(crate) fn push(&mut self, value: &[u8]) {
        self.data.extend_from_slice(value);
        self.push_end();
        if let Some(valid) = &mut self.valid {
            valid.push(true);
        }
    }

    pub(crate) fn push_absent(&mut self) {
        self.push_end();
        if let Some(valid) = &mut self.valid {
            valid.push(false);
        }
    }

    fn push_end(&mut self) {
        let end = i32::try_from(self.data.len()).unwrap_or_else(|_| {
            self.overflow = true;
            i32::MAX
        });
        self.offsets.push(end);
    }

    fn truncate(&mut self, rows: usize) {
        self.offsets.truncate(rows + 1);
        let end = self.offsets.last().map_or(0, |&e| usize::try_from(e).unwrap_or(0));
        self.data.truncate(end);
        if let Some(valid) = &mut self.valid {
            valid.truncate(rows);
        }
    }

    /// Puts the rows in the opposite order, in place: the bytes reversed
    /// whole, then each value's back; the offsets from the lengths reversed.
    fn reverse(&mut self) {
        if self.overflow {
            // Finishing reports it; the order no longer matters.
            return;
        }
        self.data.reverse();
        // The offsets become the lengths, reversed, then their running sums again.
        for i in (1..self.offsets.len()).rev() {
            let start = self.offsets.get(i - 1).copied().unwrap_or(0);
            if let Some(end) = self.offsets.get_mut(i) {
                *end -= start;
            }
        }
        if let Some(lengths) = self.offsets.get_mut(1..) {
            lengths.reverse();
        }
        let mut end = 0;
        for offset in self.offsets.iter_mut().skip(1) {
            let start = usize::try_from(end).unwrap_or(0);
            end += *offset;
            *offset = end;
            if let Some(value) = self.data.get_mut(start..usize::try_from(end).unwrap_or(0)) {
                value.reverse();
            }
        }
        if let Some(valid) = &mut self.valid {
            valid.reverse();
        }
    }

    fn finish(&mut self) -> Result<(OffsetBuffer<i32>, Buffer, Option<NullBuffer>), ArrowError> {
        if self.overflow {
            return Err(ArrowError::InvalidArgumentError(
                "more than 2 GiB of strings or bytes in one column of a batch: use smaller batches".into(),
            ));
        }
        let offsets = OffsetBuffer::new(ScalarBuffer::from(fitted(std::mem::replace(&mut self.offsets, vec![0]))));
        let data = Buffer::from(fitted(std::mem::take(&mut self.data)));
        Ok((offsets, data, nulls(&mut self.valid)))
    }
}

/// A list or a map: offsets into one child column.
#[derive(Debug)]
pub(crate) struct ListCol {
    offsets: Vec<i32>,
    pub(crate) child: Box<Column>,
    valid: Option<Vec<bool>>,
    overflow: bool,
}

impl ListCol {
    fn new(child: Column, nullable: bool) -> Self {
        Self { offsets: vec![0], child: Box::new(child), valid: nullable.then(Vec::new), overflow: false }
    }

    /// Ends the current row: its items are those the child got since the
    /// last one; `valid` false makes it null (if the column is nullable).
    pub(crate) fn push_row(&mut self, valid: bool) {
        let end = i32::try_from(self.child.len()).unwrap_or_else(|_| {
            self.overflow = true;
            i32::MAX
        });
        self.offsets.push(end);
        if let Some(v) = &mut self.valid {
            v.push(valid);
        }
    }

    fn finish_offsets(&mut self) -> Result<OffsetBuffer<i32>, ArrowError> {
        if self.overflow {
            return Err(ArrowError::InvalidArgumentError(
                "more than 2^31 list items in one column of a batch: use smaller batches".into(),
            ));
        }
        Ok(OffsetBuffer::new(ScalarBuffer::from(fitted(std::mem::replace(&mut self.offsets, vec![0])))))
    }
}

/// A struct: one column per child field, and its own validity if nullable.
#[derive(Debug)]
pub(crate) struct StructCol {
    pub(crate) children: Vec<Column>,
    valid: Option<Vec<bool>>,
    len: usize,
}

impl StructCol {
    /// Ends a row whose children were pushed; `valid` false makes it null.
    pub(crate) fn push_row(&mut self, valid: bool) {
        self.len += 1;
        if let Some(v) = &mut self.valid {
            v.push(valid);
        }
    }
}

/// The builder of one column.
#[derive(Debug)]
pub(crate) enum Column {
    Bool(Prim<bool>),
    Int32(Prim<i32>),
    Int64(Prim<i64>),
    UInt32(Prim<u32>),
    UInt64(Prim<u64>),
    Float32(Prim<f32>),
    Float64(Prim<f64>),
    Utf8(ByteCol),
    Binary(ByteCol),
    Struct(StructCol),
    List(ListCol),
    Map(ListCol),
}

impl Column {
    /// An empty builder for values of `field`.
    pub(crate) fn new(field: &Field) -> Self {
        Self::of_type(field.data_type(), field.is_nullable())
    }

    fn of_type(data_type: &DataType, nullable: bool) -> Self {
        match data_type {
            DataType::Boolean => Self::Bool(Prim::new(nullable)),
            DataType::Int32 => Self::Int32(Prim::new(nullable)),
            DataType::Int64 => Self::Int64(Prim::new(nullable)),
            DataType::UInt32 => Self::UInt32(Prim::new(nullable)),
            DataType::UInt64 => Self::UInt64(Prim::new(nullable)),
            DataType::Float32 => Self::Float32(Prim::new(nullable)),
            DataType::Float64 => Self::Float64(Prim::new(nullable)),
            DataType::Utf8 => Self::Utf8(ByteCol::new(nullable)),
            DataType::Struct(fields) => Self::Struct(StructCol {
                children: fields.iter().map(|f| Self::new(f)).collect(),
                valid: nullable.then(Vec::new),
                len: 0,
            }),
            DataType::List(item) => Self::List(ListCol::new(Self::new(item), nullable)),
            DataType::Map(entries, _) => Self::Map(ListCol::new(Self::new(entries), nullable)),
            // Binary, and any type the plans do not make (they make only the above).
            _ => Self::Binary(ByteCol::new(nullable)),
        }
    }

    /// The number of rows.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Bool(p) => p.values.len(),
            Self::Int32(p) => p.values.len(),
            Self::Int64(p) => p.values.len(),
            Self::UInt32(p) => p.values.len(),
            Self::UInt64(p) => p.values.len(),
            Self::Float32(p) => p.values.len(),
            Self::Float64(p) => p.values.len(),
            Self::Utf8(b) | Self::Binary(b) => b.offsets.len() - 1,
            Self::Struct(s) => s.len,
            Self::List(l) | Self::Map(l) => l.offsets.len() - 1,
        }
    }

    /// Takes off the last row (of a column that has one).
    pub(crate) fn pop(&mut self) {
        self.truncate(self.len().saturating_sub(1));
    }

    /// Room for `rows` more rows at this level, so that a chunk's column is
    /// not grown by doubling (which holds up to three times its bytes while
    /// it moves, and keeps up to twice them): values of fixed width,
    /// offsets and validity. Not the bytes of strings or the items of
    /// lists, whose sizes are not known. `rows` must come from decoded data,
    /// never from a header.
    pub(crate) fn reserve(&mut self, rows: usize) {
        match self {
            Self::Bool(p) => p.reserve(rows),
            Self::Int32(p) => p.reserve(rows),
            Self::Int64(p) => p.reserve(rows),
            Self::UInt32(p) => p.reserve(rows),
            Self::UInt64(p) => p.reserve(rows),
            Self::Float32(p) => p.reserve(rows),
            Self::Float64(p) => p.reserve(rows),
            Self::Utf8(b) | Self::Binary(b) => {
                b.offsets.reserve_exact(rows);
                if let Some(valid) = &mut b.valid {
                    valid.reserve_exact(rows);
                }
            }
            Self::Struct(s) => {
                for child in &mut s.children {
                    child.reserve(rows);
                }
                if let Some(valid) = &mut s.valid {
                    valid.reserve_exact(rows);
                }
            }
            Self::List(l) | Self::Map(l) => {
                l.offsets.reserve_exact(rows);
                if let Some(valid) = &mut l.valid {
                    valid.reserve_exact(rows);
                }
            }
        }
    }

    /// Puts the rows of a column of scalars in the opposite order; `false`
    /// (and nothing done) for structs, lists and maps.
    pub(crate) fn reverse(&mut self) -> bool {
        match self {
            Self::Bool(p) => p.reverse(),
            Self::Int32(p) => p.reverse(),
            Self::Int64(p) => p.reverse(),
            Self::UInt32(p) => p.reverse(),
            Self::UInt64(p) => p.reverse(),
            Self::Float32(p) => p.reverse(),
            Self::Float64(p) => p.reverse(),
            Self::Utf8(b) | Self::Binary(b) => b.reverse(),
            Self::Struct(_) | Self::List(_) | Self::Map(_) => return false,
        }
        true
    }

    /// Cuts the column back to its first `rows` rows.
    pub(crate) fn truncate(&mut self, rows: usize) {
        match self {
            Self::Bool(p) => p.truncate(rows),
            Self::Int32(p) => p.truncate(rows),
            Self::Int64(p) => p.truncate(rows),
            Self::UInt32(p) => p.truncate(rows),
            Self::UInt64(p) => p.truncate(rows),
            Self::Float32(p) => p.truncate(rows),
            Self::Float64(p) => p.truncate(rows),
            Self::Utf8(b) | Self::Binary(b) => b.truncate(rows),
            Self::Struct(s) => {
                s.len = s.len.min(rows);
                if let Some(v) = &mut s.valid {
                    v.truncate(rows);
                }
                for child in &mut s.children {
                    child.truncate(rows);
                }
            }
            Self::List(l) | Self::Map(l) => {
                l.offsets.truncate(rows + 1);
                if let Some(v) = &mut l.valid {
                    v.truncate(rows);
                }
                let items = l.offsets.last().map_or(0, |&e| usize::try_from(e).unwrap_or(0));
                l.child.truncate(items);
            }
        }
    }

    /// The array of the values pushed so far, of the type of `field`; the
    /// builder is left empty.
    pub(crate) fn finish(&mut self, field: &Field) -> Result<ArrayRef, ArrowError> {
        self.finish_type(field.data_type())
    }

    fn finish_type(&mut self, data_type: &DataType) -> Result<ArrayRef, ArrowError> {
        Ok(match (self, data_type) {
            (Self::Bool(p), _) => {
                let values = BooleanBuffer::from(std::mem::take(&mut p.values));
                Arc::new(BooleanArray::new(values, nulls(&mut p.valid)))
            }
            (Self::Int32(p), _) => primitive::<Int32Type>(p),
            (Self::Int64(p), _) => primitive::<Int64Type>(p),
            (Self::UInt32(p), _) => primitive::<UInt32Type>(p),
            (Self::UInt64(p), _) => primitive::<UInt64Type>(p),
            (Self::Float32(p), _) => primitive::<Float32Type>(p),
            (Self::Float64(p), _) => primitive::<Float64Type>(p),
            (Self::Utf8(b), _) => {
                let (offsets, data, nulls) = b.finish()?;
                // Every string was checked as UTF-8 when it was read; this checks again.
                Arc::new(StringArray::try_new(offsets, data, nulls)?)
            }
            (Self::Binary(b), _) => {
                let (offsets, data, nulls) = b.finish()?;
                Arc::new(BinaryArray::try_new(offsets, data, nulls)?)
            }
            (Self::Struct(s), DataType::Struct(fields)) => {
                let len = std::mem::take(&mut s.len);
                let nulls = nulls(&mut s.valid);
                if fields.is_empty() {
                    Arc::new(StructArray::new_empty_fields(len, nulls))
                } else {
                    let arrays =
                        s.children.iter_mut().zip(fields.iter()).map(|(c, f)| c.finish(f)).collect::<Result<_, _>>()?;
                    Arc::new(StructArray::try_new(fields.clone(), arrays, nulls)?)
                }
            }
            (Self::List(l), DataType::List(item)) => {
                let offsets = l.finish_offsets()?;
                let values = l.child.finish(item)?;
                Arc::new(ListArray::try_new(item.clone(), offsets, values, nulls(&mut l.valid))?)
            }
            (Self::Map(l), DataType::Map(entries, sorted)) => {
                let offsets = l.finish_offsets()?;
                let values = l.child.finish(entries)?;
                let values = values
                    .as_any()
                    .downcast_ref::<StructArray>()
                    .cloned()
                    .ok_or_else(|| ArrowError::InvalidArgumentError("map entries are not a struct".into()))?;
                Arc::new(MapArray::try_new(entries.clone(), offsets, values, nulls(&mut l.valid), *sorted)?)
            }
            (_, other) => {
                return Err(ArrowError::InvalidArgumentError(format!("column builder does not match type {other}")));
            }
        })
    }
}

fn primitive<T: ArrowPrimitiveType>(p: &mut Prim<T::Native>) -> ArrayRef {
    let values = ScalarBuffer::from(fitted(std::mem::take(&mut p.values)));
    Arc::new(PrimitiveArray::<T>::new(values, nulls(&mut p.valid)))
}

/// `values` without its spare capacity, for an Arrow buffer that keeps only
/// what it holds: a builder grown by doubling has up to as much again
/// (allocators shrink a block in place, without a copy).
fn fitted<T>(mut values: Vec<T>) -> Vec<T> {
    values.shrink_to_fit();
    values
}

/// The validity so far as a null buffer (none if every value is valid); the
/// builder keeps its nullability.
fn nulls(valid: &mut Option<Vec<bool>>) -> Option<NullBuffer> {
    let valid = std::mem::take(valid.as_mut()?);
    let nulls = NullBuffer::from(valid);
    (nulls.null_count() > 0).then_some(nulls)
}
