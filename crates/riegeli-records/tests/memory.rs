//! Memory under hostile input: counting `malloc` (Rust's allocations and C's) measures the peak
//! allocation while every reader reads files whose sizes and counts claim up
//! to 2^62, with valid hashes (an attacker computes them): chunk headers
//! (`data_size`, `num_records`, `decoded_data_size`), the compressed-size
//! prefixes and record sizes of simple chunks, the header of transposed
//! chunks (its size, bucket sizes, buffer lengths, counts of buckets,
//! buffers and nodes), metadata chunks, ArrayRecord footers and postscripts,
//! and decompression bombs.
//!
//! Each file is read by a [`RecordReader`] (metadata first, then records)
//! without recovery, with recovery, and with recovery and a read-ahead
//! thread, and opened (then read whole, serially and in parallel) by an
//! [`ArrayRecordReader`]. Each read must end without a panic, under
//! [`BOUND`] bytes of peak allocation, return no record that is not in the
//! file, and report the damage (as corruption; bombs and claims above the
//! limits with the error that names them).
//!
//! Two sets of limits ([`ChunkReadOptions`]). The defaults (1 GiB of chunk
//! data, 2 GiB decoded, 2^28 records) for claims above them, up to 2^62, and
//! for claims nothing should be allocated for (a chunk longer than the file,
//! record counts, footers). A claim within a limit may be allocated for
//! before the data shows it false (a decompressed size, a transposed chunk's
//! decoded size), as `ChunkReadOptions` documents: so claims at the limits
//! are read with limits of 8 MiB ([`TIGHT`]), where the readers may allocate
//! what the limits allow but no large multiple of it.
//!
//! A binary of its own with a single `#[test]`: the counting is process-wide.
//! `RIEGELI_MEMORY_VERBOSE=1` reports every read.
#![allow(unsafe_code, reason = "the counting `malloc`")]

use std::io::{self, Cursor, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use riegeli_codec::{
    CompressionType, Compressor, CompressorOptions, Decompressor, SimpleChunkEncoder, TransposedChunkEncoder, varint,
};
use riegeli_framing::{ChunkHeader, distance_without_overhead, frame_chunk, parse_chunk};
use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter, ChunkReadOptions, Error, RecordReader,
    RecordReaderOptions, RecordWriter, Selection, find_array_record_trailer,
};

/// The most any read of a hostile file may allocate at its peak.
const BOUND: usize = 64 << 20;
/// The limits of the "tight" reads: an eighth of the bound. A reader may
/// hold a chunk at the limit twice (as read, and gathered from between block
/// headers) and decode it, and its source keeps up to 32 MiB of buffers for
/// reuse (among them those it outgrew while reading a large chunk).
const TIGHT: u64 = 8 << 20;
/// A claim far beyond anything.
const HUGE: u64 = 1 << 62;

#[path = "counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::measure;

/// A line of the test's report, on stderr.
macro_rules! note {
    ($($arg:tt)*) => {{
        let _ = writeln!(io::stderr(), $($arg)*);
    }};
}

// ---------------------------------------------------------------------------
// Building files by hand, hashes included.

/// The records of the good chunks around the hostile ones.
fn good(i: usize) -> Vec<u8> {
    format!("good record {i}").into_bytes()
}

fn put_varint(value: u64, out: &mut Vec<u8>) {
    varint::encode_u64(value, out);
}

fn varint_bytes(value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(value, &mut out);
    out
}

/// A file being built chunk by chunk, from its signature on.
struct File(Vec<u8>);

impl File {
    fn new() -> Self {
        let mut file = Self(Vec::new());
        file.chunk(b's', b"", 0, 0);
        file
    }

    fn pos(&self) -> u64 {
        self.0.len() as u64
    }

    /// A chunk with a valid header and data hash, framed with block headers.
    fn chunk(&mut self, chunk_type: u8, data: &[u8], num_records: u64, decoded_data_size: u64) -> &mut Self {
        let header = ChunkHeader::for_data(chunk_type, data, num_records, decoded_data_size).expect("header");
        frame_chunk(self.pos(), &header, data, &mut self.0).expect("frame");
        self
    }

    /// A simple uncompressed chunk of the good records `range`.
    fn good(&mut self, range: std::ops::Range<usize>) -> &mut Self {
        let records: Vec<Vec<u8>> = range.map(good).collect();
        let (data, n, size) = simple_chunk(&records, CompressorOptions::uncompressed());
        self.chunk(b'r', &data, n, size)
    }

    /// A chunk header claiming what it likes (with a valid header hash, and a
    /// data hash of `data`), then `data`, without framing: the file must
    /// stay within its first block.
    fn header(&mut self, chunk_type: u8, data_size: u64, num_records: u64, decoded: u64, data: &[u8]) -> &mut Self {
        let data_hash = ChunkHeader::for_data(chunk_type, data, 0, 0).expect("header").data_hash();
        let header = ChunkHeader::new(chunk_type, data_size, data_hash, num_records, decoded).expect("header");
        self.0.extend_from_slice(&header.encode());
        self.0.extend_from_slice(data);
        assert!(self.0.len() < 65536, "an unframed header must stay in the first block");
        self
    }

    /// A padding chunk ending at `target`.
    fn pad_to(&mut self, target: u64) -> &mut Self {
        if self.pos() < target {
            let len = distance_without_overhead(self.pos(), target).expect("distance") - 40;
            self.chunk(b'p', &vec![0; len as usize], 0, 0);
        }
        assert_eq!(self.pos(), target);
        self
    }

