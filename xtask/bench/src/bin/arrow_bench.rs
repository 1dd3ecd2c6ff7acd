//! Times riegeli-arrow on a file of proto records, in Rust alone (the Python side of
//! `cargo xtask bench arrow`, `xtask/bench/python/bench_arrow.py`, runs it beside its own
//! timings, to show what the binding adds):
//!
//! `arrow_bench FILE [--columns a,b] [--rounds R] [--batch-size N]` prints JSON lines, best of
//! R rounds each (default 3): `plain` (every record read as bytes, serially, with
//! `read_record_ref`), `all` (an `ArrowReader` over every column, the batches kept as
//! `to_arrow()` keeps them), `projected` (only `--columns`, default `id,name`) and `parse` (a
//! `ProtoDecoder` given every record already in memory: the parse alone, what ptars'
//! `list_to_record_batch` times), each with `seconds`, `rows`, `record_bytes` (of the plain
//! read) or `column_bytes` (the Arrow arrays' memory); then `chunks`: the file's chunk count and
//! its largest chunk's data and decoded sizes.
//!
//! `--only plain|all|projected|parse` runs that case alone (for a profiler); `--parallelism N`
//! gives the reader N decoding threads (default 0, as the Python package's reader has), and
//! `--arrow-parallelism N` the `ArrowReader` N of its own (default: the cores less one).
//!
//! `--walker` reads every chunk through its records (`ArrowReaderOptions::direct` off): the
//! wire walker alone, what reads did before transposed chunks went straight into the columns.
//!
//! `arrow_bench FILE --write N`: writes `N` records of a `riegeli_bench.Row` like the Python
//! side's (the same 20 fields, other seeded values) with `transpose,zstd:3` and the type in the
//! metadata, for timing the Rust side without Python.
//!
//! `arrow_bench FILE --memory [--columns a,b] [--chunk-batches]`: one projected read in this
//! process, holding its batches, as one JSON line: the resident set before it (`VmRSS`), the peak
//! after it (`VmHWM`), the file-backed pages it added (`RssFile`: the code its first run paged
//! in, not data), and the heap's peak above what it held before (`heap_peak`: the blocks
//! `malloc` handed out, counted by this binary, C code's own included, such as zstd's decoding
//! contexts; without what malloc keeps or the code). `--chunk-batches`:
//! a batch per chunk (`exact_batch_size: false`), as Python's `to_arrow()` reads.

#![allow(clippy::print_stdout, reason = "the output is the report")]

use std::fs::File;
use std::time::Instant;

use arrow_array::RecordBatch;
use bytes::Bytes;
use prost_reflect::MessageDescriptor;
use riegeli_arrow::{ArrowReader, ArrowReaderOptions, BadRecords, ProtoDecoder, message_type_from_metadata};
use riegeli_records::{ChunkReadOptions, ChunkReader, PositionalFile, RecordReader, RecordReaderOptions};
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// What the command line asks for.
struct Args {
    path: String,
    columns: Vec<String>,
    rounds: usize,
    batch_size: usize,
    memory: bool,
    /// The reader's decoding threads (`RecordReaderOptions::parallelism`; default 0).
    parallelism: usize,
    /// Only this case (`plain`, `all` or `projected`), for a profiler.
    only: Option<String>,
    /// Transposed chunks through their records, as other chunks (`--walker`).
    walker: bool,
    /// Write this many records to the file instead (`--write N`).
    write: Option<u64>,
    /// A batch per chunk, not joined (`--chunk-batches`).
    chunk_batches: bool,
    /// The `ArrowReader`'s own decoding threads (`--arrow-parallelism N`; default its default,
    /// the cores less one).
    arrow_parallelism: Option<usize>,
}

#[allow(unsafe_code, reason = "the counting `malloc`, for `--memory`'s heap peak")]
#[path = "../../../../crates/riegeli-records/tests/counting_alloc.rs"]
mod counting_alloc;

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        path: String::new(),
        columns: vec!["id".to_owned(), "name".to_owned()],
        rounds: 3,
        batch_size: 65536,
        memory: false,
        parallelism: 0,
        only: None,
        walker: false,
        write: None,
        chunk_batches: false,
        arrow_parallelism: None,
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--columns" => parsed.columns = value()?.split(',').map(str::to_owned).collect(),
            "--rounds" => parsed.rounds = value()?.parse()?,
            "--batch-size" => parsed.batch_size = value()?.parse()?,
            "--memory" => parsed.memory = true,
            "--only" => parsed.only = Some(value()?),
            "--parallelism" => parsed.parallelism = value()?.parse()?,
            "--walker" => parsed.walker = true,
            "--chunk-batches" => parsed.chunk_batches = true,
            "--arrow-parallelism" => parsed.arrow_parallelism = Some(value()?.parse()?),
            "--write" => parsed.write = Some(value()?.parse()?),
            other if other.starts_with("--") => return Err(format!("unexpected argument {other:?}").into()),
            _ => parsed.path = arg,
        }
    }
    if parsed.path.is_empty() {
        return Err(
            "usage: arrow_bench FILE [--columns a,b] [--rounds R] [--batch-size N] [--only CASE] [--walker] [--memory] | FILE --write N".into()
        );
    }
    Ok(parsed)
}

