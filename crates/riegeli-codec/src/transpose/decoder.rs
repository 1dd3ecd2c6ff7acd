//! Decoding transposed (`'t'`) and metadata (`'m'`) chunk data (spec §3–§10).
//!
//! The header is parsed into a table of [`Node`]s, then the state machine runs
//! backwards (§7): every emitted piece is written in front of the previous
//! ones, into an output buffer of exactly `decoded_data_size` bytes that is
//! filled from its end. Small pieces are written as one 8-byte store that ends
//! at the write position: the bytes in front of it are still unwritten, so the
//! store may spill into them.

use std::ops::ControlFlow;
use std::sync::Arc;

use bytes::Bytes;

use super::projection::{FieldProjection, IncludeTree, IncludeType, ROOT_ID};
use crate::compression::{CompressionType, Decompressor};
use crate::decoded::Buffers;
use crate::decoded::{DecodedRecords, RecordBuffers};
use crate::error::CodecError;
use crate::limits::DecodeLimits;
use crate::recycle::{Homing, Recycler};
use crate::varint;

const WHAT_DATA: &str = "transposed chunk";
const WHAT_HEADER: &str = "transposed chunk header";
const WHAT_RUN: &str = "transposed chunk transitions";

/// The largest inline varint subtype (value 127).
const MAX_INLINE_SUBTYPE: u8 = 137;
/// The first inline varint subtype (value 0).
const FIRST_INLINE_SUBTYPE: u8 = 10;
/// Reserve at most this many record limits up front; more are added as found.
const MAX_RESERVED_RECORDS: u64 = 1 << 16;

/// What a node does when executed (§6.1), after the tag is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names, reason = "NoOp is the spec's name")]
enum Op {
    /// Nothing (id 0, and excluded leaf fields under projection).
    NoOp,
    /// A non-proto record, then a record start (id 1).
    NonProto,
    /// Pop the submessage stack and emit tag + length (id 2).
    SubmessageStart,
    /// A record boundary (id 3).
    RecordStart,
    /// Push the submessage stack (wire type 6).
    SubmessageEnd,
    /// Emit `emit_len` bytes of `emit` (groups, inline varints).
    CopyTag,
    /// A varint of `vlen` bytes from the buffer.
    Varint,
    /// 4 bytes from the buffer.
    Fixed32,
    /// 8 bytes from the buffer.
    Fixed64,
    /// A length varint and payload from the buffer.
    String,
    /// Projection: not decided yet.
    Select,
    /// Projection: leaving an excluded submessage or group.
    SkippedStart,
    /// Projection: entering an excluded submessage or group.
    SkippedEnd,
    /// Projection: tag + 4 zero bytes.
    Fixed32Existence,
    /// Projection: tag + 8 zero bytes.
    Fixed64Existence,
    /// Projection: a start-group tag that pops the stack.
    StartGroup,
    /// Projection: an end-group tag that pushes the stack.
    EndGroup,
}

/// The kind of a proto-tag node, for projection decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Special,
    Varint,
    Fixed32,
    Fixed64,
    String,
    SubmessageEnd,
    StartGroup,
    EndGroup,
}

/// One state of the machine.
#[derive(Debug, Clone, Copy)]
struct Node {
    /// The bytes to emit for the tag (and inline value), right-aligned:
    /// `emit.to_le_bytes()[8 - emit_len..]`.
    emit: u64,
    /// Bytes of `emit` copied by [`Op::CopyTag`].
    emit_len: u8,
    /// Bytes of the proto tag itself (the first `tag_len` of the emitted ones).
    tag_len: u8,
    /// Bytes of a buffered varint value.
    vlen: u8,
    op: Op,
    kind: Kind,
    implicit: bool,
    /// Field number (projection).
    field: u32,
    /// Buffer index, `u32::MAX` if none.
    buffer: u32,
    /// Base of the next node.
    next: u32,
}

impl Node {
    const EMPTY: Node = Node {
        emit: 0,
        emit_len: 0,
        tag_len: 0,
        vlen: 0,
        op: Op::NoOp,
        kind: Kind::Special,
        implicit: false,
        field: 0,
        buffer: u32::MAX,
        next: 0,
    };

    /// The proto tag's bytes, as emitted.
    fn tag_bytes(&self) -> ([u8; 8], usize) {
        let bytes = self.emit.to_le_bytes();
        let start = 8 - usize::from(self.emit_len);
        let mut out = [0u8; 8];
        let len = usize::from(self.tag_len);
        if let (Some(dst), Some(src)) = (out.get_mut(..len), bytes.get(start..start + len)) {
            dst.copy_from_slice(src);
        }
        (out, len)
    }
}

/// Read position and end of one buffer within the bytes of its source.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    pos: usize,
    end: usize,
}

/// A bucket: where its stored bytes are in the chunk data and its
/// decompressed size.
#[derive(Debug, Clone)]
struct Bucket {
    stored: std::ops::Range<usize>,
    size: u64,
}

/// Where a buffer lies within its bucket's decompressed bytes.
#[derive(Debug, Clone, Copy)]
struct BufferPlace {
    bucket: u32,
    offset: usize,
    len: usize,
}

/// An open submessage (or group, under projection).
#[derive(Debug, Clone, Copy)]
struct StackEntry {
    /// The decoded size when its end was seen.
    end: usize,
    /// The node that pushed it.
    node: u32,
}

/// Decodes transposed chunks (spec §3–§10).
///
/// Reusable: it keeps its decompressor and scratch buffers from one chunk to
/// the next. Decoding is a pure function of its arguments.
///
/// ```
/// use bytes::Bytes;
/// use riegeli_codec::{DecodeLimits, FieldProjection, TransposedChunkDecoder};
///
/// // A chunk with one empty record, as the C++ writer makes it (spec §12.6).
/// let data = Bytes::from_static(&[0x00, 0x06, 0x00, 0x00, 0x01, 0x03, 0x00, 0x00]);
/// let mut decoder = TransposedChunkDecoder::new();
/// let records = decoder.decode(data, 1, 0, &DecodeLimits::default(), &FieldProjection::all())?;
/// assert_eq!(records.len(), 1);
/// assert!(records.get(0).unwrap().is_empty());
/// # Ok::<(), riegeli_codec::CodecError>(())
/// ```
#[derive(Debug, Default)]
pub struct TransposedChunkDecoder {
    decompressor: Decompressor,
    strict: bool,
    header_buf: Vec<u8>,
    arena: Vec<u8>,
    transitions_buf: Vec<u8>,
    nodes: Vec<Node>,
    ids: Vec<u32>,
    nexts: Vec<u32>,
    marks: Vec<u32>,
    buckets: Vec<Bucket>,
    places: Vec<BufferPlace>,
    cursors: Vec<Cursor>,
    stack: Vec<StackEntry>,
    /// Under projection: the buffers the projected fields read, the buckets
    /// holding them (in the order they are first read), and the nodes as
    /// parsed, kept while a run finds them (see [`Wanted`]).
    wanted: Vec<bool>,
    wanted_buckets: Vec<u32>,
    parsed_nodes: Vec<Node>,
    /// A bucket decompressed whole, of which only some buffers are kept.
    scratch: Vec<u8>,
    /// The steps of a projected run (see [`Discover`]).
    trace: Vec<u16>,
    /// Tests: the finding run fails at this step, as if the chunk were damaged.
    #[cfg(test)]
    discovery_fails_at: Option<usize>,
    /// A submessage a [`FieldSink`] takes serialized, reversed (scratch).
    raw: Vec<u8>,
    /// Buffers of decoded values and record ends, back from records dropped.
    buffers: Arc<Recycler<Buffers>>,
}

/// Everything the header says, ready to run.
struct Parsed {
    compression: CompressionType,
    first_node: u32,
    /// The stored transitions block.
    transitions: std::ops::Range<usize>,
    has_nonproto: bool,
}

/// The bytes buffers are read from, possibly decompressed on demand.
trait Source {
    fn bytes(&self) -> &[u8];
    /// Makes `buffer` readable (decompressing its bucket if needed).
    fn materialize(&mut self, buffer: u32, cursors: &mut [Cursor]) -> Result<(), CodecError>;
}

/// Buffers already laid out in one byte string.
struct Plain<'a>(&'a [u8]);

impl Source for Plain<'_> {
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        self.0
    }
    fn materialize(&mut self, _: u32, _: &mut [Cursor]) -> Result<(), CodecError> {
        Ok(())
    }
}

/// Compressed buckets, decompressed the first time one of their buffers is
/// needed: a projection of a chunk [`Discover`] rejects, so that it fails
/// where it always has.
struct Lazy<'a> {
    data: &'a [u8],
    arena: &'a mut Vec<u8>,
    buckets: &'a [Bucket],
    places: &'a [BufferPlace],
    done: Vec<bool>,
    decompressor: &'a mut Decompressor,
    compression: CompressionType,
}

impl Source for Lazy<'_> {
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        self.arena
    }

    fn materialize(&mut self, buffer: u32, cursors: &mut [Cursor]) -> Result<(), CodecError> {
        let place = self.places.get(buffer as usize).ok_or_else(|| bad_header(0, "buffer index too large"))?;
        let b = place.bucket as usize;
        if self.done.get(b).copied().unwrap_or(true) {
            return Ok(());
        }
        let bucket = self.buckets.get(b).ok_or_else(|| bad_header(0, "bucket index too large"))?;
        let start = decompress_bucket(self.decompressor, self.data, self.compression, bucket, self.arena)?;
        for (place, cursor) in self.places.iter().zip(cursors.iter_mut()) {
            if place.bucket as usize == b {
                cursor.pos = start + place.offset;
                cursor.end = cursor.pos + place.len;
            }
        }
        if let Some(done) = self.done.get_mut(b) {
            *done = true;
        }
        Ok(())
    }
}

/// Decompresses nothing: marks the buffers a run reads, and the buckets
/// holding them in the order they are first read. With [`Discover`] as the
/// output, a run finds which buffers a projection needs (selecting every node
/// it reaches), so that only those are kept (see [`gather`]).
struct Wanted<'a> {
    places: &'a [BufferPlace],
    buffers: &'a mut [bool],
    buckets: &'a mut Vec<u32>,
    bucket_seen: Vec<bool>,
}

impl Source for Wanted<'_> {
    fn bytes(&self) -> &[u8] {
        &[]
    }

    fn materialize(&mut self, buffer: u32, _: &mut [Cursor]) -> Result<(), CodecError> {
        let place = self.places.get(buffer as usize).ok_or_else(|| bad_header(0, "buffer index too large"))?;
        if let Some(wanted) = self.buffers.get_mut(buffer as usize) {
            *wanted = true;
        }
        if let Some(seen) = self.bucket_seen.get_mut(place.bucket as usize)
            && !std::mem::replace(seen, true)
        {
            self.buckets.push(place.bucket);
        }
        Ok(())
    }
}

/// The output of a run that reads no value (see [`Wanted`]): it keeps only the
/// submessage stack, on which selecting a node depends, as the other outputs
/// keep it, bounded as they bound it with nothing emitted yet; and it traces
/// the steps that do something, so that the output's run [`replay`]s them
/// without stepping the machine again.
struct Discover<'a> {
    capacity: usize,
    num_records: u64,
    max_stack: usize,
    /// Node indices, while there are fewer than `trace_max` (none if an
    /// index may not fit).
    trace: &'a mut Vec<u16>,
    trace_max: usize,
    /// Whether `trace` has every step.
    complete: bool,
    /// Run again to find where a replayed step failed: the step at this
    /// place in the trace fails with this reason.
    fail_at: Option<(usize, &'static str)>,
    steps: usize,
}