    fn done(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

/// The data of a simple chunk of `records`, its record count and decoded size.
fn simple_chunk(records: &[Vec<u8>], options: CompressorOptions) -> (Vec<u8>, u64, u64) {
    let mut encoder = SimpleChunkEncoder::new(options);
    for record in records {
        encoder.add_record(record);
    }
    let (n, size) = (encoder.num_records(), encoder.decoded_data_size());
    let mut data = Vec::new();
    encoder.encode(&mut data).expect("encode");
    (data, n, size)
}

/// One compressed block of `data` (a varint decompressed size and the
/// stream; `data` itself without compression).
fn compressed_block(compression: CompressionType, data: &[u8]) -> Vec<u8> {
    let options = match compression {
        CompressionType::None => CompressorOptions::uncompressed(),
        CompressionType::Brotli => CompressorOptions::brotli().with_level(1),
        CompressionType::Zstd => CompressorOptions::zstd().with_level(1),
        CompressionType::Snappy => CompressorOptions::snappy(),
        _ => unreachable!("no other compression"),
    };
    let mut out = Vec::new();
    Compressor::new(options).compress(data, &mut out).expect("compress");
    out
}

/// A compressed block with its decompressed-size prefix replaced by `declared`.
fn redeclared(block: &[u8], declared: u64) -> Vec<u8> {
    let (_, len) = varint::decode_u64(block).expect("prefix");
    let mut out = varint_bytes(declared);
    out.extend_from_slice(&block[len..]);
    out
}

/// A simple chunk from its parts: compression byte, sizes block, values block.
fn simple_parts(compression: CompressionType, sizes: &[u8], values: &[u8]) -> Vec<u8> {
    let mut data = vec![compression.to_byte()];
    put_varint(sizes.len() as u64, &mut data);
    data.extend_from_slice(sizes);
    data.extend_from_slice(values);
    data
}

/// A zstd frame of `blocks` RLE blocks of 128 KiB of zeros each (4 bytes a
/// block), without a content size: 1 GiB in 32 KiB.
fn zstd_bomb(blocks: usize) -> Vec<u8> {
    // Magic; no content size, not single-segment; window 2^17.
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
    for k in 0..blocks {
        let last = u32::from(k + 1 == blocks);
        let header = last | (1 << 1) | (128 << 10 << 3);
        frame.extend_from_slice(&header.to_le_bytes()[..3]);
        frame.push(0);
    }
    frame
}

/// Transposed chunk data taken apart: the compression, the decompressed
/// header (its leading fields parsed), and the stored buckets and transitions.
#[derive(Clone)]
struct Transposed {
    compression: CompressionType,
    bucket_sizes: Vec<u64>,
    buffer_lengths: Vec<u64>,
    /// The header after the buffer lengths (nodes and the rest).
    tail: Vec<u8>,
    /// Buckets and transitions, as stored.
    rest: Vec<u8>,
}

impl Transposed {
    /// A valid transposed chunk of a few small messages, taken apart.
    fn sample(compression: CompressionType) -> (Self, u64, u64) {
        let options = match compression {
            CompressionType::None => CompressorOptions::uncompressed(),
            _ => CompressorOptions::zstd().with_level(1),
        };
        let mut encoder = TransposedChunkEncoder::new(options, 1 << 20);
        for i in 0..20u8 {
            encoder.add_record(&[0x08, i, 0x12, 3, b'a', b'b', i]).expect("add");
        }
        let (n, size) = (encoder.num_records(), encoder.decoded_data_size());
        let mut data = Vec::new();
        encoder.encode(&mut data).expect("encode");
        (Self::parse(&data), n, size)
    }

    fn parse(data: &[u8]) -> Self {
        let compression = CompressionType::from_byte(data[0]).expect("compression");
        let (header_size, len) = varint::decode_u64(&data[1..]).expect("header size");
        let start = 1 + len;
        let stored = &data[start..start + header_size as usize];
        let header = if compression == CompressionType::None {
            stored.to_vec()
        } else {
            let mut out = Vec::new();
            Decompressor::new().decompress(compression, stored, 1 << 20, &mut out).expect("header");
            out
        };
        let mut at = 0;
        let mut next = || {
            let (value, len) = varint::decode_u64(&header[at..]).expect("header field");
            at += len;
            value
        };
        let (num_buckets, num_buffers) = (next(), next());
        let bucket_sizes = (0..num_buckets).map(|_| next()).collect();
        let buffer_lengths = (0..num_buffers).map(|_| next()).collect();
        Self {
            compression,
            bucket_sizes,
            buffer_lengths,
            tail: header[at..].to_vec(),
            rest: data[start + header_size as usize..].to_vec(),
        }
    }

    fn header(&self) -> Vec<u8> {
        let mut header = Vec::new();
        put_varint(self.bucket_sizes.len() as u64, &mut header);
        put_varint(self.buffer_lengths.len() as u64, &mut header);
        for &size in self.bucket_sizes.iter().chain(&self.buffer_lengths) {
            put_varint(size, &mut header);
        }
        header.extend_from_slice(&self.tail);
        header
    }

    /// The chunk data, with a decompressed header given as is.
    fn data_with_header(&self, header: &[u8]) -> Vec<u8> {
        let stored = compressed_block(self.compression, header);
        let mut data = vec![self.compression.to_byte()];
        put_varint(stored.len() as u64, &mut data);
        data.extend_from_slice(&stored);
        data.extend_from_slice(&self.rest);
        data
    }

    fn data(&self) -> Vec<u8> {
        self.data_with_header(&self.header())
    }

    /// Replaces the decompressed-size prefix of the first (compressed)
    /// bucket, and the length of its first buffer to match.
    fn redeclare_first_bucket(&mut self, declared: u64) {
        let stored = self.bucket_sizes[0] as usize;
        let (old, _) = varint::decode_u64(&self.rest).expect("prefix");
        let bucket = redeclared(&self.rest[..stored], declared);
        self.bucket_sizes[0] = bucket.len() as u64;
        self.rest = [bucket.as_slice(), &self.rest[stored..]].concat();
        self.buffer_lengths[0] = self.buffer_lengths[0] + declared - old;
    }

    /// The sum of the buffer lengths but for the first buffer's.
    fn other_buffers(&self) -> u64 {
        self.buffer_lengths[1..].iter().sum()
    }
}

/// A file: good records 0..10, a chunk, good records 10..20.
fn around(chunk_type: u8, data: &[u8], num_records: u64, decoded: u64) -> Vec<u8> {
    File::new().good(0..10).chunk(chunk_type, data, num_records, decoded).good(10..20).done()
}

// ---------------------------------------------------------------------------
// ArrayRecord files with forged footers and postscripts.

/// `RiegeliFooterMetadata { array_record_metadata { version: 1, num_chunks, num_records } }`.
fn footer_metadata(num_chunks: u64, num_records: u64) -> Vec<u8> {
    let mut inner = vec![0x08, 1, 0x10];
    put_varint(num_chunks, &mut inner);
    inner.push(0x18);
    put_varint(num_records, &mut inner);
    let mut out = vec![0x0a];
    put_varint(inner.len() as u64, &mut out);
    out.extend_from_slice(&inner);
    out
}

/// `ArrayRecordFooter { chunk_offset, decoded_data_size, num_records }`.
fn footer_entry(offset: u64, decoded: u64, num_records: u64) -> Vec<u8> {
    let mut out = vec![0x08];
    put_varint(offset, &mut out);
    out.push(0x10);
    put_varint(decoded, &mut out);
    out.push(0x18);
    put_varint(num_records, &mut out);
    out
}

/// A data chunk of an ArrayRecord file: where it begins, its decoded size and records.
#[derive(Clone, Copy)]
struct Entry {
    offset: u64,
    decoded: u64,
    num_records: u64,
}

/// An ArrayRecord file of 30 good records in 3 chunks, without its trailer
/// (the bytes before the footer), and its chunks.
fn array_record_body() -> (Vec<u8>, Vec<Entry>) {
    let mut writer =
        ArrayRecordWriter::new(Vec::new(), "group_size:10,uncompressed".parse().expect("options")).expect("writer");
    for i in 0..30 {
        writer.write_record(&good(i)).expect("write");
    }
    let file = writer.close().expect("close");
    let trailer = find_array_record_trailer(Cursor::new(&file)).expect("read").expect("a trailer");
    let body = file[..trailer.footer_offset as usize].to_vec();
    let mut entries = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        let chunk = parse_chunk(&body[pos..], pos as u64).expect("valid chunk");
        let header = chunk.header();
        if header.chunk_type() == b'r' {
            entries.push(Entry {
                offset: pos as u64,
                decoded: header.decoded_data_size(),
                num_records: header.num_records(),
            });
        }
        pos = chunk.chunk_end() as usize;
    }
    assert_eq!(entries.len(), 3);
    (body, entries)
}

/// The body, a footer chunk of `footer` records, padding, and a postscript
/// naming `footer_offset` (the footer's position if `None`).
fn array_record_file(footer: &[Vec<u8>], footer_offset: Option<u64>) -> Vec<u8> {
    let (body, _) = array_record_body();
    let mut file = File(body);
    let at = file.pos();
    let (data, n, size) = simple_chunk(footer, CompressorOptions::uncompressed());
    file.chunk(b'r', &data, n, size);
    let postscript_pos = file.pos().div_ceil(65536) * 65536;
    file.pad_to(postscript_pos);
    let mut postscript = vec![0x08];
    put_varint(footer_offset.unwrap_or(at), &mut postscript);
    postscript.push(0x10);
    put_varint(0x7193_0e70_4fda_e05e, &mut postscript);
    let (data, n, size) =
        simple_chunk(&[postscript.clone(), postscript.clone(), postscript], CompressorOptions::uncompressed());
    file.chunk(b'r', &data, n, size);
    file.pad_to(postscript_pos + 65536);
    file.done()
}

/// The records of the uncompressed simple chunk at the beginning of `bytes`.
fn simple_chunk_records(bytes: &[u8]) -> Vec<Vec<u8>> {
    let chunk = parse_chunk(bytes, 0).expect("a chunk");
    let data = chunk.contiguous_data().expect("one piece");
    assert_eq!(data[0], 0, "uncompressed");
    let (sizes_len, len) = varint::decode_u64(&data[1..]).expect("sizes");
    let (mut sizes, mut values) = (&data[1 + len..1 + len + sizes_len as usize], &data[1 + len + sizes_len as usize..]);
    let mut records = Vec::new();
    while !sizes.is_empty() {
        let (size, len) = varint::decode_u64(sizes).expect("size");
        sizes = &sizes[len..];
        let (record, rest) = values.split_at(size as usize);
        records.push(record.to_vec());
        values = rest;
    }
    records
}

/// The footer of `entries` with each changed by `edit`, and metadata counting them.
fn footer_of(entries: &[Entry], edit: impl Fn(Entry) -> Entry) -> Vec<Vec<u8>> {
    let entries: Vec<Entry> = entries.iter().copied().map(edit).collect();
    let total = entries.iter().map(|e| e.num_records).fold(0u64, u64::saturating_add);
    let mut records = vec![footer_metadata(entries.len() as u64, total)];
    records.extend(entries.iter().map(|e| footer_entry(e.offset, e.decoded, e.num_records)));
    records
}

// ---------------------------------------------------------------------------
// The cases.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Limits {
    /// [`ChunkReadOptions::default`].
    Defaults,
    /// Every limit [`TIGHT`] (records: 2^20).
    Tight,
}

