//! Times ArrayRecord reads for `cargo xtask bench array-record`, which runs
//! the C++ reader on the same file and prints both.
//!
//! `array_record_bench PATH`: writes PATH (200,000 records, `group_size:100,zstd:3`)
//! and PATH.indices (10,000 random indices, one per line), then prints one line
//! per measurement: `rust <name> <seconds> <records>` (best of 5 runs).
#![allow(clippy::print_stdout, reason = "the output is the report")]

use std::fs::File;
use std::io::BufReader;
use std::time::Instant;

use riegeli_records::{ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter};

const NUM_RECORDS: u64 = 200_000;
const BATCH: u64 = 10_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: array_record_bench PATH")?;
    // A small deterministic generator (no dependency for an example).
    let mut state = 0x9e3779b97f4a7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut writer = ArrayRecordWriter::new(File::create(&path)?, "group_size:100,zstd:3".parse()?)?;
    for i in 0..NUM_RECORDS {
        let len = 20 + next() % 280;
        let record: Vec<u8> = (0..len).map(|j| b"abcdefgh ijklmnop"[((j * 7 + i) % 17) as usize]).collect();
        writer.write_record(&record)?;
    }
    writer.close()?;
    let indices: Vec<u64> = (0..BATCH).map(|_| next() % NUM_RECORDS).collect();
    let text: Vec<String> = indices.iter().map(u64::to_string).collect();
    std::fs::write(format!("{path}.indices"), text.join("\n"))?;

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let open = |parallelism: usize| -> Result<ArrayRecordReader<BufReader<File>>, Box<dyn std::error::Error>> {
        let options = ArrayRecordReaderOptions { parallelism: Some(parallelism), ..Default::default() };
        Ok(ArrayRecordReader::with_options(BufReader::new(File::open(&path)?), options)?)
    };
    let mut serial = open(1)?;
    let mut parallel = open(cores)?;
    let time = |name: &str, records: u64, f: &mut dyn FnMut() -> riegeli_records::Result<usize>| {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = Instant::now();
            let n = f()?;
            best = best.min(start.elapsed().as_secs_f64());
            assert_eq!(n as u64, records);
        }
        println!("rust {name} {best:.6} {records}");
        Ok::<(), riegeli_records::Error>(())
    };
    time("random_10k_serial", BATCH, &mut || serial.read_indices(&indices).map(|r| r.len()))?;
    time(&format!("random_10k_parallel_{cores}"), BATCH, &mut || parallel.read_parallel(&indices).map(|r| r.len()))?;
    time("read_all_serial", NUM_RECORDS, &mut || serial.read_all().map(|r| r.len()))?;
    time(&format!("read_all_parallel_{cores}"), NUM_RECORDS, &mut || parallel.read_all_parallel().map(|r| r.len()))?;
    Ok(())
}
