//! Replays the minimized fuzz crashers in `fuzz/regressions/<target>/` of the
//! riegeli-codec targets through the same checks the fuzz targets run
//! (`fuzz/src/codec.rs`, included here).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[path = "../../../fuzz/src/codec.rs"]
#[allow(unreachable_pub, reason = "public in the fuzz crate, which shares this file")]
mod checks;

/// The check a fuzz target runs on its input.
type Check = fn(&[u8]);

/// The fuzz targets over riegeli-codec, and the check each one runs.
const TARGETS: [(&str, Check); 6] = [
    ("simple_chunk", checks::simple_chunk),
    ("decompress_brotli", checks::decompress_brotli),
    ("decompress_zstd", checks::decompress_zstd),
    ("decompress_snappy", checks::decompress_snappy),
    ("delta", checks::delta),
    ("transposed_chunk", checks::transposed_chunk),
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

/// Hand-built valid inputs (from the format, not from the encoders) take each
/// target down its success path, where most of its assertions are, and run clean.
/// The checks round-trip through every codec, so they need all of them.
#[test]
#[cfg(all(feature = "brotli", feature = "zstd", feature = "snappy"))]
fn checks_accept_valid_inputs() {
    // simple_chunk: 2 records, 3 bytes, separator '\n', level 0, then an
    // uncompressed simple chunk holding "ab" and "c": type 0, sizes length 2,
    // sizes [2, 1], values "abc".
    checks::simple_chunk(&[2, 0, 3, 0, 0, 0, b'\n', 0, 0x00, 0x02, 0x02, 0x01, b'a', b'b', b'c']);
    // decompress_snappy: declared size 3, then a raw snappy stream: length 3,
    // a literal of 3 bytes (tag (3 - 1) << 2) and "abc".
    checks::decompress_snappy(&[0x03, 0x03, 0x08, b'a', b'b', b'c']);
    // decompress_zstd and decompress_brotli: declared size 0 then garbage (an
    // error), and the round trips of those bytes.
    checks::decompress_zstd(&[0x00, 0x28, 0xb5, 0x2f, 0xfd]);
    checks::decompress_brotli(&[0x00, 0x06]);
    // delta, INT32: block size 128, 4 miniblocks, 1 value, first value 7
    // (ZigZag 14): a stream with no block (spec section 4).
    checks::delta(&[0x00, 0x80, 0x01, 0x04, 0x01, 0x0e]);
    // delta, INT64, same header.
    checks::delta(&[0x01, 0x80, 0x01, 0x04, 0x01, 0x0e, 0xff, 0xff]);
    // transposed_chunk: 1 record of 0 bytes, not strict, no compression for
    // the round trip, separator '\n', then the chunk of one empty record
    // (spec section 12.6).
    checks::transposed_chunk(&[1, 0, 0, 0, 0, 0, 0, b'\n', 0x00, 0x06, 0x00, 0x00, 0x01, 0x03, 0x00, 0x00]);
    // The round trips with every compression type, on records with bytes that
    // parse as protobuf fields (field 1, varint 150).
    checks::transposed_chunk(&[0, 0, 0, 0, 0, 0, 2, b'\n', 0x08, 0x96, 0x01, b'\n', 0x08, 0x01]);
    checks::transposed_chunk(&[0, 0, 0, 0, 0, 0, 4, b'\n', 0x08, 0x96, 0x01, b'\n', 0x08, 0x01]);
    checks::transposed_chunk(&[0, 0, 0, 0, 0, 0, 6, b'\n', 0x08, 0x96, 0x01, b'\n', 0x08, 0x01]);
}
