//! The direct path: a transposed chunk's fields, as riegeli-codec's
//! decoder hands them over ([`FieldSink`]), into the walker's column
//! builders, with no serialized message in between.
//!
//! The decoder runs backwards (the last record first, and in a record the
//! last field first), while rows, lists and "last one wins" go forwards.
//! The record's own singular scalars need no order: [`Flat`] pushes each
//! value straight into its column as it comes (backwards, the first one seen
//! is the last one, which wins) and reverses those columns at the end. Columns
//! that are all such (a flat plan) need nothing else. For the other columns
//! [`Tape`] records the chunk's field events as they come, then reverses them
//! and replays each record forwards with the walker's two steps (see
//! `crate::walker`) and its per-value code: singular scalars of submessages
//! pushed as they come (the last one wins), repeated values into the list's
//! child, repeated messages walked as they come, occurrences of a singular
//! message merged in step 2.
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
/// The record's singular scalar columns never go on the tape: [`Flat`] fills
/// them as the values come (an earlier tape kept each record's row of them
/// for the replay: 24 bytes a value, which the replay read back from beyond
/// the caches).
#[derive(Debug, Default)]
pub(crate) struct Tape {
    events: Vec<Event>,
    bytes: Vec<u8>,
    /// Replay: the starts of the records' events.
    records: Vec<usize>,
    levels: Vec<Level>,
    /// [`Flat`]: the columns with a value in the open row.
    seen: Vec<bool>,
}

impl Tape {
    /// The sink that decodes a chunk of messages of `root` into `columns`
    /// (one per field of `root`, empty): the record's singular scalars
    /// straight into theirs (see [`Flat`]), the rest onto the tape (cleared
    /// first), for [`replay`](Self::replay). For a plan that is not flat;
    /// `None` if `root` has no columns (nothing would count the rows).
    /// `sizes`: as for [`flat`](Self::flat).
    pub(crate) fn recorder<'a>(
        &'a mut self,
        root: &'a MessagePlan,
        columns: &'a mut [Column],
        sizes: (u64, u64, u64),
    ) -> Option<Recorder<'a>> {
        let Self { events, bytes, seen, .. } = self;
        let scalars = Flat::new(seen, root, columns, sizes)?;
        events.clear();
        bytes.clear();
        Some(Recorder { events, bytes, scalars, plans: vec![root], opens: Vec::new() })
    }

    /// The sink that decodes a chunk of messages of a flat `root` straight
    /// into `columns` (one per field of `root`, empty), or `None` if `root`
    /// is not flat or has no columns (nothing would count the rows).
    ///
    /// The columns get room for the chunk's rows first, `(num_records,
    /// decoded_data_size, stored_size)`: the first two of its header, the
    /// last its data's length. Grown and then fitted, they would leave holes
    /// in the heap, chunk after chunk. The header is not trusted for more than
    /// [`MAX_RESERVED_ROWS`] rows, nor more than its decoded bytes or the bytes
    /// the chunk stores (a row a byte: a chunk of a few bytes claiming a
    /// million records gets room for a few rows, not a million; a chunk that
    /// holds more rows than bytes grows its columns as the rows come).
    pub(crate) fn flat<'a>(
        &'a mut self,
        root: &'a MessagePlan,
        columns: &'a mut [Column],
        sizes: (u64, u64, u64),
    ) -> Option<Flat<'a>> {
        if !root.others.is_empty() {
            return None;
        }
        Flat::new(&mut self.seen, root, columns, sizes)
    }

    /// Replays the recorded chunk forwards into `columns` (one per field of
    /// `root`), one row per record, of which the [`Recorder`] found `rows`;
    /// returns the number of rows. On [`GiveUp`], the columns hold part of
    /// the rows: the caller drops them.
    pub(crate) fn replay(&mut self, root: &MessagePlan, columns: &mut [Column], rows: usize) -> Result<usize, GiveUp> {
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
        let records = self.records.len();
        if self.records.first() != Some(&0) || records != rows {
            return Err(GiveUp);
        }
        let mut replay = Replay { events: &self.events, bytes: &self.bytes, levels: &mut self.levels };
        for r in 0..records {
            let start = self.records.get(r).map_or(0, |&s| s + 1);
            let end = self.records.get(r + 1).copied().unwrap_or(self.events.len());
            replay.set_parts(0, std::iter::once((start, end)));
            replay.walk(root, columns, 0)?;
        }
        Ok(records)
    }
}

/// The [`FieldSink`] of a [`Tape`]: the record's singular scalars go
/// straight into their columns ([`Flat`]), the rest onto the tape. Follows
/// the plan of the message being decoded so as to take a submessage field
/// by field only where the plan has a message (anything else comes as
/// bytes).
#[derive(Debug)]
pub(crate) struct Recorder<'a> {
    events: &'a mut Vec<Event>,
    bytes: &'a mut Vec<u8>,
    /// The record's singular scalar columns.
    scalars: Flat<'a>,
    /// The plans of the messages open (the record's first).
    plans: Vec<&'a MessagePlan>,
    /// The events of their ends ([`Event::Close`], recorded first).
    opens: Vec<usize>,
}

