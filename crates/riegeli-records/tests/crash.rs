//! Crash consistency: a writer process killed with SIGKILL at random moments.
//!
//! The test binary re-executes itself as the writer (the `crash_child` test,
//! which does nothing unless [`CHILD_ENV`] is set): the child writes records
//! derived from their index ([`record`]) to a file, calls
//! `flush_with(FlushType::FromMachine)` every few hundred records and prints
//! the index of the last record each completed flush covered, and keeps
//! writing until the parent kills it, after a random delay, with SIGKILL.
//!
//! After each kill the file, read with recovery (serially and with read-ahead
//! threads), must hold exactly the records `0..k` in order, each intact, with
//! `k` past the last record the child reported as flushed; the damage recovery
//! skips can only be the torn end of the file. Then the file must take more
//! records:
//! - truncated to the end of its last valid chunk (where the region recovery
//!   skipped begins), [`RecordWriter::append`] continues it into a file that
//!   reads back, without recovery, as the records `0..k + M`;
//! - with `padding` (pad to 64 KiB blocks), appending to the torn file as it
//!   is (no truncation) pads to the next block first, and reading with
//!   recovery gives the records `0..k` and then the appended ones.
//!
//! Kills cut the file where the writer's `write` calls ended (every 1 MiB
//! of buffered chunks, 256 KiB with an I/O thread, and at every flush);
//! each crashed file is also cut at a few positions no `write` call ends at
//! (inside block headers, right after them, anywhere), as a torn write would,
//! and those cuts must recover and take appends alike.
//!
//! The delays come from a seeded generator: the seed is printed, and
//! `RIEGELI_CRASH_SEED=<seed>` replays a run (the kills themselves land
//! where the child happens to be).
//!
//! [`appending_to_a_padded_file_torn_at_a_block_boundary`] is the case kills
//! meet when a `write` of whole blocks ends inside a chunk, made
//! deterministic.
#![cfg(unix)]

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Cursor, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use riegeli_records::{FlushType, RecordReader, RecordReaderOptions, RecordWriter, RecordWriterOptions, SkippedRegion};

/// Set (to the writer options) in the environment of the child process.
const CHILD_ENV: &str = "RIEGELI_CRASH_CHILD";
/// The file the child writes.
const PATH_ENV: &str = "RIEGELI_CRASH_PATH";
/// "1": the child writes through an I/O thread ([`RecordWriter::with_io_thread`]).
const IO_THREAD_ENV: &str = "RIEGELI_CRASH_IO_THREAD";
/// The child flushes after every this many records.
const FLUSH_EVERY_ENV: &str = "RIEGELI_CRASH_FLUSH_EVERY";
/// What the child's lines of output begin with.
const MARK: &str = "crash-child: ";
/// Replays a run with this seed.
const SEED_ENV: &str = "RIEGELI_CRASH_SEED";

/// The child stops writing after this many records (and waits to be
/// killed): a bound on the file size should the parent be slow to kill.
const CHILD_MAX_RECORDS: u64 = 400_000;
/// A child left alone this long after writing everything exits by itself.
const CHILD_LINGER: Duration = Duration::from_secs(60);
/// How long the parent waits for the child to start writing.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Records appended after each crash.
const APPENDED: u64 = 300;

/// A line of the test's report, on stderr.
macro_rules! note {
    ($($arg:tt)*) => {{
        let _ = writeln!(io::stderr(), $($arg)*);
    }};
}

/// One writer configuration.
struct Config {
    options: &'static str,
    io_thread: bool,
    /// Every other kill, the child flushes after every this many records (a
    /// few kilobytes: the file is cut where a flush ended); else 16 times
    /// less often (megabytes: the file is cut where a buffer was written,
    /// inside a chunk).
    flush_every: u64,
}

/// Kills per configuration.
const KILLS: usize = 4;
/// The delay before a kill is drawn from `0..MAX_DELAY_MS` milliseconds after
/// the child reports that its writer exists.
const MAX_DELAY_MS: u64 = 150;

