//! Replays the minimized fuzz crashers in `fuzz/regressions/<target>/` of the
//! riegeli-records targets (`array_record_open`, `array_record_reader`,
//! `record_reader_recovery`, `options`) through the same checks the fuzz
//! targets run (`fuzz/src/{records,array_record,recovery,options}.rs`,
//! included here). The checks' seed files use every codec. Built without
//! `cfg(fuzzing)`, the hash checks are on here (recovery then also checks that
//! every record returned comes from a chunk whose hashes verify).
#![cfg(all(feature = "brotli", feature = "zstd", feature = "snappy"))]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[path = "../../../fuzz/src/seeds.rs"]
mod seeds;

#[path = "../../../fuzz/src/records.rs"]
#[allow(unreachable_pub, reason = "public in the fuzz crate, which shares this file")]
mod checks;

#[path = "../../../fuzz/src/array_record.rs"]
#[allow(unreachable_pub, reason = "public in the fuzz crate, which shares this file")]
mod array_record_checks;

#[path = "../../../fuzz/src/recovery.rs"]
#[allow(unreachable_pub, reason = "public in the fuzz crate, which shares this file")]
mod recovery_checks;

#[path = "../../../fuzz/src/options.rs"]
#[allow(unreachable_pub, reason = "public in the fuzz crate, which shares this file")]
mod options_checks;

/// The regression inputs of `target`: every file but hidden ones (`.gitkeep`).
fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions").join(target);
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

/// Runs `check` on every regression input of `target`; fails naming those that panic.
fn replay(target: &str, check: fn(&[u8])) {
    let mut failures = Vec::new();
    for path in inputs(target) {
        let data = std::fs::read(&path).unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
        if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
            failures.push(path.display().to_string());
        }
    }
    assert!(failures.is_empty(), "fuzz regressions fail: {failures:#?}");
}

#[test]
fn array_record_open_regressions_replay_without_panic() {
    replay("array_record_open", checks::array_record_open);
}

#[test]
fn array_record_reader_regressions_replay_without_panic() {
    replay("array_record_reader", array_record_checks::array_record_reader);
}

#[test]
fn record_reader_recovery_regressions_replay_without_panic() {
    replay("record_reader_recovery", recovery_checks::record_reader_recovery);
}

#[test]
fn options_regressions_replay_without_panic() {
    replay("options", options_checks::options);
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

/// The recovery check on each seed file, whole, truncated and with bytes
/// changed (hash checks on here: records of damaged chunks must not come back).
#[test]
fn record_reader_recovery_check_accepts_valid_and_damaged_files() {
    for mode in [1u8, 3, 5, 7] {
        recovery_checks::record_reader_recovery(&[mode, 0, 0, 0]);
        recovery_checks::record_reader_recovery(&[mode, 0x10, 0x27, 1]);
        // A byte in the first data chunk's header, one in the middle of the file
        // and one in the block header at 64 KiB.
        recovery_checks::record_reader_recovery(&[mode, 0, 0, 0, 70, 0, 0, 0xff, 0, 0x80, 0, 0x55, 10, 0, 1, 0x33]);
    }
    recovery_checks::record_reader_recovery(&[0, b'n', b'o', b't', b' ', b'a', b' ', b'f', b'i', b'l', b'e']);
    recovery_checks::record_reader_recovery(&[]);
}

/// The ArrayRecord index check on each seed file, asked for indices in range,
/// at the end and far past it, whole and with a byte changed.
#[test]
fn array_record_reader_check_accepts_valid_and_damaged_files() {
    for mode in [1u8, 3, 5] {
        let requests = [0, 5, 0, 2, 0, 0, 3, 1, 0, 1, 200, 0, 4, 7, 0];
        for readahead in [0u8, 0x40, 0x80, 0xc0] {
            let mut input = vec![mode, 5 | readahead];
            input.extend_from_slice(&requests);
            input.extend_from_slice(&[0, 0, 0]);
            array_record_checks::array_record_reader(&input);
            input.extend_from_slice(&[0x50, 0x10, 0, 0xff]);
            array_record_checks::array_record_reader(&input);
        }
    }
    array_record_checks::array_record_reader(&[0, 2, 0, 0, 0, 3, 1, 0, b'x']);
    array_record_checks::array_record_reader(&[]);
}

/// The option grammars on valid and invalid strings.
#[test]
fn options_check_accepts_valid_and_invalid_strings() {
    for text in [
        "",
        "default",
        "transpose,zstd:5,chunk_size:2M,bucket_fraction:0.5,padding,parallelism:3",
        "brotli:11,window_log:auto,initial_padding:1k",
        "group_size:100,transpose,transpose_bucket_size:1k,snappy:2,max_parallelism:4",
        "group_size:2,uncompressed,pad_to_block_boundary:true",
        "max_parallelism:0,readahead_buffer_size:1M,index_storage_option:in_memory",
        "zstd:99",
        "unknown,,",
        "chunk_size:1e300",
        "\u{0}:\u{ffff}",
    ] {
        options_checks::options(text.as_bytes());
    }
}

/// The recovery check with hash checks on (unlike the fuzz build) on the seed
/// files with a few bytes changed at random: records of a chunk whose hashes
/// fail must not come back, whatever the damage.
#[test]
fn record_reader_recovery_check_with_hashes_on_random_damage() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..64u64 {
        let mut input = vec![(round % 4 * 2 + 1) as u8, 0, 0, 0];
        for _ in 0..1 + next() % 4 {
            let [a, b, c, byte, ..] = next().to_le_bytes();
            input.extend_from_slice(&[a, b, c % 3, byte]);
        }
        recovery_checks::record_reader_recovery(&input);
    }
}

/// Replays the local fuzz corpora (`fuzz/corpus/<target>/`, gitignored, made
/// by `cargo xtask fuzz`) through the checks with hash checks on:
/// `cargo test -p riegeli-records --test integration -- --ignored fuzz_corpora`.
#[test]
#[ignore = "needs the local corpora of `cargo xtask fuzz`"]
fn fuzz_corpora_replay_with_hash_checks_on() {
    type Check = fn(&[u8]);
    let targets: [(&str, Check); 4] = [
        ("array_record_open", checks::array_record_open),
        ("array_record_reader", array_record_checks::array_record_reader),
        ("record_reader_recovery", recovery_checks::record_reader_recovery),
        ("options", options_checks::options),
    ];
    let mut failures = Vec::new();
    for (target, check) in targets {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for path in entries.filter_map(|entry| Some(entry.ok()?.path())) {
            // A running fuzzer replaces inputs by smaller ones as it goes.
            let Ok(data) = std::fs::read(&path) else { continue };
            if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
                failures.push(path.display().to_string());
            }
        }
    }
    assert!(failures.is_empty(), "corpus inputs fail with hash checks on: {failures:#?}");
}