impl Limits {
    fn options(self) -> ChunkReadOptions {
        match self {
            Self::Defaults => ChunkReadOptions::default(),
            Self::Tight => ChunkReadOptions {
                max_chunk_data_size: TIGHT,
                max_decoded_size: TIGHT,
                max_num_records: 1 << 20,
                ..ChunkReadOptions::default()
            },
        }
    }
}

struct Case {
    name: String,
    file: Vec<u8>,
    limits: Limits,
    /// The records the file holds, in order: every reader must return only
    /// these, in this order, some perhaps left out.
    good: Vec<Vec<u8>>,
    /// Text the error of the strict read must contain (any of these), if it
    /// must fail: bombs and claims beyond the limits name what they hit.
    /// `None` for the ArrayRecord files, whose forged trailers are records to
    /// a `RecordReader`.
    error: Option<&'static [&'static str]>,
}

const LIMIT: &[&str] = &["exceeds the limit", "exceeded"];
const BOMB: &[&str] = &["decompresses to more than the declared size"];
const ANY: &[&str] = &[""];

fn case(name: impl Into<String>, limits: Limits, file: Vec<u8>, error: &'static [&'static str]) -> Case {
    Case { name: name.into(), file, limits, good: (0..20).map(good).collect(), error: Some(error) }
}

