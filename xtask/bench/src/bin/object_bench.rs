//! Reading from S3 with latency, against reading the same files from local disk: run by
//! `cargo xtask bench objects` (which starts an S3-compatible server and sets `AWS_ENDPOINT`,
//! the credentials and `RIEGELI_TEST_S3_BUCKET`).
//!
//! Writes a ~100 MB ArrayRecord file (`group_size:100,zstd:3`, 1 KiB records that do not
//! compress) and a ~100 MB Riegeli file of the same records, uploads both, and reads them
//! through a TCP proxy that delays every request by `--latency-ms` (default 20; 0: no proxy): a
//! 10,000-index random batch (requests, bytes against the bytes of the chunks it touches plus
//! the footer, records/s) and a sequential read (MB/s), next to the same reads of the local
//! files. Prints a markdown table. `--servers http` (or `s3`) leaves the other server out;
//! `--only cache` (or `write`) runs that row alone (the shuffled epochs with the local chunk
//! cache; writing an object), for working on one of them. `--in-flight N` sets the shuffled
//! epochs' requests in flight (`FetchConfig::max_in_flight`, default 16); their first epoch's
//! cell gives its bound, N ÷ latency × the records a request brought.
#![allow(clippy::print_stdout, reason = "the output is the report")]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::ObjectStoreExt;
use object_store::path::Path;
use riegeli_object_store::{Destination, FetchConfig, Location, ObjectSink, ObjectSource, UploadConfig};
use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter, ChunkReadOptions, ChunkReader, RecordReader,
    RecordReaderOptions, RecordWriter,
};

const RECORD: usize = 1024;

