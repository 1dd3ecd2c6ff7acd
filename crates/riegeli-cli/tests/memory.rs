//! Peak memory of `write`, `recover`, `convert` and `cat` on chunks larger than what reading
//! ahead and parallel writing hold besides the chunk in hand (64 MiB): each must stay within two
//! chunks of records and 64 MiB, as the library's memory test requires of its readers and
//! writers; `recover` and `convert` read and write at once (`verify` and `count` read as `cat`
//! does). `cargo xtask bench limits` checks the
//! same on 900 MiB chunks (release build).
//!
//! The peak is the child's `VmHWM` (its resident high-water mark) in `/proc`, read every few
//! milliseconds while it runs: never more than the true peak, so the check cannot fail by
//! chance; it misses only a peak reached in the last moments of a run.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::{scratch_dir, text};

/// The record of each chunk: over the 64 MiB that reading ahead and the writer's in-flight
/// budget allow, so that chunks are read and written one at a time.
const RECORD: u64 = 72 << 20;

/// What the process holds besides the data (its code and libraries, stacks, allocator slack):
/// `riegeli count` of a small file peaks at about 10 MiB (debug build).
const BASE: u64 = 32 << 20;

/// Runs `riegeli args` with its output thrown away; returns its peak resident memory in bytes.
fn peak(args: &[&str]) -> u64 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_riegeli"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run riegeli");
    let status = format!("/proc/{}/status", child.id());
    let mut high = 0;
    loop {
        if let Ok(status) = std::fs::read_to_string(&status)
            && let Some(kib) = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))
            && let Some(kib) = kib.split_whitespace().next().and_then(|n| n.parse::<u64>().ok())
        {
            high = high.max(kib << 10);
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "riegeli {args:?}: {}", text(&out.stderr));
    high
}

/// Writes three records of [`RECORD`] bytes as a delimited stream: each MiB a copy of one MiB of
/// pseudo-random bytes, a copy farther back than `zstd:1` looks (512 KiB), so that the records
/// do not compress and a chunk's data is as large as its records.
fn write_input(path: &Path) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let piece: Vec<u8> = (0..(1 << 20) / 8)
        .flat_map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()
        })
        .collect();
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    for _ in 0..3 {
        let mut len = RECORD;
        while len >= 0x80 {
            out.write_all(&[(len as u8) | 0x80]).unwrap();
            len >>= 7;
        }
        out.write_all(&[len as u8]).unwrap();
        for _ in 0..RECORD >> 20 {
            out.write_all(&piece).unwrap();
        }
    }
    out.flush().unwrap();
}

#[test]
#[cfg(target_os = "linux")]
fn whole_file_commands_hold_at_most_two_chunks() {
    let dir = scratch_dir("memory");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (input, file, out) = (path("in.delimited"), path("large.riegeli"), path("out.riegeli"));
    write_input(Path::new(&input));
    let written = peak(&["write", "--input-format", "delimited", "--input", &input, "--options", "zstd:1", &file]);
    std::fs::remove_file(&input).unwrap();
    // `write` holds the record it read and the chunk it encodes; the others one chunk's
    // records and data as read, and (`recover`, `convert`) the chunk they encode.
    let bound = 2 * RECORD + (64 << 20) + BASE;
    let mut failures = Vec::new();
    if written > bound {
        failures.push(format!("write: peak {} MiB, over {} MiB", written >> 20, bound >> 20));
    }
    for args in [
        &["recover", "--options", "zstd:1", &file, &out][..],
        &["convert", "--options", "zstd:1", &file, &out],
        &["cat", "--format", "delimited", &file],
    ] {
        let peak = peak(args);
        if peak > bound {
            failures.push(format!("{}: peak {} MiB, over {} MiB", args[0], peak >> 20, bound >> 20));
        }
        let _ = std::fs::remove_file(&out);
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