fn cases() -> Vec<Case> {
    use CompressionType::{Brotli, None as Uncompressed, Snappy, Zstd};
    use Limits::{Defaults, Tight};
    let mut cases = Vec::new();
    let tail = simple_chunk(&[good(99)], CompressorOptions::uncompressed()).0;

    // Chunk headers.
    for chunk_type in [b'r', b't', b'm', b'p', b'z'] {
        for (field, claim) in [("data_size", HUGE), ("data_size", (1 << 30) + 1), ("decoded_data_size", HUGE)] {
            let file = match field {
                "data_size" => File::new().good(0..10).header(chunk_type, claim, 1, 10, &tail).done(),
                _ => File::new().good(0..10).header(chunk_type, tail.len() as u64, 1, claim, &tail).done(),
            };
            cases.push(case(format!("'{}' chunk header {field} {claim}", chunk_type as char), Defaults, file, LIMIT));
        }
        let file = File::new().good(0..10).header(chunk_type, tail.len() as u64, (1 << 56) - 1, 10, &tail).done();
        cases.push(case(format!("'{}' chunk header num_records 2^56-1", chunk_type as char), Defaults, file, LIMIT));
    }
    // Claims at the limits: nothing is allocated for a chunk the file does not hold.
    for limits in [Defaults, Tight] {
        let max = limits.options();
        let file = File::new().good(0..10).header(b'r', max.max_chunk_data_size, 1, 10, &tail).done();
        cases.push(case(
            format!("chunk header data_size {} (the limit) in a short file", max.max_chunk_data_size),
            limits,
            file,
            ANY,
        ));
        let file = File::new().good(0..10).header(b'r', tail.len() as u64, max.max_num_records, 10, &tail).done();
        cases.push(case(format!("chunk header num_records {} (the limit)", max.max_num_records), limits, file, ANY));
    }
    // The metadata chunk, where it counts: right after the signature.
    for (data_size, decoded) in [(HUGE, 10), (tail.len() as u64, HUGE), (tail.len() as u64, (2 << 30) + 1)] {
        let file = File::new().header(b'm', data_size, 0, decoded, &tail).done();
        let name = format!("metadata chunk header data_size {data_size} decoded_data_size {decoded}");
        cases.push(Case { good: Vec::new(), ..case(name, Defaults, file, LIMIT) });
    }

    // Simple chunks: sizes and prefixes.
    let records: Vec<Vec<u8>> = (100..110).map(good).collect();
    let decoded: u64 = records.iter().map(|r| r.len() as u64).sum();
    let values = records.concat();
    let mut sizes = Vec::new();
    for record in &records {
        put_varint(record.len() as u64, &mut sizes);
    }
    let data = [vec![0], varint_bytes(HUGE), sizes.clone(), values.clone()].concat();
    cases.push(case("simple chunk compressed_sizes_size 2^62", Defaults, around(b'r', &data, 10, decoded), ANY));
    let huge_sizes = [varint_bytes(HUGE), sizes[1..].to_vec()].concat();
    let data = simple_parts(Uncompressed, &huge_sizes, &values);
    cases.push(case("simple chunk record size 2^62", Defaults, around(b'r', &data, 10, decoded), ANY));
    let data = simple_parts(Uncompressed, &huge_sizes, &values);
    cases.push(case(
        "simple chunk record size 2^62, decoded_data_size 2^62",
        Defaults,
        around(b'r', &data, 10, HUGE),
        LIMIT,
    ));
    for compression in [Brotli, Zstd, Snappy] {
        let sizes_block = compressed_block(compression, &sizes);
        let values_block = compressed_block(compression, &values);
        let c = compression.name();
        let data = simple_parts(compression, &redeclared(&sizes_block, HUGE), &values_block);
        cases.push(case(
            format!("simple {c} chunk sizes declared 2^62"),
            Defaults,
            around(b'r', &data, 10, decoded),
            ANY,
        ));
        let data = simple_parts(compression, &sizes_block, &redeclared(&values_block, HUGE));
        cases.push(case(
            format!("simple {c} chunk values declared 2^62"),
            Defaults,
            around(b'r', &data, 10, decoded),
            ANY,
        ));
        let data = simple_parts(compression, &sizes_block, &redeclared(&values_block, HUGE));
        cases.push(case(
            format!("simple {c} chunk values and decoded_data_size 2^62"),
            Defaults,
            around(b'r', &data, 10, HUGE),
            LIMIT,
        ));
        // One record of the limit's size, declared by sizes, values and header alike, which the stream does not hold.
        for limits in [Defaults, Tight] {
            let claim = limits.options().max_decoded_size + if limits == Defaults { 1 } else { 0 };
            let one_size = compressed_block(compression, &varint_bytes(claim));
            let data = simple_parts(compression, &one_size, &redeclared(&values_block, claim));
            let error = if limits == Defaults { LIMIT } else { ANY };
            cases.push(case(
                format!("simple {c} chunk of one record of {claim} bytes (declared)"),
                limits,
                around(b'r', &data, 1, claim),
                error,
            ));
        }
    }

    // Transposed chunks.
    for compression in [Uncompressed, Zstd] {
        let c = compression.name();
        let (sample, n, size) = Transposed::sample(compression);
        assert!(!sample.bucket_sizes.is_empty() && !sample.buffer_lengths.is_empty());
        let mut add = |what: &str, data: Vec<u8>, decoded: u64, limits: Limits, error: &'static [&'static str]| {
            cases.push(case(format!("transposed {c} chunk {what}"), limits, around(b't', &data, n, decoded), error));
        };
        // header_size.
        let mut forged = vec![compression.to_byte()];
        put_varint(HUGE, &mut forged);
        forged.extend_from_slice(&sample.data()[1..]);
        add("header_size 2^62", forged, size, Defaults, ANY);
        // Bucket sizes and buffer lengths.
        let mut t = sample.clone();
        t.bucket_sizes[0] = HUGE;
        add("bucket size 2^62", t.data(), size, Defaults, ANY);
        let mut t = sample.clone();
        t.buffer_lengths[0] = HUGE;
        add("buffer length 2^62", t.data(), size, Defaults, ANY);
        // Counts of buckets and buffers far beyond the header's bytes.
        let counts_len = varint_bytes(sample.bucket_sizes.len() as u64).len()
            + varint_bytes(sample.buffer_lengths.len() as u64).len();
        for (buckets, buffers) in [(u64::from(u32::MAX), 1), (1, u64::from(u32::MAX))] {
            let mut header = varint_bytes(buckets);
            put_varint(buffers, &mut header);
            header.extend_from_slice(&sample.header()[counts_len..]);
            add(
                &format!("{buckets} buckets, {buffers} buffers"),
                sample.data_with_header(&header),
                size,
                Defaults,
                ANY,
            );
        }
        // decoded_data_size at the limits, the chunk otherwise valid.
        for limits in [Defaults, Tight] {
            let claim = limits.options().max_decoded_size + if limits == Defaults { 1 } else { 0 };
            let error = if limits == Defaults { LIMIT } else { ANY };
            add(&format!("decoded_data_size {claim}"), sample.data(), claim, limits, error);
        }
        add("decoded_data_size 2^62", sample.data(), HUGE, Defaults, LIMIT);
        if compression != Uncompressed {
            // The header's and a bucket's declared sizes.
            let stored = compressed_block(compression, &sample.header());
            let mut forged = vec![compression.to_byte()];
            let stored = redeclared(&stored, HUGE);
            put_varint(stored.len() as u64, &mut forged);
            forged.extend_from_slice(&stored);
            forged.extend_from_slice(&sample.rest);
            add("header declared 2^62", forged, size, Defaults, LIMIT);
            let mut t = sample.clone();
            t.redeclare_first_bucket(HUGE);
            add("bucket declared 2^62, buffer length to match", t.data(), size, Defaults, LIMIT);
            for limits in [Defaults, Tight] {
                // All buffers together as long as the limit allows.
                let claim = limits.options().max_decoded_size - sample.other_buffers();
                let mut t = sample.clone();
                t.redeclare_first_bucket(claim);
                assert_eq!(t.buffer_lengths.iter().sum::<u64>(), limits.options().max_decoded_size);
                add(
                    &format!("bucket declared {claim} (the limit), buffer length to match"),
                    t.data(),
                    size,
                    limits,
                    ANY,
                );
            }
        }
    }
    // Transposed headers whose counts the header's bytes can hold, many times
    // what the decoder keeps per item, filling a header at the limit:
    // zero-size buckets and zero-length buffers (uncompressed: a compressed
    // bucket has a size prefix), no-op nodes (also compressed: a small file).
    let len = TIGHT as usize - 64;
    let nodes = |n: usize, h: &mut Vec<u8>| {
        put_varint(0, h);
        put_varint(0, h);
        put_varint((n / 2) as u64, h);
        h.resize(h.len() + n / 2 * 2, 0);
    };
    for (what, compression, header) in [
        (
            "buckets",
            Uncompressed,
            transposed_header(len, |n, h| {
                put_varint(n as u64, h);
                put_varint(0, h);
                h.resize(h.len() + n, 0);
            }),
        ),
        (
            "buffers",
            Uncompressed,
            transposed_header(len, |n, h| {
                put_varint(1, h);
                put_varint(n as u64, h);
                put_varint(0, h);
                h.resize(h.len() + n, 0);
            }),
        ),
        ("nodes", Uncompressed, transposed_header(len, nodes)),
        ("nodes", Zstd, transposed_header(len, nodes)),
    ] {
        let stored = compressed_block(compression, &header);
        let data = [vec![compression.to_byte()], varint_bytes(stored.len() as u64), stored].concat();
        let name = format!("transposed {} chunk header of {what} filling {} bytes", compression.name(), header.len());
        cases.push(case(name, Tight, around(b't', &data, 20, 100), ANY));
    }
    // A transposed chunk whose one node, the end of a submessage, repeats
    // (4 times a transition byte) until the submessage stack holds an entry
    // for every 2 bytes of the declared decoded size.
    let header = [0, 0, 1, (1 << 3 | 2) + 4, 0, 0];
    let transitions = vec![3u8; TIGHT as usize / 8 + 16];
    let header = compressed_block(Zstd, &header);
    let data = [vec![Zstd.to_byte()], varint_bytes(header.len() as u64), header, compressed_block(Zstd, &transitions)]
        .concat();
    cases.push(case(
        "transposed zstd chunk opening a submessage at every step",
        Tight,
        around(b't', &data, 1, TIGHT),
        ANY,
    ));

    // Metadata chunks holding a hostile transposed chunk.
    let (sample, _, size) = Transposed::sample(Zstd);
    let mut t = sample.clone();
    t.buffer_lengths[0] = HUGE;
    let file = File::new().chunk(b'm', &t.data(), 0, size).good(0..20).done();
    cases.push(case("metadata chunk buffer length 2^62", Defaults, file, ANY));
    let file = File::new().chunk(b'm', &sample.data(), 0, HUGE).good(0..20).done();
    cases.push(case("metadata chunk decoded_data_size 2^62", Defaults, file, LIMIT));
    let file = File::new().chunk(b'm', &sample.data(), 0, TIGHT).good(0..20).done();
    cases.push(case(format!("metadata chunk decoded_data_size {TIGHT} (the limit)"), Tight, file, ANY));

    // Decompression bombs: 1 GiB of zeros in 32 KiB, 4 GiB in 128 KiB.
    let gib = zstd_bomb(8192);
    for (limits, claim) in [(Defaults, 1 << 20), (Tight, 1 << 20), (Tight, 1 << 30)] {
        let values = [varint_bytes(claim), gib.clone()].concat();
        let sizes = compressed_block(Zstd, &varint_bytes(claim));
        let data = simple_parts(Zstd, &sizes, &values);
        let error = if claim > TIGHT && limits == Tight { LIMIT } else { BOMB };
        cases.push(case(
            format!("zstd bomb of 1 GiB declared as {claim} bytes"),
            limits,
            around(b'r', &data, 1, claim),
            error,
        ));
    }
    let four = 4 << 30;
    let values = [varint_bytes(four), zstd_bomb(4 * 8192)].concat();
    let data = simple_parts(Zstd, &compressed_block(Zstd, &varint_bytes(four)), &values);
    cases.push(case("zstd bomb of 4 GiB declared as such", Defaults, around(b'r', &data, 1, four), LIMIT));
    // A bomb in a transposed chunk's bucket.
    let (mut t, n, size) = Transposed::sample(Zstd);
    let stored = t.bucket_sizes[0] as usize;
    let (declared, _) = varint::decode_u64(&t.rest).expect("prefix");
    let bucket = [varint_bytes(declared), gib.clone()].concat();
    t.bucket_sizes[0] = bucket.len() as u64;
    t.rest = [bucket.as_slice(), &t.rest[stored..]].concat();
    cases.push(case("zstd bomb of 1 GiB in a transposed bucket", Defaults, around(b't', &t.data(), n, size), BOMB));
    // Brotli: 64 MiB of zeros, declared as 1 MiB.
    let brotli = {
        let zeros = vec![0u8; 64 << 20];
        compressed_block(Brotli, &zeros)
    };
    let values = redeclared(&brotli, 1 << 20);
    let data = simple_parts(Brotli, &compressed_block(Brotli, &varint_bytes(1 << 20)), &values);
    cases.push(case("brotli bomb of 64 MiB declared as 1 MiB", Defaults, around(b'r', &data, 1, 1 << 20), BOMB));

    // ArrayRecord footers and postscripts.
    let (_, entries) = array_record_body();
    let array = |name: &str, footer: Vec<Vec<u8>>, footer_offset: Option<u64>| {
        let file = array_record_file(&footer, footer_offset);
        // Readers that cannot tell the trailer from records return its
        // records too (the footer's, then the postscript's).
        let postscript = simple_chunk_records(&file[file.len() - 65536..]);
        let mut records: Vec<Vec<u8>> = (0..30).map(good).collect();
        records.extend(footer);
        records.extend(postscript);
        Case { name: format!("ArrayRecord {name}"), file, limits: Defaults, good: records, error: None }
    };
    let mut footer = footer_of(&entries, |e| e);
    footer[0] = footer_metadata(HUGE, HUGE);
    cases.push(array("footer claiming 2^62 chunks and records", footer, None));
    cases.push(array(
        "footer entries of 2^62 records",
        footer_of(&entries, |e| Entry { num_records: HUGE, ..e }),
        None,
    ));
    cases.push(array(
        "footer entries of 2^28 records (the limit)",
        footer_of(&entries, |e| Entry { num_records: 1 << 28, ..e }),
        None,
    ));
    cases.push(array(
        "footer entries of decoded_data_size 2^62",
        footer_of(&entries, |e| Entry { decoded: HUGE, ..e }),
        None,
    ));
    cases.push(array(
        "footer entries at offset 2^62",
        footer_of(&entries, |e| Entry { offset: e.offset + HUGE, ..e }),
        None,
    ));
    cases.push(array("postscript naming a footer at 2^62", footer_of(&entries, |e| e), Some(HUGE)));
    let mut footer = footer_of(&entries, |e| e);
    footer.extend((0..100_000).map(|k| footer_entry(HUGE + k, HUGE, HUGE)));
    cases.push(array("footer of 100000 entries claiming 2^62", footer, None));
    cases
}

