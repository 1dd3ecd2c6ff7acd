//! `riegeli bench`: a records_benchmark-style table (google/riegeli
//! `riegeli/records/tools/records_benchmark.cc`): compression ratio, write and
//! read speed, CPU and real time, for a list of writer option sets.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use riegeli_codec::varint;
use riegeli_records::{PositionalFile, RecordReader, RecordReaderOptions, RecordWriter, RecordWriterOptions};

use crate::exit::Usage;
use crate::input::InputFormat;
use crate::io::{self, PathArg};
use crate::tfrecord::TfCompression;

/// The option sets records_benchmark measures by default.
pub(crate) const DEFAULT_CONFIGS: &[&str] = &[
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Generate {
    /// English-like text lines of about 1 KiB.
    Text,
    /// Protobuf-like messages of about 200 bytes.
    Proto,
    /// Random bytes of 100 bytes.
    Random,
}

/// Arguments of `riegeli bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Take the records from this Riegeli file instead of generating them.
    #[arg(long)]
    input: Option<PathArg>,
    /// Take the records from this delimited stream (as `--save-records` writes) instead.
    #[arg(long, value_name = "FILE", conflicts_with = "input")]
    input_delimited: Option<PathBuf>,
    /// Kind of generated records.
    #[arg(long, value_enum, default_value_t = Generate::Text)]
    generate: Generate,
    /// Total payload to generate, in MB.
    #[arg(long, default_value_t = 50)]
    megabytes: u64,
    /// Option sets to measure (default: records_benchmark's 15).
    #[arg(long = "config")]
    configs: Vec<String>,
    /// Repetitions; the fastest is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Also save the records measured, as a delimited stream (each record's varint
    /// length, then its bytes), so other implementations can be timed on them.
    #[arg(long, value_name = "FILE")]
    save_records: Option<PathBuf>,
    /// Also time reading with this many background decoding threads
    /// (`RecordReaderOptions::parallelism`); 0: serial reads only.
    #[arg(long, value_name = "N", default_value_t = 0)]
    read_parallelism: usize,
    /// Also time writing with the destination's writes on a thread of their own
    /// (`RecordWriter::with_io_thread`), with the options as given and with
    /// `parallelism:N` added to them (unless they set a parallelism); 0: neither.
    #[arg(long, value_name = "N", default_value_t = 0)]
    write_parallelism: usize,
    /// Print the default option sets, one per line, and exit.
    #[arg(long)]
    list_configs: bool,
    /// Directory for the file each option set is written to and read back from.
    #[arg(long, value_name = "DIR", default_value_os_t = std::env::temp_dir())]
    dir: PathBuf,
    /// Also write the figures as JSON (one object per option set) to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Deterministic record generator.
pub(crate) fn generate(kind: Generate, total: usize) -> Vec<Vec<u8>> {
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

/// CPU time of this process (user + system), from /proc on Linux.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// One measured configuration.
pub(crate) struct Measurement {
    pub(crate) compressed: usize,
    pub(crate) write_real: Duration,
    pub(crate) write_cpu: Option<Duration>,
    pub(crate) read_real: Duration,
    pub(crate) read_cpu: Option<Duration>,
    /// The same read with background decoding threads (`--read-parallelism`).
    pub(crate) par_read_real: Option<Duration>,
    pub(crate) par_read_cpu: Option<Duration>,
    /// Writing with an I/O thread, then also with `parallelism` (`--write-parallelism`).
    pub(crate) io_write_real: Option<Duration>,
    pub(crate) io_par_write_real: Option<Duration>,
    pub(crate) io_par_write_cpu: Option<Duration>,
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
) -> Result<(Duration, Option<Duration>, u64)> {
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    let dest = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
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
pub(crate) fn measure(
    records: &[Vec<u8>],
    options: &RecordWriterOptions,
    repeat: u32,
    read_parallelism: usize,
    write_parallelism: usize,
    path: &Path,
) -> Result<Measurement> {
    let mut best: Option<Measurement> = None;
    let par_options =
        if options.parallelism() > 0 { options.clone() } else { options.clone().set_parallelism(write_parallelism) };
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
        read_all(RecordReader::new(PositionalFile::open(path)?))?;
        let read_real = t1.elapsed();
        let read_cpu = cpu_time().zip(cpu1).map(|(a, b)| a.saturating_sub(b));
        let (mut par_read_real, mut par_read_cpu) = (None, None);
        if read_parallelism > 0 {
            let cpu2 = cpu_time();
            let t2 = Instant::now();
            let options = RecordReaderOptions { parallelism: read_parallelism, ..Default::default() };
            read_all(RecordReader::with_options(PositionalFile::open(path)?, options))?;
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
    best.ok_or_else(|| anyhow::anyhow!("no measurement"))
}

/// Reads every record, touching each one's length.
fn read_all(mut reader: RecordReader<PositionalFile>) -> Result<usize> {
    let mut bytes = 0usize;
    while let Some(record) = reader.read_record()? {
        bytes += record.len();
    }
    Ok(std::hint::black_box(bytes))
}

pub(crate) fn bench(args: BenchArgs) -> Result<()> {
    if args.list_configs {
        for config in DEFAULT_CONFIGS {
            println!("{config}");
        }
        return Ok(());
    }
    let configs: Vec<String> = if args.configs.is_empty() {
        DEFAULT_CONFIGS.iter().map(|s| (*s).to_owned()).collect()
    } else {
        args.configs.clone()
    };
    // Bad option sets are usage errors before any work is done.
    let configs = configs
        .into_iter()
        .map(|config| {
            let options: RecordWriterOptions = config.parse().map_err(|e| Usage(format!("--config: {e}")))?;
            Ok((config, options))
        })
        .collect::<Result<Vec<_>>>()?;
    let records = match &args.input {
        Some(path) => {
            let name = io::name(path);
            let mut reader = RecordReader::new(io::open(path)?.with_progress(&name, true));
            let mut records = Vec::new();
            while let Some(record) = reader.read_record().with_context(|| name.clone())? {
                records.push(record.to_vec());
            }
            records
        }
        None => match &args.input_delimited {
            Some(path) => {
                let mut records = Vec::new();
                let input = crate::write::boxed_input(Some(path))?;
                crate::input::for_each_record(input, InputFormat::Delimited, TfCompression::None, |record| {
                    records.push(record.to_vec());
                    Ok(())
                })?;
                records
            }
            None => generate(args.generate, (args.megabytes * 1_000_000) as usize),
        },
    };
    let payload: usize = records.iter().map(Vec::len).sum();
    if let Some(path) = &args.save_records {
        let mut out = io::create(path)?;
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
    for (config, options) in &configs {
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
        let mut out = io::create(path)?;
        serde_json::to_writer_pretty(&mut out, &json)?;
        out.flush()?;
    }
    Ok(())
}
