//! Replays the minimized fuzz crashers in `fuzz/regressions/array_record_open/`
//! through the same check the fuzz target runs (`fuzz/src/records.rs`,
//! included here). The check's seed files use every codec.
#![cfg(all(feature = "brotli", feature = "zstd", feature = "snappy"))]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[path = "../../../fuzz/src/records.rs"]
#[allow(unreachable_pub, reason = "public in the fuzz crate, which shares this file")]
mod checks;

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/array_record_open")
}

/// The regression inputs: every file but hidden ones (`.gitkeep`).
fn inputs() -> Vec<PathBuf> {
    let dir = regressions_dir();
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("fuzz regressions directory {} is missing: {err}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.is_file())
        .filter(|path| !path.file_name().is_some_and(|name| name.to_string_lossy().starts_with('.')))
        .collect();
    files.sort();
    files
}

#[test]
fn array_record_open_regressions_replay_without_panic() {
    let mut failures = Vec::new();
    for path in inputs() {
        let data = std::fs::read(&path).unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
        if catch_unwind(AssertUnwindSafe(|| checks::array_record_open(&data))).is_err() {
            failures.push(path.display().to_string());
        }
    }
    assert!(failures.is_empty(), "fuzz regressions fail: {failures:#?}");
}

/// Each mode of the check on inputs that take it down its success path: the
/// seed files unmodified (mode 1, 3, 5), a patched footer byte, a truncated
/// file, and raw bytes that are no file at all.
#[test]
fn array_record_open_check_accepts_valid_and_damaged_inputs() {
    for mode in [1u8, 3, 5] {
        // No truncation, no patches, indices from the last 8 bytes (none here).
        checks::array_record_open(&[mode, 0, 0, 0]);
        // Truncated by 100 bytes (the postscript is lost: the file is scanned).
        checks::array_record_open(&[mode, 100, 0, 1]);
        // Byte 0x50 of the file set to 0xff, and then indices 1, 2, 3, 4.
        checks::array_record_open(&[mode, 0, 0, 0, 0x50, 0, 0, 0xff, 0, 1, 0, 2, 0, 3, 0, 4]);
    }
    checks::array_record_open(&[0, b'n', b'o', b't', b' ', b'a', b' ', b'f', b'i', b'l', b'e']);
    checks::array_record_open(&[]);
}