/// A transposed chunk header of `len` bytes or so, written by `fill` given
/// a count of items that fits, and ending with `first_node` 0.
fn transposed_header(len: usize, fill: impl Fn(usize, &mut Vec<u8>)) -> Vec<u8> {
    let mut header = Vec::new();
    fill(len, &mut header);
    header.push(0);
    header
}

// ---------------------------------------------------------------------------
// Reading.

/// What one reader did with a file.
struct Outcome {
    records: Vec<Vec<u8>>,
    error: Option<Error>,
}

fn reader_options(limits: Limits, parallelism: usize) -> RecordReaderOptions {
    RecordReaderOptions { chunks: limits.options(), parallelism, parallel_min_chunk_size: 0, ..Default::default() }
}

/// At most this many records are taken from a reader (a hostile file may
/// hold many empty ones).
const MAX_RECORDS: usize = 1 << 16;

fn read_strict(file: &[u8], limits: Limits) -> Outcome {
    let mut reader = RecordReader::with_options(Cursor::new(file), reader_options(limits, 0));
    let mut error = reader.read_metadata().err();
    let mut records = Vec::new();
    while records.len() < MAX_RECORDS {
        match reader.read_record() {
            Ok(Some(record)) => records.push(record.to_vec()),
            Ok(None) => break,
            Err(e) => {
                error.get_or_insert(e);
                break;
            }
        }
    }
    Outcome { records, error }
}

