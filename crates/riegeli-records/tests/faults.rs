//! Fault injection through the public API: destinations that fail at their
//! k-th `write` or `flush`, sources that fail at their k-th `read`, for every
//! k up to the number of calls a whole successful run makes, and for every
//! writer and reader configuration that uses background threads (and the
//! serial ones).
//!
//! Every case must end within a bounded time, never panic, report the
//! injected error as `ErrorKind::Io`, write nothing after a failed write,
//! return no wrong record, and leave no thread behind.
//!
//! This is a test binary of its own, with a single `#[test]`: it counts the
//! threads of the process (`/proc/self/status`), which tests running beside
//! it would disturb.

use std::fmt;
use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter, ArrayRecordWriterOptions, Error, ErrorKind,
    RecordReader, RecordReaderOptions, RecordWriter, RecordWriterOptions, Selection,
};

/// Records written by the writer cases: about 2.2 MB, so that the parallel
/// writers hand over batches (of 1 MiB) while records still arrive, and
/// uncompressed writers fill their 1 MiB buffer before closing.
const WRITER_RECORDS: usize = 8_000;
/// Records in the files the reader cases read (the first ones of the same
/// sequence): about 830 KB, enough for the ArrayRecord reader's pool (128 KiB).
const READER_RECORDS: usize = 3_000;
/// A case that has not ended by then is a hang.
const CASE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long threads of a finished case may take to exit.
const THREAD_GRACE: Duration = Duration::from_secs(2);
/// Destinations accept at most this many bytes per `write` (short writes are
/// allowed by `Write`, and they make a run consist of many `write` calls).
const MAX_WRITE: usize = 32 << 10;
/// Sources return at most these many bytes per `read`, in turn (short reads
/// of uneven sizes, so that reads end anywhere in headers and blocks).
const READ_SIZES: [usize; 4] = [8 << 10, 4099, 8 << 10, 1021];
/// The marker of injected errors, so that they are told from others.
const INJECTED: &str = "injected fault";

/// Panics anywhere in the process, including the library's own threads.
static PANICS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn faults() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    let started = Instant::now();
    let records = sample_records(WRITER_RECORDS);
    let mut harness = Harness::default();

    let writer_records = Arc::new(records.clone());
    for config in writer_configs() {
        writer_cases(&mut harness, &config, &writer_records);
    }
    let writers_done = started.elapsed();

    let reader_records = Arc::new(records[..READER_RECORDS].to_vec());
    for config in reader_configs(&reader_records) {
        reader_cases(&mut harness, &config);
    }

    harness.print_summary(writers_done, started.elapsed());
    assert!(
        harness.failures.is_empty(),
        "{} failing case(s):\n{}",
        harness.failures.len(),
        harness.failures.join("\n")
    );
}

// ---------------------------------------------------------------------------
// The harness: each case on a thread of its own, bounded in time, checked
// for panics and for threads left behind.

/// How a case ended.
enum Outcome<T> {
    /// It ended: with what it returned if it returned `Ok` (its failures,
    /// including those the harness found, are recorded either way).
    Ended(Option<T>),
    Hung,
}

#[derive(Default)]
struct Harness {
    failures: Vec<String>,
    /// Per configuration: its name and the number of cases run.
    counts: Vec<(String, usize)>,
}

impl Harness {
    fn fail(&mut self, case: &str, problem: impl fmt::Display) {
        self.failures.push(format!("{case}: {problem}"));
    }

