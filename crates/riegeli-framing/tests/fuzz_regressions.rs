//! Replays the minimized fuzz crashers in `fuzz/regressions/<target>/` through
//! the same checks the fuzz targets run (`fuzz/src/framing.rs`, included here).
//!
//! Built without `cfg(fuzzing)`, riegeli-framing checks its hashes here, so an
//! input that reached a bug only with hash checks off stops earlier in this
//! replay; `cargo xtask fuzz <target>` replays the same directory with them off
//! before fuzzing.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[path = "../../../fuzz/src/framing.rs"]
#[allow(unreachable_pub, reason = "public in the fuzz crate, which shares this file")]
mod checks;

/// The check a fuzz target runs on its input.
type Check = fn(&[u8]);

/// The fuzz targets over riegeli-framing, and the check each one runs.
const TARGETS: [(&str, Check); 4] = [
    ("block_header", checks::block_header),
    ("chunk_header", checks::chunk_header),
    ("position", checks::position),
    ("chunk_parse", checks::chunk_parse),
];

fn regressions_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions").join(target)
}

/// The regression inputs of a target: every file but hidden ones (`.gitkeep`).
fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = regressions_dir(target);
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
fn every_target_has_a_regressions_directory() {
    for (target, _) in TARGETS {
        assert!(regressions_dir(target).is_dir(), "fuzz/regressions/{target} is missing");
    }
}

#[test]
fn regressions_replay_without_panic() {
    let mut failures = Vec::new();
    for (target, check) in TARGETS {
        for path in inputs(target) {
            let data = std::fs::read(&path).unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
            if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
                failures.push(path.display().to_string());
            }
        }
    }
    assert!(failures.is_empty(), "fuzz regressions fail: {failures:#?}");
}

/// Hand-built inputs that take each target down its success path (where most
/// of its assertions are) run clean.
#[test]
fn checks_accept_valid_inputs() {
    // block_header: selector 3 (block-aligned), raw position 0x20000, a valid header.
    let mut input = vec![3u8];
    input.extend_from_slice(&0x2_0000u64.to_le_bytes());
    input.extend_from_slice(&riegeli_framing::BlockHeader { previous_chunk: 100, next_chunk: 300 }.encode());
    checks::block_header(&input);
    // chunk_header: position 64 (selector 1), then a valid header.
    let mut input = vec![1u8];
    input.extend_from_slice(&64u64.to_le_bytes());
    input.extend_from_slice(&[0; 9]);
    let header = riegeli_framing::ChunkHeader::for_data(b'r', b"abc", 2, 3).expect("header");
    input.extend_from_slice(&header.encode());
    checks::chunk_header(&input);
    // position: edges of the first block.
    for p in [0u64, 24, 25, 65_511, 65_512, 65_535, 65_536] {
        let mut input = vec![0u8];
        input.extend_from_slice(&p.to_le_bytes());
        input.extend_from_slice(&131_000u64.to_le_bytes());
        checks::position(&input);
    }
    // chunk_parse, framed mode: a chunk crossing a block boundary (selector 2,
    // raw 0x10000 + 0x10: 48 bytes before the boundary), 5 records, no mutation.
    let mut input = vec![1u8, 2];
    input.extend_from_slice(&0x1_0010u64.to_le_bytes());
    input.extend_from_slice(&[b'r', 5, 0, 0]);
    input.extend_from_slice(&[7u8; 200]);
    checks::chunk_parse(&input);
    // chunk_parse, file mode.
    checks::chunk_parse(&[2u8]);
}
