//! The direct path: a transposed chunk's fields, as riegeli-codec's
//! decoder hands them over ([`FieldSink`]), into the walker's column
//! builders, with no serialized message in between.
//!
//! The decoder runs backwards (the last record first, and in a record the
//! last field first), while rows, lists and "last one wins" go forwards. So
//! [`Tape`] first records the chunk's field events as they come, then
//! reverses them and replays each record forwards with the walker's two
//! steps (see `crate::walker`) and its per-value code: singular scalars
//! pushed as they come (the last one wins), repeated values into the list's
//! child, repeated messages walked as they come, occurrences of a singular
//! message merged in step 2. Columns that are all singular scalars of the
//! record (a flat plan) need no tape: [`Flat`] pushes each value as it
//! comes and reverses the columns at the end.
//!
//! Only what this does exactly as the walker does is done here: columns
//! with maps or members of real oneofs anywhere in the projected plan are
//! never tried ([`supported`]), and anything unexpected in a record (a wire type that
//! does not fit, invalid UTF-8, a group, a record that is not a message, a
//! message field given as non-empty bytes, deep nesting) gives the chunk up:
//! the caller then takes back the rows and reads the chunk's records through
//! the walker, which reports bad records as usual.

use std::ops::ControlFlow;

use riegeli_codec::{FieldSink, SubmessageAs};

use crate::columns::Column;
use crate::plan::{FieldPlan, MessagePlan, Scalar, Shape, Value};
use crate::walker::{push_absent, push_fixed32, push_fixed64, push_len, push_packed, push_varint};
use crate::wire::{FIXED32, FIXED64, LEN, MAX_DEPTH, VARINT};

/// Whether the direct path can fill the columns of `plan`: no maps, and no
/// column in a oneof of several members, down to the leaves. (A oneof of one
/// member, as proto3 `optional` makes, is a field with presence: no other
/// member clears it. Members of oneofs without columns change no column.)
pub(crate) fn supported(plan: &MessagePlan) -> bool {
    plan.fields.iter().all(|field| {
        let alone = field.oneof.is_none_or(|o| plan.oneof_members.get(o) == Some(&1));
        alone
            && match (&field.shape, &field.value) {
                (Shape::Map, _) => false,
                (_, Value::Message(child)) => supported(child),
                (_, Value::Scalar(_)) => true,
            }
    })
}

/// One field event of a chunk.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// The start of a record (forwards: its fields follow, up to the next).
    Record,
    Varint(u32, u64),
    Fixed32(u32, u32),
    Fixed64(u32, u64),
    /// A length-delimited value: the tape's bytes `start..end`.
    Bytes(u32, usize, usize),
    /// A submessage (forwards): its fields are the next this many events,
    /// then comes its [`Event::Close`].
    Open(u32, usize),
    Close,
}

/// Whether a string value is UTF-8 (checked as the walker checks it, for the
/// occurrences that are not kept).
#[inline]
fn is_utf8(bytes: &[u8]) -> bool {
    bytes.is_ascii() || std::str::from_utf8(bytes).is_ok()
}

/// The most rows [`Tape::flat`] makes room for before they come.
const MAX_RESERVED_ROWS: u64 = 1 << 20;

/// Why the direct path gives a chunk up (the walker then reads it).
#[derive(Debug)]
pub(crate) struct GiveUp;

/// The field events of one chunk and the bytes of its length-delimited
/// values; reused from chunk to chunk.
///
/// The record's singular scalar columns take a shorter way: each record's
/// row of them is kept as it comes, one value per column (the first one seen
/// backwards: the last one, which wins), in `rows`; the values seen before
/// it are checked as the walker checks them, not kept. Columns that are all
/// singular scalars (a flat plan) take no tape at all: see [`Flat`].
#[derive(Debug, Default)]
pub(crate) struct Tape {
    events: Vec<Event>,
    bytes: Vec<u8>,
    /// The rows of the record's singular scalars, backwards, a value per
    /// column ([`Event::Close`] for none); while recording, the last one is
    /// open.
    rows: Vec<Event>,
    /// Replay: the starts of the records' events.
    records: Vec<usize>,
    levels: Vec<Level>,
    /// [`Flat`]: the columns with a value in the open row.
    seen: Vec<bool>,
}