impl<'a> Discover<'a> {
    /// A run for `out`'s chunk, tracing up to `trace_max` steps into `trace`,
    /// or failing at step `fail_at.0` with reason `fail_at.1`.
    fn new<O: Output>(
        out: &O,
        limits: &DecodeLimits,
        trace: &'a mut Vec<u16>,
        trace_max: usize,
        fail_at: Option<(usize, &'static str)>,
    ) -> Self {
        let (capacity, num_records, max_stack) = (out.capacity(), out.num_records(), max_stack(limits));
        Self { capacity, num_records, max_stack, trace, trace_max, complete: fail_at.is_none(), fail_at, steps: 0 }
    }

    fn push(&self, stack: &mut Vec<StackEntry>, node: u32) -> Step {
        if stack.len() >= self.capacity || stack.len() >= self.max_stack {
            return Err("submessage stack overflow");
        }
        stack.push(StackEntry { end: 0, node });
        Ok(())
    }
}

impl Output for Discover<'_> {
    fn trace(&mut self, index: usize) -> Step {
        if let Some((at, reason)) = self.fail_at {
            if self.steps == at {
                return Err(reason);
            }
            self.steps += 1;
        } else if self.complete
            && self.trace.len() < self.trace_max
            && let Ok(index) = u16::try_from(index)
        {
            self.trace.push(index);
        } else {
            self.complete = false;
        }
        Ok(())
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn num_records(&self) -> u64 {
        self.num_records
    }
    fn copy_tag(&mut self, _: &Node) -> Step {
        Ok(())
    }
    fn varint(&mut self, _: &Node, _: &mut [Cursor], _: &[u8]) -> Step {
        Ok(())
    }
    fn fixed<const N: usize>(&mut self, _: &Node, _: &mut [Cursor], _: &[u8]) -> Step {
        Ok(())
    }
    fn string(&mut self, _: &Node, _: &mut [Cursor], _: &[u8]) -> Step {
        Ok(())
    }
    fn nonproto(&mut self, _: &Node, _: &mut [Cursor], _: usize, _: &[u8], _: &[StackEntry]) -> Step {
        Ok(())
    }
    fn record_start(&mut self, _: &[StackEntry]) -> Step {
        Ok(())
    }
    fn submessage_end(&mut self, stack: &mut Vec<StackEntry>, index: u32, _: &Node, _: usize) -> Step {
        self.push(stack, index)
    }
    fn submessage_start(&mut self, _: &[Node], stack: &mut Vec<StackEntry>) -> Step {
        stack.pop().map(drop).ok_or("submessage stack underflow")
    }
    fn existence<const N: usize>(&mut self, _: &Node) -> Step {
        Ok(())
    }
    fn end_group(&mut self, stack: &mut Vec<StackEntry>, index: u32, _: &Node) -> Step {
        self.push(stack, index)
    }
    fn start_group(&mut self, stack: &mut Vec<StackEntry>, _: &Node) -> Step {
        stack.pop().map(drop).ok_or("submessage stack underflow")
    }
}

/// Materializes what non-proto records read under projection: they are
/// always decoded (their data buffer is materialized when their node is
/// parsed), and so are their lengths (the last buffer).
fn mark_nonproto<S: Source>(
    source: &mut S,
    nodes: &[Node],
    cursors: &mut [Cursor],
    parsed: &Parsed,
) -> Result<(), CodecError> {
    if parsed.has_nonproto {
        for node in nodes.iter().filter(|n| n.op == Op::NonProto) {
            source.materialize(node.buffer, cursors)?;
        }
        let last = u32::try_from(cursors.len().saturating_sub(1)).unwrap_or(u32::MAX);
        source.materialize(last, cursors)?;
    }
    Ok(())
}

/// Decompresses the buckets `order` names, in that order, and appends the
/// `wanted` buffers of each to `arena`, pointing their cursors at them. A
/// bucket wanted whole is decompressed straight into `arena`; any other into
/// `scratch`, from which its wanted buffers are copied, so that `arena` holds
/// what the projection reads and `scratch` one bucket.
#[allow(clippy::too_many_arguments, reason = "the parts of the decoder, borrowed separately")]
fn gather(
    data: &[u8],
    compression: CompressionType,
    buckets: &[Bucket],
    places: &[BufferPlace],
    wanted: &[bool],
    order: &[u32],
    decompressor: &mut Decompressor,
    scratch: &mut Vec<u8>,
    arena: &mut Vec<u8>,
    cursors: &mut [Cursor],
) -> Result<(), CodecError> {
    arena.clear();
    // At most the buckets' sizes together, which `parse` bounded.
    let total: usize = places.iter().zip(wanted).filter(|&(_, &w)| w).map(|(p, _)| p.len).sum();
    arena.reserve_exact(total);
    for &b in order {
        let bucket = buckets.get(b as usize).ok_or_else(|| bad_header(0, "bucket index too large"))?;
        // `parse` lays buffers out bucket after bucket.
        let range = places.partition_point(|p| p.bucket < b)..places.partition_point(|p| p.bucket <= b);
        let in_bucket = places.get(range.clone()).unwrap_or_default();
        let wanted = wanted.get(range.clone()).unwrap_or_default();
        let cursors = cursors.get_mut(range).unwrap_or_default();
        let whole = in_bucket.iter().zip(wanted).all(|(p, &w)| w || p.len == 0);
        let target = if whole {
            &mut *arena
        } else {
            scratch.clear();
            &mut *scratch
        };
        let start = decompress_bucket(decompressor, data, compression, bucket, target)?;
        for ((place, &w), cursor) in in_bucket.iter().zip(wanted).zip(cursors) {
            if whole {
                cursor.pos = start + place.offset;
                cursor.end = cursor.pos + place.len;
            } else if w {
                cursor.pos = arena.len();
                arena.extend_from_slice(scratch.get(place.offset..place.offset + place.len).unwrap_or_default());
                cursor.end = arena.len();
            }
        }
    }
    Ok(())
}

/// Appends `bucket`, decompressed, to `out`: exactly its declared size, or an
/// error. Returns where it starts in `out`.
fn decompress_bucket(
    decompressor: &mut Decompressor,
    data: &[u8],
    compression: CompressionType,
    bucket: &Bucket,
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    let start = out.len();
    let stored = data.get(bucket.stored.clone()).unwrap_or_default();
    decompressor
        .decompress(compression, stored, bucket.size, out)
        .map_err(|e| e.within("transposed chunk bucket", bucket.stored.start as u64))?;
    if (out.len() - start) as u64 != bucket.size {
        return Err(CodecError::invalid(WHAT_DATA, bucket.stored.start as u64, "bucket size mismatch"));
    }
    Ok(start)
}

/// `i` as a `u32`: node and buffer indices come from `u32` counts.
fn to_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// The steps a [`Discover`] run traces however short the chunk: 128 KiB.
const MIN_TRACE: usize = 1 << 16;

/// Bytes the decoder keeps for each bucket of a header (its place, where its
/// decompressed bytes start, whether it is decompressed or wanted, its place
/// in the order wanted).
const BUCKET_STATE: u64 = (size_of::<Bucket>() + size_of::<usize>() + 2 + size_of::<u32>()) as u64;
/// Bytes the decoder keeps for each buffer of a header (its place and cursor,
/// whether it is wanted).
const BUFFER_STATE: u64 = (size_of::<BufferPlace>() + size_of::<Cursor>() + 1) as u64;
/// Bytes the decoder keeps for each node of a header (the node and its copy
/// as parsed, its id, next and mark).
const NODE_STATE: u64 = (2 * size_of::<Node>() + 3 * size_of::<u32>()) as u64;

/// Checks what the decoder is about to allocate for the buckets, buffers and
/// nodes a header counts against `max_decoded_size`: every item takes a byte
/// or two of the header, but many times that in the decoder, so a header
/// within the limit could otherwise make it allocate far beyond it.
fn check_state(state: u64, offset: usize, limits: &DecodeLimits) -> Result<(), CodecError> {
    if state > limits.max_decoded_size {
        return Err(CodecError::limit(
            WHAT_HEADER,
            offset as u64,
            "max_decoded_size (decoder state for the header's buckets, buffers and nodes)",
            state,
            limits.max_decoded_size,
        ));
    }
    Ok(())
}

fn bad_header(offset: usize, reason: &'static str) -> CodecError {
    CodecError::invalid(WHAT_HEADER, offset as u64, reason)
}

fn bad_run(offset: usize, reason: &'static str) -> CodecError {
    CodecError::invalid(WHAT_RUN, offset as u64, reason)
}

/// Reads the structures of the chunk data or the header, front to back.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8], what: &'static str) -> Self {
        Self { data, pos: 0, what }
    }

    fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..).unwrap_or_default()
    }

    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn u32(&mut self) -> Result<u32, CodecError> {
        let (value, len) = varint::decode_u32(self.rest()).map_err(|e| e.within(self.what, self.pos as u64))?;
        self.pos += len;
        Ok(value)
    }

    fn u64(&mut self) -> Result<u64, CodecError> {
        let (value, len) = varint::decode_u64(self.rest()).map_err(|e| e.within(self.what, self.pos as u64))?;
        self.pos += len;
        Ok(value)
    }

    fn take(&mut self, len: u64) -> Result<std::ops::Range<usize>, CodecError> {
        let remaining = self.remaining();
        match usize::try_from(len) {
            Ok(len) if len <= remaining => {
                let range = self.pos..self.pos + len;
                self.pos += len;
                Ok(range)
            }
            _ => Err(CodecError::truncated(self.what, self.pos as u64, len.saturating_sub(remaining as u64))),
        }
    }
}

/// The varint-encoded proto tag `tag` as a right-aligned word, and its length.
fn tag_word(tag: u32) -> (u64, u8) {
    let mut buf = [0u8; varint::MAX_VARINT64_LEN];
    let len = varint::encode_u64_to_array(u64::from(tag), &mut buf);
    let mut word = [0u8; 8];
    let (_, tail) = word.split_at_mut(8 - len.min(8));
    if let Some(src) = buf.get(..tail.len()) {
        tail.copy_from_slice(src);
    }
    (u64::from_le_bytes(word), u8::try_from(len.min(8)).unwrap_or(8))
}

/// Appends `byte` after the bytes of a right-aligned word of `len` bytes.
fn word_push(word: u64, byte: u8) -> u64 {
    (word >> 8) | (u64::from(byte) << 56)
}

impl TransposedChunkDecoder {
    /// A decoder in the default (C++-compatible) mode.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder whose records' buffers go to `buffers` when dropped, and
    /// which decodes into buffers taken from there (see [`RecordBuffers`]).
    pub fn with_buffers(buffers: &RecordBuffers) -> Self {
        Self { buffers: Arc::clone(&buffers.0), ..Self::default() }
    }

    /// Turns strict mode on or off (off by default).
    ///
    /// The default mode accepts exactly the chunks the C++ reader accepts
    /// (spec §9). Strict mode also rejects what the C++ encoder never writes
    /// (spec §7): buffers (including the non-proto lengths) left partly
    /// unread, and varint buffer bytes with bit 7 already set. Strict checks
    /// apply only without projection.
    pub fn set_strict(&mut self, strict: bool) -> &mut Self {
        self.strict = strict;
        self
    }

