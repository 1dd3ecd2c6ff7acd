//! The riegeli-rs 0.2.1 column of `cargo xtask bench records`.
//!
//! `riegeli_rs_table RECORDS.delimited REPEAT JSON_OUT DIR CONFIG...` reads the
//! records that `riegeli bench --save-records` wrote, and for each option set
//! (the C++ option grammar, mapped onto riegeli 0.2.1's `WriterOptions`) times
//! writing them to a file in DIR and reading them back, as `riegeli bench`
//! times riegeli-rs: best of REPEAT, real and CPU time. riegeli 0.2.1 does not
//! buffer its writes, so it gets a 1 MiB `BufWriter`, as a user would give it;
//! it reads a plain `File` (a `BufReader` would be emptied by its seeks). The figures go to JSON_OUT in `riegeli bench --json`'s shape.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::{Duration, Instant};

use riegeli::{CompressionType, ReaderOptions, RecordReader, RecordWriter, WriterOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [records_path, repeat, json_out, dir, configs @ ..] = args.as_slice() else {
        eprintln!("usage: riegeli_rs_table RECORDS.delimited REPEAT JSON_OUT DIR CONFIG...");
        std::process::exit(2);
    };
    let records = read_delimited(&std::fs::read(records_path).expect("read records"));
    let repeat: u32 = repeat.parse().expect("REPEAT");
    let payload: usize = records.iter().map(Vec::len).sum();
    let mut out = Vec::new();
    for config in configs {
        let Some(options) = options_for(config) else {
            eprintln!("riegeli 0.2.1: {config}: not supported, skipped");
            continue;
        };
        let path = Path::new(dir).join(format!("riegeli_rs_bench_{}.riegeli", std::process::id()));
        let m = measure(&records, &options, repeat, &path);
        let _ = std::fs::remove_file(&path);
        eprintln!(
            "riegeli 0.2.1 {config:<36} write {:>7.0} MB/s  read {:>7.0} MB/s",
            payload as f64 / 1e6 / m.write_real.as_secs_f64(),
            payload as f64 / 1e6 / m.read_real.as_secs_f64()
        );
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        out.push(serde_json::json!({
            "config": config,
            "records": records.len(),
            "payload_bytes": payload,
            "file_bytes": m.file_bytes,
            "write_real_s": m.write_real.as_secs_f64(),
            "write_cpu_s": secs(m.write_cpu),
            "read_real_s": m.read_real.as_secs_f64(),
            "read_cpu_s": secs(m.read_cpu),
        }));
    }
    std::fs::write(json_out, serde_json::to_vec_pretty(&out).expect("json")).expect("write json");
}

/// The records of a delimited stream (varint length, then bytes).
fn read_delimited(mut data: &[u8]) -> Vec<Vec<u8>> {
    let mut records = Vec::new();
    while !data.is_empty() {
        let mut len = 0u64;
        let mut shift = 0;
        loop {
            let (&byte, rest) = data.split_first().expect("truncated varint");
            data = rest;
            len |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte < 0x80 {
                break;
            }
        }
        let (record, rest) = data.split_at(usize::try_from(len).expect("length"));
        records.push(record.to_vec());
        data = rest;
    }
    records
}

/// riegeli 0.2.1 options for a C++ option string, with the C++ default chunk
/// sizes (4 KiB uncompressed, 1 MiB compressed). `parallelism` is dropped:
/// riegeli 0.2.1 encodes on the calling thread only.
fn options_for(config: &str) -> Option<WriterOptions> {
    let mut options = WriterOptions::new();
    let mut compression = CompressionType::Brotli;
    let mut level = Some(6);
    for token in config.split(',').filter(|t| !t.is_empty()) {
        let (name, value) = token.split_once(':').map_or((token, None), |(n, v)| (n, Some(v)));
        match name {
            "transpose" => options = options.transpose(value != Some("false")),
            "uncompressed" => (compression, level) = (CompressionType::None, None),
            "brotli" => {
                (compression, level) = (CompressionType::Brotli, Some(value.map_or(Some(6), |v| v.parse().ok())?))
            }
            "zstd" => (compression, level) = (CompressionType::Zstd, Some(value.map_or(Some(3), |v| v.parse().ok())?)),
            "snappy" => (compression, level) = (CompressionType::Snappy, None),
            "parallelism" => {}
            _ => return None,
        }
    }
    let chunk_size = if compression == CompressionType::None { 4 << 10 } else { 1 << 20 };
    options = options.compression(compression).chunk_size(chunk_size);
    if let Some(level) = level {
        options = options.compression_level(level);
    }
    Some(options)
}

struct Measurement {
    file_bytes: usize,
    write_real: Duration,
    write_cpu: Option<Duration>,
    read_real: Duration,
    read_cpu: Option<Duration>,
}

fn measure(records: &[Vec<u8>], options: &WriterOptions, repeat: u32, path: &Path) -> Measurement {
    let mut best: Option<Measurement> = None;
    for _ in 0..repeat.max(1) {
        let cpu0 = cpu_time();
        let t0 = Instant::now();
        let dest = BufWriter::with_capacity(1 << 20, File::create(path).expect("create"));
        let mut writer = RecordWriter::new(dest, options.clone()).expect("writer");
        for record in records {
            writer.write_record(record).expect("write");
        }
        writer.close().expect("close");
        let write_real = t0.elapsed();
        let write_cpu = cpu_time().zip(cpu0).map(|(a, b)| a.saturating_sub(b));
        let cpu1 = cpu_time();
        let t1 = Instant::now();
        let source = File::open(path).expect("open");
        let mut reader = RecordReader::new(source, ReaderOptions::new()).expect("reader");
        let mut bytes = 0usize;
        while let Some(record) = reader.read_record().expect("read") {
            bytes += record.len();
        }
        let read_real = t1.elapsed();
        let read_cpu = cpu_time().zip(cpu1).map(|(a, b)| a.saturating_sub(b));
        assert_eq!(bytes, records.iter().map(Vec::len).sum::<usize>(), "riegeli 0.2.1 lost bytes");
        let file_bytes = usize::try_from(std::fs::metadata(path).expect("stat").len()).expect("size");
        let m = Measurement { file_bytes, write_real, write_cpu, read_real, read_cpu };
        best = Some(match best {
            Some(b) => Measurement {
                file_bytes: m.file_bytes,
                write_real: b.write_real.min(m.write_real),
                write_cpu: b.write_cpu.min(m.write_cpu),
                read_real: b.read_real.min(m.read_real),
                read_cpu: b.read_cpu.min(m.read_cpu),
            },
            None => m,
        });
    }
    best.expect("at least one repetition")
}

#[path = "../../../src/proc_cpu.rs"]
mod proc_cpu;
use proc_cpu::process_cpu as cpu_time;
