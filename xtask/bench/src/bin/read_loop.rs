//! Times a serial read of records from memory (per-record cost): `cargo run --release -p riegeli-bench
//! --bin read_loop -- [record size] [count] [options]`.

#![allow(clippy::print_stdout, reason = "the output is the report")]

use std::io::Cursor;
use std::time::Instant;

use riegeli_records::{RecordReader, RecordWriter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let size: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let count: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let options = args.get(3).map_or("uncompressed,chunk_size:1M", String::as_str);
    let mut writer = RecordWriter::new(Vec::new(), options.parse()?)?;
    let record = vec![b'x'; size];
    for _ in 0..count {
        writer.write_record(&record)?;
    }
    let file = writer.close()?;
    for _ in 0..5 {
        let start = Instant::now();
        let mut reader = RecordReader::new(Cursor::new(&file[..]));
        let mut n = 0usize;
        let mut bytes = 0usize;
        if std::env::var_os("BYTES").is_some() {
            while let Some(record) = reader.read_record()? {
                n += 1;
                bytes += record.len();
            }
        } else {
            while let Some(record) = reader.read_record_ref()? {
                n += 1;
                bytes += record.len();
            }
        }
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(n, count);
        println!(
            "{:.1} M records/s, {:.0} MB/s ({bytes} bytes)",
            n as f64 / secs / 1e6,
            file.len() as f64 / secs / 1e6
        );
    }
    Ok(())
}
