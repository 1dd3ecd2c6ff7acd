//! Readers and writers used in a process forked from the one that made them,
//! by a real `fork()`: what a data loader does with a reader built before it
//! forks its workers.
//!
//! In the child, the threads of the parent do not exist: a reader whose
//! decoding threads were started (and are decoding ahead at the fork) must
//! read on with threads of its own, its drop must not wait for the parent's,
//! and parent and child must each read at their own file positions. A writer
//! belongs to the process that made it: the child writes nothing through it,
//! and dropping it there waits for nothing.
//!
//! Each scenario runs its child under a deadline: a child that hangs fails
//! the test (it is killed) instead of hanging it. The scenarios run one at a
//! time (a lock), so that no other test's thread is running at a fork.
#![cfg(unix)]
#![allow(unsafe_code, reason = "fork(), waitpid(), kill() and _exit() of the tests' child processes")]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordShards, ArrayRecordWriter, ErrorKind, PositionalFile,
    RecordReader, RecordReaderOptions, RecordWriter, Selection,
};

/// One fork at a time.
static FORKING: Mutex<()> = Mutex::new(());

/// How long a child may run before it counts as hung.
const DEADLINE: Duration = Duration::from_secs(60);

/// Record `i`: its index, then filler of a size that varies with it.
fn record(i: u64) -> Vec<u8> {
    let mut record = format!("{i:07}|").into_bytes();
    record.extend(format!("{}.", i * 7919).repeat((i % 17) as usize).bytes());
    record
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("riegeli-fork-{}-{name}", std::process::id()))
}

/// A file read at positions of its own (what the library's readers of paths use).
fn open(path: &Path) -> PositionalFile {
    PositionalFile::from(std::fs::File::open(path).unwrap())
}

/// Forks; the child runs `child` and exits with what it returns (101 if it
/// panicked) without running anything else of the test binary. Returns the
/// child's pid.
fn fork(child: impl FnOnce() -> i32) -> libc::pid_t {
    // SAFETY: the child only runs `child` (this crate's code, on this thread) and exits with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(101);
        // SAFETY: ends the child at once, running no destructor or exit handler of the parent's.
        unsafe { libc::_exit(code) };
    }
    pid
}

/// The exit code of child `pid`, or `None` if it was still running at the
/// deadline (it is killed then).
fn wait(pid: libc::pid_t) -> Option<i32> {
    let deadline = Instant::now() + DEADLINE;
    let mut status = 0;
    while Instant::now() < deadline {
        // SAFETY: waits for our own child, without blocking.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(done >= 0, "waitpid failed");
        if done == pid {
            return Some(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kills and reaps our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
    None
}

/// An ArrayRecord file of `n` records in chunks of 100.
fn array_record_file(name: &str, n: u64) -> PathBuf {
    let path = temp_path(name);
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = ArrayRecordWriter::new(file, "group_size:100,zstd:1".parse().unwrap()).unwrap();
    for i in 0..n {
        writer.write_record(&record(i)).unwrap();
    }
    writer.close().unwrap();
    path
}

/// Random record indices below `n`, from a simple generator seeded with `seed`.
fn indices(seed: u64, count: usize, n: u64) -> Vec<u64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        })
        .collect()
}

/// Reads random records of `reader` every way it can; the number read wrong.
fn check_reads<R: Read + std::io::Seek + riegeli_records::ReadHints>(
    reader: &mut ArrayRecordReader<R>,
    seed: u64,
    n: u64,
) -> usize {
    let mut wrong = 0;
    for (round, &i) in indices(seed, 300, n).iter().enumerate() {
        wrong += usize::from(reader.read(i).map(|r| r != record(i)).unwrap_or(true));
        if round % 30 == 0 {
            let batch = indices(seed + i, 2000, n);
            match reader.read_batch(&batch) {
                Ok(records) => wrong += records.iter().zip(&batch).filter(|&(r, &i)| *r != record(i)).count(),
                Err(_) => wrong += 1,
            }
            let end = (i + 3000).min(n);
            match reader.read_batch(i..end) {
                Ok(records) => wrong += records.iter().zip(i..end).filter(|&(r, i)| *r != record(i)).count(),
                Err(_) => wrong += 1,
            }
        }
    }
    wrong
}