impl Tape {
    /// The sink that records a chunk of messages of `root` onto the tape
    /// (cleared first). For a plan that is not flat (see [`Flat`]).
    pub(crate) fn recorder<'a>(&'a mut self, root: &'a MessagePlan) -> Recorder<'a> {
        self.events.clear();
        self.bytes.clear();
        let width = root.fields.len();
        // The row of the first record (backwards) is open.
        self.rows.clear();
        self.rows.resize(width, Event::Close);
        Recorder { tape: self, root, plans: vec![root], opens: Vec::new(), row: 0, width }
    }

    /// The sink that decodes a chunk of messages of a flat `root` straight
    /// into `columns` (one per field of `root`, empty), or `None` if `root`
    /// is not flat or has no columns (nothing would count the rows).
    ///
    /// The columns get room for the chunk's rows first, `(num_records,
    /// decoded_data_size)` of its header: grown and then fitted, they would
    /// leave holes in the heap, chunk after chunk. The header is not trusted
    /// for more than [`MAX_RESERVED_ROWS`] rows, nor more than its decoded
    /// bytes (a larger chunk's columns grow as the rows come).
    pub(crate) fn flat<'a>(
        &'a mut self,
        root: &'a MessagePlan,
        columns: &'a mut [Column],
        (num_records, decoded_data_size): (u64, u64),
    ) -> Option<Flat<'a>> {
        if !root.others.is_empty() || root.fields.is_empty() || columns.len() != root.fields.len() {
            return None;
        }
        let rows = num_records.min(decoded_data_size).min(MAX_RESERVED_ROWS);
        for column in columns.iter_mut() {
            column.reserve(usize::try_from(rows).unwrap_or(0));
        }
        self.seen.clear();
        self.seen.resize(root.fields.len(), false);
        Some(Flat { seen: &mut self.seen, root, columns, rows: 0 })
    }

    /// Replays the recorded chunk forwards into `columns` (one per field of
    /// `root`), one row per record; returns the number of rows. On
    /// [`GiveUp`], the columns hold part of the rows: the caller truncates
    /// them.
    pub(crate) fn replay(&mut self, root: &MessagePlan, columns: &mut [Column]) -> Result<usize, GiveUp> {
        // The row opened after the last record (backwards: the first) is empty.
        if root.fields.is_empty() {
            // No columns: the walker counts the rows.
            return Err(GiveUp);
        }
        self.rows.truncate(self.rows.len().saturating_sub(root.fields.len()));
        self.events.reverse();
        // The records' boundaries, submessages skipped whole.
        self.records.clear();
        let mut i = 0;
        while let Some(event) = self.events.get(i) {
            match *event {
                Event::Record => self.records.push(i),
                Event::Open(_, inside) => i += inside + 1,
                _ => {}
            }
            i += 1;
        }
        if self.records.first() != Some(&0) {
            return Err(GiveUp);
        }
        // The record's singular scalars: its row, recorded backwards.
        let width = root.fields.len();
        let records = self.records.len();
        if self.rows.len() != records * width {
            return Err(GiveUp);
        }
        for column in columns.iter_mut() {
            column.reserve(records);
        }
        let mut replay = Replay { events: &self.events, bytes: &self.bytes, levels: &mut self.levels, row: &[] };
        for r in 0..records {
            let start = self.records.get(r).map_or(0, |&s| s + 1);
            let end = self.records.get(r + 1).copied().unwrap_or(self.events.len());
            let backwards = records - 1 - r;
            replay.row = self.rows.get(backwards * width..(backwards + 1) * width).ok_or(GiveUp)?;
            replay.set_parts(0, std::iter::once((start, end)));
            replay.walk(root, columns, 0)?;
        }
        Ok(records)
    }
}

/// The [`FieldSink`] of a [`Tape`]: follows the plan of the message being
/// decoded so as to take a submessage field by field only where the plan
/// has a message (anything else comes as bytes).
#[derive(Debug)]
pub(crate) struct Recorder<'a> {
    tape: &'a mut Tape,
    root: &'a MessagePlan,
    /// Where the open row begins in the tape's rows, and its width.
    row: usize,
    width: usize,
    /// The plans of the messages open (the record's first).
    plans: Vec<&'a MessagePlan>,
    /// The events of their ends ([`Event::Close`], recorded first).
    opens: Vec<usize>,
}

