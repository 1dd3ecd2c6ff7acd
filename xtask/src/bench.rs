//! `cargo xtask bench ...`: benchmarks.
//!
//! - `bench records [--generate text|proto|random] [--megabytes N] [--repeat N] [--config OPTS]...`:
//!   the records_benchmark table (google/riegeli `records/tools/records_benchmark.cc`) for
//!   riegeli-rs, side by side in one run with Google's C++ implementation (through
//!   array-record 0.8.6 in the oracle venv) and with the `riegeli` 0.2.1 crate
//!   (`bench-peers/src/bin/riegeli_rs_table.rs`), on the same records. For each option set the
//!   three implementations run one after the other, so machine noise hits them alike.
//! - `bench array-record`: our ArrayRecord reader and C++'s (through the oracle venv) on the
//!   same generated file in one run: 10,000 random indices and read-all, as a table.
//! - `bench [criterion args]`: every crate's criterion benches.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use xshell::{Shell, cmd};

/// Times the C++ reader: `read(indices)` and `read_all()`, best of 5.
const CPP_TIMER: &str = r#"
import sys, time
from array_record.python import array_record_module as m
path = sys.argv[1]
indices = [int(x) for x in open(path + '.indices').read().split()]
reader = m.ArrayRecordReader(path)
assert reader.ok()
def best(f, n):
    times = []
    for _ in range(5):
        start = time.perf_counter()
        got = f()
        times.append(time.perf_counter() - start)
        assert len(got) == n, (len(got), n)
    return min(times)
print('cpp random_10k %.6f %d' % (best(lambda: reader.read(indices), len(indices)), len(indices)))
n = reader.num_records()
print('cpp read_all %.6f %d' % (best(lambda: reader.read_all(), n), n))
"#;

pub(crate) fn run(sh: &Shell, args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("records") => records(sh, &args[1..]),
        Some("array-record") => array_record(sh),
        _ => {
            cmd!(sh, "cargo bench --workspace {args...}").run()?;
            Ok(())
        }
    }
}

fn records(sh: &Shell, args: &[String]) -> Result<()> {
    let mut generate = "text".to_owned();
    let mut megabytes = "50".to_owned();
    let mut repeat = "3".to_owned();
    let mut configs = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value")).cloned();
        match arg.as_str() {
            "--generate" => generate = value()?,
            "--megabytes" => megabytes = value()?,
            "--repeat" => repeat = value()?,
            "--config" => configs.push(value()?),
            other => bail!("unexpected argument {other:?}"),
        }
    }
    let root = crate::project_root();
    let work = root.join("target").join("bench-records");
    sh.create_dir(&work)?;
    crate::ci::step("building riegeli-cli and bench-peers (release)");
    cmd!(sh, "cargo build --release --locked -p riegeli-cli").run()?;
    cmd!(sh, "cargo build --release --locked --manifest-path bench-peers/Cargo.toml --bin riegeli_rs_table").run()?;
    let python = crate::python::venv(sh)?;
    let riegeli = root.join("target/release/riegeli");
    if configs.is_empty() {
        // records_benchmark's default option sets, as `riegeli bench` knows them.
        configs = cmd!(sh, "{riegeli} bench --list-configs").read()?.lines().map(str::to_owned).collect();
    }
    let peer = root.join("bench-peers/target/release/riegeli_rs_table");
    let script = root.join("xtask/scripts/cxx_records_bench.py");
    let records = work.join("records.delimited");
    let mut rows = Vec::new();
    for (i, config) in configs.iter().enumerate() {
        crate::ci::step(&format!("{config} ({}/{})", i + 1, configs.len()));
        let ours = work.join("ours.json");
        // The first run generates the records; the others measure those same bytes.
        let mut source = vec!["--generate".to_owned(), generate.clone(), "--megabytes".to_owned(), megabytes.clone()];
        if i == 0 {
            source.extend(["--save-records".to_owned(), records.display().to_string()]);
        } else {
            source = vec!["--input-delimited".to_owned(), records.display().to_string()];
        }
        cmd!(sh, "{riegeli} bench {source...} --repeat {repeat} --config {config} --json {ours} --dir {work}").run()?;
        let cxx = work.join("cxx.json");
        cmd!(sh, "{python} {script} {records} {repeat} {cxx} {work} {config}").run()?;
        let rr = work.join("riegeli_rs.json");
        cmd!(sh, "{peer} {records} {repeat} {rr} {work} {config}").run()?;
        rows.push((config.clone(), first(&ours)?, first(&cxx)?, first(&rr).ok()));
    }
    let table = render(&rows, &repeat);
    println!("{table}");
    let out = work.join("table.md");
    sh.write_file(&out, &table)?;
    eprintln!("table written to {}", out.display());
    Ok(())
}

/// The first object of a JSON array file.
fn first(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: Value = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    value.get(0).cloned().with_context(|| format!("{}: no figures", path.display()))
}

