//! The records_benchmark table (google/riegeli `riegeli/records/tools/records_benchmark.cc`) for
//! riegeli-rs: compression ratio, write and read speed, CPU and real time, for a list of writer
//! option sets. `cargo xtask bench records` runs it beside C++ and the `riegeli` 0.2.1 crate on the
//! same records (and beside a baseline build with `--baseline`); it was `riegeli bench` before it
//! left the user's binary.
//!
//! ```text
//! records_bench [--input FILE.riegeli | --input-delimited FILE | --generate text|proto|random]
//!               [--megabytes N] [--config OPTS]... [--repeat N] [--save-records FILE]
//!               [--read-parallelism N] [--write-parallelism N] [--dir DIR] [--json FILE]
//! records_bench --list-configs
//! ```
//!
//! Defaults: 50 MB of generated text records, records_benchmark's 15 option sets, the best of 3.
//! `--save-records` writes the records measured as a delimited stream (each record's varint
//! length, then its bytes), which `--input-delimited` reads, so other implementations can be
//! timed on them. `--read-parallelism N` also times reading with N background decoding threads;
//! `--write-parallelism N` also times writing with the destination's writes on a thread of their
//! own (`RecordWriter::with_io_thread`), with the options as given and with `parallelism:N`
//! added (unless they set one). Each option set's file is written to `--dir` (default: the
//! temporary directory) and read back. `--json` also writes the figures, one object per option
//! set. A bad argument or option set exits with status 2 before anything is measured.
#![allow(clippy::print_stdout, reason = "the output is the report")]
#![allow(clippy::print_stderr, reason = "usage errors go to stderr")]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use riegeli_codec::varint;
use riegeli_records::{PositionalFile, RecordReader, RecordReaderOptions, RecordWriter, RecordWriterOptions};

type BoxError = Box<dyn std::error::Error>;

/// The option sets records_benchmark measures by default.
const DEFAULT_CONFIGS: &[&str] = &[
    "uncompressed",
    "brotli:0",
    "brotli:6",
    "brotli:6,parallelism:10",
    "brotli:9",
    "zstd:1",
    "zstd:3",
    "zstd:15",
    "snappy",
    "snappy:2",
    "transpose,uncompressed",
    "transpose,brotli:6",
    "transpose,brotli:6,parallelism:10",
    "transpose,zstd:3",
    "transpose,snappy",
];

/// Generated record kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Generate {
    /// English-like text lines of about 1 KiB.
    Text,
    /// Protobuf-like messages of about 200 bytes.
    Proto,
    /// Random bytes of 100 bytes.
    Random,
}

/// Where the records come from.
enum Source {
    /// A Riegeli file.
    Riegeli(PathBuf),
    /// A delimited stream, as `--save-records` writes.
    Delimited(PathBuf),
    /// Generated, about this many bytes.
    Generated(Generate, u64),
}

/// The command line.
struct Args {
    source: Source,
    configs: Vec<(String, RecordWriterOptions)>,
    repeat: u32,
    save_records: Option<PathBuf>,
    read_parallelism: usize,
    write_parallelism: usize,
    list_configs: bool,
    dir: PathBuf,
    json: Option<PathBuf>,
}

/// A usage error: exit status 2, nothing measured.
#[derive(Debug)]
struct Usage(String);