impl Recorder<'_> {
    /// A field value (`number`, `wire_type`): into the record's row if it
    /// belongs to one of its singular scalar columns, else onto the tape.
    #[inline]
    fn value(&mut self, number: u32, wire_type: u8, event: Event) -> ControlFlow<()> {
        if self.plans.len() == 1 {
            let slot = self.root.lookup.get(number);
            if let (Some(f), Some(scalar)) = (slot.field, slot.singular_scalar) {
                return self.keep(f, scalar, wire_type, event);
            }
        }
        self.tape.events.push(event);
        ControlFlow::Continue(())
    }

    /// A value of singular scalar column `f` of the record: kept in its row
    /// if it is the first of the column seen in the record (backwards: the
    /// last, which wins); checked as the walker checks it either way (its
    /// wire type; a string's UTF-8).
    #[inline]
    fn keep(&mut self, f: usize, scalar: Scalar, wire_type: u8, event: Event) -> ControlFlow<()> {
        if wire_type != scalar.wire_type() {
            return ControlFlow::Break(());
        }
        if let Event::Bytes(_, s, e) = event
            && scalar == Scalar::String
            && !self.tape.bytes.get(s..e).is_some_and(is_utf8)
        {
            return ControlFlow::Break(());
        }
        match self.tape.rows.get_mut(self.row + f) {
            Some(kept @ Event::Close) => *kept = event,
            // An earlier occurrence: checked, not kept.
            Some(_) => self.drop_bytes(event),
            None => return ControlFlow::Break(()),
        }
        ControlFlow::Continue(())
    }

    /// Takes the bytes of `event`, the last ones recorded, back off the tape.
    #[inline]
    fn drop_bytes(&mut self, event: Event) {
        if let Event::Bytes(_, s, _) = event {
            self.tape.bytes.truncate(s);
        }
    }
}

impl FieldSink for Recorder<'_> {
    fn record_start(&mut self) -> ControlFlow<()> {
        // The record's row is complete: the previous record's opens.
        let rows = &mut self.tape.rows;
        self.row = rows.len();
        rows.resize(self.row + self.width, Event::Close);
        self.tape.events.push(Event::Record);
        ControlFlow::Continue(())
    }

    fn varint(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        self.value(field, VARINT, Event::Varint(field, value))
    }

    fn fixed32(&mut self, field: u32, value: u32) -> ControlFlow<()> {
        self.value(field, FIXED32, Event::Fixed32(field, value))
    }

    fn fixed64(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        self.value(field, FIXED64, Event::Fixed64(field, value))
    }

    fn bytes(&mut self, field: u32, value: &[u8]) -> ControlFlow<()> {
        let start = self.tape.bytes.len();
        self.tape.bytes.extend_from_slice(value);
        self.value(field, LEN, Event::Bytes(field, start, self.tape.bytes.len()))
    }

    fn submessage_end(&mut self, field: u32) -> ControlFlow<(), SubmessageAs> {
        let Some(plan) = self.plans.last() else { return ControlFlow::Break(()) };
        let child = plan.lookup.get(field).field.and_then(|f| plan.fields.get(f)).and_then(|f| match &f.value {
            Value::Message(child) => Some(&**child),
            Value::Scalar(_) => None,
        });
        let Some(child) = child else { return ControlFlow::Continue(SubmessageAs::Serialized) };
        if self.plans.len() >= MAX_DEPTH - 1 {
            // The walker's depth limit: its error is the walker's to report.
            return ControlFlow::Break(());
        }
        self.plans.push(child);
        self.opens.push(self.tape.events.len());
        self.tape.events.push(Event::Close);
        ControlFlow::Continue(SubmessageAs::Fields)
    }

    fn submessage_start(&mut self, field: u32) -> ControlFlow<()> {
        let Some(close) = self.opens.pop() else { return ControlFlow::Break(()) };
        self.plans.pop();
        let inside = self.tape.events.len() - close - 1;
        self.tape.events.push(Event::Open(field, inside));
        ControlFlow::Continue(())
    }

    fn group(&mut self, _field: u32, _start: bool) -> ControlFlow<()> {
        ControlFlow::Break(())
    }

    fn non_proto(&mut self, _record: &[u8]) -> ControlFlow<()> {
        ControlFlow::Break(())
    }
}

/// The [`FieldSink`] of a flat plan (every column a singular scalar of the
/// record): each value goes straight into its column as it comes, the first
/// one of its column in the record (backwards: the last, which wins), and a
/// record's other columns get their absent value when the record is done.
/// The rows come last first, so [`finish`](Flat::finish) reverses each
/// column in place: no tape, and a string's bytes are copied once.
#[derive(Debug)]
pub(crate) struct Flat<'a> {
    root: &'a MessagePlan,
    columns: &'a mut [Column],
    /// The columns with a value in the open row (the record being decoded).
    seen: &'a mut Vec<bool>,
    /// The records done.
    rows: usize,
}