fn render(rows: &[(String, Value, Value, Option<Value>)], repeat: &str) -> String {
    let num = |v: &Value, key: &str| v.get(key).and_then(Value::as_f64);
    let mbps = |v: &Value, key: &str| match (num(v, "payload_bytes"), num(v, key)) {
        (Some(p), Some(s)) if s > 0.0 => Some(p / 1e6 / s),
        _ => None,
    };
    let ratio = |v: &Value| match (num(v, "file_bytes"), num(v, "payload_bytes")) {
        (Some(f), Some(p)) if p > 0.0 => format!("{:.2}", 100.0 * f / p),
        _ => "-".to_owned(),
    };
    let cpu = |v: &Value, real: &str, cpu: &str| match (num(v, cpu), num(v, real)) {
        (Some(c), Some(r)) if r > 0.0 => format!("{:.0}%", 100.0 * c / r),
        _ => "-".to_owned(),
    };
    let fmt = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.0}"));
    let times = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".to_owned(),
    };
    let mut out = String::new();
    let records = rows.first().and_then(|r| num(&r.1, "records")).unwrap_or(0.0);
    let payload = rows.first().and_then(|r| num(&r.1, "payload_bytes")).unwrap_or(0.0);
    let _ = writeln!(
        out,
        "{records:.0} records, {:.1} MB payload; MB/s = 10^6 payload bytes per real second, best of {repeat}; \
         ratio = file size / payload; cpu = CPU time / real time. Every implementation writes a file in \
         target/bench-records and reads it back (page cache, as records_benchmark's /tmp files).\n\
         C++ = Google's Riegeli through array-record 0.8.6 (group size matched to the chunk size; its \
         Python writer is single-threaded, so `parallelism` has no effect there); C++ read_all uses its \
         thread pool, read() is one record at a time with max_parallelism:0. rr = the `riegeli` 0.2.1 crate \
         (serial: no parallelism option).\n",
        payload / 1e6
    );
    let _ = writeln!(
        out,
        "| options | ratio % ours / C++ / rr | write MB/s ours / C++ / rr | write cpu ours | read MB/s ours / C++ read_all / C++ read() / rr | read cpu ours | write vs C++ / rr | read vs C++ best / rr |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for (config, ours, cxx, rr) in rows {
        let rr_or = |f: &dyn Fn(&Value) -> String| rr.as_ref().map_or("-".to_owned(), f);
        let cxx_read = match (mbps(cxx, "read_real_s"), mbps(cxx, "seq_read_real_s")) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let rr_write = rr.as_ref().and_then(|v| mbps(v, "write_real_s"));
        let rr_read = rr.as_ref().and_then(|v| mbps(v, "read_real_s"));
        let _ = writeln!(
            out,
            "| `{config}` | {} / {} / {} | {} / {} / {} | {} | {} / {} / {} / {} | {} | {} / {} | {} / {} |",
            ratio(ours),
            ratio(cxx),
            rr_or(&|v| ratio(v)),
            fmt(mbps(ours, "write_real_s")),
            fmt(mbps(cxx, "write_real_s")),
            fmt(rr_write),
            cpu(ours, "write_real_s", "write_cpu_s"),
            fmt(mbps(ours, "read_real_s")),
            fmt(mbps(cxx, "read_real_s")),
            fmt(mbps(cxx, "seq_read_real_s")),
            fmt(rr_read),
            cpu(ours, "read_real_s", "read_cpu_s"),
            times(mbps(ours, "write_real_s"), mbps(cxx, "write_real_s")),
            times(mbps(ours, "write_real_s"), rr_write),
            times(mbps(ours, "read_real_s"), cxx_read),
            times(mbps(ours, "read_real_s"), rr_read),
        );
    }
    out
}

/// One timing line: `<impl> <name> <seconds> <records>`.
fn parse(output: &str) -> Result<Vec<(String, String, f64, u64)>> {
    output
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [who, name, seconds, records] = fields.as_slice() else { bail!("unexpected line {line:?}") };
            Ok(((*who).to_owned(), (*name).to_owned(), seconds.parse()?, records.parse()?))
        })
        .collect()
}

fn array_record(sh: &Shell) -> Result<()> {
    let python = crate::python::venv(sh)?;
    let dir = crate::project_root().join("target").join("array-record-bench");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("bench.array_record");
    crate::ci::step("writing the file and timing our reader (release build)");
    let ours = cmd!(sh, "cargo run --release --quiet -p riegeli-records --example array_record_bench -- {path}")
        .read()
        .context("our bench example failed")?;
    crate::ci::step("timing the C++ reader (array-record 0.8.6) on the same file");
    let cpp = cmd!(sh, "{python} -c {CPP_TIMER} {path}").read().context("the C++ timer failed")?;
    let ours = parse(&ours)?;
    let cpp = parse(&cpp)?;
    let size = std::fs::metadata(&path)?.len();
    println!("\nArrayRecord reads, {} ({size} bytes, group_size:100, zstd:3); best of 5 runs\n", path.display());
    println!("{:<28} {:>14} {:>14} {:>10}", "read", "records/s", "C++ records/s", "ours/C++");
    for (_, name, seconds, records) in &ours {
        let rate = *records as f64 / seconds;
        let cpp_name = if name.starts_with("random_10k") { "random_10k" } else { "read_all" };
        let cpp_rate = cpp.iter().find(|c| c.1 == cpp_name).map(|c| c.3 as f64 / c.2);
        match cpp_rate {
            Some(cpp_rate) => {
                println!("{name:<28} {rate:>14.0} {cpp_rate:>14.0} {:>10.2}", rate / cpp_rate);
            }
            None => println!("{name:<28} {rate:>14.0} {:>14} {:>10}", "-", "-"),
        }
    }
    println!("\nC++: reader.read(indices) and reader.read_all() through the Python binding (its thread pool).");
    Ok(())
}