    /// Decodes the records of a transposed chunk: `data` is the chunk data,
    /// `num_records` and `decoded_data_size` come from the chunk header.
    ///
    /// With a projection other than [`FieldProjection::all`], only the chosen
    /// fields are decoded, and `decoded_data_size` only bounds the result. Of
    /// a compressed chunk, only the buckets holding those fields are
    /// decompressed, one at a time, and only those fields' buffers kept.
    ///
    /// `decoded_data_size` and `num_records` must be within `limits`. Each
    /// decompressed part of the chunk (the header, all buckets together, the
    /// transitions) must also be at most `limits.max_decoded_size` bytes.
    pub fn decode(
        &mut self,
        data: Bytes,
        num_records: u64,
        decoded_data_size: u64,
        limits: &DecodeLimits,
        projection: &FieldProjection,
    ) -> Result<DecodedRecords, CodecError> {
        limits.check_chunk(WHAT_DATA, num_records, decoded_data_size)?;
        let capacity = usize::try_from(decoded_data_size)
            .map_err(|_| CodecError::limit(WHAT_DATA, 0, "address space", decoded_data_size, usize::MAX as u64))?;
        let tree = projection.paths().map(IncludeTree::build);
        let result = self.decode_inner(&data, num_records, capacity, limits, tree.as_ref());
        self.stack.clear();
        result
    }

    /// Decodes the data of a file metadata chunk (`'m'`, spec §11): one
    /// serialized `RecordsMetadata` stored as a transposed chunk.
    ///
    /// `num_records` from the chunk header must be 0, and the result is
    /// exactly `decoded_data_size` bytes.
    pub fn decode_metadata_chunk(
        &mut self,
        data: Bytes,
        num_records: u64,
        decoded_data_size: u64,
        limits: &DecodeLimits,
    ) -> Result<Bytes, CodecError> {
        if num_records != 0 {
            return Err(CodecError::invalid("metadata chunk", 0, "metadata chunk with records"));
        }
        let records = self.decode(data, 1, decoded_data_size, limits, &FieldProjection::all())?;
        records.get(0).ok_or_else(|| CodecError::invalid("metadata chunk", 0, "metadata chunk without a record"))
    }

    /// Decodes the records of a transposed chunk as [`decode`](Self::decode)
    /// does, but hands their fields to `sink` instead of serializing them:
    /// no record is built. See [`FieldSink`] for the order (backwards).
    ///
    /// Returns `Ok(ControlFlow::Break(()))` if the sink stopped decoding, or
    /// if a record needs a parser of its serialized bytes to say what it
    /// means (a varint whose stored bytes do not end where its node says,
    /// which no encoder writes); what the sink was given until then is not
    /// the whole chunk. A chunk that `decode` rejects is rejected here too,
    /// the sink possibly given part of it first.
    pub fn decode_to_sink<F: FieldSink>(
        &mut self,
        data: &[u8],
        num_records: u64,
        decoded_data_size: u64,
        limits: &DecodeLimits,
        projection: &FieldProjection,
        sink: &mut F,
    ) -> Result<ControlFlow<()>, CodecError> {
        limits.check_chunk(WHAT_DATA, num_records, decoded_data_size)?;
        let capacity = usize::try_from(decoded_data_size)
            .map_err(|_| CodecError::limit(WHAT_DATA, 0, "address space", decoded_data_size, usize::MAX as u64))?;
        let tree = projection.paths().map(IncludeTree::build);
        let result = self.sink_inner(data, num_records, capacity, limits, tree.as_ref(), sink);
        self.stack.clear();
        result
    }

    fn sink_inner<F: FieldSink>(
        &mut self,
        data: &[u8],
        num_records: u64,
        capacity: usize,
        limits: &DecodeLimits,
        tree: Option<&IncludeTree>,
        sink: &mut F,
    ) -> Result<ControlFlow<()>, CodecError> {
        let projection = tree.is_some();
        let parsed = self.parse(data, limits, projection)?;
        let strict = self.strict && !projection;
        let mut out = SinkOutput {
            sink,
            capacity,
            size: 0,
            num_records,
            records: 0,
            record_size: 0,
            max_stack: max_stack(limits),
            strict,
            raw_depth: 0,
            raw: std::mem::take(&mut self.raw),
            stopped: false,
        };
        let result = self.run_parsed(data, limits, tree, &parsed, &mut out);
        self.raw = std::mem::take(&mut out.raw);
        if out.stopped {
            return Ok(ControlFlow::Break(()));
        }
        result?;
        // The end-of-run checks of `RunState::finish`.
        if out.records != num_records {
            return Err(bad_run(0, "too few records"));
        }
        if out.record_size != out.size {
            return Err(bad_run(0, "unfinished message: data before the first record"));
        }
        if !projection && out.size != capacity {
            return Err(bad_run(0, "decoded size smaller than declared"));
        }
        if strict && self.cursors.iter().any(|c| c.pos != c.end) {
            return Err(bad_run(0, "buffer left partly unread"));
        }
        Ok(ControlFlow::Continue(()))
    }

    fn decode_inner(
        &mut self,
        data: &[u8],
        num_records: u64,
        capacity: usize,
        limits: &DecodeLimits,
        tree: Option<&IncludeTree>,
    ) -> Result<DecodedRecords, CodecError> {
        let projection = tree.is_some();
        let parsed = self.parse(data, limits, projection)?;
        let Buffers { values: out, ends } = self.buffers.take().unwrap_or_default();
        let mut state = RunState::new(num_records, capacity, max_stack(limits), self.strict && !projection, out, ends)?;
        self.run_parsed(data, limits, tree, &parsed, &mut state)?;
        state.finish(&self.cursors, projection, &self.buffers)
    }

    /// Runs the state machine of the chunk `parse` just read, its steps'
    /// output going to `out`: buckets decompressed as needed.
    fn run_parsed<O: Output>(
        &mut self,
        data: &[u8],
        limits: &DecodeLimits,
        tree: Option<&IncludeTree>,
        parsed: &Parsed,
        out: &mut O,
    ) -> Result<(), CodecError> {
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();

        // The transitions, decompressed if needed (into a buffer taken out of
        // `self` meanwhile).
        let mut transitions_buf = std::mem::take(&mut self.transitions_buf);
        let transitions: &[u8] = if parsed.compression == CompressionType::None {
            data.get(parsed.transitions.clone()).unwrap_or_default()
        } else {
            transitions_buf.clear();
            let stored = data.get(parsed.transitions.clone()).unwrap_or_default();
            let decompressed =
                self.decompressor.decompress(parsed.compression, stored, limits.max_decoded_size, &mut transitions_buf);
            if let Err(e) = decompressed {
                self.transitions_buf = transitions_buf;
                self.stack = stack;
                return Err(e.within("transposed chunk transitions block", parsed.transitions.start as u64));
            }
            &transitions_buf
        };

        #[cfg(test)]
        let planted = self.discovery_fails_at.map(|at| (at, "failure planted by a test"));
        #[cfg(not(test))]
        let planted = None;
        let result = if parsed.compression == CompressionType::None {
            // Every buffer is a slice of the chunk data.
            let cursors = &mut self.cursors;
            for (place, cursor) in self.places.iter().zip(cursors.iter_mut()) {
                let bucket = self.buckets.get(place.bucket as usize).map_or(0, |b| b.stored.start);
                cursor.pos = bucket + place.offset;
                cursor.end = cursor.pos + place.len;
            }
            let (nodes, mut source) = (&mut self.nodes, Plain(data));
            match tree {
                None => run::<false, _, _>(out, nodes, cursors, &mut stack, parsed, transitions, &mut source, None),
                Some(tree) => {
                    run::<true, _, _>(out, nodes, cursors, &mut stack, parsed, transitions, &mut source, Some(tree))
                }
            }
        } else if let Some(tree) = tree {
            self.run_projected(data, limits, (tree, planted), parsed, transitions, &mut stack, out)
        } else {
            self.run_whole(data, parsed, transitions, &mut stack, out)
        };
        self.stack = stack;
        self.transitions_buf = transitions_buf;
        result
    }

    /// Runs the machine of a compressed chunk without projection: every
    /// bucket decompressed into the arena, back to back.
    fn run_whole<O: Output>(
        &mut self,
        data: &[u8],
        parsed: &Parsed,
        transitions: &[u8],
        stack: &mut Vec<StackEntry>,
        out: &mut O,
    ) -> Result<(), CodecError> {
        self.arena.clear();
        let mut starts = Vec::with_capacity(self.buckets.len());
        for bucket in &self.buckets {
            starts.push(decompress_bucket(&mut self.decompressor, data, parsed.compression, bucket, &mut self.arena)?);
        }
        for (place, cursor) in self.places.iter().zip(self.cursors.iter_mut()) {
            cursor.pos = starts.get(place.bucket as usize).copied().unwrap_or(0) + place.offset;
            cursor.end = cursor.pos + place.len;
        }
        let mut source = Plain(&self.arena);
        run::<false, _, _>(out, &mut self.nodes, &mut self.cursors, stack, parsed, transitions, &mut source, None)
    }