impl Flat<'_> {
    /// A field value of the record: pushed if it is the first of its column
    /// in the record, else checked as the walker checks it (its wire type, a
    /// string's UTF-8); not a column: skipped.
    #[inline]
    fn value(
        &mut self,
        number: u32,
        wire_type: u8,
        bytes: Option<&[u8]>,
        push: impl FnOnce(Scalar, &FieldPlan, &mut Column) -> bool,
    ) -> ControlFlow<()> {
        let slot = self.root.lookup.get(number);
        let (Some(f), Some(scalar)) = (slot.field, slot.singular_scalar) else { return ControlFlow::Continue(()) };
        if wire_type != scalar.wire_type() {
            return ControlFlow::Break(());
        }
        let (Some(seen), Some(field), Some(column)) =
            (self.seen.get_mut(f), self.root.fields.get(f), self.columns.get_mut(f))
        else {
            return ControlFlow::Break(());
        };
        if *seen {
            // An earlier occurrence: not kept, but checked.
            let bad = scalar == Scalar::String && bytes.is_some_and(|b| !is_utf8(b));
            return if bad { ControlFlow::Break(()) } else { ControlFlow::Continue(()) };
        }
        *seen = true;
        if push(scalar, field, column) { ControlFlow::Continue(()) } else { ControlFlow::Break(()) }
    }

    /// The number of rows decoded, the columns put in file order; call when
    /// the decoder has gone through the whole chunk.
    pub(crate) fn finish(self) -> Result<usize, GiveUp> {
        for column in self.columns.iter_mut() {
            if column.len() != self.rows || !column.reverse() {
                return Err(GiveUp);
            }
        }
        Ok(self.rows)
    }
}

impl FieldSink for Flat<'_> {
    fn record_start(&mut self) -> ControlFlow<()> {
        // The record is done: absent values for the columns it did not give.
        for (seen, column) in self.seen.iter_mut().zip(self.columns.iter_mut()) {
            if !std::mem::take(seen) {
                push_absent(column);
            }
        }
        self.rows += 1;
        ControlFlow::Continue(())
    }

    fn varint(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        self.value(field, VARINT, None, |scalar, _, column| {
            push_varint(scalar, column, value);
            true
        })
    }

    fn fixed32(&mut self, field: u32, value: u32) -> ControlFlow<()> {
        self.value(field, FIXED32, None, |_, _, column| {
            push_fixed32(column, value);
            true
        })
    }

    fn fixed64(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        self.value(field, FIXED64, None, |_, _, column| {
            push_fixed64(column, value);
            true
        })
    }

    fn bytes(&mut self, field: u32, value: &[u8]) -> ControlFlow<()> {
        self.value(field, LEN, Some(value), |scalar, plan, column| push_len(scalar, plan, value, 0, column).is_ok())
    }

    fn submessage_end(&mut self, _field: u32) -> ControlFlow<(), SubmessageAs> {
        // The plan has no messages: as its bytes (a string or bytes column's
        // value, or skipped).
        ControlFlow::Continue(SubmessageAs::Serialized)
    }

    fn submessage_start(&mut self, _field: u32) -> ControlFlow<()> {
        ControlFlow::Break(())
    }

    fn group(&mut self, _field: u32, _start: bool) -> ControlFlow<()> {
        ControlFlow::Break(())
    }

    fn non_proto(&mut self, _record: &[u8]) -> ControlFlow<()> {
        ControlFlow::Break(())
    }
}

/// The state of one message being replayed, reused by every message at its
/// depth (the walker's `Level`, for events).
#[derive(Debug, Default)]
struct Level {
    /// The occurrences of the message (ranges of events).
    parts: Vec<(usize, usize)>,
    /// Whether step 1 pushed the row of each singular scalar field.
    pushed: Vec<bool>,
    /// Singular messages: (field index, range of events), in order.
    deferred: Vec<(usize, usize, usize)>,
}

struct Replay<'a> {
    /// The row of the record's singular scalars (see [`Recorder::keep`]).
    row: &'a [Event],
    events: &'a [Event],
    bytes: &'a [u8],
    levels: &'a mut Vec<Level>,
}