fn open(path: &str, parallelism: usize) -> Result<RecordReader<PositionalFile>> {
    let options = RecordReaderOptions { parallelism, ..RecordReaderOptions::default() };
    Ok(RecordReader::with_options(PositionalFile::from(File::open(path)?), options))
}

/// Every record as bytes: (records, bytes of records).
fn plain(path: &str, parallelism: usize) -> Result<(u64, u64)> {
    let mut reader = open(path, parallelism)?;
    let (mut rows, mut bytes) = (0u64, 0u64);
    while let Some(record) = reader.read_record_ref()? {
        rows += 1;
        bytes += record.len() as u64;
    }
    Ok((rows, bytes))
}

/// The batches of an `ArrowReader` over `projection` (`None`: every column).
fn arrow(path: &str, projection: Option<&[String]>, args: &Args) -> Result<Vec<RecordBatch>> {
    let (batch_size, parallelism) = (args.batch_size, args.parallelism);
    let options = ArrowReaderOptions {
        batch_size,
        projection: projection.map(<[String]>::to_vec),
        direct: !args.walker,
        exact_batch_size: !args.chunk_batches,
        parallelism: args.arrow_parallelism.unwrap_or(ArrowReaderOptions::default().parallelism),
        ..Default::default()
    };
    let mut reader = ArrowReader::new(open(path, parallelism)?, options)?;
    let batches = reader.by_ref().collect::<std::result::Result<Vec<_>, _>>()?;
    DIRECT_CHUNKS.store(reader.direct_chunks(), std::sync::atomic::Ordering::Relaxed);
    Ok(batches)
}

/// The chunks the last [`arrow`] read decoded straight into the columns.
static DIRECT_CHUNKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Every record in memory, and the message type the file's metadata names.
fn records_in_memory(path: &str) -> Result<(Vec<Bytes>, MessageDescriptor)> {
    let mut reader = open(path, 0)?;
    let message = message_type_from_metadata(&reader.read_metadata()?.unwrap_or_default())?;
    let mut records = Vec::new();
    while let Some(record) = reader.read_record()? {
        records.push(record);
    }
    Ok((records, message))
}

/// The batches of a `ProtoDecoder` given `records` (every column): the parse alone, as ptars'
/// `list_to_record_batch` is given records in memory.
fn parse(records: &[Bytes], message: &MessageDescriptor, batch_size: usize) -> Result<Vec<RecordBatch>> {
    let mut decoder = ProtoDecoder::new::<&str>(message, None, BadRecords::Fail)?;
    let mut batches = Vec::new();
    for batch in records.chunks(batch_size.max(1)) {
        for record in batch {
            decoder.push(record, None)?;
        }
        batches.push(decoder.flush()?);
    }
    Ok(batches)
}

/// (rows, bytes of the Arrow arrays) of `batches`.
fn shape(batches: &[RecordBatch]) -> (usize, usize) {
    (batches.iter().map(RecordBatch::num_rows).sum(), batches.iter().map(RecordBatch::get_array_memory_size).sum())
}

/// The fastest of `rounds` runs of `f`: (seconds, its result).
fn best<T>(rounds: usize, mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut fastest: Option<(f64, T)> = None;
    for _ in 0..rounds.max(1) {
        let start = Instant::now();
        let result = f()?;
        let seconds = start.elapsed().as_secs_f64();
        if fastest.as_ref().is_none_or(|(best, _)| seconds < *best) {
            fastest = Some((seconds, result));
        }
    }
    fastest.ok_or_else(|| "no rounds".into())
}