    /// Runs the machine of a compressed chunk under projection. First a run
    /// that reads no value finds the buffers the projected fields read and
    /// traces the steps that do something ([`Discover`], [`Wanted`]); then
    /// only the buckets holding those buffers are decompressed, one at a time,
    /// and only those buffers kept ([`gather`]); and `out` takes the traced
    /// steps over them ([`replay`]): a few columns of a chunk take their own
    /// bytes, not their buckets'. A chunk the first run rejects is decoded in
    /// one run, buckets decompressed as first needed ([`Lazy`]), so that it
    /// fails as it always has. `planted`: a failure of the first run (tests).
    #[allow(clippy::too_many_arguments, reason = "the parts of a run, borrowed separately")]
    fn run_projected<O: Output>(
        &mut self,
        data: &[u8],
        limits: &DecodeLimits,
        (tree, planted): (&IncludeTree, Option<(usize, &'static str)>),
        parsed: &Parsed,
        transitions: &[u8],
        stack: &mut Vec<StackEntry>,
        out: &mut O,
    ) -> Result<(), CodecError> {
        let (nodes, cursors) = (&mut self.nodes, &mut self.cursors);
        self.parsed_nodes.clear();
        self.parsed_nodes.extend_from_slice(nodes);
        self.wanted.clear();
        self.wanted.resize(self.places.len(), false);
        self.wanted_buckets.clear();
        let mut wanted = Wanted {
            places: &self.places,
            buffers: &mut self.wanted,
            buckets: &mut self.wanted_buckets,
            bucket_seen: vec![false; self.buckets.len()],
        };
        self.trace.clear();
        // At most two bytes a byte of the chunk, or 128 KiB; past that `out`
        // steps the machine again.
        let mut discover = Discover::new(out, limits, &mut self.trace, data.len().max(MIN_TRACE), planted);
        let found = mark_nonproto(&mut wanted, nodes, cursors, parsed).and_then(|()| {
            run::<true, _, _>(&mut discover, nodes, cursors, stack, parsed, transitions, &mut wanted, Some(tree))
        });
        let complete = discover.complete;
        stack.clear();
        if found.is_err() {
            nodes.clear();
            nodes.extend_from_slice(&self.parsed_nodes);
            self.arena.clear();
            let mut source = Lazy {
                data,
                arena: &mut self.arena,
                buckets: &self.buckets,
                places: &self.places,
                done: vec![false; self.buckets.len()],
                decompressor: &mut self.decompressor,
                compression: parsed.compression,
            };
            cursors.fill(Cursor::default());
            mark_nonproto(&mut source, nodes, cursors, parsed)?;
            return run::<true, _, _>(out, nodes, cursors, stack, parsed, transitions, &mut source, Some(tree));
        }
        let (wanted, order) = (&self.wanted, &self.wanted_buckets);
        let (decompressor, scratch, arena) = (&mut self.decompressor, &mut self.scratch, &mut self.arena);
        gather(
            data,
            parsed.compression,
            &self.buckets,
            &self.places,
            wanted,
            order,
            decompressor,
            scratch,
            arena,
            cursors,
        )?;
        let mut source = Plain(&self.arena);
        if !complete {
            return run::<true, _, _>(out, nodes, cursors, stack, parsed, transitions, &mut source, Some(tree));
        }
        let Err((at, reason)) = replay(out, nodes, cursors, stack, &self.trace, &self.arena) else {
            return Ok(());
        };
        // The error says where in the transitions the failed step is: the
        // machine is run to it again, failing there.
        stack.clear();
        let mut no_trace = Vec::new();
        let mut again = Discover::new(out, limits, &mut no_trace, 0, Some((at, reason)));
        run::<true, _, _>(&mut again, nodes, cursors, stack, parsed, transitions, &mut Plain(&[]), Some(tree))
            .and(Err(bad_run(0, reason)))
    }

    /// Parses the chunk data up to the transitions (§3–§6).
    fn parse(&mut self, data: &[u8], limits: &DecodeLimits, projection: bool) -> Result<Parsed, CodecError> {
        let mut chunk = Reader::new(data, WHAT_DATA);
        let (&compression_byte, _) = data.split_first().ok_or_else(|| CodecError::truncated(WHAT_DATA, 0, 1))?;
        chunk.pos = 1;
        let compression = CompressionType::from_byte(compression_byte).map_err(|e| e.within(WHAT_DATA, 0))?;
        let header_size = chunk.u64()?;
        let header_range = chunk.take(header_size)?;
        let stored_header = data.get(header_range.clone()).unwrap_or_default();
        let header: &[u8] = if compression == CompressionType::None {
            stored_header
        } else {
            self.header_buf.clear();
            self.decompressor
                .decompress(compression, stored_header, limits.max_decoded_size, &mut self.header_buf)
                .map_err(|e| e.within("transposed chunk header block", header_range.start as u64))?;
            &self.header_buf
        };
        let mut h = Reader::new(header, WHAT_HEADER);

        // Buckets and buffers (§5).
        let num_buckets = h.u32()?;
        let num_buffers = h.u32()?;
        if num_buckets as usize > h.remaining() || num_buffers as usize > h.remaining() {
            return Err(CodecError::truncated(WHAT_HEADER, h.pos as u64, 1));
        }
        let mut state = u64::from(num_buckets) * BUCKET_STATE + u64::from(num_buffers) * BUFFER_STATE;
        check_state(state, h.pos, limits)?;
        self.buckets.clear();
        self.buckets.reserve(num_buckets as usize);
        self.places.clear();
        self.places.reserve(num_buffers as usize);
        for _ in 0..num_buckets {
            let stored_size = h.u64()?;
            let stored = chunk.take(stored_size)?;
            let size = if compression == CompressionType::None {
                stored_size
            } else {
                let bytes = data.get(stored.clone()).unwrap_or_default();
                varint::decode_u64(bytes).map_err(|e| e.within("transposed chunk bucket", stored.start as u64))?.0
            };
            self.buckets.push(Bucket { stored, size });
        }
        if num_buckets == 0 {
            if num_buffers != 0 {
                return Err(bad_header(h.pos, "too few buckets"));
            }
        } else {
            let mut bucket = 0usize;
            let mut remaining = self.buckets.first().map_or(0, |b| b.size);
            let mut total: u64 = 0;
            for _ in 0..num_buffers {
                let at = h.pos;
                let len = h.u64()?;
                if len > remaining {
                    return Err(bad_header(at, "buffer does not fit in bucket"));
                }
                let size = self.buckets.get(bucket).map_or(0, |b| b.size);
                let offset = usize::try_from(size - remaining).map_err(|_| bad_header(at, "bucket too large"))?;
                let len_usize = usize::try_from(len).map_err(|_| bad_header(at, "buffer too large"))?;
                self.places.push(BufferPlace { bucket: to_u32(bucket), offset, len: len_usize });
                total = total.saturating_add(len);
                remaining -= len;
                while remaining == 0 && bucket + 1 < self.buckets.len() {
                    bucket += 1;
                    remaining = self.buckets.get(bucket).map_or(0, |b| b.size);
                }
            }
            if bucket + 1 < self.buckets.len() {
                return Err(bad_header(h.pos, "too few buckets"));
            }
            if remaining > 0 {
                return Err(bad_header(h.pos, "end of data expected: last bucket not fully used"));
            }
            if compression != CompressionType::None && total > limits.max_decoded_size {
                return Err(CodecError::limit(WHAT_HEADER, 0, "max_decoded_size", total, limits.max_decoded_size));
            }
        }
        self.cursors.clear();
        self.cursors.resize(self.places.len(), Cursor::default());

        // Nodes (§4, §6).
        let num_nodes = h.u32()?;
        let s = num_nodes as usize;
        // Each node takes at least two header bytes (its id and its next).
        if s > h.remaining() / 2 {
            return Err(CodecError::truncated(WHAT_HEADER, h.pos as u64, (2 * s - h.remaining()) as u64));
        }
        state += u64::from(num_nodes) * NODE_STATE;
        check_state(state, h.pos, limits)?;
        self.ids.clear();
        self.ids.reserve(s);
        for _ in 0..s {
            self.ids.push(h.u32()?);
        }
        self.nexts.clear();
        self.nexts.reserve(s);
        for _ in 0..s {
            self.nexts.push(h.u32()?);
        }
        let num_subtypes = self.ids.iter().filter(|&&id| id >= 8 && id & 7 == 0).count();
        let subtypes_range = h.take(num_subtypes as u64)?;
        let subtypes = header.get(subtypes_range).unwrap_or_default();
        let mut subtypes = subtypes.iter();
        let mut has_nonproto = false;
        self.nodes.clear();
        self.nodes.reserve(s);
        for (&id, &next) in self.ids.iter().zip(self.nexts.iter()) {
            let mut node = Node::EMPTY;
            let at = h.pos;
            match id {
                0 => node.op = Op::NoOp,
                1 => {
                    node.op = Op::NonProto;
                    node.buffer = h.u32()?;
                    has_nonproto = true;
                }
                2 => node.op = if projection { Op::Select } else { Op::SubmessageStart },
                3 => node.op = Op::RecordStart,
                _ => {
                    let mut tag = id;
                    let mut end_of_submessage = false;
                    if tag & 7 == 6 {
                        tag -= 4;
                        end_of_submessage = true;
                    }
                    let wire_type = tag & 7;
                    if tag < 8 || wire_type > 5 {
                        return Err(bad_header(at, "invalid tag"));
                    }
                    let (word, tag_len) = tag_word(tag);
                    node.emit = word;
                    node.emit_len = tag_len;
                    node.tag_len = tag_len;
                    node.field = tag >> 3;
                    let mut has_buffer = true;
                    match wire_type {
                        0 => {
                            node.kind = Kind::Varint;
                            let &subtype = subtypes.next().ok_or_else(|| bad_header(at, "missing subtype"))?;
                            if subtype > MAX_INLINE_SUBTYPE {
                                return Err(bad_header(at, "invalid node: varint subtype"));
                            }
                            if subtype >= FIRST_INLINE_SUBTYPE {
                                has_buffer = false;
                                node.op = Op::CopyTag;
                                node.emit = word_push(word, subtype - FIRST_INLINE_SUBTYPE);
                                node.emit_len = tag_len + 1;
                            } else {
                                node.op = Op::Varint;
                                node.vlen = subtype + 1;
                            }
                        }
                        1 => {
                            node.kind = Kind::Fixed64;
                            node.op = Op::Fixed64;
                        }
                        5 => {
                            node.kind = Kind::Fixed32;
                            node.op = Op::Fixed32;
                        }
                        2 if end_of_submessage => {
                            has_buffer = false;
                            node.kind = Kind::SubmessageEnd;
                            node.op = Op::SubmessageEnd;
                        }
                        2 => {
                            node.kind = Kind::String;
                            node.op = Op::String;
                        }
                        3 => {
                            has_buffer = false;
                            node.kind = Kind::StartGroup;
                            node.op = Op::CopyTag;
                        }
                        _ => {
                            has_buffer = false;
                            node.kind = Kind::EndGroup;
                            node.op = Op::CopyTag;
                        }
                    }
                    if has_buffer {
                        node.buffer = h.u32()?;
                    }
                    if projection {
                        node.op = Op::Select;
                    }
                }
            }
            if node.buffer != u32::MAX && node.buffer >= num_buffers {
                return Err(bad_header(at, "buffer index too large"));
            }
            let (implicit, base) = if next >= num_nodes { (true, next - num_nodes) } else { (false, next) };
            if base >= num_nodes {
                return Err(bad_header(at, "node index too large"));
            }
            node.implicit = implicit;
            node.next = base;
            self.nodes.push(node);
        }
        if has_nonproto && num_buffers == 0 {
            return Err(bad_header(h.pos, "missing buffer for non-proto records"));
        }
        let at = h.pos;
        let first_node = h.u32()?;
        if first_node >= num_nodes {
            return Err(bad_header(at, "first node index too large"));
        }
        if h.remaining() != 0 {
            return Err(bad_header(h.pos, "trailing bytes after the header"));
        }
        self.check_implicit_loops()?;
        self.skip_implicit_noops();
        Ok(Parsed { compression, first_node, transitions: chunk.pos..data.len(), has_nonproto })
    }

    /// Rejects a cycle of implicit transitions (§6.4).
    fn check_implicit_loops(&mut self) -> Result<(), CodecError> {
        let nodes = &self.nodes;
        self.marks.clear();
        self.marks.resize(nodes.len(), 0);
        let mut walk = 0u32;
        for start in 0..nodes.len() {
            if self.marks.get(start).copied().unwrap_or(1) != 0 {
                continue;
            }
            walk += 1;
            let mut i = start;
            loop {
                match self.marks.get_mut(i) {
                    Some(mark) if *mark == walk => {
                        return Err(bad_header(i, "nodes contain an implicit loop"));
                    }
                    Some(mark) if *mark != 0 => break,
                    Some(mark) => *mark = walk,
                    None => break,
                }
                match nodes.get(i) {
                    Some(node) if node.implicit => i = node.next as usize,
                    _ => break,
                }
            }
        }
        Ok(())
    }

    /// Makes implicit transitions skip over implicit no-op nodes, which do
    /// nothing. This keeps every step of the machine paid for by output, a
    /// record or a transition byte (so adversarial chunks end in linear time).
    fn skip_implicit_noops(&mut self) {
        let nodes = &mut self.nodes;
        // marks[i] = 1 + where an implicit step into i really lands, 0 if unknown.
        self.marks.clear();
        self.marks.resize(nodes.len(), 0);
        for start in 0..nodes.len() {
            // Follow the chain of implicit no-ops from `start`'s target.
            let Some(node) = nodes.get(start) else { continue };
            if !node.implicit {
                continue;
            }
            let mut target = node.next as usize;
            let mut path_len = 0usize;
            loop {
                if let Some(&known) = self.marks.get(target)
                    && known != 0
                {
                    target = known as usize - 1;
                    break;
                }
                match nodes.get(target) {
                    Some(t) if t.op == Op::NoOp && t.implicit && path_len < nodes.len() => {
                        target = t.next as usize;
                        path_len += 1;
                    }
                    _ => break,
                }
            }
            // Remember the landing node for every no-op on the way.
            let mut i = node.next as usize;
            while i != target {
                let Some(t) = nodes.get(i) else { break };
                let next = t.next as usize;
                if let Some(mark) = self.marks.get_mut(i) {
                    *mark = to_u32(target).saturating_add(1);
                }
                i = next;
            }
            if let Some(node) = nodes.get_mut(start) {
                node.next = to_u32(target);
            }
        }
    }
}

/// The node after `node` (§6.4, §8): its base if its transition is implicit or
/// repeated (`pending`), else its base plus the offset of the next
/// transition byte (at `t`); `None` when the transitions run out.
#[inline(always)]
fn advance(node: &Node, transitions: &[u8], t: &mut usize, pending: &mut u8) -> Option<usize> {
    if node.implicit {
        Some(node.next as usize)
    } else if *pending > 0 {
        *pending -= 1;
        Some(node.next as usize)
    } else {
        let &byte = transitions.get(*t)?;
        *t += 1;
        *pending = byte & 3;
        Some(node.next as usize + usize::from(byte >> 2))
    }
}

/// The most entries the submessage stack may hold: as many bytes as the
/// decoded size limit, no more. What its pops must emit bounds its entries by
/// the chunk's decoded size, but each entry takes several times the bytes it
/// stands for.
fn max_stack(limits: &DecodeLimits) -> usize {
    usize::try_from(limits.max_decoded_size / size_of::<StackEntry>() as u64).unwrap_or(usize::MAX)
}

/// What the steps of the state machine make (§7): [`RunState`] writes the
/// serialized records, [`SinkOutput`] hands their fields to a [`FieldSink`].
/// [`run`] calls one method per step that produces something.
trait Output {
    /// The decoded size the chunk header declares (a bound under projection).
    fn capacity(&self) -> usize;
    fn num_records(&self) -> u64;
    /// A tag with its inline value (varints of at most 127, existence only),
    /// or a group's tag (without projection).
    fn copy_tag(&mut self, node: &Node) -> Step;
    fn varint(&mut self, node: &Node, cursors: &mut [Cursor], data: &[u8]) -> Step;
    fn fixed<const N: usize>(&mut self, node: &Node, cursors: &mut [Cursor], data: &[u8]) -> Step;
    fn string(&mut self, node: &Node, cursors: &mut [Cursor], data: &[u8]) -> Step;
    fn nonproto(
        &mut self,
        node: &Node,
        cursors: &mut [Cursor],
        lengths: usize,
        data: &[u8],
        stack: &[StackEntry],
    ) -> Step;
    fn record_start(&mut self, stack: &[StackEntry]) -> Step;
    /// The end of submessage `node` (at `index`), seen first (the machine
    /// runs backwards): pushes it; its pop must emit at least `min_pop_bytes`.
    fn submessage_end(&mut self, stack: &mut Vec<StackEntry>, index: u32, node: &Node, min_pop_bytes: usize) -> Step;
    /// The start of the submessage on top of the stack: pops it.
    fn submessage_start(&mut self, nodes: &[Node], stack: &mut Vec<StackEntry>) -> Step;
    /// Projection: a fixed-size field kept by its existence (zero).
    fn existence<const N: usize>(&mut self, node: &Node) -> Step;
    /// Projection: an end-group tag (pushes).
    fn end_group(&mut self, stack: &mut Vec<StackEntry>, index: u32, node: &Node) -> Step;
    /// Projection: a start-group tag (pops).
    fn start_group(&mut self, stack: &mut Vec<StackEntry>, node: &Node) -> Step;
    /// Projection: told of each step that does something, node `index`'s,
    /// before it is taken (see [`Discover`]).
    #[inline(always)]
    fn trace(&mut self, index: usize) -> Step {
        let _ = index;
        Ok(())
    }
}

/// How a [`FieldSink`] takes a submessage it is told of (see
/// [`FieldSink::submessage_end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubmessageAs {
    /// Field by field, between [`FieldSink::submessage_end`] and
    /// [`FieldSink::submessage_start`].
    Fields,
    /// Serialized, as one length-delimited value ([`FieldSink::bytes`]),
    /// with no calls for its fields: for a field that is a string, bytes or
    /// packed values, whose bytes the encoder found to parse as a message.
    Serialized,
}

/// What [`TransposedChunkDecoder::decode_to_sink`] hands the decoded field
/// values to, instead of serializing records.
///
/// **The order is backwards**, as the state machine runs (spec §7): the last
/// record first, and within a record, the last field first. A record's fields
/// come before its [`record_start`](Self::record_start); a submessage's fields
/// come after its [`submessage_end`](Self::submessage_end) and before its
/// [`submessage_start`](Self::submessage_start). Fields are named by their
/// number, within the innermost open submessage.
///
/// Every method can stop decoding by returning [`ControlFlow::Break`]:
/// `decode_to_sink` then returns `Ok(ControlFlow::Break(()))` (the caller
/// decodes the chunk another way, say with
/// [`decode`](TransposedChunkDecoder::decode)).
pub trait FieldSink {
    /// The start of a record, after all of its fields.
    fn record_start(&mut self) -> ControlFlow<()>;
    /// A varint field (wire type 0).
    fn varint(&mut self, field: u32, value: u64) -> ControlFlow<()>;
    /// A fixed32 field (wire type 5).
    fn fixed32(&mut self, field: u32, value: u32) -> ControlFlow<()>;
    /// A fixed64 field (wire type 1).
    fn fixed64(&mut self, field: u32, value: u64) -> ControlFlow<()>;
    /// A length-delimited field (wire type 2) that is not told of as a
    /// submessage: string, bytes, packed values, or a submessage given
    /// [`SubmessageAs::Serialized`].
    fn bytes(&mut self, field: u32, value: &[u8]) -> ControlFlow<()>;
    /// The end of a submessage in field `field` (its fields come next).
    fn submessage_end(&mut self, field: u32) -> ControlFlow<(), SubmessageAs>;
    /// The start of the submessage in field `field` (after its fields).
    fn submessage_start(&mut self, field: u32) -> ControlFlow<()>;
    /// A group's start (`start`) or end tag: its fields come between, the
    /// end first. Groups are never given [`SubmessageAs::Serialized`].
    fn group(&mut self, field: u32, start: bool) -> ControlFlow<()>;
    /// A record that is not a protobuf message, then its start.
    fn non_proto(&mut self, record: &[u8]) -> ControlFlow<()>;
}

/// The reason a step fails when the sink stopped decoding.
const SINK_STOPPED: &str = "stopped by the field sink";

/// A [`FieldSink`] as the output of the state machine. It counts the bytes
/// serialized records would take, so that a chunk fails exactly where
/// [`RunState`] would fail it, and serializes the submessages the sink asks
/// for whole ([`SubmessageAs::Serialized`]).
struct SinkOutput<'a, F> {
    sink: &'a mut F,
    capacity: usize,
    /// The bytes the serialized records would have so far.
    size: usize,
    num_records: u64,
    records: u64,
    /// `size` at the last record start.
    record_size: usize,
    max_stack: usize,
    strict: bool,
    /// The depth of the stack with a submessage being serialized on top, or 0.
    raw_depth: usize,
    /// That submessage's bytes so far, reversed (the machine runs backwards).
    raw: Vec<u8>,
    stopped: bool,
}

