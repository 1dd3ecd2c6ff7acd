//! `tf.train.Example` records (what TFDS writes) as columns, one per
//! feature, parsed from the wire format directly:
//!
//! ```text
//! Example  { Features features = 1; }
//! Features { map<string, Feature> feature = 1; }
//! Feature  { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
//! BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1 [packed]; }
//! Int64List { repeated int64 value = 1 [packed]; }
//! ```

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use riegeli_records::RecordPosition;

use crate::columns::Column;
use crate::decoder::{BadRecords, SkippedRecords, bad_record, finish_batch};
use crate::error::Result;
use crate::wire::{Cursor, FIXED32, LEN, VARINT, WireError};

/// The kind of values of a feature, and of its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FeatureKind {
    /// `int64_list`: a `List<Int64>` column.
    Int64,
    /// `float_list`: a `List<Float32>` column.
    Float,
    /// `bytes_list`: a `List<Binary>` column.
    Bytes,
}

impl FeatureKind {
    fn name(self) -> &'static str {
        match self {
            Self::Int64 => "int64_list",
            Self::Float => "float_list",
            Self::Bytes => "bytes_list",
        }
    }

    fn data_type(self) -> DataType {
        match self {
            Self::Int64 => DataType::Int64,
            Self::Float => DataType::Float32,
            Self::Bytes => DataType::Binary,
        }
    }
}

/// One feature of a record: its name and, if its kind is set, the kind and
/// the occurrences of its list (merged).
#[derive(Debug, Clone)]
struct Found {
    name: (usize, usize),
    kind: Option<FeatureKind>,
    lists: Vec<(usize, usize)>,
}

/// The features of one record, parsed (names and offsets only).
#[derive(Debug, Default)]
struct Parser {
    /// Map entries of `Features.feature`, in order: (offsets of the entry).
    entries: Vec<(usize, usize)>,
    features: Vec<Found>,
}

impl Parser {
    /// Parses `record` into `self.features`: the last entry of each name.
    fn parse(&mut self, record: &[u8]) -> Result<(), WireError> {
        self.entries.clear();
        self.features.clear();
        let mut example = Cursor::new(record, 0, record.len());
        while !example.is_empty() {
            let (number, wire_type) = example.tag()?;
            if number != 1 {
                example.skip(number, wire_type, 1)?;
                continue;
            }
            expect(&example, "Example.features", wire_type, LEN)?;
            let (s, e) = example.len_delimited()?;
            let mut features = Cursor::new(record, s, e);
            while !features.is_empty() {
                let (number, wire_type) = features.tag()?;
                if number != 1 {
                    features.skip(number, wire_type, 2)?;
                    continue;
                }
                expect(&features, "Features.feature", wire_type, LEN)?;
                self.entries.push(features.len_delimited()?);
            }
        }
        for &(s, e) in &self.entries {
            self.features.push(parse_entry(record, s, e)?);
        }
        if self.features.len() > 1 {
            // A later entry of a name replaces an earlier one, whose values
            // are still checked (as a parser building messages parses them).
            let mut last: HashMap<&[u8], usize> = HashMap::new();
            for (i, f) in self.features.iter().enumerate() {
                last.insert(slice(record, f.name), i);
            }
            let mut checked = Ok(());
            let mut i = 0;
            self.features.retain(|f| {
                i += 1;
                let kept = last.get(slice(record, f.name)) == Some(&(i - 1));
                if !kept && checked.is_ok() {
                    checked = check_values(record, f);
                }
                kept
            });
            checked?;
        }
        Ok(())
    }
}

fn slice(record: &[u8], (s, e): (usize, usize)) -> &[u8] {
    record.get(s..e).unwrap_or_default()
}

fn expect(cursor: &Cursor<'_>, what: &str, got: u8, want: u8) -> Result<(), WireError> {
    if got == want {
        Ok(())
    } else {
        Err(WireError::new(cursor.pos, format!("{what}: wire type {got} where {want} is expected")))
    }
}