fn configs() -> Vec<Config> {
    let config = |options, io_thread, flush_every| Config { options, io_thread, flush_every };
    vec![
        config("uncompressed,chunk_size:4k", false, 400),
        config("zstd:1,chunk_size:16k", false, 600),
        config("zstd:1,chunk_size:16k,parallelism:2", false, 600),
        config("transpose,zstd:1,chunk_size:16k,parallelism:1", true, 600),
        config("snappy,chunk_size:8k", true, 500),
        // Padded to 64 KiB at every flush: appends need no truncation.
        config("uncompressed,chunk_size:4k,padding", false, 1000),
        config("brotli:2,chunk_size:32k,parallelism:2,padding", true, 1000),
    ]
}

/// The record with index `i`: mostly small protocol buffer messages (field 1
/// the index, field 2 bytes derived from it), every seventh one not a
/// message, a few large ones. Records differ from each other, so a record
/// out of place is told.
fn record(i: u64) -> Vec<u8> {
    let h = mix(i);
    if i % 7 == 3 {
        let mut raw = b"\xffraw".to_vec();
        raw.extend_from_slice(&i.to_le_bytes());
        return raw;
    }
    let len = match h % 32 {
        0 => 0,
        1..=27 => (h >> 8) % 96,
        28..=30 => 96 + (h >> 8) % 1024,
        _ => 1024 + (h >> 8) % 8192,
    } as usize;
    let mut out = vec![0x08];
    put_varint(i, &mut out);
    out.push(0x12);
    put_varint(len as u64, &mut out);
    out.extend((0..len).map(|j| ((mix(i ^ ((j as u64 / 16) << 32)) >> (j % 16 * 4)) as u8 & 0x3f) | 0x40));
    out
}

fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// SplitMix64's output function.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seeded generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The writer process. Does nothing unless started by [`crash_consistency`].
#[test]
fn crash_child() {
    let Ok(options) = std::env::var(CHILD_ENV) else { return };
    run_child(&options);
}

fn run_child(options: &str) {
    let path = std::env::var_os(PATH_ENV).expect("path of the file to write");
    let io_thread = std::env::var(IO_THREAD_ENV).is_ok_and(|v| v == "1");
    let flush_every: u64 = std::env::var(FLUSH_EVERY_ENV).expect("flush interval").parse().expect("a number");
    let options: RecordWriterOptions = options.parse().expect("writer options");
    let file = File::create(path).expect("create the file");
    let mut writer = if io_thread {
        RecordWriter::with_io_thread(file, options).expect("writer")
    } else {
        RecordWriter::new(file, options).expect("writer")
    };
    let mut out = io::stdout().lock();
    writeln!(out, "{MARK}started").and_then(|()| out.flush()).expect("stdout");
    for i in 0..CHILD_MAX_RECORDS {
        writer.write_record(&record(i)).expect("write_record");
        if (i + 1) % flush_every == 0 {
            writer.flush_with(FlushType::FromMachine).expect("flush_with");
            // Printed only once the flush has returned: every record up to
            // `i` has been handed to the kernel (and synced).
            writeln!(out, "{MARK}flushed {i}").and_then(|()| out.flush()).expect("stdout");
        }
    }
    writeln!(out, "{MARK}done").and_then(|()| out.flush()).expect("stdout");
    // Waits to be killed; the parent never lets it come to this.
    std::thread::sleep(CHILD_LINGER);
    std::process::exit(3);
}

/// What a killed child left.
struct Crash {
    path: PathBuf,
    /// The index of the last record a completed flush covered.
    last_flushed: Option<u64>,
    /// Whether the child had written all its records before the kill.
    finished: bool,
}

