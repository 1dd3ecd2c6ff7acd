//! Replays the minimized fuzz crashers in `fuzz/regressions/cli_inputs/`
//! through the check the fuzz target runs (`fuzz/src/cli.rs`, included here:
//! it calls the parsers as `crate::input` and `crate::tfrecord`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[path = "../../../fuzz/src/cli.rs"]
#[allow(unreachable_pub, reason = "public in the fuzz crate, which shares this file")]
mod checks;

/// The regression inputs: every file but hidden ones (`.gitkeep`).
fn inputs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/cli_inputs");
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
fn cli_inputs_regressions_replay_without_panic() {
    let mut failures = Vec::new();
    for path in inputs() {
        let data = std::fs::read(&path).unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
        if catch_unwind(AssertUnwindSafe(|| checks::cli_inputs(&data))).is_err() {
            failures.push(path.display().to_string());
        }
    }
    assert!(failures.is_empty(), "fuzz regressions fail: {failures:#?}");
}

/// Each format on a valid stream, a damaged one and nothing.
#[test]
fn cli_inputs_check_accepts_valid_and_damaged_streams() {
    // Delimited: "ab", "" then a truncated record.
    checks::cli_inputs(&[0, 2, b'a', b'b', 0, 5, b'x']);
    // Lines, with and without the last newline.
    checks::cli_inputs(b"\x01one\ntwo\n");
    checks::cli_inputs(b"\x01one\n\ntwo");
    // JSON lines: text, base64, a blank line, then a line that is no record.
    checks::cli_inputs(b"\x02{\"data\":\"a\\nb\"}\n{\"data_base64\":\"AAE=\"}\n \n{\"x\":1}\n");
    // TFRecord, plain and gzip (selector 3 + 4): empty streams, then garbage.
    checks::cli_inputs(&[3]);
    checks::cli_inputs(&[7, 0x1f, 0x8b, 8]);
    checks::cli_inputs(&[3, 1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]);
    checks::cli_inputs(&[]);
}