fn read_recovering(file: &[u8], limits: Limits, parallelism: usize) -> Outcome {
    let mut reader = RecordReader::with_options(Cursor::new(file), reader_options(limits, parallelism));
    reader.set_recovery(|_| true);
    let _ = reader.read_metadata();
    let mut records = Vec::new();
    let mut error = None;
    while records.len() < MAX_RECORDS {
        match reader.read_record() {
            Ok(Some(record)) => records.push(record.to_vec()),
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    Outcome { records, error }
}

fn read_array_record(file: &[u8], limits: Limits) -> Outcome {
    let options = ArrayRecordReaderOptions { chunks: limits.options(), parallelism: 1, ..Default::default() };
    let mut reader = match ArrayRecordReader::with_options(Cursor::new(file), options) {
        Ok(reader) => reader,
        Err(e) => return Outcome { records: Vec::new(), error: Some(e) },
    };
    let mut error = None;
    let mut records = Vec::new();
    if reader.num_records() <= MAX_RECORDS as u64 {
        match reader.read_batch(Selection::All) {
            Ok(all) => records = all.iter().map(|r| r.to_vec()).collect(),
            Err(e) => error = Some(e),
        }
        if let Err(e) = reader.read_batch(Selection::All) {
            error.get_or_insert(e);
        }
    } else {
        for index in [0, reader.num_records() / 2, reader.num_records() - 1] {
            if let Err(e) = reader.read(index) {
                error.get_or_insert(e);
            }
        }
        if let Err(e) = reader.read_batch(0..reader.num_records()) {
            error.get_or_insert(e);
        }
    }
    Outcome { records, error }
}

/// Whether `got` is `want` with some elements left out.
fn is_subsequence(got: &[Vec<u8>], want: &[Vec<u8>]) -> bool {
    let mut want = want.iter();
    got.iter().all(|record| want.any(|w| w == record))
}

#[test]
fn hostile_input_stays_under_the_memory_bound() {
    // The zstd bomb is what it claims to be.
    let mut out = Vec::new();
    Decompressor::new()
        .decompress(CompressionType::Zstd, &[varint_bytes(3 << 17), zstd_bomb(3)].concat(), 1 << 20, &mut out)
        .expect("a valid zstd frame");
    assert!(out.len() == 3 << 17 && out.iter().all(|&b| b == 0));
    drop(out);
    // What C code allocates is counted: zstd's decoding context (about 95 KiB) beside the
    // 384 KiB that a frame of 16 bytes decompresses to.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let frame = [varint_bytes(3 << 17), zstd_bomb(3)].concat();
        let ((), peak) = measure(|| {
            let mut out = Vec::with_capacity(3 << 17);
            Decompressor::new()
                .decompress(CompressionType::Zstd, &frame, 1 << 20, &mut out)
                .expect("a valid zstd frame");
        });
        assert!(peak > (3 << 17) + (64 << 10), "{peak} bytes: zstd's context went uncounted");
        // A frame without a content size declaring a window of 2 GiB: reading a prefix of it
        // allocates no window (a streaming context would, as the header says).
        let mut big_window = frame;
        big_window[varint_bytes(3 << 17).len() + 5] = 21 << 3;
        let (prefix, peak) = measure(|| {
            let mut out = Vec::new();
            Decompressor::new()
                .decompress_prefix(CompressionType::Zstd, &big_window, 1 << 20, 10, &mut out)
                .map(|()| out)
        });
        assert_eq!(prefix.expect("a valid zstd frame"), [0; 10]);
        assert!(peak < 1 << 20, "{peak} bytes for a prefix of 10 bytes");
    }

    let verbose = std::env::var_os("RIEGELI_MEMORY_VERBOSE").is_some();
    let started = Instant::now();
    let cases = cases();
    let built = started.elapsed();
    let mut failures = Vec::new();
    let mut peaks = Vec::new();
    for case in &cases {
        let file = case.file.as_slice();
        type Reader<'a> = (&'static str, Box<dyn Fn() -> Outcome + 'a>);
        let readers: [Reader<'_>; 4] = [
            ("RecordReader", Box::new(|| read_strict(file, case.limits))),
            ("RecordReader with recovery", Box::new(|| read_recovering(file, case.limits, 0))),
            ("RecordReader with recovery and read-ahead", Box::new(|| read_recovering(file, case.limits, 1))),
            ("ArrayRecordReader", Box::new(|| read_array_record(file, case.limits))),
        ];
        let mut worst = 0;
        for (reader, read) in &readers {
            let what = format!("{} ({:?} limits, {} bytes), {reader}", case.name, case.limits, file.len());
            let (outcome, peak) = measure(|| catch_unwind(AssertUnwindSafe(read)));
            worst = worst.max(peak);
            if peak > BOUND {
                failures.push(format!("{what}: peak allocation {peak} bytes, over {BOUND}"));
            }
            let outcome = match outcome {
                Ok(outcome) => outcome,
                Err(_) => {
                    failures.push(format!("{what}: panicked"));
                    continue;
                }
            };
            if !is_subsequence(&outcome.records, &case.good) {
                failures.push(format!("{what}: returned records that are not in the file"));
            }
            if verbose {
                let error = outcome.error.as_ref().map_or("no error".to_owned(), ToString::to_string);
                note!("{what}: {} records, peak {peak} bytes; {error}", outcome.records.len());
            }
            match (*reader, &outcome.error) {
                ("RecordReader", Some(e)) => {
                    if !e.is_corruption() {
                        failures.push(format!("{what}: {e} is not corruption"));
                    }
                    if let Some(texts) = case.error
                        && !texts.iter().any(|t| e.to_string().contains(t))
                    {
                        failures.push(format!("{what}: error \"{e}\" names none of {texts:?}"));
                    }
                }
                ("RecordReader", None) if case.error.is_some() => {
                    failures.push(format!("{what}: the damage went unreported"));
                }
                ("RecordReader with recovery" | "RecordReader with recovery and read-ahead", Some(e)) => {
                    failures.push(format!("{what}: reading with recovery failed: {e}"));
                }
                _ => {}
            }
        }
        peaks.push((worst, case.name.as_str(), case.limits));
    }
    peaks.sort_by_key(|p| std::cmp::Reverse(p.0));
    note!("{} cases (built in {built:.1?}) read in {:.1?}; highest peaks:", cases.len(), started.elapsed());
    for (peak, name, limits) in peaks.iter().take(8) {
        note!("  {:>8} KiB  {name} ({limits:?} limits)", peak >> 10);
    }
    failures.extend(large_chunks_hold_at_most_two_chunks());
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// Honest chunks far larger than the hostile ones: three of 72 MiB records
/// whose zstd data is as large (random bytes), over the 64 MiB that reading
/// ahead holds beyond the chunk being read. Writing them holds at most one
/// chunk's data and 64 MiB besides the caller's records. Read serially and
/// reading ahead on one or two threads, the peak stays within two chunks'
/// records and 64 MiB: nothing is held twice (as read and as gathered from
/// between block headers, or while a buffer grows), and the next chunk is
/// not decoded beside the current one.
fn large_chunks_hold_at_most_two_chunks() -> Vec<String> {
    const RECORD: usize = 72 << 20;
    let record = |seed: u64| -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut out = Vec::with_capacity(RECORD);
        while out.len() < RECORD {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.extend_from_slice(&state.to_le_bytes());
        }
        out
    };
    // A sample of the bytes (this binary is not optimized): the records' content is
    // checked in full by the tests of large chunks in `tests/large_chunks.rs`.
    let fingerprint = |bytes: &[u8]| -> u64 {
        bytes.iter().step_by(4099).fold(bytes.len() as u64, |h, &b| h.rotate_left(5) ^ u64::from(b))
    };
    let records: Vec<Vec<u8>> = (0..3).map(record).collect();
    let want: Vec<u64> = records.iter().map(|r| fingerprint(r)).collect();
    // Written (to a sink sized beforehand) with a thread encoding: each record is
    // encoded from the caller's buffer, not copied into the encoder.
    let mut failures = Vec::new();
    let mut file = Vec::with_capacity(4 * RECORD);
    for options in ["zstd:1,chunk_size:64M", "zstd:1,chunk_size:64M,parallelism:1"] {
        file.clear();
        let (result, peak) = measure(|| {
            let mut writer = RecordWriter::new(&mut file, options.parse().expect("options"))?;
            for record in &records {
                writer.write_record(record)?;
            }
            writer.close().map(drop)
        });
        note!("{} MiB records written, {options}: peak {} MiB", RECORD >> 20, peak >> 20);
        if let Err(e) = result {
            failures.push(format!("large records, {options}: {e}"));
        }
        if peak > RECORD + (64 << 20) {
            failures.push(format!("large records, {options}: peak {peak} bytes, over a chunk and 64 MiB"));
        }
    }
    drop(records);
    let bound = 2 * RECORD + (64 << 20);
    for parallelism in [0, 1, 2] {
        let options = RecordReaderOptions { parallelism, ..Default::default() };
        let (got, peak) = measure(|| {
            let mut reader = RecordReader::with_options(Cursor::new(&file[..]), options);
            let mut got = Vec::new();
            while let Some(record) = reader.read_record()? {
                got.push(fingerprint(&record));
            }
            Ok::<_, Error>(got)
        });
        note!("{} MiB chunks, parallelism {parallelism}: peak {} MiB", RECORD >> 20, peak >> 20);
        match got {
            Ok(got) if got == want => {}
            Ok(_) => failures.push(format!("large chunks, parallelism {parallelism}: other records")),
            Err(e) => failures.push(format!("large chunks, parallelism {parallelism}: {e}")),
        }
        if peak > bound {
            failures.push(format!("large chunks, parallelism {parallelism}: peak {peak} bytes, over {bound}"));
        }
    }
    failures
}