/// A line of `/proc/self/status` in bytes (Linux: `VmRSS` the resident set, `VmHWM` its peak so
/// far; 0 elsewhere).
fn status_bytes(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// (chunks, largest data size, largest decoded size) of the file's chunks with records.
fn chunks(path: &str) -> Result<(u64, u64, u64)> {
    let mut reader = ChunkReader::new(File::open(path)?, ChunkReadOptions::default(), 0);
    let (mut count, mut data, mut decoded) = (0, 0, 0);
    while let Some(chunk) = reader.read_chunk()? {
        if chunk.header.num_records() > 0 {
            count += 1;
            data = data.max(chunk.header.data_size());
            decoded = decoded.max(chunk.header.decoded_data_size());
        }
    }
    Ok((count, data, decoded))
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let path = args.path.as_str();
    if let Some(n) = args.write {
        return write_rows(path, n);
    }
    if args.memory {
        // The peak so far reset to the resident set now (Linux), so that `VmHWM` after the
        // read is the peak during it.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let (before, file_before) = (status_bytes("VmRSS:"), status_bytes("RssFile:"));
        let (batches, heap_peak) = counting_alloc::measure(|| arrow(path, Some(&args.columns), &args));
        let batches = batches?;
        let (after, code) = (status_bytes("VmHWM:"), status_bytes("RssFile:").saturating_sub(file_before));
        let (rows, column_bytes) = shape(&batches);
        // The reader's decoding threads and the calling thread, which decodes too.
        let decoding_threads = args.arrow_parallelism.unwrap_or(ArrowReaderOptions::default().parallelism) + 1;
        println!(
            "{}",
            json!({"case": "memory", "rows": rows, "column_bytes": column_bytes, "rss_before": before,
                   "peak_after": after, "file_pages_added": code, "heap_peak": heap_peak,
                   "decoding_threads": decoding_threads})
        );
        return Ok(());
    }
    let wanted = |case: &str| args.only.as_deref().is_none_or(|only| only == case);
    if wanted("plain") {
        let (seconds, (rows, record_bytes)) = best(args.rounds, || plain(path, args.parallelism))?;
        println!("{}", json!({"case": "plain", "seconds": seconds, "rows": rows, "record_bytes": record_bytes}));
    }
    for (case, projection) in [("all", None), ("projected", Some(args.columns.as_slice()))] {
        if !wanted(case) {
            continue;
        }
        let (seconds, batches) = best(args.rounds, || arrow(path, projection, &args))?;
        let (rows, column_bytes) = shape(&batches);
        let direct_chunks = DIRECT_CHUNKS.load(std::sync::atomic::Ordering::Relaxed);
        println!(
            "{}",
            json!({"case": case, "seconds": seconds, "rows": rows, "column_bytes": column_bytes, "direct_chunks": direct_chunks})
        );
    }
    if wanted("parse") {
        let (records, message) = records_in_memory(path)?;
        let (seconds, batches) = best(args.rounds, || parse(&records, &message, args.batch_size))?;
        let (rows, column_bytes) = shape(&batches);
        println!("{}", json!({"case": "parse", "seconds": seconds, "rows": rows, "column_bytes": column_bytes}));
    }
    if args.only.is_some() {
        return Ok(());
    }
    let (count, data, decoded) = chunks(path)?;
    println!("{}", json!({"case": "chunks", "chunks": count, "largest_data": data, "largest_decoded": decoded}));
    Ok(())
}

/// The `riegeli_bench.Row` type of `xtask/bench/python/bench_arrow.py`.
fn row_file() -> prost_reflect::prost_types::FileDescriptorProto {
    use prost_reflect::prost_types::field_descriptor_proto::{Label, Type};
    use prost_reflect::prost_types::{
        DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto,
    };
    let field = |name: &str, number: i32, ty: Type, label: Label, type_name: Option<&str>| FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        r#type: Some(ty as i32),
        label: Some(label as i32),
        type_name: type_name.map(Into::into),
        ..Default::default()
    };
    let kind = EnumDescriptorProto {
        name: Some("Kind".into()),
        value: ["KIND_UNSPECIFIED", "KIND_A", "KIND_B", "KIND_C"]
            .iter()
            .zip(0..)
            .map(|(name, number)| EnumValueDescriptorProto {
                name: Some((*name).into()),
                number: Some(number),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let inner = DescriptorProto {
        name: Some("Inner".into()),
        field: vec![
            field("x", 1, Type::Int64, Label::Optional, None),
            field("label", 2, Type::String, Label::Optional, None),
            field("score", 3, Type::Double, Label::Optional, None),
        ],
        ..Default::default()
    };
    let scalars = [
        ("id", Type::Int64),
        ("user_id", Type::Uint64),
        ("count", Type::Int32),
        ("flags", Type::Uint32),
        ("delta", Type::Sint32),
        ("offset", Type::Sint64),
        ("code", Type::Fixed32),
        ("hash", Type::Fixed64),
        ("small", Type::Sfixed32),
        ("big", Type::Sfixed64),
        ("score", Type::Double),
        ("weight", Type::Float),
        ("active", Type::Bool),
        ("timestamp_ms", Type::Int64),
        ("ratio", Type::Double),
        ("rank", Type::Int32),
    ];
    let mut fields: Vec<FieldDescriptorProto> =
        scalars.iter().zip(1..).map(|(&(name, ty), number)| field(name, number, ty, Label::Optional, None)).collect();
    fields.push(field("kind", 17, Type::Enum, Label::Optional, Some(".riegeli_bench.Kind")));
    fields.push(field("name", 18, Type::String, Label::Optional, None));
    fields.push(field("inner", 19, Type::Message, Label::Optional, Some(".riegeli_bench.Inner")));
    fields.push(field("values", 20, Type::Int64, Label::Repeated, None));
    let row = DescriptorProto { name: Some("Row".into()), field: fields, ..Default::default() };
    prost_reflect::prost_types::FileDescriptorProto {
        name: Some("riegeli_bench/row.proto".into()),
        package: Some("riegeli_bench".into()),
        syntax: Some("proto3".into()),
        message_type: vec![inner, row],
        enum_type: vec![kind],
        ..Default::default()
    }
}

/// Writes `n` seeded `Row`s to `path` (`transpose,zstd:3`, the type in the metadata).
fn write_rows(path: &str, n: u64) -> Result<()> {
    use prost_reflect::prost::Message;
    use prost_reflect::{DynamicMessage, Value};
    let file = row_file();
    let row = riegeli_arrow::message_type(vec![file.clone()], "riegeli_bench.Row")?;
    let inner_type = riegeli_arrow::message_type(vec![file.clone()], "riegeli_bench.Inner")?;
    let mut metadata = riegeli_records::RecordsMetadata::default();
    riegeli_records::set_record_type(&mut metadata, "riegeli_bench.Row", &[file])?;
    let mut options: riegeli_records::RecordWriterOptions = "transpose,zstd:3".parse()?;
    options.metadata = Some(metadata.encode_to_vec());
    let mut writer = riegeli_records::RecordWriter::new(std::io::BufWriter::new(File::create(path)?), options)?;
    let mut state = 31u64;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let unit = |bits: u64| (bits >> 11) as f64 / (1u64 << 53) as f64;
    let words: Vec<String> = (0..5000)
        .map(|_| {
            let len = 3 + next() % 9;
            (0..len).map(|_| char::from(b'a' + (next() % 26) as u8)).collect()
        })
        .collect();
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap, reason = "seeded values in range")]
    for i in 0..n {
        let mut m = DynamicMessage::new(row.clone());
        let mut set = |name: &str, value: Value| m.set_field_by_name(name, value);
        set("id", Value::I64(i as i64));
        set("user_id", Value::U64(next() % (1 << 40)));
        set("count", Value::I32(1 + (next() % 200) as i32));
        set("flags", Value::U32((next() % (1 << 16)) as u32));
        set("delta", Value::I32((next() % 4000) as i32 - 2000));
        set("offset", Value::I64((next() % (1 << 41)) as i64 - (1 << 40)));
        set("code", Value::U32(next() as u32));
        set("hash", Value::U64(next() >> 1));
        set("small", Value::I32((next() % (1 << 21)) as i32 - (1 << 20)));
        set("big", Value::I64((next() >> 1) as i64 - (1 << 62)));
        set("score", Value::F64(unit(next())));
        set("weight", Value::F32(unit(next()) as f32));
        set("active", Value::Bool(next() % 2 == 0));
        set("timestamp_ms", Value::I64(1_800_000_000_000 + i as i64 * 10 + (next() % 10) as i64));
        set("ratio", Value::F64(1.0 + (unit(next()) - 0.5) / 5.0));
        set("rank", Value::I32((next() % 100) as i32));
        set("kind", Value::EnumNumber((next() % 4) as i32));
        let (a, b) = ((next() % 5000) as usize, (next() % 5000) as usize);
        set("name", Value::String(format!("{} {}", words[a], words[b])));
        let mut inner = DynamicMessage::new(inner_type.clone());
        inner.set_field_by_name("x", Value::I64((next() % (1 << 30)) as i64));
        inner.set_field_by_name("label", Value::String(words[(next() % 64) as usize].clone()));
        inner.set_field_by_name("score", Value::F64(unit(next())));
        set("inner", Value::Message(inner));
        let len = next() % 9;
        set("values", Value::List((0..len).map(|_| Value::I64((next() % (1 << 24)) as i64)).collect()));
        writer.write_record(&m.encode_to_vec())?;
    }
    writer.close()?;
    Ok(())
}