impl<F: FieldSink> SinkOutput<'_, F> {
    /// Counts `len` bytes of output.
    #[inline(always)]
    fn emit(&mut self, len: usize) -> Step {
        self.size = self.size.checked_add(len).filter(|&s| s <= self.capacity).ok_or("position limit exceeded")?;
        Ok(())
    }

    /// Passes on what the sink says.
    #[inline(always)]
    fn flow(&mut self, flow: ControlFlow<()>) -> Step {
        match flow {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(()) => {
                self.stopped = true;
                Err(SINK_STOPPED)
            }
        }
    }

    /// Whether the fields go into a serialized submessage rather than to the sink.
    #[inline(always)]
    fn raw(&self) -> bool {
        self.raw_depth != 0
    }

    /// Pushes an open submessage, bounded as [`RunState`] bounds it.
    fn push(&mut self, stack: &mut Vec<StackEntry>, node: u32, min_pop_bytes: usize) -> Step {
        if (stack.len() + 1) * min_pop_bytes > self.capacity - self.size {
            return Err("submessage stack overflow: more open submessages than output left");
        }
        if stack.len() >= self.max_stack {
            return Err("submessage stack overflow: more open submessages than max_decoded_size allows");
        }
        // Serialized submessages count their sizes in `raw`.
        let end = if self.raw() { self.raw.len() } else { self.size };
        stack.push(StackEntry { end, node });
        Ok(())
    }

    /// Writes `bytes` in front of the serialized submessage.
    fn raw_put(&mut self, bytes: &[u8]) {
        self.raw.extend(bytes.iter().rev());
    }

    /// Writes `node`'s tag (and inline value) in front of the serialized submessage.
    fn raw_tag(&mut self, node: &Node, len: u8) {
        let bytes = node.emit.to_le_bytes();
        let start = 8 - usize::from(node.emit_len);
        self.raw_put(bytes.get(start..start + usize::from(len)).unwrap_or_default());
    }

    /// The value of a varint field's buffered bytes (the continuation bits
    /// are not stored), as [`RunState::varint`] serializes it.
    #[inline(always)]
    fn varint_value(&self, digits: &[u8]) -> Result<u64, &'static str> {
        let mut value = 0u64;
        for (i, &digit) in digits.iter().enumerate() {
            if digit & 0x80 != 0 {
                if self.strict {
                    return Err("varint buffer byte with bit 7 set");
                }
                // Serialized, this varint would not end where its node says:
                // the record means something else, which a parser of the
                // serialized record must decide.
                return Err(SINK_STOPPED);
            }
            if i == 9 && digit > 1 {
                // Beyond 64 bits: a parser of the serialized record decides.
                return Err(SINK_STOPPED);
            }
            value |= u64::from(digit) << (7 * i).min(63);
        }
        Ok(value)
    }
}