/// Reads the command line.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Args, Usage> {
    let mut input = None;
    let mut delimited = None;
    let mut generate = Generate::Text;
    let mut megabytes = 50u64;
    let mut configs = Vec::new();
    let mut parsed = Args {
        source: Source::Generated(Generate::Text, 0),
        configs: Vec::new(),
        repeat: 3,
        save_records: None,
        read_parallelism: 0,
        write_parallelism: 0,
        list_configs: false,
        dir: std::env::temp_dir(),
        json: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--list-configs" {
            parsed.list_configs = true;
            continue;
        }
        let value = args.next().ok_or_else(|| Usage(format!("{arg} needs a value")))?;
        let number = |what: &str| value.parse::<u64>().map_err(|_| Usage(format!("{what} {value:?}: not a number")));
        match arg.as_str() {
            "--input" => input = Some(PathBuf::from(&value)),
            "--input-delimited" => delimited = Some(PathBuf::from(&value)),
            "--generate" => {
                generate = match value.as_str() {
                    "text" => Generate::Text,
                    "proto" => Generate::Proto,
                    "random" => Generate::Random,
                    _ => return Err(Usage(format!("--generate {value:?}: expected text, proto or random"))),
                }
            }
            "--megabytes" => megabytes = number(&arg)?,
            "--config" => configs.push(value),
            "--repeat" => {
                parsed.repeat = u32::try_from(number(&arg)?)
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| Usage(format!("--repeat {value}: expected 1 or more")))?;
            }
            "--save-records" => parsed.save_records = Some(PathBuf::from(&value)),
            "--read-parallelism" => parsed.read_parallelism = usize::try_from(number(&arg)?).unwrap_or(usize::MAX),
            "--write-parallelism" => parsed.write_parallelism = usize::try_from(number(&arg)?).unwrap_or(usize::MAX),
            "--dir" => parsed.dir = PathBuf::from(&value),
            "--json" => parsed.json = Some(PathBuf::from(&value)),
            _ => return Err(Usage(format!("unexpected argument {arg:?}"))),
        }
    }
    parsed.source = match (input, delimited) {
        (Some(_), Some(_)) => return Err(Usage("--input and --input-delimited exclude each other".to_owned())),
        (Some(path), None) => Source::Riegeli(path),
        (None, Some(path)) => Source::Delimited(path),
        (None, None) => Source::Generated(generate, megabytes.saturating_mul(1_000_000)),
    };
    if configs.is_empty() {
        configs = DEFAULT_CONFIGS.iter().map(|s| (*s).to_owned()).collect();
    }
    // Bad option sets are usage errors before any work is done.
    parsed.configs = configs
        .into_iter()
        .map(|config| match config.parse::<RecordWriterOptions>() {
            Ok(options) => Ok((config, options)),
            Err(e) => Err(Usage(format!("--config {config}: {e}"))),
        })
        .collect::<Result<_, _>>()?;
    Ok(parsed)
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(Usage(message)) => {
            eprintln!("records_bench: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("records_bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The records of a delimited stream: each one's varint length, then its bytes.
fn read_delimited(path: &Path) -> Result<Vec<Vec<u8>>, BoxError> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rest = bytes.as_slice();
    let mut records = Vec::new();
    while !rest.is_empty() {
        let (len, used) = varint::decode_u64(rest).map_err(|e| format!("{}: {e}", path.display()))?;
        rest = rest.get(used..).unwrap_or_default();
        let record = usize::try_from(len)
            .ok()
            .and_then(|len| rest.get(..len))
            .ok_or_else(|| format!("{}: a record of {len} bytes, {} bytes left", path.display(), rest.len()))?;
        rest = rest.get(record.len()..).unwrap_or_default();
        records.push(record.to_vec());
    }
    Ok(records)
}

/// Deterministic record generator.
fn generate(kind: Generate, total: usize) -> Vec<Vec<u8>> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    const WORDS: &[&str] = &[
        "the",
        "of",
        "and",
        "to",
        "in",
        "a",
        "is",
        "that",
        "for",
        "it",
        "as",
        "was",
        "with",
        "be",
        "by",
        "on",
        "not",
        "he",
        "this",
        "are",
        "or",
        "his",
        "from",
        "at",
        "which",
        "but",
        "have",
        "an",
        "had",
        "they",
        "record",
        "chunk",
        "block",
        "header",
        "stream",
        "position",
        "compression",
        "transpose",
        "riegeli",
    ];
    let mut records = Vec::new();
    let mut size = 0;
    while size < total {
        let record = match kind {
            Generate::Text => {
                let mut line = String::new();
                while line.len() < 1024 {
                    line.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
                    line.push(' ');
                }
                line.into_bytes()
            }
            Generate::Random => (0..100).map(|_| next() as u8).collect(),
            Generate::Proto => {
                let mut m = Vec::new();
                let id = records.len() as u64;
                // field 1: varint id; field 2: timestamp-like; field 3: string; field 4: nested message.
                m.push(0x08);
                varint::encode_u64(id, &mut m);
                m.push(0x10);
                varint::encode_u64(1_700_000_000_000 + id * 1000 + next() % 1000, &mut m);
                let name = WORDS[(next() % WORDS.len() as u64) as usize];
                m.push(0x1a);
                varint::encode_u64(name.len() as u64, &mut m);
                m.extend_from_slice(name.as_bytes());
                let mut inner = Vec::new();
                for _ in 0..(next() % 8 + 4) {
                    inner.push(0x08);
                    varint::encode_u64(next() % 300, &mut inner);
                    inner.push(0x15);
                    inner.extend_from_slice(&((next() % 1000) as f32 / 10.0).to_le_bytes());
                    let w = WORDS[(next() % WORDS.len() as u64) as usize];
                    inner.push(0x1a);
                    varint::encode_u64(w.len() as u64, &mut inner);
                    inner.extend_from_slice(w.as_bytes());
                }
                m.push(0x22);
                varint::encode_u64(inner.len() as u64, &mut m);
                m.extend_from_slice(&inner);
                m
            }
        };
        size += record.len();
        records.push(record);
    }
    records
}