#[test]
fn an_array_record_reader_reads_on_in_a_child_forked_while_its_threads_decode_ahead() {
    let _one = FORKING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    const N: u64 = 100_000;
    let path = array_record_file("array", N);
    let options = ArrayRecordReaderOptions { parallelism: 2, ..Default::default() };
    let mut reader = ArrayRecordReader::open(&path, options).unwrap();
    assert_eq!(check_reads(&mut reader, 1, N), 0);
    for _ in 0..20_000 {
        reader.read_next().unwrap();
    }
    // Reading in order decodes the next records on the threads: they are at it at the fork.
    assert_eq!(reader.read_next().unwrap().as_deref(), Some(&record(20_000)[..]));
    let mut in_child = Some(reader);
    let pid = fork(|| {
        let Some(mut reader) = in_child.take() else { return 2 };
        // Reading on in order, where the parent was: the records decoded ahead are lost with the
        // parent's threads, and decoded again here.
        let mut wrong = 0;
        for i in 20_001..60_000 {
            wrong += usize::from(reader.read_next().ok().flatten().is_none_or(|r| r != record(i)));
        }
        wrong += check_reads(&mut reader, 2, N);
        // Dropping it joins no thread of the parent's.
        drop(reader);
        i32::from(wrong > 0)
    });
    let mut reader = in_child.unwrap();
    // Meanwhile the parent reads too, at positions of its own.
    let wrong = check_reads(&mut reader, 3, N);
    for i in 20_001..30_000 {
        assert_eq!(reader.read_next().unwrap().as_deref(), Some(&record(i)[..]));
    }
    assert_eq!(wait(pid), Some(0), "the child read records wrong (None: it hung)");
    assert_eq!(wrong, 0);
    drop(reader);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn shards_read_on_in_a_child_forked_while_a_thread_of_the_parent_opens_one() {
    let _one = FORKING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    const N: u64 = 20_000;
    let paths = [array_record_file("shard-a", N), array_record_file("shard-b", N)];
    let parent = std::process::id();
    let (opening, opened) = std::sync::mpsc::channel();
    let release = std::sync::Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let (opener_paths, opener_release) = (paths.clone(), std::sync::Arc::clone(&release));
    // Records [1000, N) of the second file follow all of the first.
    let shards = std::sync::Arc::new(
        ArrayRecordShards::new(vec![0..N, 1000..N], move |i| {
            if i == 1 && std::process::id() == parent {
                // The parent's thread opening the second file stops here, its lock held.
                let _ = opening.send(());
                let (released, wake) = &*opener_release;
                let mut released = released.lock().unwrap();
                while !*released {
                    released = wake.wait(released).unwrap();
                }
            }
            ArrayRecordReader::open(&opener_paths[i], ArrayRecordReaderOptions { parallelism: 2, ..Default::default() })
        })
        .unwrap(),
    );
    let want = |key: u64| if key < N { record(key) } else { record(key - N + 1000) };
    // The first file open, its decoding threads started.
    let first = indices(1, 5000, N);
    let records = shards.read_batch(&first).unwrap();
    assert!(records.iter().zip(&first).all(|(r, &k)| *r == want(k)));
    let opener = {
        let shards = std::sync::Arc::clone(&shards);
        std::thread::spawn(move || shards.read(N).map(|r| r == want(N)))
    };
    opened.recv().unwrap();
    let keys = indices(2, 5000, shards.num_records());
    let pid = fork(|| match shards.read_batch(&keys) {
        Ok(records) => i32::from(records.iter().zip(&keys).any(|(r, &k)| *r != want(k))),
        Err(_) => 3,
    });
    *release.0.lock().unwrap() = true;
    release.1.notify_all();
    assert!(matches!(opener.join(), Ok(Ok(true))));
    assert_eq!(wait(pid), Some(0), "the child read records wrong (None: it hung)");
    let records = shards.read_batch(&keys).unwrap();
    assert!(records.iter().zip(&keys).all(|(r, &k)| *r == want(k)));
    for path in paths {
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn a_record_reader_with_read_ahead_reads_on_in_a_forked_child() {
    let _one = FORKING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let path = temp_path("records");
    let mut writer =
        RecordWriter::new(std::fs::File::create(&path).unwrap(), "chunk_size:64k,zstd:1".parse().unwrap()).unwrap();
    const N: u64 = 200_000;
    for i in 0..N {
        writer.write_record(&record(i)).unwrap();
    }
    writer.close().unwrap();
    let options = RecordReaderOptions { parallelism: 2, parallel_min_chunk_size: 0, ..Default::default() };
    let mut reader = RecordReader::with_options(open(&path), options);
    for i in 0..N / 2 {
        assert_eq!(reader.read_record().unwrap().as_deref(), Some(&record(i)[..]));
    }
    let rest = |reader: &mut RecordReader<PositionalFile>| {
        let mut wrong = 0;
        for i in N / 2..N {
            wrong += usize::from(reader.read_record().ok().flatten().is_none_or(|r| r != record(i)));
        }
        wrong + usize::from(!matches!(reader.read_record(), Ok(None)))
    };
    let mut in_child = Some(reader);
    let pid = fork(|| {
        let Some(mut reader) = in_child.take() else { return 2 };
        let wrong = rest(&mut reader);
        drop(reader);
        i32::from(wrong > 0)
    });
    let mut reader = in_child.unwrap();
    let wrong = rest(&mut reader);
    assert_eq!(wait(pid), Some(0), "the child read records wrong (None: it hung)");
    assert_eq!(wrong, 0);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_writer_writes_nothing_from_a_forked_child_and_its_drop_waits_for_nothing() {
    let _one = FORKING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (name, options, io_thread) in
        [("serial", "chunk_size:4k", false), ("threads", "chunk_size:4k,parallelism:2", true)]
    {
        let path = temp_path(name);
        let file = std::fs::File::create(&path).unwrap();
        let options = options.parse().unwrap();
        let mut writer =
            if io_thread { RecordWriter::with_io_thread(file, options) } else { RecordWriter::new(file, options) }
                .unwrap();
        for i in 0..10_000 {
            writer.write_record(&record(i)).unwrap();
        }
        writer.flush().unwrap();
        let mut in_child = Some(writer);
        let pid = fork(|| {
            let Some(mut writer) = in_child.take() else { return 2 };
            // Records go nowhere: the first write to the file fails, and so does every call after.
            let mut failed = None;
            for i in 20_000..40_000 {
                if let Err(e) = writer.write_record(&record(i)) {
                    failed = Some(e);
                    break;
                }
            }
            let flushed = writer.flush();
            let usage = |e: &riegeli_records::Error| matches!(e.kind(), ErrorKind::Usage(_));
            let refused = failed.as_ref().is_none_or(usage) && flushed.as_ref().is_err_and(usage);
            // Dropped here: nothing written, no thread waited for.
            drop(writer);
            i32::from(!refused)
        });
        assert_eq!(wait(pid), Some(0), "{name}: the child wrote or did not fail (None: it hung)");
        let mut writer = in_child.unwrap();
        for i in 10_000..20_000 {
            writer.write_record(&record(i)).unwrap();
        }
        writer.close().unwrap();
        let mut reader = RecordReader::new(open(&path));
        for i in 0..20_000 {
            assert_eq!(reader.read_record().unwrap().as_deref(), Some(&record(i)[..]), "{name}");
        }
        assert_eq!(reader.read_record().unwrap(), None, "{name}");
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn an_array_record_writer_in_a_forked_child_fails_and_the_parent_finishes_the_file() {
    let _one = FORKING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let path = temp_path("array-writer");
    let file = std::fs::File::create(&path).unwrap();
    let mut writer =
        ArrayRecordWriter::with_io_thread(file, "group_size:10,max_parallelism:2".parse().unwrap()).unwrap();
    for i in 0..5_000 {
        writer.write_record(&record(i)).unwrap();
    }
    let mut in_child = Some(writer);
    let pid = fork(|| {
        let Some(mut writer) = in_child.take() else { return 2 };
        let written = (5_000..20_000).try_for_each(|i| writer.write_record(&record(i)));
        let closed = writer.close();
        i32::from(!(written.is_err() || closed.is_err()))
    });
    assert_eq!(wait(pid), Some(0), "the child's writer did not fail (None: it hung)");
    let mut writer = in_child.unwrap();
    for i in 5_000..10_000 {
        writer.write_record(&record(i)).unwrap();
    }
    writer.close().unwrap();
    let mut reader = ArrayRecordReader::open(&path, ArrayRecordReaderOptions::default()).unwrap();
    let all = reader.read_batch(Selection::All).unwrap();
    assert!(all.iter().map(|r| &r[..]).eq((0..10_000).map(record).collect::<Vec<_>>().iter().map(|r| &r[..])));
    std::fs::remove_file(path).unwrap();
}