impl<F: FieldSink> Output for SinkOutput<'_, F> {
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn num_records(&self) -> u64 {
        self.num_records
    }

    fn copy_tag(&mut self, node: &Node) -> Step {
        self.emit(usize::from(node.emit_len))?;
        if self.raw() {
            self.raw_tag(node, node.emit_len);
            return Ok(());
        }
        let inline = node.emit_len > node.tag_len;
        #[allow(clippy::cast_possible_truncation, reason = "the inline value is the top byte")]
        let value = (node.emit >> 56) as u8;
        let flow = match node.kind {
            Kind::Varint if inline => self.sink.varint(node.field, u64::from(value)),
            // Existence only: the empty value.
            Kind::String if inline && value == 0 => self.sink.bytes(node.field, &[]),
            Kind::StartGroup => self.sink.group(node.field, true),
            Kind::EndGroup => self.sink.group(node.field, false),
            _ => return Err("invalid node"),
        };
        self.flow(flow)
    }

    fn varint(&mut self, node: &Node, cursors: &mut [Cursor], data: &[u8]) -> Step {
        let n = usize::from(node.vlen);
        let cursor = cursors.get_mut(node.buffer as usize).ok_or("reading varint field failed")?;
        if cursor.end - cursor.pos < n {
            return Err("reading varint field failed");
        }
        let digits = data.get(cursor.pos..cursor.pos + n).ok_or("reading varint field failed")?;
        cursor.pos += n;
        self.emit(n + usize::from(node.tag_len))?;
        if self.raw() {
            let mut bytes = [0u8; varint::MAX_VARINT64_LEN];
            let dst = bytes.get_mut(..n).ok_or("reading varint field failed")?;
            dst.copy_from_slice(digits);
            if let Some((_, init)) = dst.split_last_mut() {
                for b in init {
                    *b |= 0x80;
                }
            }
            self.raw_put(dst);
            self.raw_tag(node, node.tag_len);
            return Ok(());
        }
        let value = self.varint_value(digits).inspect_err(|&e| self.stopped = e == SINK_STOPPED)?;
        let flow = self.sink.varint(node.field, value);
        self.flow(flow)
    }

    fn fixed<const N: usize>(&mut self, node: &Node, cursors: &mut [Cursor], data: &[u8]) -> Step {
        let cursor = cursors.get_mut(node.buffer as usize).ok_or("reading fixed field failed")?;
        if cursor.end - cursor.pos < N {
            return Err("reading fixed field failed");
        }
        let src = data.get(cursor.pos..).and_then(|s| s.first_chunk::<N>()).ok_or("reading fixed field failed")?;
        cursor.pos += N;
        self.emit(N + usize::from(node.tag_len))?;
        if self.raw() {
            self.raw_put(src);
            self.raw_tag(node, node.tag_len);
            return Ok(());
        }
        let mut word = [0u8; 8];
        if let Some(dst) = word.get_mut(..N) {
            dst.copy_from_slice(src);
        }
        let value = u64::from_le_bytes(word);
        #[allow(clippy::cast_possible_truncation, reason = "N is 4: the value is 32 bits")]
        let flow =
            if N == 4 { self.sink.fixed32(node.field, value as u32) } else { self.sink.fixed64(node.field, value) };
        self.flow(flow)
    }

    fn string(&mut self, node: &Node, cursors: &mut [Cursor], data: &[u8]) -> Step {
        let cursor = cursors.get_mut(node.buffer as usize).ok_or("reading string field failed")?;
        let available = data.get(cursor.pos..cursor.end).ok_or("reading string field failed")?;
        let (len, len_len) = varint::decode_u32(available).map_err(|_| "reading string length failed")?;
        if u64::from(len) + len_len as u64 > u64::from(u32::MAX) {
            return Err("string length overflow");
        }
        let total = len_len + len as usize;
        let whole = available.get(..total).ok_or("reading string field failed")?;
        cursor.pos += total;
        self.emit(total + usize::from(node.tag_len))?;
        if self.raw() {
            self.raw_put(whole);
            self.raw_tag(node, node.tag_len);
            return Ok(());
        }
        let flow = self.sink.bytes(node.field, whole.get(len_len..).unwrap_or_default());
        self.flow(flow)
    }

    fn nonproto(
        &mut self,
        node: &Node,
        cursors: &mut [Cursor],
        lengths: usize,
        data: &[u8],
        stack: &[StackEntry],
    ) -> Step {
        let lengths = cursors.get_mut(lengths).ok_or("reading non-proto record length failed")?;
        let available = data.get(lengths.pos..lengths.end).ok_or("reading non-proto record length failed")?;
        let (len, len_len) = varint::decode_u32(available).map_err(|_| "reading non-proto record length failed")?;
        lengths.pos += len_len;
        let cursor = cursors.get_mut(node.buffer as usize).ok_or("reading non-proto record failed")?;
        if len as usize > cursor.end - cursor.pos {
            return Err("reading non-proto record failed");
        }
        let record = data.get(cursor.pos..cursor.pos + len as usize).ok_or("reading non-proto record failed")?;
        cursor.pos += len as usize;
        self.emit(len as usize)?;
        let flow = self.sink.non_proto(record);
        self.flow(flow)?;
        self.record_start(stack)
    }

    fn record_start(&mut self, stack: &[StackEntry]) -> Step {
        if !stack.is_empty() {
            return Err("record start with submessages still open");
        }
        if self.records >= self.num_records {
            return Err("too many records");
        }
        self.records += 1;
        self.record_size = self.size;
        let flow = self.sink.record_start();
        self.flow(flow)
    }

    fn submessage_end(&mut self, stack: &mut Vec<StackEntry>, index: u32, node: &Node, min_pop_bytes: usize) -> Step {
        if !self.raw() {
            match self.sink.submessage_end(node.field) {
                ControlFlow::Continue(SubmessageAs::Fields) => {}
                ControlFlow::Continue(SubmessageAs::Serialized) => {
                    self.push(stack, index, min_pop_bytes)?;
                    self.raw_depth = stack.len();
                    // Its bytes are counted in `raw`, empty until it closes.
                    if let Some(entry) = stack.last_mut() {
                        entry.end = self.raw.len();
                    }
                    return Ok(());
                }
                ControlFlow::Break(()) => return self.flow(ControlFlow::Break(())),
            }
        }
        self.push(stack, index, min_pop_bytes)
    }

    fn submessage_start(&mut self, nodes: &[Node], stack: &mut Vec<StackEntry>) -> Step {
        let depth = stack.len();
        let entry = stack.pop().ok_or("submessage stack underflow")?;
        let owner = nodes.get(entry.node as usize).ok_or("invalid node index")?;
        if self.raw() {
            let length = self.raw.len() - entry.end;
            let length = u32::try_from(length).map_err(|_| "message too large")?;
            let mut len_buf = [0u8; varint::MAX_VARINT64_LEN];
            let len_len = varint::encode_u64_to_array(u64::from(length), &mut len_buf);
            self.emit(len_len + usize::from(owner.tag_len))?;
            if depth == self.raw_depth {
                // The submessage the sink asked for serialized: complete.
                self.raw_depth = 0;
                let mut raw = std::mem::take(&mut self.raw);
                raw.reverse();
                let flow = self.sink.bytes(owner.field, &raw);
                raw.clear();
                self.raw = raw;
                return self.flow(flow);
            }
            self.raw_put(len_buf.get(..len_len).unwrap_or_default());
            self.raw_tag(owner, owner.tag_len);
            return Ok(());
        }
        let length = self.size - entry.end;
        let length = u32::try_from(length).map_err(|_| "message too large")?;
        self.emit(varint::encoded_len_u64(u64::from(length)) + usize::from(owner.tag_len))?;
        let flow = self.sink.submessage_start(owner.field);
        self.flow(flow)
    }

    fn existence<const N: usize>(&mut self, node: &Node) -> Step {
        self.emit(N + usize::from(node.tag_len))?;
        if self.raw() {
            self.raw_put(&[0; N]);
            self.raw_tag(node, node.tag_len);
            return Ok(());
        }
        let flow = if N == 4 { self.sink.fixed32(node.field, 0) } else { self.sink.fixed64(node.field, 0) };
        self.flow(flow)
    }

    fn end_group(&mut self, stack: &mut Vec<StackEntry>, index: u32, node: &Node) -> Step {
        self.push(stack, index, 1)?;
        self.emit(usize::from(node.emit_len))?;
        if self.raw() {
            self.raw_tag(node, node.emit_len);
            return Ok(());
        }
        let flow = self.sink.group(node.field, false);
        self.flow(flow)
    }

    fn start_group(&mut self, stack: &mut Vec<StackEntry>, node: &Node) -> Step {
        stack.pop().ok_or("submessage stack underflow")?;
        self.emit(usize::from(node.emit_len))?;
        if self.raw() {
            self.raw_tag(node, node.emit_len);
            return Ok(());
        }
        let flow = self.sink.group(node.field, true);
        self.flow(flow)
    }
}

/// The state of one run of the machine (§7).
struct RunState {
    num_records: u64,
    /// Output, filled from the end; `pos` is the start of what is written.
    out: Vec<u8>,
    pos: usize,
    /// Decoded size at each record start.
    limits: Vec<usize>,
    /// The most entries the submessage stack may hold.
    max_stack: usize,
    strict: bool,
}

/// Result of one step that may fail, with the reason.
type Step = Result<(), &'static str>;

impl RunState {
    /// Pushes an open submessage, bounding the stack by what its pops must
    /// emit and by `max_stack`.
    #[inline(always)]
    fn push(&mut self, stack: &mut Vec<StackEntry>, node: u32, min_pop_bytes: usize) -> Step {
        if (stack.len() + 1) * min_pop_bytes > self.pos {
            return Err("submessage stack overflow: more open submessages than output left");
        }
        if stack.len() >= self.max_stack {
            return Err("submessage stack overflow: more open submessages than max_decoded_size allows");
        }
        stack.push(StackEntry { end: self.size(), node });
        Ok(())
    }

    fn new(
        num_records: u64,
        capacity: usize,
        max_stack: usize,
        strict: bool,
        mut out: Vec<u8>,
        mut limits: Vec<usize>,
    ) -> Result<Self, CodecError> {
        out.clear();
        out.try_reserve_exact(capacity)
            .map_err(|_| CodecError::limit(WHAT_DATA, 0, "available memory", capacity as u64, 0))?;
        out.resize(capacity, 0);
        limits.clear();
        limits.reserve(usize::try_from(num_records.min(MAX_RESERVED_RECORDS)).unwrap_or(0));
        Ok(Self { num_records, out, pos: capacity, limits, max_stack, strict })
    }

    #[inline(always)]
    fn size(&self) -> usize {
        self.out.len() - self.pos
    }

    /// Writes `bytes` in front of the output.
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) -> Step {
        let start = self.pos.checked_sub(bytes.len()).ok_or("position limit exceeded")?;
        self.out.get_mut(start..self.pos).ok_or("position limit exceeded")?.copy_from_slice(bytes);
        self.pos = start;
        Ok(())
    }

    /// Writes the last `len` bytes of the little-endian `word` in front of the output.
    #[inline(always)]
    fn put_word(&mut self, word: u64, len: usize) -> Step {
        if self.pos >= 8 {
            let start = self.pos - 8;
            if let Some(dst) = self.out.get_mut(start..).and_then(|s| s.first_chunk_mut::<8>()) {
                *dst = word.to_le_bytes();
                self.pos -= len;
                return Ok(());
            }
        }
        self.put_word_slow(word, len)
    }

    /// Writes `data[end - len..end]` in front of the output. Short pieces
    /// are copied as 32 fixed bytes that end at the piece's end (the bytes
    /// before it in `data` land in the unwritten space).
    #[inline(always)]
    fn put_tail(&mut self, data: &[u8], end: usize, len: usize) -> Step {
        if len <= 32
            && self.pos >= 32
            && let Some(start) = end.checked_sub(32)
            && let Some(src) = data.get(start..).and_then(|s| s.first_chunk::<32>())
            && let Some(dst) = self.out.get_mut(self.pos - 32..).and_then(|s| s.first_chunk_mut::<32>())
        {
            *dst = *src;
            self.pos -= len;
            return Ok(());
        }
        self.put(data.get(end.wrapping_sub(len)..end).ok_or("buffer exhausted")?)
    }

    #[cold]
    fn put_word_slow(&mut self, word: u64, len: usize) -> Step {
        let bytes = word.to_le_bytes();
        self.put(bytes.get(8 - len.min(8)..).unwrap_or_default())
    }
}