/// The rows to run: `--only cache|write`, or all of them.
fn only() -> Option<String> {
    std::env::args().skip_while(|a| a != "--only").nth(1)
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A proxy to `target` that holds each request for `delay`: the first bytes a client sends
/// after the server last answered on that connection (a request's body, an upload's part,
/// then streams through undelayed); with no delay, `target` itself (what the proxy costs is
/// then measured too).
fn delaying_proxy(target: String, delay: Duration) -> std::io::Result<String> {
    stalling_proxy(target, delay, None)
}

/// [`delaying_proxy`], also holding the 5th request in every 50 (the 5th, the 55th, ...)
/// for `stall` more.
fn stalling_proxy(target: String, delay: Duration, stall: Option<Duration>) -> std::io::Result<String> {
    if delay.is_zero() && stall.is_none() {
        return Ok(target);
    }
    let count = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&target) else { continue };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (Ok(mut client_r), Ok(mut server_w)) = (client.try_clone(), server.try_clone()) else { continue };
            let (mut server_r, mut client_w) = (server, client);
            let count = Arc::clone(&count);
            // Whether the server has answered since the client's last bytes: the next ones
            // begin a request.
            let answered = Arc::new(std::sync::atomic::AtomicBool::new(true));
            let answered_w = Arc::clone(&answered);
            let _ = std::thread::Builder::new().name(PROXY_THREAD.to_owned()).spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = client_r.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if answered.swap(false, std::sync::atomic::Ordering::Relaxed) {
                        std::thread::sleep(delay);
                        if let Some(stall) = stall
                            && count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 50 == 4
                        {
                            std::thread::sleep(stall);
                        }
                    }
                    if server_w.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = server_w.shutdown(std::net::Shutdown::Write);
            });
            let _ = std::thread::Builder::new().name(PROXY_THREAD.to_owned()).spawn(move || {
                // Large reads: `io::copy`'s 8 KiB buffer made the proxy, not the
                // client, the bound near 1 GB/s.
                let mut buf = vec![0u8; 1 << 20];
                while let Ok(n) = server_r.read(&mut buf) {
                    answered_w.store(true, std::sync::atomic::Ordering::Relaxed);
                    if n == 0 || client_w.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = client_w.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    Ok(format!("127.0.0.1:{port}"))
}

/// Deterministic incompressible records.
fn record(i: u64) -> Vec<u8> {
    let mut state = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..RECORD)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Empties the page cache (root only): `true` if it did.
fn drop_caches() -> bool {
    let synced = std::process::Command::new("sync").status().is_ok_and(|s| s.success());
    synced && std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// The name of the delaying proxy's copying threads (their CPU time is the rig's, not the writer's).
const PROXY_THREAD: &str = "delaying-proxy";

#[path = "../proc_cpu.rs"]
mod proc_cpu;

/// CPU seconds so far: the machine's (busy, all cores), the S3 server process's, and this
/// process's with and without the proxy's threads. Zeros where `/proc` has none.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    machine: f64,
    server: f64,
    proxy: f64,
    process: f64,
}

impl Cpu {
    fn now() -> Self {
        let seconds = |used: Option<std::time::Duration>| used.map_or(0.0, |d| d.as_secs_f64());
        // The CPU of the tasks named `name` among the `stat` files of `dir`'s entries.
        let named = |dir: &str, name: &str| -> f64 {
            let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
            let tasks = entries.filter_map(|entry| proc_cpu::task_cpu(&entry.path().join("stat")));
            tasks.filter(|(comm, _)| comm == name).map(|(_, used)| used.as_secs_f64()).sum()
        };
        Self {
            machine: seconds(proc_cpu::machine_busy()),
            server: named("/proc", "s3-server"),
            proxy: named("/proc/self/task", PROXY_THREAD),
            process: seconds(proc_cpu::process_cpu()),
        }
    }

    /// What was used since `before`. (The proxy's threads that ended since are not
    /// counted: each connection's pair lives as long as the connection.)
    fn since(self, before: Self) -> Self {
        Self {
            machine: self.machine - before.machine,
            server: self.server - before.server,
            proxy: self.proxy - before.proxy,
            process: self.process - before.process,
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let megabytes = arg("--megabytes", 100);
    let latency = Duration::from_millis(arg("--latency-ms", 20));
    let rounds = arg("--rounds", 3) as usize;
    let n = megabytes * 1_000_000 / RECORD as u64;
    let dir = PathBuf::from(std::env::var("RIEGELI_BENCH_DIR").unwrap_or_else(|_| "target/object-bench".into()));
    std::fs::create_dir_all(&dir)?;
    let (ar_path, rr_path) = (dir.join("bench.array_record"), dir.join("bench.riegeli"));
    // Written again when `--megabytes` changes (the stamp holds the record count).
    let stamp = dir.join("bench.records");
    if !ar_path.exists() || !rr_path.exists() || std::fs::read_to_string(&stamp).ok() != Some(n.to_string()) {
        let mut ar = ArrayRecordWriter::new(std::fs::File::create(&ar_path)?, "group_size:100,zstd:3".parse()?)?;
        let mut rr = RecordWriter::new(std::fs::File::create(&rr_path)?, "zstd:3".parse()?)?;
        for i in 0..n {
            let r = record(i);
            ar.write_record(&r)?;
            rr.write_record(&r)?;
        }
        ar.close()?;
        rr.close()?;
        std::fs::write(&stamp, n.to_string())?;
    }
    let bucket = std::env::var("RIEGELI_TEST_S3_BUCKET")?;
    let endpoint = std::env::var("AWS_ENDPOINT")?;
    let s3_proxy = delaying_proxy(endpoint.trim_start_matches("http://").to_owned(), latency)?;
    let s3: Arc<dyn object_store::ObjectStore> = Arc::new(
        object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(&bucket)
            .with_endpoint(format!("http://{s3_proxy}"))
            .build()?,
    );
    let direct = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(&bucket).build()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let http_root = PathBuf::from(std::env::var("RIEGELI_TEST_HTTP_ROOT")?);
    for path in [&ar_path, &rr_path] {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("bench");
        runtime.block_on(direct.put(&Path::from(name), std::fs::read(path)?.into()))?;
        std::fs::copy(path, http_root.join(name))?;
    }
    let http_url = std::env::var("RIEGELI_TEST_HTTP_URL")?;
    let http_proxy = delaying_proxy(http_url.trim_start_matches("http://").to_owned(), latency)?;
    let http_store = |url: String| {
        object_store::http::HttpBuilder::new()
            .with_url(url)
            .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
            .build()
    };
    let http: Arc<dyn object_store::ObjectStore> = Arc::new(http_store(format!("http://{http_proxy}"))?);
    let direct_http = http_store(http_url.clone())?;

    // The batch: the same 10,000 random indices for every reader.
    let mut state = 12345u64;
    let indices: Vec<u64> = (0..10_000)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) % n
        })
        .collect();
    let touched: std::collections::BTreeSet<u64> = indices.iter().map(|i| i / 100).collect();
    let size = std::fs::metadata(&ar_path)?.len();
    // Data chunks (begin, end) in file order; the last one with records is the footer.
    let mut chunks = Vec::new();
    let mut scan = ChunkReader::new(std::fs::File::open(&ar_path)?, ChunkReadOptions::default(), 0);
    while let Some(chunk) = scan.read_chunk()? {
        if chunk.header.num_records() > 0 {
            chunks.push((chunk.begin, chunk.end));
        }
    }
    // The last two: the postscript, and before it the footer.
    chunks.pop().ok_or("no postscript")?;
    let (footer_begin, footer_end) = chunks.pop().ok_or("no footer")?;
    let touched_bytes: u64 = touched.iter().map(|&k| chunks[k as usize].1 - chunks[k as usize].0).sum();

    let mut out = String::new();
    out.push_str(&format!(
        "{n} records of {RECORD} B (incompressible), ArrayRecord `group_size:100,zstd:3` {:.1} MB, \
         Riegeli `zstd:3` {:.1} MB; S3 (`xtask/s3-server`: s3s over files) and HTTP (nginx) on loopback, {}; remote times \
         include opening the object, the server's copy in its page cache; local: the same files in the page cache \
         (and for the sequential read, from disk with the page cache emptied first); median of {rounds}.\n\n",
        size as f64 / 1e6,
        std::fs::metadata(&rr_path)?.len() as f64 / 1e6,
        if latency.is_zero() {
            "reached directly".to_owned()
        } else {
            format!("each behind a proxy adding {} ms to every request", latency.as_millis())
        }
    ));
    out.push_str(
        "| workload | local disk | remote + latency | requests | bytes fetched | bytes / (chunks touched + footer) |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|\n");

    let servers = std::env::args().skip_while(|a| a != "--servers").nth(1).unwrap_or_else(|| "s3,http".to_owned());
    let directs: [&dyn object_store::ObjectStore; 2] = [&direct, &direct_http];
    for ((server, store, scheme), direct) in [("S3", &s3, "s3"), ("HTTP", &http, "http")].into_iter().zip(directs) {
        if !servers.split(',').any(|s| s == scheme) || only().is_some() {
            continue;
        }
        // `from_start`: the object is to be read whole (`FetchConfig::read_from_start`, as the
        // CLI's whole-file commands open objects).
        let open = |name: &str, from_start: bool| {
            ObjectSource::with_store(
                Arc::clone(store),
                Path::from(name),
                &format!("{scheme}://{bucket}/{name}"),
                FetchConfig {
                    sequential_window: arg("--window-mb", FetchConfig::default().sequential_window >> 20) << 20,
                    sequential_depth: arg("--depth", FetchConfig::default().sequential_depth),
                    read_from_start: from_start,
                    ..FetchConfig::default()
                },
            )
        };
        // ArrayRecord: open, then the batch.
        let (mut local_t, mut s3_t, mut opens) = (Vec::new(), Vec::new(), Vec::new());
        let (mut requests, mut bytes, mut open_requests, mut open_bytes) = (0, 0, 0, 0);
        for _ in 0..rounds {
            let start = Instant::now();
            let mut reader = ArrayRecordReader::open(&ar_path, ArrayRecordReaderOptions::default())?;
            let records = reader.read_batch(&indices)?;
            local_t.push(start.elapsed().as_secs_f64());
            assert_eq!(records[0], record(indices[0])[..]);

            let start = Instant::now();
            let source = open("bench.array_record", false)?;
            let counting = source.clone();
            let mut reader =
                ArrayRecordReader::with_options(Location::Object(source), ArrayRecordReaderOptions::default())?;
            opens.push(start.elapsed().as_secs_f64());
            let opened = counting.stats();
            let records = reader.read_batch(&indices)?;
            s3_t.push(start.elapsed().as_secs_f64());
            assert!(records.iter().zip(&indices).all(|(r, &i)| r[..] == record(i)[..]));
            let done = counting.stats();
            (open_requests, open_bytes) = (opened.requests, opened.bytes);
            (requests, bytes) = (done.requests - opened.requests, done.bytes - opened.bytes);
        }
        out.push_str(&format!(
            "| {server}: ArrayRecord open (size and postscript, then footer) | - | {:.0} ms | {open_requests} | {open_bytes} | - |\n",
            median(opens) * 1e3
        ));
        out.push_str(&format!(
            "| {server}: ArrayRecord open + read_parallel of 10,000 random indices ({} chunks, {touched_bytes} bytes; \
             footer {} bytes) | {:.0} rec/s | {:.0} rec/s | {requests} (+{open_requests}) | {bytes} (+{open_bytes}) | \
             batch {:.3}, with the opening {:.3} |\n",
            touched.len(),
            footer_end - footer_begin,
            10_000.0 / median(local_t),
            10_000.0 / median(s3_t),
            bytes as f64 / touched_bytes as f64,
            (bytes + open_bytes) as f64 / (touched_bytes + footer_end - footer_begin) as f64
        ));

        // Sequential: the whole Riegeli file.
        let rr_size = std::fs::metadata(&rr_path)?.len() as f64;
        let (mut local_t, mut cold_t, mut s3_t) = (Vec::new(), Vec::new(), Vec::new());
        let (mut seq_requests, mut seq_bytes) = (0, 0);
        for _ in 0..rounds {
            let options = RecordReaderOptions { parallelism: 1, ..RecordReaderOptions::default() };
            if drop_caches() {
                let start = Instant::now();
                let mut reader = RecordReader::with_options(std::fs::File::open(&rr_path)?, options.clone());
                while reader.read_record()?.is_some() {}
                cold_t.push(start.elapsed().as_secs_f64());
            }
            let start = Instant::now();
            let mut reader = RecordReader::with_options(std::fs::File::open(&rr_path)?, options.clone());
            let mut count = 0u64;
            while reader.read_record()?.is_some() {
                count += 1;
            }
            local_t.push(start.elapsed().as_secs_f64());
            assert_eq!(count, n);
            // The server's copy back in the page cache, which emptying it for the cold read
            // above took it out of: on loopback the server shares this machine's disk, which a
            // remote server's storage is not. Read once whole, directly (not through the proxy).
            runtime.block_on(async { direct.get(&Path::from("bench.riegeli")).await?.bytes().await })?;
            let start = Instant::now();
            let source = open("bench.riegeli", true)?;
            let counting = source.clone();
            let mut reader = RecordReader::with_options(source, options);
            let mut count = 0u64;
            while reader.read_record()?.is_some() {
                count += 1;
            }
            s3_t.push(start.elapsed().as_secs_f64());
            assert_eq!(count, n);
            let stats = counting.stats();
            (seq_requests, seq_bytes) = (stats.requests, stats.bytes);
        }
        // Each round's remote read against the cold read just before it: the cold read varies
        // more from round to round than the remote one.
        let ratios: Vec<f64> = cold_t.iter().zip(&s3_t).map(|(cold, remote)| cold / remote).collect();
        let (local_mbs, s3_mbs) = (rr_size / median(local_t) / 1e6, rr_size / median(s3_t) / 1e6);
        let cold = if cold_t.is_empty() {
            "cold cache: not measured (drop_caches needs root)".to_owned()
        } else {
            let cold_mbs = rr_size / median(cold_t) / 1e6;
            format!(
                "cold cache {cold_mbs:.0} MB/s (remote: {:.0}%, median of the rounds' ratios)",
                100.0 * median(ratios)
            )
        };
        out.push_str(&format!(
            "| {server}: Riegeli sequential read (parallelism:1; opened to be read from the start) | page cache {local_mbs:.0} MB/s; {cold} | \
             {s3_mbs:.0} MB/s ({:.0}% of page cache) | {seq_requests} | {seq_bytes} | - |\n",
            100.0 * s3_mbs / local_mbs
        ));

        // A split: the Riegeli file's byte ranges of about 16 MB, read one after the other
        // as workers would read them (each opening the object), with the read-ahead stopped
        // at each range's end.
        let ranges: Vec<_> = riegeli_records::byte_ranges(rr_size as u64, 16 << 20).collect();
        let (mut split_requests, mut split_bytes, mut count) = (0, 0, 0u64);
        let start = Instant::now();
        for range in &ranges {
            let source = open("bench.riegeli", false)?;
            let counting = source.clone();
            let options = RecordReaderOptions { parallelism: 1, ..RecordReaderOptions::default() };
            let mut reader = RecordReader::with_options(Location::Object(source), options);
            // (The reader tells the source where the range ends, and what it reads.)
            reader.set_byte_range(range.clone())?;
            while reader.read_record()?.is_some() {
                count += 1;
            }
            let stats = counting.stats();
            (split_requests, split_bytes) = (split_requests + stats.requests, split_bytes + stats.bytes);
        }
        let split_s = start.elapsed().as_secs_f64();
        assert_eq!(count, n);
        out.push_str(&format!(
            "| {server}: Riegeli file read as {} byte ranges, one after another | - | {:.0} MB/s | {split_requests} | \
             {split_bytes} ({:.3} of the file) | - |\n",
            ranges.len(),
            rr_size / split_s / 1e6,
            split_bytes as f64 / rr_size
        ));
    }
    if servers.split(',').any(|s| s == "s3") {
        if only().is_none_or(|only| only == "write") {
            write_object(&mut out, &dir, &s3, &bucket, n, rounds)?;
        }
        if only().is_none_or(|only| only == "cache") {
            cache_and_stalls(&mut out, &dir, &runtime, &direct, &bucket, &endpoint, latency, &indices)?;
        }
    }
    print!("{out}");
    std::fs::write(dir.join("table.md"), out)?;
    Ok(())
}

/// Shuffled epochs of an ArrayRecord file (`group_size:1`, 1 KiB records) with the local
/// chunk cache against the local file; and with one request in 50 stalling 10 s, the
/// sequential read and the 10,000-record batch against the same without stalls (S3).
#[allow(clippy::too_many_arguments, reason = "the bench's shared state")]
fn cache_and_stalls(
    out: &mut String,
    dir: &std::path::Path,
    runtime: &tokio::runtime::Runtime,
    direct: &object_store::aws::AmazonS3,
    bucket: &str,
    endpoint: &str,
    latency: Duration,
    indices: &[u64],
) -> Result<(), Box<dyn std::error::Error>> {
    let n = arg("--cache-megabytes", 20) * 1_000_000 / RECORD as u64;
    let path = dir.join(format!("cache-{n}.array_record"));
    if !path.exists() {
        let mut writer = ArrayRecordWriter::new(std::fs::File::create(&path)?, "group_size:1".parse()?)?;
        for i in 0..n {
            writer.write_record(&record(i))?;
        }
        writer.close()?;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("cache").to_owned();
    runtime.block_on(direct.put(&Path::from(name.as_str()), std::fs::read(&path)?.into()))?;
    let size = std::fs::metadata(&path)?.len();
    let proxy = delaying_proxy(endpoint.trim_start_matches("http://").to_owned(), latency)?;
    let store: Arc<dyn object_store::ObjectStore> = Arc::new(
        object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_endpoint(format!("http://{proxy}"))
            .build()?,
    );
    // An epoch: every record once, shuffled, in batches of 1,000.
    let epoch = |seed: u64| {
        let mut order: Vec<u64> = (0..n).collect();
        let mut state = seed;
        for i in (1..order.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (state >> 11) as usize % (i + 1));
        }
        order
    };
    let run_epoch = |reader: &mut ArrayRecordReader<Location>, seed: u64| -> Result<f64, Box<dyn std::error::Error>> {
        let start = Instant::now();
        for batch in epoch(seed).chunks(1000) {
            let records = reader.read_batch(batch)?;
            assert_eq!(records[0], record(batch[0])[..]);
        }
        Ok(n as f64 / start.elapsed().as_secs_f64())
    };
    // `--later-epochs N` (default 3): the later epochs run N times, each in a new reader (as
    // another process would), a local epoch and a cached one in turn so that the machine's
    // moods fall on both alike; the medians are reported, and the median of the N ratios (one
    // epoch of a small file is over in a tenth of a second).
    let later = arg("--later-epochs", 3).max(1);
    let median = |mut rates: Vec<f64>| {
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    };
    let open_local = || -> Result<_, Box<dyn std::error::Error>> {
        let file = Location::open(&path, FetchConfig::default())?;
        Ok(ArrayRecordReader::with_options(file, ArrayRecordReaderOptions::default())?)
    };
    run_epoch(&mut open_local()?, 1)?;
    let cache_dir = dir.join("chunk-cache");
    let _ = std::fs::remove_dir_all(&cache_dir);
    let in_flight = arg("--in-flight", FetchConfig::default().max_in_flight as u64);
    let config = FetchConfig {
        cache_dir: Some(cache_dir.clone()),
        max_in_flight: usize::try_from(in_flight)?,
        ..FetchConfig::default()
    };
    // A new reader of the object through the cache, and a handle on its counters.
    let open = || -> Result<_, Box<dyn std::error::Error>> {
        let url = format!("s3://{bucket}/{name}");
        let source = ObjectSource::with_store(Arc::clone(&store), Path::from(name.as_str()), &url, config.clone())?;
        let counting = source.clone();
        Ok((ArrayRecordReader::with_options(Location::Object(source), ArrayRecordReaderOptions::default())?, counting))
    };
    let (mut reader, counting) = open()?;
    let first = run_epoch(&mut reader, 1)?;
    // The counters are those of the first later epoch.
    let (mut local_rates, mut rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut s2 = None;
    for i in 0..later {
        let local = run_epoch(&mut open_local()?, 2 + i)?;
        let (mut reader, counting2) = open()?;
        let cached = run_epoch(&mut reader, 2 + i)?;
        s2.get_or_insert(counting2.stats());
        local_rates.push(local);
        rates.push(cached);
        ratios.push(cached / local);
    }
    let (local_rate, second, ratio) = (median(local_rates), median(rates), median(ratios));
    let (s1, s2) = (counting.stats(), s2.expect("at least one later epoch"));
    // The first epoch is bounded by its requests: `in_flight` at a time, each a round trip.
    let per_request = n as f64 / s1.requests.max(1) as f64;
    let bound = in_flight as f64 / latency.as_secs_f64().max(1e-3) * per_request;
    out.push_str(&format!(
        "| S3: shuffled epochs of an ArrayRecord file (`group_size:1`, {n} records of 1 KiB, {size} bytes) in batches of 1,000, \
         with the local chunk cache | {local_rate:.0} rec/s | later epochs {second:.0} rec/s ({ratio:.2}x local, median of {later} \
         paired epochs), epoch 1 {first:.0} rec/s ({:.2}x the bound of {in_flight} requests in flight ÷ {} ms × {per_request:.2} \
         records per request = {bound:.0} rec/s) | \
         {} + {} | {} + {} ({:.3} of the object) | epoch 2: {} cache hits, {} misses |\n",
        first / bound,
        latency.as_millis(),
        s1.requests,
        s2.requests,
        s1.bytes,
        s2.bytes,
        (s1.bytes + s2.bytes) as f64 / size as f64,
        s2.cache_hits,
        s2.cache_misses,
    ));
    let _ = std::fs::remove_dir_all(&cache_dir);
    if only().is_some() {
        return Ok(());
    }

    // Stalls: one request in 50 held 10 s (beside the latency).
    let timed = |stall: Option<Duration>| -> Result<(f64, f64, u64, u64), Box<dyn std::error::Error>> {
        let proxy = stalling_proxy(endpoint.trim_start_matches("http://").to_owned(), latency, stall)?;
        let store: Arc<dyn object_store::ObjectStore> = Arc::new(
            object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_endpoint(format!("http://{proxy}"))
                .build()?,
        );
        let open = |name: &str, from_start: bool| {
            let config = FetchConfig { read_from_start: from_start, cache_dir: None, ..FetchConfig::default() };
            ObjectSource::with_store(Arc::clone(&store), Path::from(name), &format!("s3://{bucket}/{name}"), config)
        };
        let start = Instant::now();
        let source = open("bench.riegeli", true)?;
        let counting = source.clone();
        let options = RecordReaderOptions { parallelism: 1, ..RecordReaderOptions::default() };
        let mut reader = RecordReader::with_options(source, options);
        while reader.read_record()?.is_some() {}
        let sequential = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let source = open("bench.array_record", false)?;
        let counting2 = source.clone();
        let mut reader =
            ArrayRecordReader::with_options(Location::Object(source), ArrayRecordReaderOptions::default())?;
        let records = reader.read_batch(indices)?;
        assert_eq!(records[0], record(indices[0])[..]);
        let batch = start.elapsed().as_secs_f64();
        Ok((
            sequential,
            batch,
            counting.stats().hedges + counting2.stats().hedges,
            counting.stats().requests + counting2.stats().requests,
        ))
    };
    let (seq, batch, _, requests) = timed(None)?;
    let (seq_stalled, batch_stalled, hedges, stalled_requests) = timed(Some(Duration::from_secs(10)))?;
    out.push_str(&format!(
        "| S3: with the 5th request in every 50 stalling 10 s: sequential read; 10,000-record batch | - | \
         {seq_stalled:.2} s ({:.2}x of {seq:.2} s without); {batch_stalled:.2} s ({:.2}x of {batch:.2} s) | {stalled_requests} (without: {requests}) | - | {hedges} hedges |\n",
        seq_stalled / seq,
        batch_stalled / batch,
    ));
    Ok(())
}

/// Writing the Riegeli file (`zstd:3`, on an I/O thread) as an object through the delaying
/// proxy (a multipart upload, [`UploadConfig::default`]), against writing it as a local file.
fn write_object(
    out: &mut String,
    dir: &std::path::Path,
    s3: &Arc<dyn object_store::ObjectStore>,
    bucket: &str,
    n: u64,
    rounds: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let options: riegeli_records::RecordWriterOptions = "zstd:3".parse()?;
    let (mut local_t, mut object_t, mut tail_t) = (Vec::new(), Vec::new(), Vec::new());
    let mut cpu_used = Vec::new();
    let (mut requests, mut bytes) = (0, 0);
    let local_path = dir.join("written.riegeli");
    let mut local_cpu = Vec::new();
    for _ in 0..rounds {
        let (start, cpu) = (Instant::now(), Cpu::now());
        let mut writer = RecordWriter::with_io_thread(std::fs::File::create(&local_path)?, options.clone())?;
        for i in 0..n {
            writer.write_record(&record(i))?;
        }
        writer.close()?.sync_all()?;
        local_t.push(start.elapsed().as_secs_f64());
        local_cpu.push((start.elapsed().as_secs_f64(), Cpu::now().since(cpu).process));

        let (start, cpu) = (Instant::now(), Cpu::now());
        let url = format!("s3://{bucket}/written.riegeli");
        let sink =
            ObjectSink::with_store(Arc::clone(s3), Path::from("written.riegeli"), &url, UploadConfig::default())?;
        let counters = sink.counters();
        let mut writer = RecordWriter::with_io_thread(Destination::Object(Box::new(sink)), options.clone())?;
        for i in 0..n {
            writer.write_record(&record(i))?;
        }
        let sink = writer.close()?;
        // What is left once every byte is encoded and handed over: the last part, the parts
        // still in flight, and the completion.
        let closed = Instant::now();
        sink.finish()?;
        tail_t.push(closed.elapsed().as_secs_f64());
        object_t.push(start.elapsed().as_secs_f64());
        cpu_used.push((start.elapsed().as_secs_f64(), Cpu::now().since(cpu)));
        let stats = counters.stats();
        (requests, bytes) = (stats.requests, stats.bytes);
    }
    // The same bytes uploaded by object_store alone (the same part size and parts in flight,
    // the bytes already in memory): what the server and the proxy allow.
    let written = bytes::Bytes::from(std::fs::read(&local_path)?);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // The object is the local file, byte for byte (the same records, options and encoder).
    let object = runtime.block_on(async { s3.get(&Path::from("written.riegeli")).await?.bytes().await })?;
    if object != written {
        return Err("the object written differs from the local file".into());
    }
    let mut raw_t = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        runtime.block_on(async {
            let upload = s3.put_multipart(&Path::from("raw.riegeli")).await?;
            let mut parts = object_store::WriteMultipart::new_with_chunk_size(upload, 8 << 20);
            for piece in written.chunks(1 << 20) {
                parts.wait_for_capacity(4).await?;
                parts.write(piece);
            }
            parts.finish().await.map(drop)
        })?;
        raw_t.push(start.elapsed().as_secs_f64());
    }
    let size = written.len() as f64;
    let (object_s, tail_s) = (median(object_t), median(tail_t));
    // The CPU of the write whose time is the median.
    cpu_used.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (wall, cpu) = cpu_used[cpu_used.len() / 2];
    local_cpu.sort_by(|a, b| a.0.total_cmp(&b.0));
    let local_cpu = local_cpu[local_cpu.len() / 2].1;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
    let (local, object) = (size / median(local_t) / 1e6, size / object_s / 1e6);
    let raw = size / median(raw_t) / 1e6;
    out.push_str(&format!(
        "| S3: writing the Riegeli file (`zstd:3`, I/O thread; object: multipart upload, 8 MiB parts, 4 in flight) \
         | {local:.0} MB/s (with fsync) | {object:.0} MB/s ({:.2}× local; of its {:.0} ms, {:.0} ms after `close`, \
         finishing the upload; CPU: the machine's {cores} cores {:.0}% busy, the S3 server {:.0} ms, the proxy \
         {:.0} ms, the writer {:.0} ms (writing the local file: {:.0} ms); object_store's own multipart upload of the written bytes: \
         {raw:.0} MB/s) | {requests} | {bytes} uploaded | - |\n",
        object / local,
        object_s * 1e3,
        tail_s * 1e3,
        cpu.machine / (cores * wall) * 100.0,
        cpu.server * 1e3,
        cpu.proxy * 1e3,
        (cpu.process - cpu.proxy) * 1e3,
        local_cpu * 1e3,
    ));
    Ok(())
}