    /// Runs `case` on a thread of its own: it must end within
    /// [`CASE_TIMEOUT`] without panicking (here or in any other thread), and
    /// the threads of the process must be back to their number before it
    /// within [`THREAD_GRACE`]. `case` reports a broken expectation as `Err`.
    /// Every failure is recorded.
    fn run<T: Send + 'static>(
        &mut self,
        name: &str,
        case: impl FnOnce() -> Result<T, String> + Send + 'static,
    ) -> Outcome<T> {
        let threads_before = thread_count();
        let panics_before = PANICS.load(Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("fault-case".to_owned())
            .spawn(move || {
                let result = catch_unwind(AssertUnwindSafe(case))
                    .unwrap_or_else(|payload| Err(format!("panicked: {}", panic_message(payload.as_ref()))));
                let _ = tx.send(result);
            })
            .expect("spawn the case thread");
        let result = match rx.recv_timeout(CASE_TIMEOUT) {
            Ok(result) => result,
            Err(_) => {
                self.fail(name, format!("no result within {CASE_TIMEOUT:?}: the case hangs"));
                return Outcome::Hung;
            }
        };
        let mut problems = Vec::new();
        let deadline = Instant::now() + THREAD_GRACE;
        while !handle.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if handle.is_finished() {
            let _ = handle.join();
        } else {
            problems.push("the case thread did not exit after reporting".to_owned());
        }
        let left = threads_left(threads_before);
        if left > 0 {
            problems.push(format!("{left} thread(s) left behind ({threads_before} before the case)"));
        }
        let panics = PANICS.load(Ordering::SeqCst) - panics_before;
        if panics > 0 {
            problems.push(format!("{panics} panic(s) during the case (see stderr)"));
        }
        let value = match result {
            Ok(value) => Some(value),
            Err(problem) => {
                problems.insert(0, problem);
                None
            }
        };
        if !problems.is_empty() {
            self.fail(name, problems.join("; "));
        }
        Outcome::Ended(value)
    }

    /// Runs the case of every fault in `faults`; after a hang the rest are
    /// skipped (each would wait [`CASE_TIMEOUT`] and leave a thread behind).
    /// Returns the number of cases run.
    fn run_all<F: Copy + fmt::Display, C: FnOnce() -> Result<(), String> + Send + 'static>(
        &mut self,
        config: &str,
        faults: impl IntoIterator<Item = F>,
        mut case: impl FnMut(F) -> C,
    ) -> usize {
        let faults: Vec<F> = faults.into_iter().collect();
        let mut run = 0;
        for (i, &fault) in faults.iter().enumerate() {
            run += 1;
            if let Outcome::Hung = self.run(&format!("{config}, {fault}"), case(fault)) {
                let skipped = faults.len() - i - 1;
                if skipped > 0 {
                    self.fail(config, format!("{skipped} later case(s) skipped after the hang"));
                }
                break;
            }
        }
        run
    }

    #[allow(clippy::print_stdout, reason = "the summary of what ran is this test's report")]
    fn print_summary(&self, writers: Duration, total: Duration) {
        println!("fault cases per configuration:");
        for (config, count) in &self.counts {
            println!("  {count:5}  {config}");
        }
        let cases: usize = self.counts.iter().map(|(_, n)| n).sum();
        println!(
            "{cases} cases in {total:.1?} (writers {writers:.1?}, readers {:.1?}); {} failure(s)",
            total.saturating_sub(writers),
            self.failures.len()
        );
        for failure in &self.failures {
            println!("FAILED {failure}");
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(not a string)".to_owned())
}

/// The number of threads of this process.
fn thread_count() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("a Threads: line in /proc/self/status")
}