/// Runs the state machine until the transitions run out, each step's output
/// going to `out` (§7): the one loop of every decode, whatever its output.
#[allow(clippy::too_many_arguments, reason = "the parts of the decoder, borrowed separately")]
fn run<const PROJECTION: bool, S: Source, O: Output>(
    out: &mut O,
    nodes: &mut [Node],
    cursors: &mut [Cursor],
    stack: &mut Vec<StackEntry>,
    parsed: &Parsed,
    transitions: &[u8],
    source: &mut S,
    tree: Option<&IncludeTree>,
) -> Result<(), CodecError> {
    let mut index = parsed.first_node as usize;
    let mut pending = 0u8;
    let mut t = 0usize;
    // Under projection, a bound on steps that no chunk written by an
    // encoder can reach (§10 has no implicit-no-op rule to lean on).
    let mut budget: u64 = if PROJECTION {
        (out.capacity() as u64)
            .saturating_add(out.num_records())
            .saturating_add(4 * transitions.len() as u64)
            .saturating_add(nodes.len() as u64)
            .saturating_add(1)
    } else {
        0
    };
    let nonproto_lengths = cursors.len().wrapping_sub(1);
    // Excluded submessages and groups entered (projection).
    let mut skipped_level = 0usize;
    'steps: loop {
        if PROJECTION {
            // Under projection most steps are no-ops (the nodes of excluded
            // fields): they only follow their transition, in a loop of their
            // own, without copying the node and without the dispatch below
            // (whose indirect jump they would mispredict).
            while let Some(noop) = nodes.get(index).filter(|node| node.op == Op::NoOp) {
                budget = budget.checked_sub(1).ok_or_else(|| bad_run(t, "state machine runs too long"))?;
                if noop.implicit {
                    // A chain of implicit no-ops, once selected, is stepped
                    // over whole next time: this node is made to point past
                    // its target if that is one too (no cycle: implicit
                    // loops were rejected).
                    let next = noop.next as usize;
                    if let Some(&target) = nodes.get(next)
                        && target.op == Op::NoOp
                        && target.implicit
                        && let Some(this) = nodes.get_mut(index)
                    {
                        this.next = target.next;
                    }
                    index = next;
                    continue;
                }
                match advance(noop, transitions, &mut t, &mut pending) {
                    Some(next) => index = next,
                    None => break 'steps,
                }
            }
        }
        let Some(&node) = nodes.get(index) else {
            return Err(bad_run(t, "invalid node index"));
        };
        let mut node = node;
        if PROJECTION {
            budget = budget.checked_sub(1).ok_or_else(|| bad_run(t, "state machine runs too long"))?;
            if node.op == Op::Select {
                node = select(nodes, index, stack, cursors, source, tree, skipped_level)?;
            }
        }
        if PROJECTION
            && !matches!(node.op, Op::NoOp | Op::SkippedEnd | Op::SkippedStart)
            && let Err(reason) = out.trace(index)
        {
            return Err(bad_run(t, reason));
        }
        let step = step::<PROJECTION, O>(
            out,
            &node,
            index,
            nodes,
            stack,
            cursors,
            source.bytes(),
            nonproto_lengths,
            &mut skipped_level,
        );
        if let Err(reason) = step {
            return Err(bad_run(t, reason));
        }
        match advance(&node, transitions, &mut t, &mut pending) {
            Some(next) => index = next,
            None => break,
        }
    }
    if skipped_level != 0 {
        return Err(bad_run(0, "skipped submessages still open"));
    }
    Ok(())
}

/// Takes one step of the state machine: what `node` (at `index`) does.
#[allow(clippy::too_many_arguments, reason = "the parts of the decoder, borrowed separately")]
#[inline(always)]
fn step<const PROJECTION: bool, O: Output>(
    out: &mut O,
    node: &Node,
    index: usize,
    nodes: &[Node],
    stack: &mut Vec<StackEntry>,
    cursors: &mut [Cursor],
    data: &[u8],
    nonproto_lengths: usize,
    skipped_level: &mut usize,
) -> Step {
    match node.op {
        Op::NoOp => Ok(()),
        Op::CopyTag => out.copy_tag(node),
        Op::Varint => out.varint(node, cursors, data),
        Op::Fixed32 => out.fixed::<4>(node, cursors, data),
        Op::Fixed64 => out.fixed::<8>(node, cursors, data),
        Op::String => out.string(node, cursors, data),
        Op::RecordStart => out.record_start(stack),
        Op::SubmessageEnd => out.submessage_end(stack, to_u32(index), node, if PROJECTION { 1 } else { 2 }),
        Op::SubmessageStart => out.submessage_start(nodes, stack),
        Op::NonProto => out.nonproto(node, cursors, nonproto_lengths, data, stack),
        Op::SkippedEnd => {
            *skipped_level += 1;
            Ok(())
        }
        Op::SkippedStart => match skipped_level.checked_sub(1) {
            Some(level) => {
                *skipped_level = level;
                Ok(())
            }
            None => Err("skipped submessage stack underflow"),
        },
        Op::Fixed32Existence => out.existence::<4>(node),
        Op::Fixed64Existence => out.existence::<8>(node),
        Op::EndGroup => out.end_group(stack, to_u32(index), node),
        Op::StartGroup => out.start_group(stack, node),
        Op::Select => Err("invalid node"),
    }
}

/// Takes the steps a [`Discover`] run traced, in order: that run's output
/// without stepping the state machine again. On failure, the failed step's
/// place in the trace and the reason.
fn replay<O: Output>(
    out: &mut O,
    nodes: &[Node],
    cursors: &mut [Cursor],
    stack: &mut Vec<StackEntry>,
    trace: &[u16],
    data: &[u8],
) -> Result<(), (usize, &'static str)> {
    let nonproto_lengths = cursors.len().wrapping_sub(1);
    let mut skipped_level = 0;
    for (k, &index) in trace.iter().enumerate() {
        let node = nodes.get(usize::from(index)).ok_or((k, "invalid node index"))?;
        step::<true, O>(
            out,
            node,
            usize::from(index),
            nodes,
            stack,
            cursors,
            data,
            nonproto_lengths,
            &mut skipped_level,
        )
        .map_err(|reason| (k, reason))?;
    }
    Ok(())
}

/// Decides what a node does under projection, the first time it runs (§10).
#[allow(clippy::too_many_arguments, reason = "the parts of the decoder, borrowed separately")]
fn select<S: Source>(
    nodes: &mut [Node],
    index: usize,
    stack: &[StackEntry],
    cursors: &mut [Cursor],
    source: &mut S,
    tree: Option<&IncludeTree>,
    skipped_level: usize,
) -> Result<Node, CodecError> {
    let mut node = *nodes.get(index).ok_or_else(|| bad_run(0, "invalid node index"))?;
    if node.kind == Kind::Special {
        // Start of submessage (id 2).
        node.op = if skipped_level > 0 { Op::SkippedStart } else { Op::SubmessageStart };
    } else {
        let mut included = None; // None: excluded.
        let mut field_id = ROOT_ID;
        if skipped_level == 0 {
            included = Some(IncludeType::ExistenceOnly);
            for entry in stack {
                let field = nodes.get(entry.node as usize).map_or(0, |n| n.field);
                match tree.and_then(|tree| tree.get(field_id, field)) {
                    None => {
                        included = None;
                        break;
                    }
                    Some((_, IncludeType::Fully)) => {
                        included = Some(IncludeType::Fully);
                        break;
                    }
                    Some((id, _)) => field_id = id,
                }
            }
        }
        if node.kind != Kind::StartGroup && included == Some(IncludeType::ExistenceOnly) {
            included = match tree.and_then(|tree| tree.get(field_id, node.field)) {
                None => None,
                Some((_, IncludeType::Fully | IncludeType::Child)) => Some(IncludeType::Fully),
                Some((_, IncludeType::ExistenceOnly)) => Some(IncludeType::ExistenceOnly),
            };
        }
        let tag_len = node.tag_len;
        node.op = match (included, node.kind) {
            (Some(IncludeType::ExistenceOnly), Kind::Varint | Kind::String) => {
                // The tag followed by a zero: the default value.
                let (word, _) = tag_word_from_node(&node);
                node.emit = word_push(word, 0);
                node.emit_len = tag_len + 1;
                Op::CopyTag
            }
            (Some(IncludeType::ExistenceOnly), Kind::Fixed32) => Op::Fixed32Existence,
            (Some(IncludeType::ExistenceOnly), Kind::Fixed64) => Op::Fixed64Existence,
            (Some(_), Kind::SubmessageEnd) => Op::SubmessageEnd,
            (Some(_), Kind::StartGroup) => Op::StartGroup,
            (Some(_), Kind::EndGroup) => Op::EndGroup,
            (Some(_), Kind::Varint) if node.vlen == 0 => Op::CopyTag,
            (Some(_), Kind::Varint) => Op::Varint,
            (Some(_), Kind::Fixed32) => Op::Fixed32,
            (Some(_), Kind::Fixed64) => Op::Fixed64,
            (Some(_), Kind::String) => Op::String,
            (None, Kind::SubmessageEnd | Kind::EndGroup) => Op::SkippedEnd,
            (None, Kind::StartGroup) => Op::SkippedStart,
            (None, _) | (_, Kind::Special) => Op::NoOp,
        };
        if matches!(node.op, Op::Varint | Op::Fixed32 | Op::Fixed64 | Op::String) {
            source.materialize(node.buffer, cursors)?;
        }
    }
    if let Some(slot) = nodes.get_mut(index) {
        *slot = node;
    }
    Ok(node)
}

impl Output for RunState {
    #[inline(always)]
    fn submessage_end(&mut self, stack: &mut Vec<StackEntry>, index: u32, _: &Node, min_pop_bytes: usize) -> Step {
        self.push(stack, index, min_pop_bytes)
    }

    #[inline(always)]
    fn capacity(&self) -> usize {
        self.out.len()
    }

    #[inline(always)]
    fn num_records(&self) -> u64 {
        self.num_records
    }

    #[inline(always)]
    fn record_start(&mut self, stack: &[StackEntry]) -> Step {
        if !stack.is_empty() {
            return Err("record start with submessages still open");
        }
        if self.limits.len() as u64 >= self.num_records {
            return Err("too many records");
        }
        self.limits.push(self.size());
        Ok(())
    }

    #[inline(always)]
    fn varint(&mut self, node: &Node, cursors: &mut [Cursor], data: &[u8]) -> Step {
        let n = usize::from(node.vlen);
        let cursor = cursors.get_mut(node.buffer as usize).ok_or("reading varint field failed")?;
        if cursor.end - cursor.pos < n {
            return Err("reading varint field failed");
        }
        let at = cursor.pos;
        cursor.pos += n;
        if n <= 8
            && let Some(src) = data.get(at..).and_then(|s| s.first_chunk::<8>())
        {
            let raw = u64::from_le_bytes(*src);
            let keep = if n == 8 { u64::MAX } else { (1u64 << (8 * n)) - 1 };
            let continuation = 0x8080_8080_8080_8080 & (keep >> 8);
            if self.strict && raw & keep & 0x8080_8080_8080_8080 != 0 {
                return Err("varint buffer byte with bit 7 set");
            }
            let value = (raw & keep) | continuation;
            self.put_word(value << (8 * (8 - n)), n)?;
        } else {
            let src = data.get(at..at + n).ok_or("reading varint field failed")?;
            let mut buf = [0u8; varint::MAX_VARINT64_LEN];
            let dst = buf.get_mut(..n).ok_or("reading varint field failed")?;
            dst.copy_from_slice(src);
            if self.strict && dst.iter().any(|b| b & 0x80 != 0) {
                return Err("varint buffer byte with bit 7 set");
            }
            if let Some((_, init)) = dst.split_last_mut() {
                for b in init {
                    *b |= 0x80;
                }
            }
            self.put(dst)?;
        }
        self.put_word(node.emit, usize::from(node.tag_len))
    }

    #[inline(always)]
    fn fixed<const N: usize>(&mut self, node: &Node, cursors: &mut [Cursor], data: &[u8]) -> Step {
        let cursor = cursors.get_mut(node.buffer as usize).ok_or("reading fixed field failed")?;
        if cursor.end - cursor.pos < N {
            return Err("reading fixed field failed");
        }
        let src = data.get(cursor.pos..).and_then(|s| s.first_chunk::<N>()).ok_or("reading fixed field failed")?;
        cursor.pos += N;
        let mut word = [0u8; 8];
        if let Some(dst) = word.get_mut(8 - N..) {
            dst.copy_from_slice(src);
        }
        self.put_word(u64::from_le_bytes(word), N)?;
        self.put_word(node.emit, usize::from(node.tag_len))
    }

