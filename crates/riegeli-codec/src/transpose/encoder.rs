//! Encoding records as a transposed chunk, making the C++ encoder's every
//! choice (spec §12), so that uncompressed chunk data is byte-identical.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::fxhash::FxHasher;
use super::proto::{self, WT_END_GROUP, WT_FIXED32, WT_FIXED64, WT_LENGTH_DELIMITED, WT_START_GROUP, WT_VARINT};
use super::state_machine::{Builder, INVALID, State, TagStates};
use crate::compression::{CompressionType, Compressor, CompressorOptions};
use crate::error::CodecError;
use crate::varint;

/// Parent id of the special node key of non-proto records.
const NON_PROTO: u32 = 1;
/// Node id written for the start of a submessage.
const START_OF_SUBMESSAGE: u32 = 2;
/// Parent id of the special node key of record starts.
const START_OF_MESSAGE: u32 = 3;
/// Parent id of top-level fields.
const ROOT: u32 = 4;
/// The first id given to a node key.
const FIRST_MESSAGE_ID: u32 = 5;
/// Length-delimited fields nested at least this deep are stored as strings.
const MAX_RECURSION_DEPTH: usize = 100;
/// Varint values up to this are stored inline in the subtype.
const MAX_VARINT_INLINE: u8 = 3;
/// The first inline varint subtype.
const FIRST_INLINE_SUBTYPE: u8 = 10;
/// Subtypes of length-delimited fields.
const SUBTYPE_START: u8 = 1;
const SUBTYPE_END: u8 = 2;
/// Subtypes in use: varint lengths 1..10 and inline values 0..3.
const NUM_SUBTYPES: usize = 14;
/// The most records a chunk header can count.
const MAX_NUM_RECORDS: u64 = (1 << 56) - 1;

/// Buffer types, in the order their buffers are written (§12.3).
const VARINT: usize = 0;
const FIXED32: usize = 1;
const FIXED64: usize = 2;
const STRING: usize = 3;
const NON_PROTO_DATA: usize = 4;
const NUM_BUFFER_TYPES: usize = 5;

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A node key `(parent id, tag)`; its id is `FIRST_MESSAGE_ID` + its index.
#[derive(Debug, Clone)]
struct KeyNode {
    parent: u32,
    tag: u32,
    /// Index in the encoded-tag list for each subtype, or [`INVALID`].
    tag_pos: [u32; NUM_SUBTYPES],
    /// Index in `buffers`, or [`INVALID`].
    buffer: u32,
}

/// A distinct `(node key, subtype)` pair.
#[derive(Debug, Clone, Copy)]
struct EncodedTag {
    node: u32,
    subtype: u8,
}

/// Bytes written back to front, as C++'s backward writer does: the content
/// is `buf[start..]`, each [`prepend`](Self::prepend) goes before what is
/// there. The buffer grows (doubling, copying its content to the new end)
/// only when the room in front runs out, and keeps its size from chunk to
/// chunk, so the content is in chunk order without a pass reversing it.
#[derive(Debug, Default)]
struct Backward {
    /// Initialized throughout; the content is at the end.
    buf: Vec<u8>,
    start: usize,
}

impl Backward {
    fn as_slice(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.buf.len() - self.start
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn clear(&mut self) {
        self.start = self.buf.len();
    }

    fn prepend(&mut self, bytes: &[u8]) {
        if bytes.len() > self.start {
            self.grow(bytes.len());
        }
        let at = self.start - bytes.len();
        if let Some(room) = self.buf.get_mut(at..self.start) {
            room.copy_from_slice(bytes);
            self.start = at;
        }
    }

    #[cold]
    fn grow(&mut self, more: usize) {
        let len = self.len();
        let size = self.buf.len().saturating_mul(2).max(len.saturating_add(more)).max(256);
        let mut grown = vec![0u8; size];
        if let Some(end) = grown.get_mut(size - len..) {
            end.copy_from_slice(self.as_slice());
        }
        self.buf = grown;
        self.start = size - len;
    }
}

/// The data of one field path, prepended.
#[derive(Debug)]
struct Buffer {
    data: Backward,
    node: u32,
    kind: usize,
    /// Buffer number in the chunk, once assigned.
    index: u32,
}

/// An open submessage while walking a record.
#[derive(Debug, Clone, Copy)]
struct Frame {
    end_tag: u32,
    parent: u32,
    parent_limit: usize,
}

fn to_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(INVALID)
}