impl Recorder<'_> {
    /// The number of records, the record's singular scalar columns put in
    /// file order ([`Flat::finish`]); call when the decoder has gone through
    /// the whole chunk, then [`Tape::replay`] the rest.
    pub(crate) fn finish(self) -> Result<usize, GiveUp> {
        self.scalars.finish()
    }

    /// Whether the message being decoded is the record (whose singular
    /// scalars go straight into their columns).
    #[inline]
    fn at_record(&self) -> bool {
        self.plans.len() == 1
    }
}

impl FieldSink for Recorder<'_> {
    fn record_start(&mut self) -> ControlFlow<()> {
        self.scalars.end_record();
        self.events.push(Event::Record);
        ControlFlow::Continue(())
    }

    fn varint(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        if self.at_record()
            && let Some(flow) = self.scalars.varint_value(field, value)
        {
            return flow;
        }
        self.events.push(Event::Varint(field, value));
        ControlFlow::Continue(())
    }

    fn fixed32(&mut self, field: u32, value: u32) -> ControlFlow<()> {
        if self.at_record()
            && let Some(flow) = self.scalars.fixed32_value(field, value)
        {
            return flow;
        }
        self.events.push(Event::Fixed32(field, value));
        ControlFlow::Continue(())
    }

    fn fixed64(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        if self.at_record()
            && let Some(flow) = self.scalars.fixed64_value(field, value)
        {
            return flow;
        }
        self.events.push(Event::Fixed64(field, value));
        ControlFlow::Continue(())
    }

    fn bytes(&mut self, field: u32, value: &[u8]) -> ControlFlow<()> {
        if self.at_record()
            && let Some(flow) = self.scalars.bytes_value(field, value)
        {
            return flow;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.events.push(Event::Bytes(field, start, self.bytes.len()));
        ControlFlow::Continue(())
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
        self.opens.push(self.events.len());
        self.events.push(Event::Close);
        ControlFlow::Continue(SubmessageAs::Fields)
    }

    fn submessage_start(&mut self, field: u32) -> ControlFlow<()> {
        let Some(close) = self.opens.pop() else { return ControlFlow::Break(()) };
        self.plans.pop();
        let inside = self.events.len() - close - 1;
        self.events.push(Event::Open(field, inside));
        ControlFlow::Continue(())
    }

    fn group(&mut self, _field: u32, _start: bool) -> ControlFlow<()> {
        ControlFlow::Break(())
    }

    fn non_proto(&mut self, _record: &[u8]) -> ControlFlow<()> {
        ControlFlow::Break(())
    }
}

/// The record's singular scalar columns, filled as the values come; the
/// [`FieldSink`] of a flat plan (every column a singular scalar of the
/// record), and part of a [`Recorder`]. Each value goes straight into its
/// column as it comes, the first one of its column in the record
/// (backwards: the last, which wins), and a record's other columns get
/// their absent value when the record is done. The rows come last first,
/// so [`finish`](Flat::finish) reverses each column in place: no tape, and
/// a string's bytes are copied once.
#[derive(Debug)]
pub(crate) struct Flat<'a> {
    root: &'a MessagePlan,
    columns: &'a mut [Column],
    /// The columns with a value in the open row (the record being decoded).
    seen: &'a mut Vec<bool>,
    /// The records done.
    rows: usize,
}

impl<'a> Flat<'a> {
    /// The record's singular scalar columns of `root` in `columns` (one per
    /// field of `root`, empty), with room for the chunk's rows (see
    /// [`Tape::flat`]); `seen` is reused. `None` if `root` has no columns
    /// (nothing would count the rows) or `columns` are not one per field.
    fn new(
        seen: &'a mut Vec<bool>,
        root: &'a MessagePlan,
        columns: &'a mut [Column],
        (num_records, decoded_data_size, stored_size): (u64, u64, u64),
    ) -> Option<Self> {
        if root.fields.is_empty() || columns.len() != root.fields.len() {
            return None;
        }
        let rows = num_records.min(decoded_data_size).min(stored_size).min(MAX_RESERVED_ROWS);
        for column in columns.iter_mut() {
            column.reserve(usize::try_from(rows).unwrap_or(0));
        }
        seen.clear();
        seen.resize(root.fields.len(), false);
        Some(Self { seen, root, columns, rows: 0 })
    }
}