#[path = "../proc_cpu.rs"]
mod proc_cpu;
use proc_cpu::process_cpu as cpu_time;

/// One measured configuration.
struct Measurement {
    compressed: usize,
    write_real: Duration,
    write_cpu: Option<Duration>,
    read_real: Duration,
    read_cpu: Option<Duration>,
    /// The same read with background decoding threads (`--read-parallelism`).
    par_read_real: Option<Duration>,
    par_read_cpu: Option<Duration>,
    /// Writing with an I/O thread, then also with `parallelism` (`--write-parallelism`).
    io_write_real: Option<Duration>,
    io_par_write_real: Option<Duration>,
    io_par_write_cpu: Option<Duration>,
}

/// How a measured write is done.
#[derive(Clone, Copy)]
enum WriteMode {
    Caller,
    IoThread,
}

/// Writes `records` to a new file at `path`: real and CPU time, and the file size.
fn timed_write(
    records: &[Vec<u8>],
    options: &RecordWriterOptions,
    mode: WriteMode,
    path: &Path,
) -> Result<(Duration, Option<Duration>, u64), BoxError> {
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    let dest = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut writer = match mode {
        WriteMode::Caller => RecordWriter::new(dest, options.clone())?,
        WriteMode::IoThread => RecordWriter::with_io_thread(dest, options.clone())?,
    };
    for record in records {
        writer.write_record(record)?;
    }
    let size = writer.close()?.metadata()?.len();
    let real = t0.elapsed();
    Ok((real, cpu_time().zip(cpu0).map(|(a, b)| a.saturating_sub(b)), size))
}

/// Writes `records` to `path` and reads them back, `repeat` times; keeps the
/// fastest of each. Like records_benchmark, it goes through a real file (the
/// writer and reader do their own buffering); the caller removes it.
fn measure(
    records: &[Vec<u8>],
    options: &RecordWriterOptions,
    repeat: u32,
    read_parallelism: usize,
    write_parallelism: usize,
    path: &Path,
) -> Result<Measurement, BoxError> {
    let mut best: Option<Measurement> = None;
    let par_options = if options.parallelism > 0 {
        options.clone()
    } else {
        RecordWriterOptions { parallelism: write_parallelism, ..options.clone() }
    };
    for _ in 0..repeat.max(1) {
        // The threaded writes first: the file read back is the plain writer's
        // (they write the same bytes; the tests check that).
        let (mut io_write_real, mut io_par_write_real, mut io_par_write_cpu) = (None, None, None);
        if write_parallelism > 0 {
            io_write_real = Some(timed_write(records, options, WriteMode::IoThread, path)?.0);
            let (real, cpu, _) = timed_write(records, &par_options, WriteMode::IoThread, path)?;
            (io_par_write_real, io_par_write_cpu) = (Some(real), cpu);
        }
        let (write_real, write_cpu, size) = timed_write(records, options, WriteMode::Caller, path)?;
        let cpu1 = cpu_time();
        let t1 = Instant::now();
        read_all(RecordReader::new(PositionalFile::from(std::fs::File::open(path)?)))?;
        let read_real = t1.elapsed();
        let read_cpu = cpu_time().zip(cpu1).map(|(a, b)| a.saturating_sub(b));
        let (mut par_read_real, mut par_read_cpu) = (None, None);
        if read_parallelism > 0 {
            let cpu2 = cpu_time();
            let t2 = Instant::now();
            let options = RecordReaderOptions { parallelism: read_parallelism, ..Default::default() };
            read_all(RecordReader::with_options(PositionalFile::from(std::fs::File::open(path)?), options))?;
            par_read_real = Some(t2.elapsed());
            par_read_cpu = cpu_time().zip(cpu2).map(|(a, b)| a.saturating_sub(b));
        }
        let m = Measurement {
            compressed: size as usize,
            write_real,
            write_cpu,
            read_real,
            read_cpu,
            par_read_real,
            par_read_cpu,
            io_write_real,
            io_par_write_real,
            io_par_write_cpu,
        };
        best = Some(match best {
            Some(b) => Measurement {
                compressed: m.compressed,
                write_real: b.write_real.min(m.write_real),
                write_cpu: b.write_cpu.min(m.write_cpu),
                read_real: b.read_real.min(m.read_real),
                read_cpu: b.read_cpu.min(m.read_cpu),
                par_read_real: b.par_read_real.min(m.par_read_real),
                par_read_cpu: b.par_read_cpu.min(m.par_read_cpu),
                io_write_real: b.io_write_real.min(m.io_write_real),
                io_par_write_real: b.io_par_write_real.min(m.io_par_write_real),
                io_par_write_cpu: b.io_par_write_cpu.min(m.io_par_write_cpu),
            },
            None => m,
        });
    }
    best.ok_or_else(|| "no measurement".into())
}

