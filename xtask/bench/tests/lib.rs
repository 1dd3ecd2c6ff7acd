//! Tests of the benchmark programs (the runs are tiny: what is checked is the shape of the
//! report and the handling of arguments, never a speed).

use std::path::PathBuf;
use std::process::{Command, Output};

fn records_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_records_bench")).args(args).output().expect("run records_bench")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh scratch directory for one test.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("riegeli-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn records_bench_prints_one_row_per_option_set() {
    let out = records_bench(&["--megabytes", "1", "--repeat", "1", "--config", "uncompressed", "--config", "zstd:1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[1].starts_with("options") && lines[1].contains("ratio %"), "{table}");
    assert!(lines[2].starts_with("uncompressed ") && lines[3].starts_with("zstd:1 "), "{table}");
    let out = records_bench(&["--list-configs"]);
    assert_eq!(text(&out.stdout).lines().count(), 15, "records_benchmark's option sets");
}

#[test]
fn records_bench_refuses_bad_arguments_before_measuring() {
    // A bad option set is a usage error before anything is measured or printed.
    let out = records_bench(&["--megabytes", "1", "--config", "zstd:99"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("zstd:99"), "{stderr}");
    assert!(out.stdout.is_empty());
    for args in [&["--repeat", "0"][..], &["--generate", "words"], &["--megabytes"], &["--bogus", "1"]] {
        let out = records_bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn records_bench_saves_and_reads_back_the_records_it_measures() {
    let dir = scratch_dir("save");
    let saved = dir.join("records.delimited");
    let (saved, json) = (saved.to_str().unwrap(), dir.join("figures.json"));
    let out = records_bench(&[
        "--generate",
        "proto",
        "--megabytes",
        "1",
        "--repeat",
        "1",
        "--config",
        "snappy",
        "--save-records",
        saved,
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The stream: varint lengths and records, as many as the table's first line says.
    let bytes = std::fs::read(saved).unwrap();
    let (mut rest, mut count) = (bytes.as_slice(), 0u64);
    while !rest.is_empty() {
        let (mut len, mut shift) = (0usize, 0);
        while let Some((&b, tail)) = rest.split_first() {
            rest = tail;
            len |= usize::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        rest = &rest[len..];
        count += 1;
    }
    let first = text(&out.stdout).lines().next().unwrap().to_owned();
    assert!(first.starts_with(&format!("{count} records, ")), "{first}");
    // Measured again from the saved stream, with the figures as JSON.
    let out = records_bench(&[
        "--input-delimited",
        saved,
        "--repeat",
        "1",
        "--config",
        "transpose,zstd:1",
        "--read-parallelism",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let figures: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(figures[0]["config"], "transpose,zstd:1");
    assert_eq!(figures[0]["records"], count);
    assert!(figures[0]["par_read_real_s"].is_f64(), "{figures}");
    let _ = std::fs::remove_dir_all(&dir);
}