impl Flat<'_> {
    /// A field value of the record: pushed if it is the first of its column
    /// in the record, else checked as the walker checks it (its wire type, a
    /// string's UTF-8); `None` if it is not one of the record's singular
    /// scalar columns.
    #[inline]
    fn value(
        &mut self,
        number: u32,
        wire_type: u8,
        bytes: Option<&[u8]>,
        push: impl FnOnce(Scalar, &FieldPlan, &mut Column) -> bool,
    ) -> Option<ControlFlow<()>> {
        let slot = self.root.lookup.get(number);
        let (Some(f), Some(scalar)) = (slot.field, slot.singular_scalar) else { return None };
        if wire_type != scalar.wire_type() {
            return Some(ControlFlow::Break(()));
        }
        let (Some(seen), Some(field), Some(column)) =
            (self.seen.get_mut(f), self.root.fields.get(f), self.columns.get_mut(f))
        else {
            return Some(ControlFlow::Break(()));
        };
        if *seen {
            // An earlier occurrence: not kept, but checked.
            let bad = scalar == Scalar::String && bytes.is_some_and(|b| !is_utf8(b));
            return Some(if bad { ControlFlow::Break(()) } else { ControlFlow::Continue(()) });
        }
        *seen = true;
        Some(if push(scalar, field, column) { ControlFlow::Continue(()) } else { ControlFlow::Break(()) })
    }

    #[inline]
    fn varint_value(&mut self, field: u32, value: u64) -> Option<ControlFlow<()>> {
        self.value(field, VARINT, None, |scalar, _, column| {
            push_varint(scalar, column, value);
            true
        })
    }

    #[inline]
    fn fixed32_value(&mut self, field: u32, value: u32) -> Option<ControlFlow<()>> {
        self.value(field, FIXED32, None, |_, _, column| {
            push_fixed32(column, value);
            true
        })
    }

    #[inline]
    fn fixed64_value(&mut self, field: u32, value: u64) -> Option<ControlFlow<()>> {
        self.value(field, FIXED64, None, |_, _, column| {
            push_fixed64(column, value);
            true
        })
    }

    #[inline]
    fn bytes_value(&mut self, field: u32, value: &[u8]) -> Option<ControlFlow<()>> {
        self.value(field, LEN, Some(value), |scalar, plan, column| push_len(scalar, plan, value, 0, column).is_ok())
    }

    /// The record is done: absent values for the columns it did not give.
    #[inline]
    fn end_record(&mut self) {
        for &f in &self.root.singular_scalars {
            if let (Some(seen), Some(column)) = (self.seen.get_mut(f), self.columns.get_mut(f))
                && !std::mem::take(seen)
            {
                push_absent(column);
            }
        }
        self.rows += 1;
    }

    /// The number of rows decoded, the record's singular scalar columns put
    /// in file order; call when the decoder has gone through the whole chunk.
    pub(crate) fn finish(self) -> Result<usize, GiveUp> {
        for &f in &self.root.singular_scalars {
            let column = self.columns.get_mut(f).ok_or(GiveUp)?;
            if column.len() != self.rows || !column.reverse() {
                return Err(GiveUp);
            }
        }
        Ok(self.rows)
    }
}

impl FieldSink for Flat<'_> {
    fn record_start(&mut self) -> ControlFlow<()> {
        self.end_record();
        ControlFlow::Continue(())
    }

    // Fields that are not columns are skipped.
    fn varint(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        self.varint_value(field, value).unwrap_or(ControlFlow::Continue(()))
    }

    fn fixed32(&mut self, field: u32, value: u32) -> ControlFlow<()> {
        self.fixed32_value(field, value).unwrap_or(ControlFlow::Continue(()))
    }

    fn fixed64(&mut self, field: u32, value: u64) -> ControlFlow<()> {
        self.fixed64_value(field, value).unwrap_or(ControlFlow::Continue(()))
    }

    fn bytes(&mut self, field: u32, value: &[u8]) -> ControlFlow<()> {
        self.bytes_value(field, value).unwrap_or(ControlFlow::Continue(()))
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
                        // The record's own are in their columns already, never here.
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
        // Step 2: one row for every field (the record's singular scalars
        // have theirs already: see [`Flat`]).
        if depth > 0 {
            for &f in &plan.singular_scalars {
                if let Some(column) = columns.get_mut(f)
                    && level.pushed.get(f) != Some(&true)
                {
                    push_absent(column);
                }
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

    /// The columns get room for the rows the chunk's header claims, but
    /// never for more than its decoded bytes, its stored bytes or
    /// `MAX_RESERVED_ROWS`: a header is not trusted with an allocation. Both
    /// sinks (a flat plan's, and the recorder's for the scalars).
    #[test]
    fn columns_get_room_for_the_rows_a_header_claims_within_bounds() {
        let plan = point();
        let mut tape = Tape::default();
        let cases = [
            ((6450, 90_000, 60_000), 6450),
            ((6450, 100, 60_000), 100),
            // A hostile header: a million records in 40 stored bytes.
            ((1 << 20, 1 << 20, 40), 40),
            ((1 << 40, 1 << 40, 1 << 40), 1 << 20),
        ];
        for ((sizes, want), recorder) in cases.into_iter().flat_map(|case| [(case, false), (case, true)]) {
            let mut columns: Vec<Column> = plan.root.fields.iter().map(|f| Column::new(&f.arrow)).collect();
            if recorder {
                assert!(tape.recorder(&plan.root, &mut columns, sizes).is_some());
            } else {
                assert!(tape.flat(&plan.root, &mut columns, sizes).is_some());
            }
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