/// Reads every record, touching each one's length.
fn read_all(mut reader: RecordReader<PositionalFile>) -> Result<usize, BoxError> {
    let mut bytes = 0usize;
    while let Some(record) = reader.read_record()? {
        bytes += record.len();
    }
    Ok(std::hint::black_box(bytes))
}

fn run(args: &Args) -> Result<(), BoxError> {
    if args.list_configs {
        for config in DEFAULT_CONFIGS {
            println!("{config}");
        }
        return Ok(());
    }
    let records = match &args.source {
        Source::Riegeli(path) => {
            let mut reader = RecordReader::new(PositionalFile::from(std::fs::File::open(path)?));
            let mut records = Vec::new();
            while let Some(record) = reader.read_record().map_err(|e| format!("{}: {e}", path.display()))? {
                records.push(record.to_vec());
            }
            records
        }
        Source::Delimited(path) => read_delimited(path)?,
        Source::Generated(kind, bytes) => generate(*kind, usize::try_from(*bytes)?),
    };
    let payload: usize = records.iter().map(Vec::len).sum();
    if let Some(path) = &args.save_records {
        let mut out = BufWriter::new(File::create(path).map_err(|e| format!("{}: {e}", path.display()))?);
        let mut prefix = Vec::with_capacity(10);
        for record in &records {
            prefix.clear();
            varint::encode_u64(record.len() as u64, &mut prefix);
            out.write_all(&prefix)?;
            out.write_all(record)?;
        }
        out.flush()?;
    }
    let mut json = Vec::new();
    println!(
        "{} records, {:.1} MB payload; MB/s = 10^6 payload bytes per real second; best of {}",
        records.len(),
        payload as f64 / 1e6,
        args.repeat
    );
    println!(
        "{:<36} {:>9} {:>10} {:>10} {:>10} {:>10} {:>14} {:>14} {:>14}",
        "options",
        "ratio %",
        "write MB/s",
        "write cpu",
        "read MB/s",
        "read cpu",
        "par read MB/s",
        "io write MB/s",
        "io+par MB/s"
    );
    for (config, options) in &args.configs {
        let path = args.dir.join(format!("riegeli_bench_{}.riegeli", std::process::id()));
        let m = measure(&records, options, args.repeat, args.read_parallelism, args.write_parallelism, &path);
        let _ = std::fs::remove_file(&path);
        let m = m?;
        let mbps = |d: Duration| payload as f64 / 1e6 / d.as_secs_f64().max(1e-9);
        let cpu = |c: Option<Duration>, r: Duration| {
            c.map_or("-".to_owned(), |c| format!("{:.0}%", 100.0 * c.as_secs_f64() / r.as_secs_f64().max(1e-9)))
        };
        let optional = |d: Option<Duration>| d.map_or("-".to_owned(), |d| format!("{:.0}", mbps(d)));
        println!(
            "{:<36} {:>9.2} {:>10.0} {:>10} {:>10.0} {:>10} {:>14} {:>14} {:>14}",
            config,
            100.0 * m.compressed as f64 / payload.max(1) as f64,
            mbps(m.write_real),
            cpu(m.write_cpu, m.write_real),
            mbps(m.read_real),
            cpu(m.read_cpu, m.read_real),
            optional(m.par_read_real),
            optional(m.io_write_real),
            optional(m.io_par_write_real),
        );
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        json.push(serde_json::json!({
            "config": config,
            "records": records.len(),
            "payload_bytes": payload,
            "file_bytes": m.compressed,
            "write_real_s": m.write_real.as_secs_f64(),
            "write_cpu_s": secs(m.write_cpu),
            "read_real_s": m.read_real.as_secs_f64(),
            "read_cpu_s": secs(m.read_cpu),
            "par_read_real_s": secs(m.par_read_real),
            "par_read_cpu_s": secs(m.par_read_cpu),
            "read_parallelism": args.read_parallelism,
            "io_write_real_s": secs(m.io_write_real),
            "io_par_write_real_s": secs(m.io_par_write_real),
            "io_par_write_cpu_s": secs(m.io_par_write_cpu),
            "write_parallelism": args.write_parallelism,
        }));
    }
    if let Some(path) = &args.json {
        let mut out = BufWriter::new(File::create(path).map_err(|e| format!("{}: {e}", path.display()))?);
        serde_json::to_writer_pretty(&mut out, &json)?;
        out.flush()?;
    }
    Ok(())
}