/// Encodes records as a transposed chunk (spec §12).
///
/// The encoder is deterministic and makes the same choices as the C++
/// `TransposeEncoder`: for the same records and bucket size, uncompressed
/// chunk data is byte-identical, and compressed chunk data has identical
/// decompressed parts.
///
/// ```
/// use riegeli_codec::{CompressionType, CompressorOptions, TransposedChunkEncoder};
///
/// let options = CompressorOptions { compression_type: CompressionType::None, level: 0, window_log: None };
/// let mut encoder = TransposedChunkEncoder::new(options, u64::MAX);
/// encoder.add_record(&[])?;
/// let mut data = Vec::new();
/// encoder.encode(&mut data)?;
/// // A chunk with one empty record (spec §12.6).
/// assert_eq!(data, [0x00, 0x06, 0x00, 0x00, 0x01, 0x03, 0x00, 0x00]);
/// # Ok::<(), riegeli_codec::CodecError>(())
/// ```
#[derive(Debug)]
pub struct TransposedChunkEncoder {
    compressor: Compressor,
    compression_type: CompressionType,
    bucket_size: u64,
    num_records: u64,
    decoded_data_size: u64,
    node_map: FxMap<u64, u32>,
    nodes: Vec<KeyNode>,
    etags: Vec<EncodedTag>,
    encoded: Vec<u32>,
    buffers: Vec<Buffer>,
    pool: Vec<Backward>,
    nonproto_lengths: Backward,
    /// Where data goes that belongs to no buffer (never, but for a node index out of range).
    lost: Backward,
    message_stack: Vec<Frame>,
    group_stack: Vec<u32>,
    groups_scratch: Vec<u32>,
    states: Vec<TagStates>,
    builder: Builder,
    sm: Vec<State>,
    header: Vec<u8>,
    data: Vec<u8>,
    bucket: Vec<u8>,
    scratch: Vec<u8>,
}