/// Parses a map entry `{ string key = 1; Feature value = 2; }`.
fn parse_entry(record: &[u8], start: usize, end: usize) -> Result<Found, WireError> {
    let mut found = Found { name: (start, start), kind: None, lists: Vec::new() };
    let mut values = Vec::new();
    let mut entry = Cursor::new(record, start, end);
    while !entry.is_empty() {
        let (number, wire_type) = entry.tag()?;
        match number {
            1 => {
                expect(&entry, "feature name", wire_type, LEN)?;
                let (s, e) = entry.len_delimited()?;
                if let Err(err) = std::str::from_utf8(slice(record, (s, e))) {
                    return Err(WireError::new(s + err.valid_up_to(), "feature name: invalid UTF-8"));
                }
                found.name = (s, e);
            }
            2 => {
                expect(&entry, "Feature", wire_type, LEN)?;
                values.push(entry.len_delimited()?);
            }
            _ => entry.skip(number, wire_type, 3)?,
        }
    }
    // The Feature's occurrences, merged: its oneof holds the last kind set,
    // with the lists given since that kind was set.
    for (s, e) in values {
        let mut feature = Cursor::new(record, s, e);
        while !feature.is_empty() {
            let (number, wire_type) = feature.tag()?;
            let kind = match number {
                1 => FeatureKind::Bytes,
                2 => FeatureKind::Float,
                3 => FeatureKind::Int64,
                _ => {
                    feature.skip(number, wire_type, 4)?;
                    continue;
                }
            };
            expect(&feature, kind.name(), wire_type, LEN)?;
            let list = feature.len_delimited()?;
            if found.kind != Some(kind) {
                found.kind = Some(kind);
                found.lists.clear();
            }
            found.lists.push(list);
        }
    }
    Ok(found)
}

/// Checks the values of a feature that is not kept (cold: replaced entries).
#[cold]
fn check_values(record: &[u8], found: &Found) -> Result<(), WireError> {
    let Some(kind) = found.kind else { return Ok(()) };
    let mut scratch = Column::new(&Field::new("item", kind.data_type(), false));
    append_values(record, found, kind, &mut scratch)
}