impl Replay<'_> {
    fn set_parts(&mut self, depth: usize, parts: impl Iterator<Item = (usize, usize)>) {
        if self.levels.len() <= depth {
            self.levels.resize_with(depth + 1, Level::default);
        }
        if let Some(level) = self.levels.get_mut(depth) {
            level.parts.clear();
            level.parts.extend(parts);
        }
    }

    /// Replays the message whose parts are in level `depth` into `columns`.
    fn walk(&mut self, plan: &MessagePlan, columns: &mut [Column], depth: usize) -> Result<(), GiveUp> {
        if depth >= MAX_DEPTH {
            return Err(GiveUp);
        }
        let Some(level) = self.levels.get_mut(depth) else { return Ok(()) };
        let mut level = std::mem::take(level);
        let result = self.walk_level(plan, columns, depth, &mut level);
        if let Some(slot) = self.levels.get_mut(depth) {
            *slot = level;
        }
        result
    }

    fn walk_level(
        &mut self,
        plan: &MessagePlan,
        columns: &mut [Column],
        depth: usize,
        level: &mut Level,
    ) -> Result<(), GiveUp> {
        level.pushed.clear();
        level.pushed.resize(plan.fields.len(), false);
        level.deferred.clear();
        // Step 1: scan.
        for p in 0..level.parts.len() {
            let Some(&(start, end)) = level.parts.get(p) else { break };
            let mut i = start;
            while i < end {
                let event = *self.events.get(i).ok_or(GiveUp)?;
                i += 1;
                let (number, wire_type) = match event {
                    Event::Varint(n, _) => (n, VARINT),
                    Event::Fixed32(n, _) => (n, FIXED32),
                    Event::Fixed64(n, _) => (n, FIXED64),
                    Event::Bytes(n, _, _) | Event::Open(n, _) => (n, LEN),
                    Event::Record | Event::Close => return Err(GiveUp),
                };
                // A oneof here has one member, or no column ([`supported`]).
                let slot = plan.lookup.get(number);
                let (Some(f), Some(field)) = (slot.field, slot.field.and_then(|f| plan.fields.get(f))) else {
                    // Not a column: skipped.
                    if let Event::Open(_, inside) = event {
                        i += inside + 1;
                    }
                    continue;
                };
                let column = columns.get_mut(f).ok_or(GiveUp)?;
                match (&field.shape, &field.value) {
                    (Shape::Singular { .. }, Value::Scalar(scalar)) => {
                        // The record's own are in its row, never here.
                        if depth == 0 || wire_type != scalar.wire_type() {
                            return Err(GiveUp);
                        }
                        if let Some(pushed) = level.pushed.get_mut(f) {
                            if *pushed {
                                // Last one wins.
                                column.pop();
                            }
                            *pushed = true;
                        }
                        self.push(event, *scalar, field, column)?;
                    }
                    (Shape::Repeated, Value::Scalar(scalar)) => {
                        let Column::List(list) = column else { return Err(GiveUp) };
                        match event {
                            Event::Bytes(_, s, e) if scalar.packable() => {
                                push_packed(*scalar, self.bytes.get(s..e).ok_or(GiveUp)?, &mut list.child)
                                    .map_err(|_| GiveUp)?;
                            }
                            _ if wire_type == scalar.wire_type() => {
                                self.push(event, *scalar, field, &mut list.child)?
                            }
                            _ => return Err(GiveUp),
                        }
                    }
                    (Shape::Singular { .. }, Value::Message(_)) => {
                        let part = self.message_part(event, i)?;
                        level.deferred.push((f, part.0, part.1));
                        i = part.1 + usize::from(matches!(event, Event::Open(..)));
                    }
                    (Shape::Repeated, Value::Message(child)) => {
                        let part = self.message_part(event, i)?;
                        let Column::List(list) = column else { return Err(GiveUp) };
                        let Column::Struct(items) = &mut *list.child else { return Err(GiveUp) };
                        self.set_parts(depth + 1, std::iter::once(part));
                        self.walk(child, &mut items.children, depth + 1)?;
                        items.push_row(true);
                        i = part.1 + usize::from(matches!(event, Event::Open(..)));
                    }
                    (Shape::Map, _) => return Err(GiveUp),
                }
            }
        }
        // Step 2: one row for every field; the record's singular scalars
        // from its row.
        for &f in &plan.singular_scalars {
            let Some(column) = columns.get_mut(f) else { continue };
            if depth == 0 {
                match (self.row.get(f), plan.fields.get(f).map(|field| (field, &field.value))) {
                    (Some(&Event::Close), _) => push_absent(column),
                    (Some(&event), Some((field, Value::Scalar(scalar)))) => {
                        push_value(event, *scalar, field, self.bytes, column)?;
                    }
                    _ => return Err(GiveUp),
                }
            } else if level.pushed.get(f) != Some(&true) {
                push_absent(column);
            }
        }
        for &f in &plan.others {
            let (Some(field), Some(column)) = (plan.fields.get(f), columns.get_mut(f)) else { continue };
            match (&field.shape, &field.value, column) {
                (Shape::Singular { presence }, Value::Message(child), Column::Struct(s)) => {
                    let parts = level.deferred.iter().filter(|&&(g, _, _)| g == f).map(|&(_, s, e)| (s, e));
                    self.set_parts(depth + 1, parts);
                    let present = self.levels.get(depth + 1).is_some_and(|l| !l.parts.is_empty());
                    self.walk(child, &mut s.children, depth + 1)?;
                    s.push_row(present || !presence);
                }
                (Shape::Repeated, _, Column::List(list)) => list.push_row(true),
                _ => return Err(GiveUp),
            }
        }
        Ok(())
    }

    /// The events of a message given by `event` (at `i - 1`): those of an
    /// [`Event::Open`], or none for empty bytes (an empty message, which the
    /// encoder stores as a string); non-empty bytes give the chunk up.
    fn message_part(&self, event: Event, i: usize) -> Result<(usize, usize), GiveUp> {
        match event {
            Event::Open(_, inside) => Ok((i, i + inside)),
            Event::Bytes(_, s, e) if s == e => Ok((i, i)),
            _ => Err(GiveUp),
        }
    }

    /// Pushes the scalar value of `event` (of the scalar's wire type).
    #[inline]
    fn push(&self, event: Event, scalar: Scalar, field: &FieldPlan, column: &mut Column) -> Result<(), GiveUp> {
        push_value(event, scalar, field, self.bytes, column)
    }
}