impl TransposedChunkEncoder {
    /// An encoder compressing with `options`, grouping buffers into buckets
    /// of about `bucket_size` uncompressed bytes (§12.3).
    ///
    /// As in C++, the bucket size only applies to compressed chunks: without
    /// compression each buffer type gets one bucket. The C++ `RecordWriter`
    /// passes `round(chunk_size × bucket_fraction)` (at least 1), ArrayRecord
    /// its `transpose_bucket_size` (default 256); use `u64::MAX` for unlimited.
    pub fn new(options: CompressorOptions, bucket_size: u64) -> Self {
        let bucket_size = if options.compression_type == CompressionType::None { u64::MAX } else { bucket_size };
        Self {
            compressor: Compressor::new(options),
            compression_type: options.compression_type,
            bucket_size,
            num_records: 0,
            decoded_data_size: 0,
            node_map: FxMap::default(),
            nodes: Vec::new(),
            etags: Vec::new(),
            encoded: Vec::new(),
            buffers: Vec::new(),
            pool: Vec::new(),
            nonproto_lengths: Backward::default(),
            lost: Backward::default(),
            message_stack: Vec::new(),
            group_stack: Vec::new(),
            groups_scratch: Vec::new(),
            states: Vec::new(),
            builder: Builder::default(),
            sm: Vec::new(),
            header: Vec::new(),
            data: Vec::new(),
            bucket: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The number of records added since the last [`encode`](Self::encode).
    pub fn num_records(&self) -> u64 {
        self.num_records
    }

    /// The total size of the records added since the last [`encode`](Self::encode).
    pub fn decoded_data_size(&self) -> u64 {
        self.decoded_data_size
    }

    /// Adds a record. Records that are not protobuf messages in canonical
    /// encoding are stored whole (§12.1).
    ///
    /// Errors if the chunk would hold more than 2^56 − 1 records.
    pub fn add_record(&mut self, record: &[u8]) -> Result<(), CodecError> {
        if self.num_records >= MAX_NUM_RECORDS {
            return Err(CodecError::limit(
                "transposed chunk encoder",
                0,
                "records per chunk",
                self.num_records + 1,
                MAX_NUM_RECORDS,
            ));
        }
        let size = record.len() as u64;
        let total = self
            .decoded_data_size
            .checked_add(size)
            .ok_or_else(|| CodecError::limit("transposed chunk encoder", 0, "decoded data size", u64::MAX, u64::MAX))?;
        self.num_records += 1;
        self.decoded_data_size = total;
        if proto::is_proto_message(record, &mut self.groups_scratch) {
            let node = self.node(START_OF_MESSAGE, 0);
            let pos = self.tag_pos(node, 0);
            self.encoded.push(pos);
            self.add_message(record);
        } else {
            let node = self.node(NON_PROTO, 0);
            let pos = self.tag_pos(node, 0);
            self.encoded.push(pos);
            self.buffer(node, NON_PROTO_DATA).prepend(record);
            let mut len = [0u8; varint::MAX_VARINT64_LEN];
            let n = varint::encode_u64_to_array(size, &mut len);
            self.nonproto_lengths.prepend(len.get(..n).unwrap_or_default());
        }
        Ok(())
    }

    /// The index of the node key `(parent, tag)`, added if new.
    #[inline]
    fn node(&mut self, parent: u32, tag: u32) -> u32 {
        let key = (u64::from(parent) << 32) | u64::from(tag);
        let next = to_u32(self.nodes.len());
        let index = *self.node_map.entry(key).or_insert(next);
        if index == next {
            self.nodes.push(KeyNode { parent, tag, tag_pos: [INVALID; NUM_SUBTYPES], buffer: INVALID });
        }
        index
    }

    /// The index of `(node, subtype)` in the encoded-tag list, added if new.
    #[inline]
    fn tag_pos(&mut self, node: u32, subtype: u8) -> u32 {
        let next = to_u32(self.etags.len());
        let Some(slot) = self.nodes.get_mut(node as usize).and_then(|n| n.tag_pos.get_mut(usize::from(subtype))) else {
            return INVALID;
        };
        if *slot == INVALID {
            *slot = next;
            self.etags.push(EncodedTag { node, subtype });
        }
        *slot
    }

    /// The (reversed) buffer of `node`, created with type `kind` if new.
    #[inline]
    fn buffer(&mut self, node: u32, kind: usize) -> &mut Backward {
        let index = self.buffer_index(node, kind);
        match self.buffers.get_mut(index as usize) {
            Some(buffer) => &mut buffer.data,
            None => &mut self.lost,
        }
    }

    /// The index in `buffers` of the buffer of `node`, added if new.
    fn buffer_index(&mut self, node: u32, kind: usize) -> u32 {
        let next = to_u32(self.buffers.len());
        match self.nodes.get_mut(node as usize) {
            Some(n) if n.buffer != INVALID => n.buffer,
            Some(n) => {
                n.buffer = next;
                let data = self.pool.pop().unwrap_or_default();
                self.buffers.push(Buffer { data, node, kind, index: INVALID });
                next
            }
            None => INVALID,
        }
    }

    /// Walks a record that passed [`proto::is_proto_message`] (§12.2).
    fn add_message(&mut self, record: &[u8]) {
        let mut parent = ROOT;
        let mut pos = 0usize;
        let mut limit = record.len();
        self.message_stack.clear();
        self.group_stack.clear();
        loop {
            while pos < limit {
                let rest = record.get(pos..limit).unwrap_or_default();
                let Some((tag, tag_len)) = proto::read_canonical_u32(rest) else { return };
                pos += tag_len;
                let node = self.node(parent, tag);
                match tag & 7 {
                    WT_VARINT => {
                        let value = record.get(pos..limit).unwrap_or_default();
                        let len = proto::canonical_u64_len(value).unwrap_or(1);
                        let first = value.first().copied().unwrap_or(0);
                        if first <= MAX_VARINT_INLINE {
                            let p = self.tag_pos(node, FIRST_INLINE_SUBTYPE + first);
                            self.encoded.push(p);
                        } else {
                            let p = self.tag_pos(node, u8::try_from(len - 1).unwrap_or(0));
                            self.encoded.push(p);
                            let mut digits = [0u8; varint::MAX_VARINT64_LEN];
                            for (digit, &byte) in digits.iter_mut().zip(value.iter().take(len)) {
                                *digit = byte & 0x7f;
                            }
                            self.buffer(node, VARINT).prepend(digits.get(..len).unwrap_or_default());
                        }
                        pos += len;
                    }
                    WT_FIXED32 | WT_FIXED64 => {
                        let (n, kind) = if tag & 7 == WT_FIXED32 { (4, FIXED32) } else { (8, FIXED64) };
                        let p = self.tag_pos(node, 0);
                        self.encoded.push(p);
                        let value = record.get(pos..pos + n).unwrap_or_default();
                        self.buffer(node, kind).prepend(value);
                        pos += n;
                    }
                    WT_LENGTH_DELIMITED => {
                        let rest = record.get(pos..limit).unwrap_or_default();
                        let (len, len_len) = proto::read_canonical_u32(rest).unwrap_or((0, 1));
                        let value_pos = pos + len_len;
                        let end = value_pos + len as usize;
                        let payload = record.get(value_pos..end).unwrap_or_default();
                        if len > 0
                            && self.message_stack.len() + self.group_stack.len() < MAX_RECURSION_DEPTH
                            && proto::is_proto_message(payload, &mut self.groups_scratch)
                        {
                            let p = self.tag_pos(node, SUBTYPE_START);
                            self.encoded.push(p);
                            let end_tag = self.tag_pos(node, SUBTYPE_END);
                            self.message_stack.push(Frame { end_tag, parent, parent_limit: limit });
                            parent = FIRST_MESSAGE_ID + node;
                            pos = value_pos;
                            limit = end;
                            continue;
                        }
                        let p = self.tag_pos(node, 0);
                        self.encoded.push(p);
                        let field = record.get(pos..end).unwrap_or_default();
                        self.buffer(node, STRING).prepend(field);
                        pos = end;
                    }
                    WT_START_GROUP => {
                        let p = self.tag_pos(node, 0);
                        self.encoded.push(p);
                        self.group_stack.push(parent);
                        parent = FIRST_MESSAGE_ID + node;
                    }
                    WT_END_GROUP => {
                        parent = self.group_stack.pop().unwrap_or(ROOT);
                        let p = self.tag_pos(node, 0);
                        self.encoded.push(p);
                    }
                    _ => return,
                }
            }
            let Some(frame) = self.message_stack.pop() else { return };
            self.encoded.push(frame.end_tag);
            parent = frame.parent;
            limit = frame.parent_limit;
        }
    }

    /// Appends the chunk data of the records added so far to `out` and
    /// resets the encoder for the next chunk (keeping its allocations).
    ///
    /// The chunk header of the result has type `'t'`, and
    /// [`num_records`](Self::num_records) and
    /// [`decoded_data_size`](Self::decoded_data_size) as read before this call.
    pub fn encode(&mut self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let result = self.encode_inner(out);
        self.reset();
        result
    }

    fn encode_inner(&mut self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.push(self.compression_type.to_byte());
        // The state machine (§12.4).
        self.states.clear();
        self.states.resize_with(self.etags.len(), TagStates::new);
        self.builder.clear();
        self.builder.build(&mut self.states, &self.encoded, &mut self.sm);
        if let Some(&last_executed) = self.encoded.first()
            && let Some(tag) = self.states.get_mut(last_executed as usize)
            && tag.dests.len() == 1
        {
            tag.dummy = true;
        }
        self.header.clear();
        self.data.clear();
        self.write_buffers()?;
        self.write_states();
        // Transitions (§12.5).
        self.scratch.clear();
        self.builder.write_transitions(&mut self.states, &self.encoded, &self.sm, &mut self.scratch);
        self.compressor.compress(&self.scratch, &mut self.data)?;
        // Assembly (§12.6).
        self.scratch.clear();
        self.compressor.compress(&self.header, &mut self.scratch)?;
        varint::encode_u64(self.scratch.len() as u64, out);
        out.extend_from_slice(&self.scratch);
        out.extend_from_slice(&self.data);
        Ok(())
    }

    /// Writes the buckets to `data` and their sizes to `header` (§12.3).
    fn write_buffers(&mut self) -> Result<(), CodecError> {
        let mut by_type: [Vec<u32>; NUM_BUFFER_TYPES] = Default::default();
        for (i, buffer) in self.buffers.iter().enumerate() {
            if let Some(list) = by_type.get_mut(buffer.kind) {
                list.push(to_u32(i));
            }
        }
        let buffers = &mut self.buffers;
        let nodes = &self.nodes;
        let sort_key = |buffers: &[Buffer], i: u32| {
            let b = buffers.get(i as usize);
            let node = b.and_then(|b| nodes.get(b.node as usize));
            (b.map_or(0, |b| b.data.len()), node.map_or(0, |n| n.parent), node.map_or(0, |n| n.tag))
        };
        for list in &mut by_type {
            list.sort_by_key(|&i| sort_key(buffers, i));
        }

        let mut compressed_sizes: Vec<u64> = Vec::new();
        let mut buffer_sizes: Vec<u64> = Vec::new();
        self.bucket.clear();
        let mut next_index = 0u32;
        for list in &by_type {
            let len_of = |i: u32| buffers.get(i as usize).map_or(0, |b| b.data.len() as u64);
            // Bucket sizes, from the largest buffer down.
            let mut remaining: u64 = list.iter().map(|&i| len_of(i)).sum();
            let mut sizes = Vec::new();
            let mut current: u64 = 0;
            for &i in list.iter().rev() {
                let len = len_of(i);
                if current > 0 && current.saturating_add(len / 2) >= self.bucket_size {
                    sizes.push(current);
                    current = 0;
                }
                current += len;
                remaining -= len;
                if remaining <= self.bucket_size / 2 {
                    current += remaining;
                    break;
                }
            }
            if current > 0 {
                sizes.push(current);
            }
            // Fill them from the smallest buffer up.
            let mut current: u64 = 0;
            for &i in list {
                let Some(buffer) = buffers.get_mut(i as usize) else { continue };
                let len = buffer.data.len() as u64;
                if current == 0 {
                    current = sizes.pop().unwrap_or(0);
                    flush_bucket(&mut self.compressor, &mut self.bucket, &mut self.data, &mut compressed_sizes)?;
                    if current == len && len > 0 {
                        // A bucket of this buffer alone: compressed from where it is.
                        let before = self.data.len();
                        self.compressor.compress(buffer.data.as_slice(), &mut self.data)?;
                        compressed_sizes.push((self.data.len() - before) as u64);
                        current = 0;
                        buffer_sizes.push(len);
                        buffer.index = next_index;
                        next_index += 1;
                        continue;
                    }
                }
                current = current.saturating_sub(len);
                self.bucket.extend_from_slice(buffer.data.as_slice());
                buffer_sizes.push(len);
                buffer.index = next_index;
                next_index += 1;
            }
        }
        if !self.nonproto_lengths.is_empty() {
            flush_bucket(&mut self.compressor, &mut self.bucket, &mut self.data, &mut compressed_sizes)?;
            self.bucket.extend_from_slice(self.nonproto_lengths.as_slice());
            buffer_sizes.push(self.nonproto_lengths.len() as u64);
        }
        flush_bucket(&mut self.compressor, &mut self.bucket, &mut self.data, &mut compressed_sizes)?;

        varint::encode_u64(compressed_sizes.len() as u64, &mut self.header);
        varint::encode_u64(buffer_sizes.len() as u64, &mut self.header);
        for &size in compressed_sizes.iter().chain(&buffer_sizes) {
            varint::encode_u64(size, &mut self.header);
        }
        Ok(())
    }

    /// Writes the node table and `first_node` to `header` (§4, §12.4 step 7).
    fn write_states(&mut self) {
        let num_states = to_u32(self.sm.len());
        varint::encode_u64(u64::from(num_states), &mut self.header);
        let mut bases = Vec::with_capacity(self.sm.len());
        let mut subtypes = Vec::new();
        let mut buffer_indices = Vec::new();
        for state in &self.sm {
            if state.etag == INVALID {
                varint::encode_u64(0, &mut self.header);
                bases.push(state.base);
                continue;
            }
            let etag = self.etags.get(state.etag as usize).copied().unwrap_or(EncodedTag { node: 0, subtype: 0 });
            let node = self.nodes.get(etag.node as usize);
            let (parent, tag) = node.map_or((0, 0), |n| (n.parent, n.tag));
            let buffer_index = node.and_then(|n| self.buffers.get(n.buffer as usize)).map_or(INVALID, |b| b.index);
            if tag != 0 {
                let wire_type = tag & 7;
                let id = match (wire_type, etag.subtype) {
                    (WT_LENGTH_DELIMITED, SUBTYPE_START) => START_OF_SUBMESSAGE,
                    (WT_LENGTH_DELIMITED, SUBTYPE_END) => tag + 4,
                    _ => tag,
                };
                varint::encode_u64(u64::from(id), &mut self.header);
                if id == tag {
                    if wire_type == WT_VARINT {
                        subtypes.push(etag.subtype);
                    }
                    let has_buffer = match wire_type {
                        WT_VARINT => etag.subtype < FIRST_INLINE_SUBTYPE,
                        WT_FIXED32 | WT_FIXED64 => true,
                        WT_LENGTH_DELIMITED => etag.subtype == 0,
                        _ => false,
                    };
                    if has_buffer {
                        buffer_indices.push(buffer_index);
                    }
                }
            } else {
                varint::encode_u64(u64::from(parent), &mut self.header);
                if parent == NON_PROTO {
                    buffer_indices.push(buffer_index);
                }
            }
            let tag_states = self.states.get(state.etag as usize);
            bases.push(match tag_states {
                Some(t) if t.base != INVALID => t.base + if t.num_dests() == 1 { num_states } else { 0 },
                _ => 0,
            });
        }
        for &base in &bases {
            varint::encode_u64(u64::from(base), &mut self.header);
        }
        self.header.extend_from_slice(&subtypes);
        for &index in &buffer_indices {
            varint::encode_u64(u64::from(index), &mut self.header);
        }
        let first_node = match self.encoded.last() {
            Some(&first) => self.sm.iter().position(|s| s.etag == first).unwrap_or(0),
            None => 0,
        };
        varint::encode_u64(first_node as u64, &mut self.header);
    }

    /// Forgets the records, keeping allocations.
    fn reset(&mut self) {
        self.num_records = 0;
        self.decoded_data_size = 0;
        self.node_map.clear();
        self.nodes.clear();
        self.etags.clear();
        self.encoded.clear();
        for mut buffer in self.buffers.drain(..) {
            buffer.data.clear();
            self.pool.push(buffer.data);
        }
        self.nonproto_lengths.clear();
        self.states.clear();
        self.sm.clear();
    }

    /// Appends the data of a file metadata chunk (`'m'`, spec §11) holding
    /// the serialized `RecordsMetadata` `record` to `out`. Its chunk header
    /// has type `'m'`, 0 records and `decoded_data_size` = `record.len()`.
    pub fn encode_metadata(record: &[u8], options: CompressorOptions, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let mut encoder = Self::new(options, u64::MAX);
        encoder.add_record(record)?;
        encoder.encode(out)
    }
}

/// Compresses the bucket being filled (if any) into `data`.
fn flush_bucket(
    compressor: &mut Compressor,
    bucket: &mut Vec<u8>,
    data: &mut Vec<u8>,
    sizes: &mut Vec<u64>,
) -> Result<(), CodecError> {
    if bucket.is_empty() {
        return Ok(());
    }
    let before = data.len();
    compressor.compress(bucket, data)?;
    sizes.push((data.len() - before) as u64);
    bucket.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Backward;

    #[test]
    fn backward_buffers_hold_what_was_prepended_in_order_across_growth_and_reuse() {
        let mut buffer = Backward::default();
        let mut expected: Vec<u8> = Vec::new();
        for i in 0..2000u32 {
            let piece: Vec<u8> = (0..i % 37).map(|j| (i + j) as u8).collect();
            buffer.prepend(&piece);
            expected.splice(0..0, piece);
            assert_eq!(buffer.len(), expected.len());
        }
        assert_eq!(buffer.as_slice(), &expected[..]);
        let size = buffer.buf.len();
        buffer.clear();
        assert!(buffer.is_empty());
        buffer.prepend(b"world");
        buffer.prepend(b"hello ");
        assert_eq!(buffer.as_slice(), b"hello world");
        // Cleared, the buffer keeps its room: no growth for a chunk like the last.
        assert_eq!(buffer.buf.len(), size);
        // A piece larger than the room left and than double the buffer.
        let big = vec![7u8; 3 * size];
        buffer.prepend(&big);
        assert_eq!(&buffer.as_slice()[..big.len()], &big[..]);
        assert_eq!(&buffer.as_slice()[big.len()..], b"hello world");
    }
}