/// Waits up to [`THREAD_GRACE`] for the process to have at most `before`
/// threads; returns how many more it still has.
fn threads_left(before: usize) -> usize {
    let deadline = Instant::now() + THREAD_GRACE;
    loop {
        let now = thread_count();
        if now <= before || Instant::now() >= deadline {
            return now.saturating_sub(before);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Whether `error` is the I/O error a fault injected.
fn check_injected(error: &Error, call: &str) -> Result<(), String> {
    match error.kind() {
        ErrorKind::Io(e) if e.to_string().contains(INJECTED) => Ok(()),
        ErrorKind::Io(e) => Err(format!("{call} failed with an I/O error other than the injected one: {e}")),
        _ => Err(format!("{call} failed with {error} ({:?}), not ErrorKind::Io", error.kind())),
    }
}

// ---------------------------------------------------------------------------
// Records.

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: [&str; 16] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
    "mike", "november", "oscar", "papa",
];

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn words(rng: &mut Rng, len: usize, out: &mut Vec<u8>) {
    let end = out.len() + len;
    while out.len() < end {
        out.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
        out.push(b' ');
    }
    out.truncate(end);
}

/// Records of 50 to 500 bytes: text, and every third one a small
/// protocol-buffer-like message (varints, a nested message, a string), so
/// that transposed chunks take their message path.
fn sample_records(n: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    (0..n)
        .map(|i| {
            let len = 50 + rng.below(451);
            let mut record = Vec::with_capacity(len);
            if i % 3 == 0 {
                record.push(0x08);
                put_varint(&mut record, i as u64);
                record.push(0x10);
                put_varint(&mut record, rng.next() % 100_000);
                let inner = [0x08, (i % 128) as u8, 0x12, 3, b'a', b'b', b'c'];
                record.extend_from_slice(&[0x1a, inner.len() as u8]);
                record.extend_from_slice(&inner);
                let room = len - record.len() - 3;
                record.push(0x22);
                put_varint(&mut record, room as u64);
                words(&mut rng, room, &mut record);
            } else {
                record.extend_from_slice(format!("record {i}: ").as_bytes());
                let room = len.saturating_sub(record.len());
                words(&mut rng, room, &mut record);
            }
            record
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Writers.

/// What fails in a destination: its k-th `write` or its k-th `flush` (from 1).
#[derive(Debug, Clone, Copy)]
enum WriteFault {
    None,
    Write(u64),
    Flush(u64),
}

impl fmt::Display for WriteFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("no fault"),
            Self::Write(k) => write!(f, "write #{k} fails"),
            Self::Flush(k) => write!(f, "flush #{k} fails"),
        }
    }
}

#[derive(Debug, Default)]
struct DestState {
    writes: u64,
    flushes: u64,
    bytes: Vec<u8>,
    /// The bytes received when the fault fired.
    failed_at: Option<usize>,
    /// Bytes accepted after the fault fired (it is transient: later calls succeed).
    bytes_after_failure: usize,
}

/// A destination shared with the test, failing once as `fault` says, and
/// accepting at most [`MAX_WRITE`] bytes per `write`.
#[derive(Clone)]
struct FaultyDest {
    fault: WriteFault,
    state: Arc<Mutex<DestState>>,
}

impl FaultyDest {
    fn new(fault: WriteFault) -> Self {
        Self { fault, state: Arc::default() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, DestState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Write for FaultyDest {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut state = self.state();
        state.writes += 1;
        if let WriteFault::Write(k) = self.fault
            && state.writes == k
        {
            state.failed_at = Some(state.bytes.len());
            return Err(io::Error::other(format!("{INJECTED}: write #{k}")));
        }
        let n = data.len().min(MAX_WRITE);
        if state.failed_at.is_some() {
            state.bytes_after_failure += n;
        }
        state.bytes.extend_from_slice(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut state = self.state();
        state.flushes += 1;
        if let WriteFault::Flush(k) = self.fault
            && state.flushes == k
        {
            state.failed_at = Some(state.bytes.len());
            return Err(io::Error::other(format!("{INJECTED}: flush #{k}")));
        }
        Ok(())
    }
}

/// How a writer is made.
#[derive(Debug, Clone, Copy)]
enum WriterApi {
    /// `RecordWriter::new`.
    New,
    /// `RecordWriter::with_io_thread`.
    IoThread,
    /// `ArrayRecordWriter::new`.
    Array,
    /// `ArrayRecordWriter::with_io_thread`.
    ArrayIoThread,
}

struct WriterConfig {
    api: WriterApi,
    options: String,
}

impl fmt::Display for WriterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let api = match self.api {
            WriterApi::New => "RecordWriter::new",
            WriterApi::IoThread => "RecordWriter::with_io_thread",
            WriterApi::Array => "ArrayRecordWriter::new",
            WriterApi::ArrayIoThread => "ArrayRecordWriter::with_io_thread",
        };
        write!(f, "{api} {:?}", self.options)
    }
}

fn writer_configs() -> Vec<WriterConfig> {
    let config = |api, options: &str| WriterConfig { api, options: options.to_owned() };
    let mut configs = Vec::new();
    for base in ["", "uncompressed", "zstd:1,chunk_size:16k", "transpose,snappy,chunk_size:16k"] {
        for parallelism in ["", "parallelism:1", "parallelism:2"] {
            let options = [base, parallelism].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(",");
            configs.push(config(WriterApi::New, &options));
        }
    }
    configs.push(config(WriterApi::IoThread, "zstd:1,chunk_size:16k"));
    configs.push(config(WriterApi::IoThread, "zstd:1,chunk_size:16k,parallelism:2"));
    configs.push(config(WriterApi::IoThread, "transpose,snappy,chunk_size:16k,parallelism:1"));
    configs.push(config(WriterApi::IoThread, "uncompressed"));
    for options in ["group_size:50,zstd:1", "group_size:50,zstd:1,max_parallelism:2"] {
        configs.push(config(WriterApi::Array, options));
        configs.push(config(WriterApi::ArrayIoThread, options));
    }
    configs
}

/// The threads a writer of `api` and `options` runs besides the caller's.
fn writer_threads(api: WriterApi, options: &str) -> usize {
    let (encoders, io) = match api {
        WriterApi::New | WriterApi::IoThread => {
            let parallelism = options.parse::<RecordWriterOptions>().expect("RecordWriter options").parallelism;
            (parallelism, !matches!(api, WriterApi::New))
        }
        WriterApi::Array | WriterApi::ArrayIoThread => {
            let options = options.parse::<ArrayRecordWriterOptions>().expect("ArrayRecordWriter options");
            (options.parallelism.unwrap_or(0), matches!(api, WriterApi::ArrayIoThread))
        }
    };
    encoders + usize::from(io)
}

/// A writer of any configuration.
enum AnyWriter {
    Plain(RecordWriter<FaultyDest>),
    Array(ArrayRecordWriter<FaultyDest>),
}

impl AnyWriter {
    fn open(api: WriterApi, options: &str, dest: FaultyDest) -> riegeli_records::Result<Self> {
        let plain = || options.parse::<RecordWriterOptions>().expect("RecordWriter options");
        let array = || options.parse::<ArrayRecordWriterOptions>().expect("ArrayRecordWriter options");
        Ok(match api {
            WriterApi::New => Self::Plain(RecordWriter::new(dest, plain())?),
            WriterApi::IoThread => Self::Plain(RecordWriter::with_io_thread(dest, plain())?),
            WriterApi::Array => Self::Array(ArrayRecordWriter::new(dest, array())?),
            WriterApi::ArrayIoThread => Self::Array(ArrayRecordWriter::with_io_thread(dest, array())?),
        })
    }

    fn write_record(&mut self, record: &[u8]) -> riegeli_records::Result<()> {
        match self {
            Self::Plain(w) => w.write_record(record),
            Self::Array(w) => w.write_record(record),
        }
    }

    /// Closes the writer.
    fn close(self) -> riegeli_records::Result<()> {
        match self {
            Self::Plain(w) => w.close().map(drop),
            Self::Array(w) => w.close().map(drop),
        }
    }
}

/// What a writer case saw.
struct WriterRun {
    /// The first call that failed, and its error.
    first_error: Option<(String, Error)>,
    /// What was wrong with the calls after it.
    later_problems: Vec<String>,
    /// Threads the writer had after the records were written.
    background_threads: usize,
    writes: u64,
    flushes: u64,
    bytes: Vec<u8>,
    /// The bytes received when the fault fired.
    failed_at: Option<usize>,
    /// Bytes received after that (once the writer is closed or dropped).
    bytes_after_failure: usize,
}

/// Writes every record and closes the writer, stopping at the first error;
/// after an error, one more `write_record` and (for odd `variant`) `close`
/// must fail too, with a usage or I/O error; for even `variant` the writer
/// is just dropped.
fn write_with_fault(api: WriterApi, options: &str, records: &[Vec<u8>], fault: WriteFault, variant: u64) -> WriterRun {
    let threads_before = thread_count();
    let mut background_threads = 0;
    let dest = FaultyDest::new(fault);
    let probe = dest.clone();
    let mut first_error = None;
    let mut later_problems = Vec::new();
    match AnyWriter::open(api, options, dest) {
        Err(e) => first_error = Some(("opening the writer".to_owned(), e)),
        Ok(mut writer) => {
            for (i, record) in records.iter().enumerate() {
                if let Err(e) = writer.write_record(record) {
                    first_error = Some((format!("write_record of record {i}"), e));
                    break;
                }
            }
            background_threads = thread_count().saturating_sub(threads_before);
            if first_error.is_none() {
                if let Err(e) = writer.close() {
                    first_error = Some(("close".to_owned(), e));
                }
            } else {
                let mut later = |call: &str, result: riegeli_records::Result<()>| match result {
                    Ok(()) => later_problems.push(format!("{call} after the error succeeded")),
                    Err(e) if matches!(e.kind(), ErrorKind::Usage(_) | ErrorKind::Io(_)) => {}
                    Err(e) => later_problems.push(format!("{call} after the error failed with {e} ({:?})", e.kind())),
                };
                later("write_record", writer.write_record(b"one more"));
                if variant % 2 == 1 {
                    later("close", writer.close());
                } else {
                    drop(writer);
                }
            }
        }
    }
    let mut state = probe.state();
    WriterRun {
        first_error,
        later_problems,
        background_threads,
        writes: state.writes,
        flushes: state.flushes,
        bytes: std::mem::take(&mut state.bytes),
        failed_at: state.failed_at,
        bytes_after_failure: state.bytes_after_failure,
    }
}

fn writer_cases(harness: &mut Harness, config: &WriterConfig, records: &Arc<Vec<Vec<u8>>>) {
    let name = config.to_string();
    let (api, options) = (config.api, config.options.clone());

    // The whole successful run: how many calls the destination sees, and a valid file.
    let counting = {
        let (options, records) = (options.clone(), Arc::clone(records));
        harness.run(&format!("{name}, counting run"), move || {
            let run = write_with_fault(api, &options, &records, WriteFault::None, 0);
            if let Some((call, e)) = run.first_error {
                return Err(format!("{call} failed without a fault: {e}"));
            }
            let expected = writer_threads(api, &options);
            check_file(api, run.bytes, &records)?;
            if run.background_threads != expected {
                return Err(format!(
                    "{} background thread(s) while writing, {expected} expected: the test would miss them",
                    run.background_threads
                ));
            }
            Ok((run.writes, run.flushes))
        })
    };
    // (A counting run that returned its counts but left a thread behind has
    // been reported; the fault cases still run.)
    let Outcome::Ended(Some((writes, flushes))) = counting else {
        harness.counts.push((format!("{name} (counting run failed)"), 1));
        return;
    };

    let faults = (1..=writes).map(WriteFault::Write).chain((1..=flushes).map(WriteFault::Flush));
    let ran = harness.run_all(&name, faults, |fault| {
        let (options, records) = (options.clone(), Arc::clone(records));
        move || {
            let variant = match fault {
                WriteFault::Write(k) | WriteFault::Flush(k) => k,
                WriteFault::None => 0,
            };
            let run = write_with_fault(api, &options, &records, fault, variant);
            check_writer_run(&run, fault)
        }
    });
    harness.counts.push((format!("{name}: {writes} write + {flushes} flush faults"), ran + 1));
}

fn check_writer_run(run: &WriterRun, fault: WriteFault) -> Result<(), String> {
    let (k, calls) = match fault {
        WriteFault::Write(k) => (k, run.writes),
        WriteFault::Flush(k) => (k, run.flushes),
        WriteFault::None => return Ok(()),
    };
    if calls < k {
        return Err(format!("the fault never fired: only {calls} calls this time (not deterministic?)"));
    }
    let mut problems = Vec::new();
    match &run.first_error {
        None => problems.push("the injected error was lost: every call, close included, succeeded".to_owned()),
        Some((call, error)) => problems.extend(check_injected(error, call).err()),
    }
    problems.extend(run.later_problems.iter().cloned());
    if run.bytes_after_failure > 0 {
        problems.push(format!(
            "{} byte(s) written after the failing call (which came after byte {})",
            run.bytes_after_failure,
            run.failed_at.unwrap_or(0)
        ));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

/// A file written without faults holds the records.
fn check_file(api: WriterApi, file: Vec<u8>, records: &[Vec<u8>]) -> Result<(), String> {
    let read: Vec<Vec<u8>> = match api {
        WriterApi::Array | WriterApi::ArrayIoThread => ArrayRecordReader::new(Cursor::new(file))
            .and_then(|mut r| r.read_batch(Selection::All))
            .map_err(|e| format!("reading the file back: {e}"))?
            .into_iter()
            .map(|b| b.to_vec())
            .collect(),
        _ => {
            let mut reader = RecordReader::new(Cursor::new(file));
            let mut out = Vec::new();
            while let Some(record) = reader.read_record().map_err(|e| format!("reading the file back: {e}"))? {
                out.push(record.to_vec());
            }
            out
        }
    };
    if read != records {
        return Err(format!("the file written without faults reads back as {} other records", read.len()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Readers.

/// A source over `data` whose `read_fault`-th `read` (from 1) fails, once;
/// reads return at most [`READ_SIZES`] bytes in turn.
struct FaultySource {
    data: Arc<Vec<u8>>,
    pos: u64,
    read_fault: Option<u64>,
    reads: Arc<AtomicU64>,
}

impl Read for FaultySource {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let call = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
        if self.read_fault == Some(call) {
            return Err(io::Error::other(format!("{INJECTED}: read #{call}")));
        }
        let start = usize::try_from(self.pos).unwrap_or(usize::MAX).min(self.data.len());
        let n = out.len().min(self.data.len() - start).min(READ_SIZES[(call as usize) % READ_SIZES.len()]);
        out[..n].copy_from_slice(&self.data[start..start + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for FaultySource {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(pos) => Some(pos),
            SeekFrom::End(delta) => (self.data.len() as u64).checked_add_signed(delta),
            SeekFrom::Current(delta) => self.pos.checked_add_signed(delta),
        };
        self.pos = pos.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

/// Offers no reads at offsets: the calling thread reads every chunk, through the faults.
impl riegeli_records::ReadHints for FaultySource {}

#[derive(Debug, Clone, Copy)]
enum ArrayOp {
    /// `read_batch(Selection::All)`.
    All,
    /// `read_batch` of [`parallel_indices`].
    Indices,
}

impl fmt::Display for ArrayOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::All => "read_batch(All)",
            Self::Indices => "read_batch(indices)",
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum ReaderApi {
    /// `RecordReader` reading to the end: serial (`None`) or with
    /// `parallelism` and `parallel_min_chunk_size` 0; with or without recovery.
    Records { parallelism: Option<usize>, recovery: bool },
    /// `ArrayRecordReader::with_options` with `parallelism`, then `op`.
    Array { parallelism: usize, op: ArrayOp },
}

struct ReaderConfig {
    api: ReaderApi,
    /// How the file was written.
    file_options: &'static str,
    file: Arc<Vec<u8>>,
    records: Arc<Vec<Vec<u8>>>,
}

impl fmt::Display for ReaderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.api {
            ReaderApi::Records { parallelism, recovery } => {
                let threads = parallelism.map_or("serial".to_owned(), |p| format!("parallelism {p}"));
                let recovery = if recovery { ", recovery" } else { "" };
                write!(f, "RecordReader {threads}{recovery} on {:?}", self.file_options)
            }
            ReaderApi::Array { parallelism, op } => {
                write!(f, "ArrayRecordReader parallelism {parallelism} {op} on {:?}", self.file_options)
            }
        }
    }
}

/// The indices `read_parallel` asks for: most chunks, out of order, some twice.
fn parallel_indices(n: usize) -> Vec<u64> {
    let n = n as u64;
    (0..n).rev().step_by(7).chain([5, 5, n - 1, 0, n / 2]).collect()
}

fn reader_configs(records: &Arc<Vec<Vec<u8>>>) -> Vec<ReaderConfig> {
    let mut configs = Vec::new();
    for file_options in ["zstd:1,chunk_size:16k", "transpose,snappy,chunk_size:16k"] {
        let options: RecordWriterOptions = file_options.parse().expect("options");
        let mut writer = RecordWriter::new(Vec::new(), options).expect("writer");
        for record in records.iter() {
            writer.write_record(record).expect("write_record");
        }
        let file = Arc::new(writer.close().expect("close"));
        for parallelism in [None, Some(1), Some(2)] {
            for recovery in [false, true] {
                configs.push(ReaderConfig {
                    api: ReaderApi::Records { parallelism, recovery },
                    file_options,
                    file: Arc::clone(&file),
                    records: Arc::clone(records),
                });
            }
        }
    }
    let file_options = "group_size:50,zstd:1";
    let options: ArrayRecordWriterOptions = file_options.parse().expect("options");
    let mut writer = ArrayRecordWriter::new(Vec::new(), options).expect("writer");
    for record in records.iter() {
        writer.write_record(record).expect("write_record");
    }
    let file = Arc::new(writer.close().expect("close"));
    for parallelism in [1, 3] {
        for op in [ArrayOp::All, ArrayOp::Indices] {
            configs.push(ReaderConfig {
                api: ReaderApi::Array { parallelism, op },
                file_options,
                file: Arc::clone(&file),
                records: Arc::clone(records),
            });
        }
    }
    configs
}

/// What a reader case saw: the source's reads, the first error, and the
/// broken expectations met.
struct ReadOutcome {
    reads: u64,
    error: Option<Error>,
    problems: Vec<String>,
    /// Threads the reader had when it was done reading.
    background_threads: usize,
}

/// The threads a reader of `api` runs besides the caller's once it has read.
fn reader_threads(api: ReaderApi) -> usize {
    match api {
        ReaderApi::Records { parallelism, .. } => parallelism.unwrap_or(0),
        ReaderApi::Array { parallelism, .. } => parallelism - 1,
    }
}

/// Reads as `api` says from a source failing at read `read_fault`. Every
/// record returned must be the expected one, in order. After an error the
/// reading is tried again (the source no longer fails): it may fail again,
/// but must not return a wrong record or end early.
fn read_with_fault(api: ReaderApi, file: &Arc<Vec<u8>>, records: &[Vec<u8>], read_fault: Option<u64>) -> ReadOutcome {
    let threads_before = thread_count();
    let reads = Arc::new(AtomicU64::new(0));
    let source = FaultySource { data: Arc::clone(file), pos: 0, read_fault, reads: Arc::clone(&reads) };
    let (error, problems, threads) = match api {
        ReaderApi::Records { parallelism, recovery } => read_records(source, parallelism, recovery, records),
        ReaderApi::Array { parallelism, op } => read_array(source, parallelism, op, records),
    };
    let background_threads = threads.saturating_sub(threads_before);
    ReadOutcome { reads: reads.load(Ordering::SeqCst), error, problems, background_threads }
}

fn read_records(
    source: FaultySource,
    parallelism: Option<usize>,
    recovery: bool,
    records: &[Vec<u8>],
) -> (Option<Error>, Vec<String>, usize) {
    let mut options = RecordReaderOptions::default();
    if let Some(parallelism) = parallelism {
        options.parallelism = parallelism;
        // Small chunks are decoded ahead too.
        options.parallel_min_chunk_size = 0;
    }
    let mut reader = RecordReader::with_options(source, options);
    let skipped = Arc::new(Mutex::new(Vec::new()));
    if recovery {
        let skipped = Arc::clone(&skipped);
        reader.set_recovery(move |region| {
            skipped.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(region.to_string());
            true
        });
    }
    let mut problems = Vec::new();
    let mut next = 0usize;
    let mut error = None;
    // Reads until the end or an error; then, once, again after the error.
    for attempt in 0..2 {
        loop {
            match reader.read_record() {
                Ok(Some(record)) => {
                    if records.get(next).is_none_or(|expected| *expected != *record) {
                        problems.push(format!(
                            "wrong record at index {next}{} ({} bytes)",
                            if attempt > 0 { " after retrying past the error" } else { "" },
                            record.len()
                        ));
                        break;
                    }
                    next += 1;
                }
                Ok(None) => {
                    if next != records.len() {
                        problems.push(format!(
                            "the reader ended after {next} of {} records{}",
                            records.len(),
                            if attempt > 0 { " when retried after the error" } else { "" }
                        ));
                    }
                    break;
                }
                Err(e) => {
                    if attempt == 0 {
                        error = Some(e);
                    }
                    break;
                }
            }
        }
        if error.is_none() || !problems.is_empty() {
            break;
        }
    }
    let skipped = skipped.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !skipped.is_empty() {
        problems.push(format!("recovery skipped {} region(s) of a valid file: {}", skipped.len(), skipped.join("; ")));
    }
    let threads = thread_count();
    drop(reader);
    (error, problems, threads)
}

fn read_array(
    source: FaultySource,
    parallelism: usize,
    op: ArrayOp,
    records: &[Vec<u8>],
) -> (Option<Error>, Vec<String>, usize) {
    // `parallelism` threads, the calling one included.
    let options = ArrayRecordReaderOptions { parallelism: parallelism - 1, ..ArrayRecordReaderOptions::default() };
    let mut reader = match ArrayRecordReader::with_options(source, options) {
        Ok(reader) => reader,
        Err(e) => return (Some(e), Vec::new(), thread_count()),
    };
    let indices = parallel_indices(records.len());
    let expected: Vec<&[u8]> = match op {
        ArrayOp::All => records.iter().map(Vec::as_slice).collect(),
        ArrayOp::Indices => indices.iter().map(|&i| records[i as usize].as_slice()).collect(),
    };
    let read = |reader: &mut ArrayRecordReader<FaultySource>| match op {
        ArrayOp::All => reader.read_batch(Selection::All),
        ArrayOp::Indices => reader.read_batch(&indices),
    };
    let mut problems = Vec::new();
    let error = match read(&mut reader) {
        Ok(got) => {
            problems.extend(compare(&got, &expected, "the read"));
            None
        }
        Err(e) => {
            // Again, with the source no longer failing: an error or the right records.
            if let Ok(got) = read(&mut reader) {
                problems.extend(compare(&got, &expected, "the read retried after the error"));
            }
            Some(e)
        }
    };
    let threads = thread_count();
    drop(reader);
    (error, problems, threads)
}

/// What is wrong with the records `got`, if anything.
fn compare<B: AsRef<[u8]>>(got: &[B], expected: &[&[u8]], when: &str) -> Option<String> {
    if got.len() != expected.len() {
        return Some(format!("{when}: {} records returned, {} expected", got.len(), expected.len()));
    }
    let i = got.iter().zip(expected).position(|(g, e)| g.as_ref() != *e)?;
    Some(format!("{when}: wrong record at position {i}"))
}

fn reader_cases(harness: &mut Harness, config: &ReaderConfig) {
    let name = config.to_string();
    let api = config.api;
    let counting = {
        let (file, records) = (Arc::clone(&config.file), Arc::clone(&config.records));
        harness.run(&format!("{name}, counting run"), move || {
            let run = read_with_fault(api, &file, &records, None);
            if !run.problems.is_empty() {
                return Err(run.problems.join("; "));
            }
            if let Some(e) = run.error {
                return Err(format!("failed without a fault: {e}"));
            }
            let expected = reader_threads(api);
            if run.background_threads != expected {
                return Err(format!(
                    "{} background thread(s) after reading, {expected} expected: the test would miss them",
                    run.background_threads
                ));
            }
            Ok(run.reads)
        })
    };
    let Outcome::Ended(Some(reads)) = counting else {
        harness.counts.push((format!("{name} (counting run failed)"), 1));
        return;
    };
    let ran = harness.run_all(&name, (1..=reads).map(ReadFault), |ReadFault(k)| {
        let (file, records) = (Arc::clone(&config.file), Arc::clone(&config.records));
        move || {
            let run = read_with_fault(api, &file, &records, Some(k));
            let mut problems = run.problems;
            if run.reads < k {
                problems.push(format!("the fault never fired: only {} reads this time", run.reads));
            } else {
                match &run.error {
                    None => problems.insert(0, "the injected error was lost: the read succeeded".to_owned()),
                    Some(e) => {
                        if let Err(problem) = check_injected(e, "the read") {
                            problems.insert(0, problem);
                        }
                    }
                }
            }
            if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
        }
    });
    harness.counts.push((format!("{name}: {reads} read faults"), ran + 1));
}

#[derive(Debug, Clone, Copy)]
struct ReadFault(u64);

impl fmt::Display for ReadFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "read #{} fails", self.0)
    }
}
