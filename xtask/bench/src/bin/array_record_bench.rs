//! Times ArrayRecord reads for `cargo xtask bench array-record`, which runs
//! the C++ reader on the same file and prints both.
//!
//! ```text
//! array_record_bench PATH [--records N | --megabytes MB] [--record-size BYTES]
//!                         [--options OPTS] [--repeat N] [--batch N] [--only NAME] [--sweep]
//! ```
//!
//! Writes PATH unless it exists already with the same parameters (they are
//! kept in PATH.params), and PATH.indices (`--batch` random indices, default
//! 10,000, one per line); then prints one line per measurement:
//! `rust <name> <seconds> <records> <payload bytes>`, the best of `--repeat`
//! runs (default 5), of the measurements whose name contains `--only`. Defaults: 200,000 records of 20 to 300 bytes,
//! `group_size:100,zstd:3`. The reads: `--batch` random indices in one call
//! and one by one (as a data source's `source[i]`), the first `--batch`
//! records one by one, and every record. With `--megabytes`, records are text-like with
//! sizes around `--record-size` (default 1024), as many as fill MB × 10^6 bytes.
//! Writing the file is not timed. `--sweep` times ranges of 1 to 64 chunks
//! instead (where parallel reads start to pay).
#![allow(clippy::print_stdout, reason = "the output is the report")]

use std::fs::File;
use std::time::Instant;

use riegeli_records::{ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter, PositionalFile, Selection};

type BoxError = Box<dyn std::error::Error>;

/// The parameters of the generated file.
#[derive(Debug, PartialEq)]
struct Params {
    /// Number of records, or (with `megabytes`) 0.
    records: u64,
    megabytes: u64,
    record_size: u64,
    options: String,
}

fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: array_record_bench PATH [options]")?;
    let mut params = Params { records: 200_000, megabytes: 0, record_size: 0, options: "group_size:100,zstd:3".into() };
    let mut repeat = 5usize;
    let mut batch = 10_000u64;
    let mut only = String::new();
    let mut sweep = false;
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} wants a value"));
        match flag.as_str() {
            "--records" => params.records = value()?.parse()?,
            "--megabytes" => params.megabytes = value()?.parse()?,
            "--record-size" => params.record_size = value()?.parse()?,
            "--options" => params.options = value()?,
            "--repeat" => repeat = value()?.parse()?,
            "--batch" => batch = value()?.parse()?,
            "--only" => only = value()?,
            "--sweep" => sweep = true,
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    if params.megabytes > 0 {
        params.records = 0;
        if params.record_size == 0 {
            params.record_size = 1024;
        }
    }
    let described = format!("{params:?}");
    let params_path = format!("{path}.params");
    if std::fs::read_to_string(&params_path).ok().as_deref() != Some(described.as_str()) {
        write_file(&path, &params)?;
        std::fs::write(&params_path, &described)?;
    }

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let open = |parallelism: usize| -> Result<ArrayRecordReader<PositionalFile>, BoxError> {
        // `parallelism` threads, the calling one included.
        let options = ArrayRecordReaderOptions { parallelism: parallelism - 1, ..Default::default() };
        Ok(ArrayRecordReader::open(&path, options)?)
    };
    let mut serial = open(1)?;
    let mut parallel = open(cores)?;
    let num_records = serial.num_records();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let indices: Vec<u64> = (0..batch).map(|_| xorshift(&mut state) % num_records.max(1)).collect();
    let text: Vec<String> = indices.iter().map(u64::to_string).collect();
    std::fs::write(format!("{path}.indices"), text.join("\n"))?;

    let time = |name: &str, f: &mut dyn FnMut() -> riegeli_records::Result<Vec<bytes::Bytes>>| {
        if !name.contains(only.as_str()) {
            return Ok(());
        }
        let mut best = f64::INFINITY;
        let mut shape = (0, 0);
        for _ in 0..repeat.max(1) {
            let start = Instant::now();
            let records = f()?;
            best = best.min(start.elapsed().as_secs_f64());
            shape = (records.len(), records.iter().map(|r| r.len()).sum::<usize>());
            // Dropped outside the timing.
            drop(records);
        }
        println!("rust {name} {best:.6} {} {}", shape.0, shape.1);
        Ok::<(), riegeli_records::Error>(())
    };
    if sweep {
        // Ranges of growing size from the middle of the file: where does the parallel read win?
        let per_chunk = num_records / serial.index().num_chunks.max(1) as u64;
        for chunks in [1u64, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64] {
            let start = num_records / 2;
            let range = start..(start + chunks * per_chunk).min(num_records);
            time(&format!("range_{chunks}_chunks_serial"), &mut || serial.read_batch(range.clone()))?;
            time(&format!("range_{chunks}_chunks_parallel_{cores}"), &mut || parallel.read_batch(range.clone()))?;
        }
        return Ok(());
    }
    let label = format!("random_{batch}");
    time(&format!("{label}_serial"), &mut || serial.read_batch(&indices))?;
    time(&format!("{label}_parallel_{cores}"), &mut || parallel.read_batch(&indices))?;
    // One record per call, as a data source's `source[i]` asks: random, then in order.
    time(&format!("{label}_one_by_one"), &mut || indices.iter().map(|&i| serial.read(i)).collect())?;
    let first: Vec<u64> = (0..batch.min(num_records)).collect();
    time(&format!("first_{}_one_by_one", first.len()), &mut || first.iter().map(|&i| serial.read(i)).collect())?;
    time("read_all_serial", &mut || serial.read_batch(Selection::All))?;
    time(&format!("read_all_parallel_{cores}"), &mut || parallel.read_batch(Selection::All))?;
    Ok(())
}

/// A small deterministic generator (no dependency for an example).
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn write_file(path: &str, params: &Params) -> Result<(), BoxError> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut writer = ArrayRecordWriter::new(File::create(path)?, params.options.parse()?)?;
    if params.megabytes == 0 {
        for i in 0..params.records {
            let len = 20 + xorshift(&mut state) % 280;
            let record: Vec<u8> = (0..len).map(|j| b"abcdefgh ijklmnop"[((j * 7 + i) % 17) as usize]).collect();
            writer.write_record(&record)?;
        }
    } else {
        // English-like text: words from a small vocabulary (zstd:3 compresses it about 3×).
        const WORDS: &[&str] = &[
            "the", "of", "and", "to", "in", "is", "record", "chunk", "file", "reader", "writer", "index", "block",
            "header", "riegeli", "array", "parallel", "decode", "compress", "value", "that", "with", "for", "as", "on",
            "by", "be", "this", "from", "or", "an", "are", "which", "at", "not", "it", "data", "size",
        ];
        let total = params.megabytes * 1_000_000;
        let mut written = 0u64;
        let mut record = Vec::new();
        while written < total {
            let len = params.record_size / 2 + xorshift(&mut state) % params.record_size.max(1);
            record.clear();
            while (record.len() as u64) < len {
                let word = WORDS[(xorshift(&mut state) % WORDS.len() as u64) as usize];
                record.extend_from_slice(word.as_bytes());
                record.push(if xorshift(&mut state).is_multiple_of(12) { b'\n' } else { b' ' });
            }
            record.truncate(len as usize);
            writer.write_record(&record)?;
            written += len;
        }
    }
    writer.close()?;
    Ok(())
}
