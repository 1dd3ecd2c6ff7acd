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
//! gives the reader N decoding threads (default 0, as the Python package's reader has).
//!
//! `arrow_bench FILE --memory [--columns a,b]`: one projected read in this process, holding its
//! batches: the resident set before it (`VmRSS`) and the peak after it (`VmHWM`), as one JSON
//! line.

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
}

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
            other if other.starts_with("--") => return Err(format!("unexpected argument {other:?}").into()),
            _ => parsed.path = arg,
        }
    }
    if parsed.path.is_empty() {
        return Err(
            "usage: arrow_bench FILE [--columns a,b] [--rounds R] [--batch-size N] [--only CASE] [--memory]".into()
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
fn arrow(path: &str, projection: Option<&[String]>, batch_size: usize, parallelism: usize) -> Result<Vec<RecordBatch>> {
    let options =
        ArrowReaderOptions { batch_size, projection: projection.map(<[String]>::to_vec), ..Default::default() };
    Ok(ArrowReader::new(open(path, parallelism)?, options)?.collect::<std::result::Result<Vec<_>, _>>()?)
}

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
    if args.memory {
        // The peak so far reset to the resident set now (Linux), so that `VmHWM` after the
        // read is the peak during it.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let before = status_bytes("VmRSS:");
        let batches = arrow(path, Some(&args.columns), args.batch_size, args.parallelism)?;
        let after = status_bytes("VmHWM:");
        let (rows, column_bytes) = shape(&batches);
        println!(
            "{}",
            json!({"case": "memory", "rows": rows, "column_bytes": column_bytes, "rss_before": before, "peak_after": after})
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
        let (seconds, batches) = best(args.rounds, || arrow(path, projection, args.batch_size, args.parallelism))?;
        let (rows, column_bytes) = shape(&batches);
        println!("{}", json!({"case": case, "seconds": seconds, "rows": rows, "column_bytes": column_bytes}));
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
