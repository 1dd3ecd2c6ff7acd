//! Integration tests that run the `riegeli` binary.

mod array_record;
// riegeli-arrow's message types with a field of every kind, and its random messages.
#[allow(dead_code, reason = "the helpers the Arrow tests use and these do not")]
#[path = "../../riegeli-arrow/tests/common.rs"]
mod arrow_common;
mod columns;
mod commands;
mod golden;
mod memory;
mod objects;
mod proto;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata").join(name)
}

fn riegeli(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_riegeli"))
        .args(args)
        // A backtrace would show up in the one-line checks below.
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run riegeli");
    // The command may exit before reading all of its input.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh scratch directory for one test.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("riegeli-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Checks that the command failed with `code` and one line on stderr,
/// `riegeli: ...` containing `needle`, without a panic or a backtrace.
#[track_caller]
fn assert_one_line_error(out: &Output, code: i32, needle: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("riegeli: "), "{stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
}

#[test]
fn describe_lists_chunks_of_a_cpp_file() {
    let out = riegeli(&["describe", testdata("valid/simple_zstd.riegeli").to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("chunk_type: FILE_SIGNATURE"));
    assert!(stdout.contains("chunk_type: SIMPLE"));
    assert!(stdout.contains("compression_type: ZSTD"));
    let json = riegeli(&["describe", "--json", testdata("valid/transposed_brotli.riegeli").to_str().unwrap()], b"");
    assert!(json.status.success());
    let first: serde_json::Value = serde_json::from_str(text(&json.stdout).lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["chunk_type"], "TRANSPOSED");
    assert_eq!(first["compression_type"], "BROTLI");
}

#[test]
fn count_and_verify_golden_files() {
    let out = riegeli(&["count", testdata("valid/simple_none.riegeli").to_str().unwrap()], b"");
    assert_eq!(text(&out.stdout).trim(), "1500");
    let out = riegeli(&["verify", testdata("valid/transposed_zstd.riegeli").to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stdout));
    let out = riegeli(&["verify", testdata("corrupt/chunk_data_flip.riegeli").to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("64160"), "{}", text(&out.stdout));
}

#[test]
fn write_then_cat_round_trips_in_every_format() {
    let dir = std::env::temp_dir().join(format!("riegeli-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("lines.riegeli");
    let input = b"hello\nworld\n\nwith \"quotes\" and \\ backslash\n";
    for options in ["default", "uncompressed", "zstd:5", "snappy", "transpose,brotli:3"] {
        let out = riegeli(&["write", "--options", options, "--input-format", "lines", file.to_str().unwrap()], input);
        assert!(out.status.success(), "{options}: {}", text(&out.stderr));
        let out = riegeli(&["cat", file.to_str().unwrap()], b"");
        assert_eq!(text(&out.stdout), "hello\nworld\n\nwith \\\"quotes\\\" and \\\\ backslash\n", "{options}");
        let out = riegeli(&["cat", "--format", "json", file.to_str().unwrap()], b"");
        let again = dir.join("again.riegeli");
        let back = riegeli(&["write", "--input-format", "json", again.to_str().unwrap()], &out.stdout);
        assert!(back.status.success(), "{}", text(&back.stderr));
        let delimited = riegeli(&["cat", "--format", "delimited", again.to_str().unwrap()], b"");
        let third = dir.join("third.riegeli");
        let back = riegeli(&["write", third.to_str().unwrap()], &delimited.stdout);
        assert!(back.status.success());
        let out = riegeli(&["cat", "--format", "hex", third.to_str().unwrap()], b"");
        assert_eq!(text(&out.stdout).lines().next(), Some("68656c6c6f"), "{options}");
    }
    // TFRecord out and back in.
    let tf = dir.join("x.tfrecord");
    let out = riegeli(&["convert", file.to_str().unwrap(), tf.to_str().unwrap(), "--to", "tfrecord"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let back = dir.join("back.riegeli");
    let out = riegeli(&["convert", tf.to_str().unwrap(), back.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = riegeli(&["count", back.to_str().unwrap()], b"");
    assert_eq!(text(&out.stdout).trim(), "4");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn skip_corrupted_and_recover() {
    let damaged = testdata("corrupt/chunk_data_flip.riegeli");
    let out = riegeli(&["cat", damaged.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr).lines().count(), 1, "one-line error: {}", text(&out.stderr));
    let out = riegeli(&["cat", "--skip-corrupted", damaged.to_str().unwrap()], b"");
    assert!(out.status.success());
    assert_eq!(text(&out.stdout).lines().count(), 1450);
    assert!(text(&out.stderr).contains("skipped"));
    let dir = std::env::temp_dir().join(format!("riegeli-cli-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fixed = dir.join("fixed.riegeli");
    let out = riegeli(&["recover", damaged.to_str().unwrap(), fixed.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = riegeli(&["verify", fixed.to_str().unwrap()], b"");
    assert!(out.status.success());
    let out = riegeli(&["count", fixed.to_str().unwrap()], b"");
    assert_eq!(text(&out.stdout).trim(), "1450");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_exit_2_and_never_panic() {
    let out = riegeli(&["frobnicate"], b"");
    assert_eq!(out.status.code(), Some(2));
    let out = riegeli(&["write", "--options", "zstd:99", "/dev/null"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("zstd:99"));
    let out = riegeli(&["cat", "/nonexistent/file"], b"");
    assert_eq!(out.status.code(), Some(1));
    let out = riegeli(&["cat", "-"], b"definitely not a riegeli file, just some text that goes on");
    assert_eq!(out.status.code(), Some(1));
    assert!(!text(&out.stderr).contains("panicked"));
}