    #[inline(always)]
    fn string(&mut self, node: &Node, cursors: &mut [Cursor], data: &[u8]) -> Step {
        let cursor = cursors.get_mut(node.buffer as usize).ok_or("reading string field failed")?;
        let available = data.get(cursor.pos..cursor.end).ok_or("reading string field failed")?;
        let (len, len_len) = varint::decode_u32(available).map_err(|_| "reading string length failed")?;
        if u64::from(len) + len_len as u64 > u64::from(u32::MAX) {
            return Err("string length overflow");
        }
        let total = len_len + len as usize;
        if total > available.len() {
            return Err("reading string field failed");
        }
        cursor.pos += total;
        self.put_tail(data, cursor.pos, total)?;
        self.put_word(node.emit, usize::from(node.tag_len))
    }

    #[inline(always)]
    fn nonproto(
        &mut self,
        node: &Node,
        cursors: &mut [Cursor],
        lengths: usize,
        data: &[u8],
        stack: &[StackEntry],
    ) -> Step {
        let lengths = cursors.get_mut(lengths).ok_or("reading non-proto record length failed")?;
        let available = data.get(lengths.pos..lengths.end).ok_or("reading non-proto record length failed")?;
        let (len, len_len) = varint::decode_u32(available).map_err(|_| "reading non-proto record length failed")?;
        lengths.pos += len_len;
        let cursor = cursors.get_mut(node.buffer as usize).ok_or("reading non-proto record failed")?;
        if len as usize > cursor.end - cursor.pos {
            return Err("reading non-proto record failed");
        }
        cursor.pos += len as usize;
        self.put_tail(data, cursor.pos, len as usize)?;
        self.record_start(stack)
    }

    #[inline(always)]
    fn submessage_start(&mut self, nodes: &[Node], stack: &mut Vec<StackEntry>) -> Step {
        let entry = stack.pop().ok_or("submessage stack underflow")?;
        let length = self.size() - entry.end;
        let length = u32::try_from(length).map_err(|_| "message too large")?;
        let owner = nodes.get(entry.node as usize).ok_or("invalid node index")?;
        let tag_len = usize::from(owner.tag_len);
        if length < 0x80 && tag_len < 8 && usize::from(owner.emit_len) == tag_len {
            // The common case: tag and a one-byte length in one word.
            let word = (owner.emit >> 8) | (u64::from(length) << 56);
            return self.put_word(word, tag_len + 1);
        }
        let (tag, tag_len) = owner.tag_bytes();
        let mut piece = [0u8; 16];
        let (head, tail) = piece.split_at_mut(tag_len.min(8));
        head.copy_from_slice(tag.get(..head.len()).unwrap_or_default());
        let mut len_buf = [0u8; varint::MAX_VARINT64_LEN];
        let len_len = varint::encode_u64_to_array(u64::from(length), &mut len_buf);
        let dst = tail.get_mut(..len_len).ok_or("message too large")?;
        dst.copy_from_slice(len_buf.get(..len_len).unwrap_or_default());
        self.put(piece.get(..tag_len + len_len).unwrap_or_default())
    }

    #[inline(always)]
    fn copy_tag(&mut self, node: &Node) -> Step {
        self.put_word(node.emit, usize::from(node.emit_len))
    }

    #[inline(always)]
    fn existence<const N: usize>(&mut self, node: &Node) -> Step {
        self.put(&[0; N]).and_then(|()| self.put_word(node.emit, usize::from(node.tag_len)))
    }

    #[inline(always)]
    fn end_group(&mut self, stack: &mut Vec<StackEntry>, index: u32, node: &Node) -> Step {
        self.push(stack, index, 1).and_then(|()| self.put_word(node.emit, usize::from(node.emit_len)))
    }

    #[inline(always)]
    fn start_group(&mut self, stack: &mut Vec<StackEntry>, node: &Node) -> Step {
        match stack.pop() {
            Some(_) => self.put_word(node.emit, usize::from(node.emit_len)),
            None => Err("submessage stack underflow"),
        }
    }
}

impl RunState {
    /// The end-of-run checks (§7 `finish`), and the records.
    fn finish(
        mut self,
        cursors: &[Cursor],
        projection: bool,
        home: &Arc<Recycler<Buffers>>,
    ) -> Result<DecodedRecords, CodecError> {
        if (self.limits.len() as u64) != self.num_records {
            return Err(bad_run(0, "too few records"));
        }
        let size = self.size();
        if self.limits.last().copied().unwrap_or(0) != size {
            return Err(bad_run(0, "unfinished message: data before the first record"));
        }
        if !projection && self.pos != 0 {
            return Err(bad_run(0, "decoded size smaller than declared"));
        }
        if self.strict && cursors.iter().any(|c| c.pos != c.end) {
            return Err(bad_run(0, "buffer left partly unread"));
        }
        // Emission order holds the decoded size at each record start, last
        // record first; turn it into end offsets in file order.
        let mut ends = std::mem::take(&mut self.limits);
        ends.reverse();
        let k = ends.len();
        for j in 0..k {
            let next = ends.get(j + 1).copied().unwrap_or(0);
            if let Some(slot) = ends.get_mut(j) {
                *slot = size - next;
            }
        }
        let pos = self.pos;
        let buffers = Homing::new(Buffers { values: self.out, ends }, home);
        DecodedRecords::decoded(buffers, None, pos).ok_or_else(|| bad_run(0, "inconsistent record limits"))
    }
}

/// The proto tag of `node` alone (without an inline value), right-aligned.
fn tag_word_from_node(node: &Node) -> (u64, u8) {
    let shift = 8 * u32::from(node.emit_len - node.tag_len);
    let word = if shift >= 64 { 0 } else { node.emit << shift };
    (word, node.tag_len)
}

/// Projected reads of zstd chunks.
#[cfg(all(test, feature = "zstd"))]
mod tests {
    use super::*;
    use crate::compression::CompressorOptions;
    use crate::transpose::encoder::TransposedChunkEncoder;

    fn zstd_chunk(records: &[Vec<u8>]) -> Vec<u8> {
        let options = CompressorOptions { compression_type: CompressionType::Zstd, level: 1, window_log: None };
        // One bucket for every buffer.
        let mut encoder = TransposedChunkEncoder::new(options, u64::MAX);
        for record in records {
            encoder.add_record(record).unwrap();
        }
        let mut data = Vec::new();
        encoder.encode(&mut data).unwrap();
        data
    }

    fn decode_projected(decoder: &mut TransposedChunkDecoder, data: &[u8], records: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let size: usize = records.iter().map(Vec::len).sum();
        let projection = FieldProjection::from_paths([&[1][..]]).unwrap();
        let limits = DecodeLimits::default();
        let decoded =
            decoder.decode(Bytes::copy_from_slice(data), records.len() as u64, size as u64, &limits, &projection);
        decoded.unwrap().iter().map(|r| r.to_vec()).collect()
    }

    /// Field 1 of a 2000-record chunk whose bucket of varints also holds
    /// field 4 (five bytes a record), beside a bucket of strings and one of
    /// fixed64s: the decoder decompresses field 1's bucket alone, and keeps
    /// field 1's buffer (two bytes a record) of it.
    #[test]
    fn projected_reads_keep_only_the_buffers_they_read() {
        let mut records = Vec::new();
        let mut expected = Vec::new();
        for i in 0..2000u32 {
            let value = 300 + i; // Two varint bytes, so buffered.
            let field1 = vec![0x08, (value & 0x7f) as u8 | 0x80, (value >> 7) as u8];
            let text: Vec<u8> = (0..60u32).map(|j| b'a' + ((i * 7 + j * 13) % 26) as u8).collect();
            let mut record = field1.clone();
            record.extend([0x12, 60]);
            record.extend(&text);
            record.push(0x19);
            record.extend(u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
            // Field 4: a varint of five bytes (its last one not zero).
            let big = (1u64 << 28) + u64::from(i) * 0x1234;
            record.push(0x20);
            record.extend((0..5).map(|k| ((big >> (7 * k)) & 0x7f) as u8 | if k < 4 { 0x80 } else { 0 }));
            records.push(record);
            expected.push(field1);
        }
        let data = zstd_chunk(&records);
        let mut decoder = TransposedChunkDecoder::new();
        assert!(decode_projected(&mut decoder, &data, &records) == expected, "field 1 alone");
        let buckets: Vec<u64> = decoder.buckets.iter().map(|b| b.size).collect();
        let decoded: u64 = buckets.iter().sum();
        assert!(decoded > 140_000, "{buckets:?}");
        assert_eq!(decoder.arena.len(), 2 * 2000, "field 1's buffer alone is kept: {buckets:?}");
        let scratch = decoder.scratch.len() as u64;
        assert!(buckets.contains(&scratch) && scratch > 14_000 && 4 * scratch < decoded, "{scratch}: {buckets:?}");
    }

    /// A chunk the finding run rejects is decoded in one run, buckets
    /// decompressed as first needed: from the nodes as parsed, whatever the
    /// finding run selected before it failed.
    #[test]
    fn projected_reads_the_finding_run_rejects_run_once_from_the_parsed_nodes() {
        // Field 1, and field 2: a submessage with fields 1 and 3.
        let records: Vec<Vec<u8>> = (0..300u32)
            .map(|i| {
                let inner = [0x08, (i % 120) as u8, 0x18, 0x96, 0x01 + (i % 3) as u8];
                let mut record = vec![0x08, 0x80 | (i % 128) as u8, 0x01, 0x12, inner.len() as u8];
                record.extend(inner);
                record
            })
            .collect();
        let data = zstd_chunk(&records);
        let size: usize = records.iter().map(Vec::len).sum();
        let projection = FieldProjection::from_paths([&[2, 3][..], &[1]]).unwrap();
        let decode = |decoder: &mut TransposedChunkDecoder| {
            let limits = DecodeLimits::default();
            let decoded = decoder.decode(Bytes::copy_from_slice(&data), 300, size as u64, &limits, &projection);
            decoded.unwrap().iter().map(|r| r.to_vec()).collect::<Vec<_>>()
        };
        let expected = decode(&mut TransposedChunkDecoder::new());
        assert_eq!(expected[7], [0x08, 0x87, 0x01, 0x12, 3, 0x18, 0x96, 0x02]);
        for at in [0, 1, 4, 40, 900] {
            let mut decoder = TransposedChunkDecoder { discovery_fails_at: Some(at), ..TransposedChunkDecoder::new() };
            assert_eq!(decode(&mut decoder), expected, "failing at step {at}");
        }
    }

    /// More steps than the trace holds: the output's run steps the machine
    /// again, and gives the same records.
    #[test]
    fn projected_reads_past_the_trace_step_the_machine_again() {
        let records: Vec<Vec<u8>> = (0..100_000u32).map(|i| vec![0x08, (i % 100) as u8, 0x10, 5]).collect();
        let expected: Vec<Vec<u8>> = records.iter().map(|r| r[..2].to_vec()).collect();
        let data = zstd_chunk(&records);
        assert!(data.len() < MIN_TRACE, "{} bytes", data.len());
        let mut decoder = TransposedChunkDecoder::new();
        assert!(decode_projected(&mut decoder, &data, &records) == expected, "field 1 alone");
        assert_eq!(decoder.trace.len(), MIN_TRACE, "the trace is full");
    }
}