/// Starts a child writing `path`, kills it after `delay`, and returns what it reported.
fn crash(config: &Config, flush_every: u64, path: &Path, delay: Duration) -> Crash {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, config.options)
        .env(PATH_ENV, path)
        .env(IO_THREAD_ENV, if config.io_thread { "1" } else { "0" })
        .env(FLUSH_EVERY_ENV, flush_every.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the child");
    let stdout = child.stdout.take().expect("piped stdout");
    let (lines_tx, lines_rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match stdout.read_line(&mut line) {
                // A line cut by the kill (no newline) does not count.
                Ok(0) | Err(_) => break,
                Ok(_) if !line.ends_with('\n') => break,
                Ok(_) => {
                    // libtest may have begun the line ("test crash_child ... ").
                    let Some(at) = line.find(MARK) else { continue };
                    if lines_tx.send(line[at + MARK.len()..].trim_end().to_owned()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let now = Instant::now();
        match lines_rx.recv_timeout(deadline.saturating_duration_since(now)) {
            Ok(line) => {
                let started = line == "started";
                lines.push(line);
                if started {
                    break;
                }
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{}: the child did not start writing (its output: {lines:?})", config.options);
            }
        }
    }
    std::thread::sleep(delay);
    child.kill().expect("SIGKILL the child");
    let status = child.wait().expect("wait for the child");
    reader.join().expect("stdout reader");
    lines.extend(lines_rx.try_iter());
    let tail = &lines[lines.len().saturating_sub(3)..];
    assert_eq!(
        status.signal(),
        Some(9),
        "{}: the child ended by itself ({status}) before the kill; its output ended with {tail:?}",
        config.options
    );
    let last_flushed = lines.iter().filter_map(|l| l.strip_prefix("flushed ")).map(|n| n.parse().expect("index")).max();
    let finished = lines.iter().any(|l| l == "done");
    Crash { path: path.to_owned(), last_flushed, finished }
}

/// The records of `file` read with recovery, and the regions it skipped.
fn read_recovering(file: &[u8], parallelism: usize) -> (Vec<Vec<u8>>, Vec<SkippedRegion>) {
    let regions = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&regions);
    let options = RecordReaderOptions { parallelism, parallel_min_chunk_size: 0, ..Default::default() };
    let mut reader = RecordReader::with_options(Cursor::new(file), options);
    reader.set_recovery(move |region| {
        sink.lock().unwrap().push(region.clone());
        true
    });
    let mut records = Vec::new();
    while let Some(record) = reader.read_record().expect("reading with recovery does not fail") {
        records.push(record.to_vec());
    }
    let regions = regions.lock().unwrap().clone();
    (records, regions)
}

/// Reads every record of `file`, failing on any error.
fn read_strict(file: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut reader = RecordReader::new(Cursor::new(file));
    let mut records = Vec::new();
    loop {
        match reader.read_record() {
            Ok(Some(record)) => records.push(record.to_vec()),
            Ok(None) => return Ok(records),
            Err(e) => return Err(format!("after {} records: {e}", records.len())),
        }
    }
}

/// Checks that `records` are exactly the records `0..records.len()`.
fn check_prefix(records: &[Vec<u8>], what: &str) -> Result<(), String> {
    for (i, got) in records.iter().enumerate() {
        let want = record(i as u64);
        if *got != want {
            let found = (0..records.len() as u64 + 1000).find(|&j| record(j) == *got);
            return Err(format!(
                "{what}: record {i} of {} is not record {i} ({} bytes, expected {}; it is {})",
                records.len(),
                got.len(),
                want.len(),
                found.map_or("no record of the stream".to_owned(), |j| format!("record {j}"))
            ));
        }
    }
    Ok(())
}

/// Recovers `file` (cut by a crash or by the test) and checks what it holds
/// and that it takes appends.
/// With `read_ahead`, reading with read-ahead threads must recover the same.
fn check_file(config: &Config, file: &[u8], path: &Path, what: &str, read_ahead: bool) -> Result<Recovered, String> {
    let (records, regions) = read_recovering(file, 0);
    check_prefix(&records, what)?;
    if read_ahead {
        let (parallel, parallel_regions) = read_recovering(file, 1);
        if parallel != records || parallel_regions != regions {
            return Err(format!(
                "{what}: read-ahead recovered {} records and regions {parallel_regions:?}, serial reading {} and \
                 {regions:?}",
                parallel.len(),
                records.len()
            ));
        }
    }
    // A crash damages only the end of the file.
    let len = file.len() as u64;
    let valid_end = match regions.as_slice() {
        [] => len,
        [region] if region.end == len => region.begin,
        _ => return Err(format!("{what}: skipped regions {regions:?} in a file of {len} bytes, not one at its end")),
    };
    let k = records.len() as u64;
    let options: RecordWriterOptions = config.options.parse().expect("options");

    // Truncated to the last valid chunk, appended to: a valid file.
    std::fs::write(path, file.get(..valid_end as usize).unwrap_or_default()).map_err(|e| e.to_string())?;
    append(path, options.clone(), valid_end, k)?;
    let appended = std::fs::read(path).map_err(|e| e.to_string())?;
    let all = read_strict(&appended).map_err(|e| format!("{what}: truncated at {valid_end} and appended: {e}"))?;
    if all.len() as u64 != k + APPENDED {
        return Err(format!(
            "{what}: truncated at {valid_end} ({k} records) and appended {APPENDED}: read {} records",
            all.len()
        ));
    }
    check_prefix(&all, &format!("{what}: truncated at {valid_end} and appended"))?;

    // Padded files take appends as they are: the appended records begin at a
    // block boundary, past the torn end, which recovery skips.
    if options.initial_padding > 1 {
        std::fs::write(path, file).map_err(|e| e.to_string())?;
        append(path, options, len, k)?;
        let appended = std::fs::read(path).map_err(|e| e.to_string())?;
        let (all, regions) = read_recovering(&appended, 0);
        let context = format!("{what}: appended to as it is ({len} bytes, {k} records recovered; skipped {regions:?})");
        if all.len() as u64 != k + APPENDED {
            return Err(format!("{context}: read {} records, expected {}", all.len(), k + APPENDED));
        }
        check_prefix(&all, &context)?;
    }
    Ok(Recovered { records: k, torn: valid_end < len })
}

/// What [`check_file`] found.
struct Recovered {
    records: u64,
    /// Whether the file ended inside a chunk.
    torn: bool,
}

/// Appends the records `first..first + APPENDED` to the file of `size` bytes at `path`.
fn append(path: &Path, options: RecordWriterOptions, size: u64, first: u64) -> Result<(), String> {
    let file = OpenOptions::new().append(true).open(path).map_err(|e| e.to_string())?;
    // (Appending writes on the caller's thread, whatever the first writer did.)
    let mut writer = RecordWriter::append(file, size, options).map_err(|e| format!("append: {e}"))?;
    for i in first..first + APPENDED {
        writer.write_record(&record(i)).map_err(|e| format!("append: {e}"))?;
    }
    writer.close().map_err(|e| format!("append: close: {e}"))?;
    Ok(())
}

/// Positions to cut a crashed file at besides its own end: anywhere, at a
/// block boundary, and near one (inside its block header, right after it, a
/// little later).
fn extra_cuts(len: u64, rng: &mut Rng) -> Vec<u64> {
    let mut cuts = vec![rng.below(len)];
    let blocks = len / 65536;
    if blocks > 0 {
        let offset = match rng.below(3) {
            0 => 1 + rng.below(23),
            1 => 24,
            _ => 25 + rng.below(40),
        };
        cuts.push((1 + rng.below(blocks)) * 65536);
        cuts.push((1 + rng.below(blocks)) * 65536 + offset);
    }
    cuts.retain(|&cut| cut < len);
    cuts
}

#[test]
fn crash_consistency() {
    let seed = std::env::var(SEED_ENV).ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_c4a5);
    note!("crash_consistency: seed {seed} (set {SEED_ENV} to replay)");
    let mut rng = Rng(seed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let started = Instant::now();
    let mut failures = Vec::new();
    let (mut kills, mut torn, mut flushed_checked) = (0, 0, 0);
    for (n, config) in configs().iter().enumerate() {
        let config_started = Instant::now();
        let mut summary = Vec::new();
        for kill in 0..KILLS {
            let flush_every = if kill % 2 == 0 { config.flush_every } else { config.flush_every * 16 };
            let delay = Duration::from_millis(rng.below(MAX_DELAY_MS));
            let path = dir.join(format!("crash-{n}-{kill}.riegeli"));
            let crash = crash(config, flush_every, &path, delay);
            let file = std::fs::read(&crash.path).expect("read the crashed file");
            let what = format!(
                "{} (kill {kill}, flushing every {flush_every} records, after {delay:?}, {} bytes)",
                config.options,
                file.len()
            );
            let scratch = dir.join(format!("scratch-{n}-{kill}.riegeli"));
            kills += 1;
            match check_file(config, &file, &scratch, &what, true) {
                Ok(recovered) => {
                    let k = recovered.records;
                    if let Some(flushed) = crash.last_flushed {
                        flushed_checked += 1;
                        if k <= flushed {
                            failures.push(format!("{what}: {k} records recovered, but record {flushed} was flushed"));
                        }
                    }
                    torn += usize::from(recovered.torn);
                    summary.push(format!(
                        "{k} records/{} bytes ({}flushed to {}{})",
                        file.len(),
                        if recovered.torn { "torn, " } else { "" },
                        crash.last_flushed.map_or("none".to_owned(), |f| f.to_string()),
                        if crash.finished { ", finished" } else { "" }
                    ));
                }
                Err(e) => failures.push(e),
            }
            for cut in extra_cuts(file.len() as u64, &mut rng) {
                let what = format!("{what}, cut at {cut}");
                if let Err(e) = check_file(config, &file[..cut as usize], &scratch, &what, false) {
                    failures.push(e);
                }
            }
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(&scratch);
        }
        note!("{} ({:.1?}): {}", config.options, config_started.elapsed(), summary.join("; "));
    }
    let _ = std::fs::remove_dir_all(&dir);
    note!(
        "crash_consistency: {kills} kills ({torn} left a torn chunk, {flushed_checked} after a flush) in {:.1?}",
        started.elapsed()
    );
    assert!(failures.is_empty(), "{} failure(s) (seed {seed}):\n{}", failures.len(), failures.join("\n"));
}

/// What the kills above meet when a write ends at a block boundary, made
/// deterministic: a padded file torn at each block boundary inside it (the
/// chunk there claims bytes past the boundary), appended to as it is. The
/// appended chunks begin at the boundary, and the block header there says
/// so; recovery skips the torn chunk and loses none of them.
#[test]
fn appending_to_a_padded_file_torn_at_a_block_boundary() {
    let options: RecordWriterOptions = "uncompressed,chunk_size:16k,padding".parse().expect("options");
    let mut writer = RecordWriter::new(Vec::new(), options.clone()).expect("writer");
    for i in 0..3000 {
        writer.write_record(&record(i)).expect("write");
    }
    let file = writer.close().expect("close");
    let mut torn_chunks = 0;
    for boundary in (65536..file.len()).step_by(65536) {
        let torn = file[..boundary].to_vec();
        let (before, regions) = read_recovering(&torn, 0);
        check_prefix(&before, "torn file").unwrap();
        torn_chunks += usize::from(!regions.is_empty());
        let k = before.len() as u64;
        let mut writer = RecordWriter::append(torn, boundary as u64, options.clone()).expect("append");
        for i in k..k + APPENDED {
            writer.write_record(&record(i)).expect("write");
        }
        let appended = writer.close().expect("close");
        let (all, skipped) = read_recovering(&appended, 0);
        let what = format!("torn at {boundary} ({k} records), appended to; skipped {skipped:?}");
        assert_eq!(all.len() as u64, k + APPENDED, "{what}");
        check_prefix(&all, &what).unwrap();
    }
    assert!(torn_chunks > 5, "only {torn_chunks} boundaries were inside a chunk");
}