/// Pushes the scalar value of `event` (of the scalar's wire type; bytes in
/// `bytes`) onto `column`.
#[inline]
fn push_value(
    event: Event,
    scalar: Scalar,
    field: &FieldPlan,
    bytes: &[u8],
    column: &mut Column,
) -> Result<(), GiveUp> {
    match event {
        Event::Varint(_, v) => push_varint(scalar, column, v),
        Event::Fixed32(_, v) => push_fixed32(column, v),
        Event::Fixed64(_, v) => push_fixed64(column, v),
        Event::Bytes(_, s, e) => {
            push_len(scalar, field, bytes.get(s..e).ok_or(GiveUp)?, 0, column).map_err(|_| GiveUp)?;
        }
        _ => return Err(GiveUp),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use prost_types::field_descriptor_proto::{Label, Type};
    use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};

    use super::*;
    use crate::plan::RecordPlan;

    /// `message Point { int64 x = 1; string s = 2; }` (proto3).
    fn point() -> RecordPlan {
        let field = |name: &str, number, ty: Type| FieldDescriptorProto {
            name: Some(name.into()),
            number: Some(number),
            label: Some(Label::Optional as i32),
            r#type: Some(ty as i32),
            ..Default::default()
        };
        let file = FileDescriptorProto {
            name: Some("point.proto".into()),
            package: Some("t".into()),
            syntax: Some("proto3".into()),
            message_type: vec![DescriptorProto {
                name: Some("Point".into()),
                field: vec![field("x", 1, Type::Int64), field("s", 2, Type::String)],
                ..Default::default()
            }],
            ..Default::default()
        };
        RecordPlan::new::<&str>(&crate::message_type(vec![file], "t.Point").unwrap(), None).unwrap()
    }

    /// The columns of a flat plan get room for the rows the chunk's header
    /// claims, but never for more than its decoded bytes or
    /// `MAX_RESERVED_ROWS`: a header is not trusted with an allocation.
    #[test]
    fn flat_columns_get_room_for_the_rows_a_header_claims_within_bounds() {
        let plan = point();
        let mut tape = Tape::default();
        for (sizes, want) in [((6450, 90_000), 6450), ((6450, 100), 100), ((1 << 40, 1 << 40), 1 << 20)] {
            let mut columns: Vec<Column> = plan.root.fields.iter().map(|f| Column::new(&f.arrow)).collect();
            assert!(tape.flat(&plan.root, &mut columns, sizes).is_some());
            let room: Vec<usize> = columns
                .iter()
                .map(|column| match column {
                    Column::Int64(p) => p.values.capacity(),
                    Column::Utf8(b) => b.offsets.capacity() - 1,
                    _ => 0,
                })
                .collect();
            assert!(room.iter().all(|&r| r >= want && r < want + want / 8 + 8), "{sizes:?}: {room:?}");
        }
    }
}