/// Appends the values of a feature's lists to `column`'s items.
fn append_values(record: &[u8], found: &Found, kind: FeatureKind, column: &mut Column) -> Result<(), WireError> {
    for &(s, e) in &found.lists {
        let mut list = Cursor::new(record, s, e);
        while !list.is_empty() {
            let (number, wire_type) = list.tag()?;
            if number != 1 {
                list.skip(number, wire_type, 5)?;
                continue;
            }
            match (kind, wire_type, &mut *column) {
                (FeatureKind::Bytes, LEN, Column::Binary(b)) => {
                    let value = list.len_delimited()?;
                    b.push(slice(record, value));
                }
                (FeatureKind::Float, FIXED32, Column::Float32(p)) => p.push(f32::from_bits(list.fixed32()?)),
                (FeatureKind::Int64, VARINT, Column::Int64(p)) => p.push(list.varint()?.cast_signed()),
                (FeatureKind::Float, LEN, Column::Float32(p)) => {
                    let (s, e) = list.len_delimited()?;
                    let mut packed = Cursor::new(record, s, e);
                    while !packed.is_empty() {
                        p.push(f32::from_bits(packed.fixed32()?));
                    }
                }
                (FeatureKind::Int64, LEN, Column::Int64(p)) => {
                    let (s, e) = list.len_delimited()?;
                    let mut packed = Cursor::new(record, s, e);
                    while !packed.is_empty() {
                        p.push(packed.varint()?.cast_signed());
                    }
                }
                _ => {
                    return Err(WireError::new(
                        list.pos,
                        format!("{}.value: wire type {wire_type} is not that of its values", kind.name()),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The columns of known features.
#[derive(Debug)]
struct Columns {
    schema: SchemaRef,
    kinds: Vec<FeatureKind>,
    by_name: HashMap<String, usize>,
    columns: Vec<Column>,
    /// Whether features not in the schema are ignored (a given spec) or an
    /// error (an inferred one).
    ignore_others: bool,
    /// Scratch: which columns the record being decoded has.
    present: Vec<bool>,
}

impl Columns {
    fn new(spec: &[(String, FeatureKind)], ignore_others: bool) -> Self {
        let fields: Vec<Field> = spec
            .iter()
            .map(|(name, kind)| {
                Field::new(name, DataType::List(Arc::new(Field::new("item", kind.data_type(), false))), true)
            })
            .collect();
        let columns = fields.iter().map(Column::new).collect();
        Self {
            schema: Arc::new(Schema::new(fields)),
            kinds: spec.iter().map(|(_, k)| *k).collect(),
            by_name: spec.iter().enumerate().map(|(i, (name, _))| (name.clone(), i)).collect(),
            columns,
            ignore_others,
            present: vec![false; spec.len()],
        }
    }

    /// Decodes the parsed record as one row.
    fn decode(&mut self, record: &[u8], features: &[Found]) -> Result<(), WireError> {
        self.present.fill(false);
        for found in features {
            let name = std::str::from_utf8(slice(record, found.name)).unwrap_or_default();
            let Some(&i) = self.by_name.get(name) else {
                // A feature with no kind set has no values to lose.
                if self.ignore_others || found.kind.is_none() {
                    continue;
                }
                return Err(WireError::new(
                    found.name.0,
                    format!(
                        "feature {name:?} is not among the features inferred from the first batch; give a feature spec"
                    ),
                ));
            };
            let (Some(&kind), Some(Column::List(list))) = (self.kinds.get(i), self.columns.get_mut(i)) else {
                continue;
            };
            if let Some(got) = found.kind
                && got != kind
            {
                return Err(WireError::new(
                    found.name.0,
                    format!("feature {name:?} is a {} where its column holds {}", got.name(), kind.name()),
                ));
            }
            append_values(record, found, kind, &mut list.child)?;
            if let Some(p) = self.present.get_mut(i) {
                *p = true;
            }
        }
        for (column, &present) in self.columns.iter_mut().zip(&self.present) {
            if let Column::List(list) = column {
                list.push_row(present);
            }
        }
        Ok(())
    }
}

/// `tf.train.Example` records decoded into one column per feature:
/// `int64_list` → `List<Int64>`, `float_list` → `List<Float32>`, `bytes_list` →
/// `List<Binary>`, null where a record lacks the feature.
///
/// The features are those of a given spec (in its order; other features of
/// the records are ignored), or else inferred from the records of the first
/// batch (in the order they first appear; a feature whose kind is never set
/// there is left out). A record whose feature has another kind than its
/// column, or (when inferred) a feature that the first batch did not have,
/// is a bad record. A feature with no kind set is an empty list of any kind
/// (and is ignored where there is no column for it).
/// Protobuf's semantics hold: the last entry of a name wins, a feature's
/// occurrences merge, floats and int64s are accepted packed and unpacked.
#[derive(Debug)]
pub struct ExampleDecoder {
    columns: Option<Columns>,
    parser: Parser,
    /// Records of the first batch, waiting for the features to be inferred.
    pending: Vec<(Vec<u8>, Option<RecordPosition>, u64)>,
    rows: usize,
    bad_records: BadRecords,
    skipped: SkippedRecords,
    index: u64,
}

impl ExampleDecoder {
    /// A decoder with the columns of `spec` (feature name and kind), or with
    /// columns inferred from the first batch if `None`.
    pub fn new(spec: Option<Vec<(String, FeatureKind)>>, bad_records: BadRecords) -> Self {
        Self {
            columns: spec.map(|spec| Columns::new(&spec, true)),
            parser: Parser::default(),
            pending: Vec::new(),
            rows: 0,
            bad_records,
            skipped: SkippedRecords::default(),
            index: 0,
        }
    }

    /// The schema of the batches: known from the spec, or once the first
    /// batch was flushed.
    pub fn schema(&self) -> Option<SchemaRef> {
        self.columns.as_ref().map(|c| c.schema.clone())
    }

    /// Decodes one record into the batch being built (before the features
    /// are inferred, keeps a copy of it). `position`, where the record is in
    /// its file if known, goes into error messages.
    ///
    /// A bad record is an [`ErrorKind::BadRecord`](crate::ErrorKind::BadRecord)
    /// error under [`BadRecords::Fail`], and is counted in
    /// [`skipped`](Self::skipped) under [`BadRecords::Skip`]; either way it
    /// leaves no row. Before inference, only its wire format is checked here.
    pub fn push(&mut self, record: &[u8], position: Option<RecordPosition>) -> Result<()> {
        let index = self.index;
        self.index += 1;
        let result = match &mut self.columns {
            None => self.parser.parse(record).map(|()| {
                self.pending.push((record.to_vec(), position, index));
            }),
            Some(columns) => {
                let result = self.parser.parse(record).and_then(|()| columns.decode(record, &self.parser.features));
                match result {
                    Ok(()) => self.rows += 1,
                    Err(_) => columns.columns.iter_mut().for_each(|c| c.truncate(self.rows)),
                }
                result
            }
        };
        result.or_else(|wire| self.bad(index, position, &wire))
    }

    fn bad(&mut self, index: u64, position: Option<RecordPosition>, wire: &WireError) -> Result<()> {
        self.skipped.handle(self.bad_records, bad_record(index, position, wire))
    }

    /// Makes `index` the index of the next record pushed (in error
    /// messages), for records that come from elsewhere than in order.
    pub(crate) fn set_next_index(&mut self, index: u64) {
        self.index = index;
    }

    /// The number of rows of the batch being built.
    pub fn num_rows(&self) -> usize {
        self.rows + self.pending.len()
    }

    /// The batch of the records pushed since the last flush (possibly
    /// empty); the first flush infers the features if no spec was given.
    ///
    /// Records of the first batch that do not fit the inferred features
    /// fail here under [`BadRecords::Fail`]: the error names the first, and
    /// the records after it stay for the next flush.
    pub fn flush(&mut self) -> Result<RecordBatch> {
        if self.columns.is_none() {
            self.infer();
        }
        self.decode_pending()?;
        let Some(columns) = &mut self.columns else { return Ok(RecordBatch::new_empty(Arc::new(Schema::empty()))) };
        let rows = std::mem::take(&mut self.rows);
        let arrays = columns
            .columns
            .iter_mut()
            .zip(columns.schema.fields().iter())
            .map(|(column, field)| column.finish(field))
            .collect::<Result<Vec<_>, _>>()?;
        finish_batch(columns.schema.clone(), arrays, rows)
    }

    /// Infers the features from the pending records: each feature whose
    /// kind is set in one of them, with the kind it has first.
    fn infer(&mut self) {
        let mut spec: Vec<(String, FeatureKind)> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for (record, _, _) in &self.pending {
            // Parsed before, without error.
            if self.parser.parse(record).is_err() {
                continue;
            }
            for found in &self.parser.features {
                let Some(kind) = found.kind else { continue };
                let name = String::from_utf8_lossy(slice(record, found.name)).into_owned();
                if seen.insert(name.clone()) {
                    spec.push((name, kind));
                }
            }
        }
        self.columns = Some(Columns::new(&spec, false));
    }

    /// Decodes the records kept for inference, in order, up to the first
    /// that fails under [`BadRecords::Fail`].
    fn decode_pending(&mut self) -> Result<()> {
        let Some(columns) = &mut self.columns else { return Ok(()) };
        let mut pending = std::mem::take(&mut self.pending).into_iter();
        while let Some((record, position, index)) = pending.next() {
            let result = self.parser.parse(&record).and_then(|()| columns.decode(&record, &self.parser.features));
            match result {
                Ok(()) => self.rows += 1,
                Err(wire) => {
                    columns.columns.iter_mut().for_each(|c| c.truncate(self.rows));
                    let error = bad_record(index, position, &wire);
                    match self.bad_records {
                        BadRecords::Fail => {
                            self.pending = pending.collect();
                            return Err(error);
                        }
                        BadRecords::Skip => self.skipped.note(&error),
                    }
                }
            }
        }
        Ok(())
    }

    /// The records left out so far under [`BadRecords::Skip`].
    pub fn skipped(&self) -> &SkippedRecords {
        &self.skipped
    }
}
