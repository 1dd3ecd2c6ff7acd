//! `cargo xtask bench ...`: benchmarks.
//!
//! Every benchmark lives under `xtask/bench/` (besides criterion's `benches/` of each crate): the
//! programs timed are binaries of the `riegeli-bench` package there (`records_bench`,
//! `array_record_bench`, `read_loop`, `object_bench`, `hash_ceiling`, `arrow_bench`), the other implementations
//! in `xtask/bench/peers/` (a workspace of its own), the Python sides in `xtask/bench/python/`.
//! None of them is in the `riegeli` binary, and none is part of `ci`.
//!
//! - `bench records [--generate text|proto|random] [--megabytes N] [--repeat N] [--config OPTS]...`:
//!   the records_benchmark table (google/riegeli `records/tools/records_benchmark.cc`) for
//!   riegeli-rs (`records_bench`), side by side in one run with Google's C++ implementation
//!   (through array-record 0.8.6 in the oracle venv) and with the `riegeli` 0.2.1 crate
//!   (`xtask/bench/peers/src/bin/riegeli_rs_table.rs`), on the same records. For each option set the
//!   three implementations run one after the other, so machine noise hits them alike.
//! - A baseline (both tables): `--baseline-ref REF` builds the same benchmark at a git revision
//!   (its tree extracted with `git archive` into `target/bench-baseline/<commit>/`, built there in
//!   release once and kept: before the benchmarks moved here that is `riegeli bench` or the
//!   `array_record_bench` example of riegeli-records, which take the same arguments);
//!   `--baseline BIN` takes such a binary already built (`records_bench`, or an older `riegeli`,
//!   run as `riegeli bench`). Either is timed in the same rounds as ours, and a before → now table
//!   is added.
//! - `bench array-record [--large] [--megabytes N] [--record-size B] [--config OPTS]...
//!   [--repeat N] [--batch N] [--baseline-ref REF [--alternations N]]`: our ArrayRecord reader (serial and parallel) and C++'s (through
//!   the oracle venv) on the same generated file, one config after another: a batch of random
//!   indices and read-all, records/s and MB/s. The default is one small file (200,000 records of
//!   20 to 300 B, `group_size:100,zstd:3`); `--large` is 100 MB of ~1 KiB text-like records with
//!   `zstd:3` and `uncompressed`, `group_size` 100 and 1000. Files are written once per
//!   parameter set (kept in `target/array-record-bench/`), never inside the timing.
//! - `bench python [--records N] [--record-size B] [--options STR] [--rounds R]`: our Python
//!   package (`riegeli.array_record`) against array-record 0.8.6's `array_record_module` (C++) on
//!   the same files, from Python (`xtask/bench/python/bench_python.py`): batch reads,
//!   `read()` and `data_source[i]` loops, a Grain pipeline, two threads against one; a table on
//!   stdout and in `target/bench-python/table.md`. With `--baseline-ref REF [--alternations N]`
//!   the package as it was at REF is built into a venv of its own and the script runs N times
//!   in each venv, alternately: a before → now table of the medians (ours' records/s and
//!   ours/C++, C++ being timed in the same process) in `target/bench-python/baseline.md`.
//! - `bench objects [--megabytes N] [--latency-ms N] [--rounds N] [--servers s3,http]`: ~100 MB
//!   ArrayRecord and Riegeli files read from S3 (`xtask/s3-server`) and HTTP (nginx) on loopback, every
//!   request delayed by a proxy, against the same reads from local disk; a table in
//!   `target/object-bench/table.md`. `--baseline-ref REF [--alternations N]`: `object_bench` as
//!   it was at REF and ours, N times each, alternately, against the same servers; a before → now
//!   table of the medians in `target/object-bench/baseline.md`.
//! - `bench grain [--shards N] [--records-per-shard N] [--record-size B] [--options STR] [--batch N]
//!   [--rounds R] [--workers W]`: one shuffled epoch of ArrayRecord shards (4 x 250,000 records of
//!   ~1 KiB, `group_size:1,zstd:3`) through Grain over array_record's `ArrayRecordDataSource`
//!   (C++), over ours, through our native read-ahead (`riegeli.grain.ArrayRecordIterDataset`) and
//!   over a list of the records, in process and in `mp_prefetch` workers
//!   (`xtask/bench/python/bench_grain.py`); and a reader's index memory per record beside C++'s;
//!   a table in `target/bench-grain/table.md`.
//! - `bench engines [--megabytes N] [--files N] [--record-size B] [--rounds R] [--out PATH] ...`:
//!   in the engines venv (`xtask/bench/python/bench_engines.py`), on the same records
//!   (1 GB of ~4 KiB text-like records by default, kept under /dev/shm): Beam's DirectRunner
//!   reading Riegeli files with `riegeli.beam.ReadFromRiegeli` against TFRecord files with
//!   `beam.io.ReadFromTFRecord` (in process and with 2 worker processes), and Ray reading one
//!   Riegeli file with `riegeli.ray.read_riegeli` on 1 and 2 CPUs; a table on stdout and in
//!   `target/bench-engines/table.md`.
//! - `bench limits [--megabytes N] [--rounds R] [--huge-mib M] [--skip-huge] [--out PATH]`: one
//!   table (`bench_limits.rs`) of the `riegeli` CLI at the limits: `verify`, `cat` and `count`
//!   against `dd` on files in the page cache, `riegeli write` (default threads, `-j 1`) against
//!   C++'s writer, `cat --records` with 10,000 random indices against C++'s `read(indices)`, and
//!   the peak RSS of each command on four huge records; whole processes timed, best of R rounds;
//!   files under `<target dir>/bench-limits/` (honouring `CARGO_TARGET_DIR`), the table in its
//!   `table.md`.
//! - `bench arrow [--records N] [--rounds R] [--columns a,b] [--out PATH]`: records as Arrow
//!   columns (issue 31), in `target/bench-arrow-venv` (the oracle venv's packages and ptars;
//!   `xtask/bench/python/bench_arrow.py`): 1,000,000
//!   serialized protos of a 20-field message (scalars, a string, an enum, a nested message, a
//!   repeated field) written by our Python package with `transpose,zstd:3` and the type in the
//!   file's metadata (kept in `target/bench-arrow/`), then, each case in turn, median of R
//!   rounds (default 3): our plain reads of the records as bytes, ptars (PyPI, a Rust
//!   protobuf-to-Arrow converter) converting them, `to_arrow()` (every column) and
//!   `to_arrow(columns)` (default `id,name`); the same in Rust alone (`arrow_bench`, an
//!   `ArrowReader`), to show what the binding adds, and its parse alone (records in memory, as
//!   ptars is given them); the peak memory of each in a fresh process
//!   beside the projected columns plus the largest chunk; the ratios against the issue's targets.
//!   A table on stdout and in `target/bench-arrow/table.md`.
//! - `bench [criterion args]`: every crate's criterion benches.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use xshell::{Shell, cmd};

/// Times the C++ reader: `read(indices)` and `read_all()`, best of `repeat`.
/// Prints `cpp <name> <seconds> <records> <payload bytes>`.
const CPP_TIMER: &str = r#"
import sys, time
from array_record.python import array_record_module as m
path, repeat = sys.argv[1], int(sys.argv[2])
indices = [int(x) for x in open(path + '.indices').read().split()]
reader = m.ArrayRecordReader(path)
assert reader.ok()
def best(name, f):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        got = f()
        times.append(time.perf_counter() - start)
        shape = (len(got), sum(len(r) for r in got))
        del got
    print('cpp %s %.6f %d %d' % (name, min(times), shape[0], shape[1]))
best('random', lambda: reader.read(indices))
best('read_all', lambda: reader.read_all())
"#;

pub(crate) fn run(sh: &Shell, args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("records") => records(sh, &args[1..]),
        Some("array-record") => array_record(sh, &args[1..]),
        Some("python") => python(sh, &args[1..]),
        Some("grain") => grain(sh, &args[1..]),
        Some("arrow") => arrow(sh, &args[1..]),
        Some("objects") => objects(sh, &args[1..]),
        Some("engines") => engines(sh, &args[1..]),
        Some("limits") => crate::bench_limits::run(sh, &args[1..]),
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
    let mut baseline = BaselineArg::None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value")).cloned();
        match arg.as_str() {
            "--generate" => generate = value()?,
            "--megabytes" => megabytes = value()?,
            "--repeat" => repeat = value()?,
            "--config" => configs.push(value()?),
            "--baseline" => baseline = BaselineArg::Binary(value()?),
            "--baseline-ref" => baseline = BaselineArg::Ref(value()?),
            other => bail!("unexpected argument {other:?}"),
        }
    }
    let root = crate::common::project_root();
    let work = root.join("target").join("bench-records");
    sh.create_dir(&work)?;
    // The files each implementation writes and reads back: on tmpfs when there is
    // one, so that filesystem writeback does not decide the uncompressed rows.
    let shm = std::path::Path::new("/dev/shm");
    let files =
        if shm.is_dir() { shm.join(format!("riegeli-bench-records-{}", std::process::id())) } else { work.clone() };
    sh.create_dir(&files)?;
    crate::common::step("building records_bench and the peers (release)");
    cmd!(sh, "cargo build --release --locked -p riegeli-bench --bin records_bench").run()?;
    cmd!(sh, "cargo build --release --locked --manifest-path xtask/bench/peers/Cargo.toml --bin riegeli_rs_table")
        .run()?;
    let baseline = baseline.resolve(sh, Benchmark::Records)?;
    let python = crate::python::venv(sh)?;
    let ours_bench = target_dir().join("release/records_bench");
    if configs.is_empty() {
        // records_benchmark's default option sets, as `records_bench` knows them.
        configs = cmd!(sh, "{ours_bench} --list-configs").read()?.lines().map(str::to_owned).collect();
    }
    // The peers' workspace builds into CARGO_TARGET_DIR too when it is set.
    let peer = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("xtask/bench/peers/target"), PathBuf::from)
        .join("release/riegeli_rs_table");
    let script = root.join("xtask/bench/python/cxx_records_bench.py");
    let records = work.join("records.delimited");
    let mut rows = Vec::new();
    let mut before_rows = Vec::new();
    let rounds: u32 = repeat.parse().with_context(|| format!("--repeat {repeat:?}"))?;
    for (i, config) in configs.iter().enumerate() {
        // Each implementation in turn, a round at a time, so that a slow spell of a
        // shared machine falls on all three rather than on one; two runs per process,
        // so that none is timed only cold.
        let (mut ours, mut cxx, mut rr, mut before) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds.max(1) {
            crate::common::step(&format!("{config} ({}/{}), round {}/{rounds}", i + 1, configs.len(), round + 1));
            // The first run generates the records; the others measure those same bytes.
            let mut source =
                vec!["--generate".to_owned(), generate.clone(), "--megabytes".to_owned(), megabytes.clone()];
            if i == 0 && round == 0 {
                source.extend(["--save-records".to_owned(), records.display().to_string()]);
            } else {
                source = vec!["--input-delimited".to_owned(), records.display().to_string()];
            }
            let input = ["--input-delimited".to_owned(), records.display().to_string()];
            let mut run_ours = |source: &[String]| -> Result<()> {
                let ours_json = work.join("ours.json");
                cmd!(sh, "{ours_bench} {source...} --repeat 2 --config {config} --json {ours_json} --dir {files} --read-parallelism 1 --write-parallelism 2").run()?;
                ours.push(first(&ours_json)?);
                Ok(())
            };
            // The same records and options through an earlier build, in the same round: after
            // ours in even rounds, before it in odd ones (the first round makes the records).
            let baseline_first = round % 2 == 1;
            if !baseline_first {
                run_ours(&source)?;
            }
            if let Some(baseline) = &baseline {
                let before_json = work.join("before.json");
                let (program, prefix) = (&baseline.program, &baseline.prefix);
                cmd!(sh, "{program} {prefix...} {input...} --repeat 2 --config {config} --json {before_json} --dir {files} --read-parallelism 1 --write-parallelism 2").run()?;
                before.push(first(&before_json)?);
            }
            if baseline_first {
                run_ours(&source)?;
            }
            let cxx_json = work.join("cxx.json");
            cmd!(sh, "{python} {script} {records} 2 {cxx_json} {files} {config}").run()?;
            cxx.push(first(&cxx_json)?);
            let rr_json = work.join("riegeli_rs.json");
            cmd!(sh, "{peer} {records} 2 {rr_json} {files} {config}").run()?;
            rr.extend(first(&rr_json).ok());
        }
        let (ours, cxx, rr, before) = (median(ours), median(cxx), median(rr), median(before));
        let (Some(ours), Some(cxx)) = (ours, cxx) else { bail!("{config}: no figures") };
        if let Some(before) = before {
            before_rows.push((config.clone(), ours.clone(), before));
        }
        rows.push((config.clone(), ours, cxx, rr));
    }
    if files != work {
        sh.remove_path(&files)?;
    }
    let mut table = render(&rows, &repeat);
    if let Some(baseline) = &baseline {
        table.push_str(&render_baseline(&before_rows, &baseline.name));
    }
    println!("{table}");
    let out = work.join("table.md");
    sh.write_file(&out, &table)?;
    eprintln!("table written to {}", out.display());
    Ok(())
}

/// The first of `runs` with every time (`*_s`) replaced by its median over all of them (the
/// upper one of an even count); `None` when there are no runs.
fn median(runs: Vec<Value>) -> Option<Value> {
    let mut out = runs.first()?.clone();
    if let Some(fields) = out.as_object_mut() {
        for (key, value) in fields.iter_mut().filter(|(key, _)| key.ends_with("_s")) {
            let times = runs.iter().filter_map(|run| run.get(key.as_str()).and_then(Value::as_f64)).collect();
            if let Some(middle) = middle(times) {
                *value = Value::from(middle);
            }
        }
    }
    Some(out)
}

/// The median of `values` (the upper one of an even count); `None` when empty.
fn middle(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
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
        "{records:.0} records, {:.1} MB payload; MB/s = 10^6 payload bytes per real second, median of {repeat} \
         rounds (in each round every implementation runs in turn, each the best of two runs in one process); \
         ratio = file size / payload; cpu = CPU time / real time. Every implementation writes a file \
         (on /dev/shm when it exists) and reads it back, as records_benchmark does with its /tmp files.\n\
         C++ = Google's Riegeli through array-record 0.8.6 (group size matched to the chunk size; its \
         Python writer is single-threaded, so `parallelism` has no effect there); C++ read_all uses its \
         thread pool, read() is one record at a time with max_parallelism:0; ours 2 threads is \
         RecordReader with `RecordReaderOptions::parallelism` 1 (one decoding thread besides the caller, which decodes too rather than wait). \
         Ours io is `RecordWriter::with_io_thread` (file writes on a thread of their own), io+par the same with \
         `parallelism:2` added unless the options set one. rr = the `riegeli` 0.2.1 crate \
         (serial: no parallelism option).\n",
        payload / 1e6
    );
    let _ = writeln!(
        out,
        "| options | ratio % ours / C++ / rr | write MB/s ours / ours io / ours io+par / C++ / rr | write cpu ours | read MB/s ours / ours 2 threads / C++ read_all / C++ read() / rr | read cpu ours | write (ours best) vs C++ / rr | read (ours best) vs C++ best / rr |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for (config, ours, cxx, rr) in rows {
        let rr_or = |f: &dyn Fn(&Value) -> String| rr.as_ref().map_or("-".to_owned(), f);
        let cxx_read = match (mbps(cxx, "read_real_s"), mbps(cxx, "seq_read_real_s")) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let rr_write = rr.as_ref().and_then(|v| mbps(v, "write_real_s"));
        let ours_read = match (mbps(ours, "read_real_s"), mbps(ours, "par_read_real_s")) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let rr_read = rr.as_ref().and_then(|v| mbps(v, "read_real_s"));
        let ours_write = ["write_real_s", "io_write_real_s", "io_par_write_real_s"]
            .iter()
            .filter_map(|key| mbps(ours, key))
            .reduce(f64::max);
        let _ = writeln!(
            out,
            "| `{config}` | {} / {} / {} | {} / {} / {} / {} / {} | {} | {} / {} / {} / {} / {} | {} | {} / {} | {} / {} |",
            ratio(ours),
            ratio(cxx),
            rr_or(&|v| ratio(v)),
            fmt(mbps(ours, "write_real_s")),
            fmt(mbps(ours, "io_write_real_s")),
            fmt(mbps(ours, "io_par_write_real_s")),
            fmt(mbps(cxx, "write_real_s")),
            fmt(rr_write),
            cpu(ours, "write_real_s", "write_cpu_s"),
            fmt(mbps(ours, "read_real_s")),
            fmt(mbps(ours, "par_read_real_s")),
            fmt(mbps(cxx, "read_real_s")),
            fmt(mbps(cxx, "seq_read_real_s")),
            fmt(rr_read),
            cpu(ours, "read_real_s", "read_cpu_s"),
            times(ours_write, mbps(cxx, "write_real_s")),
            times(ours_write, rr_write),
            times(ours_read, cxx_read),
            times(ours_read, rr_read),
        );
    }
    out
}

/// Ours against `--baseline` (an earlier build), per configuration and measurement.
fn render_baseline(rows: &[(String, Value, Value)], baseline: &str) -> String {
    const KEYS: [(&str, &str); 5] = [
        ("write", "write_real_s"),
        ("write io", "io_write_real_s"),
        ("write io+par", "io_par_write_real_s"),
        ("read", "read_real_s"),
        ("read 2 threads", "par_read_real_s"),
    ];
    let mbps = |v: &Value, key: &str| match (
        v.get("payload_bytes").and_then(Value::as_f64),
        v.get(key).and_then(Value::as_f64),
    ) {
        (Some(p), Some(s)) if s > 0.0 => Some(p / 1e6 / s),
        _ => None,
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nAgainst the baseline `{baseline}` (MB/s before → now, change), medians of the same alternating rounds:\n"
    );
    let _ = writeln!(out, "| options | {} |", KEYS.map(|(name, _)| name).join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(KEYS.len()));
    let mut worst: Option<(f64, String)> = None;
    for (config, ours, before) in rows {
        let cells: Vec<String> = KEYS
            .iter()
            .map(|(name, key)| match (mbps(before, key), mbps(ours, key)) {
                (Some(b), Some(n)) => {
                    let change = 100.0 * (n / b - 1.0);
                    if worst.as_ref().is_none_or(|(w, _)| change < *w) {
                        worst = Some((change, format!("{config} {name}")));
                    }
                    format!("{b:.0} → {n:.0} ({change:+.1}%)")
                }
                _ => "-".to_owned(),
            })
            .collect();
        let _ = writeln!(out, "| `{config}` | {} |", cells.join(" | "));
    }
    if let Some((change, what)) = worst {
        let _ = writeln!(out, "\nLargest slowdown: {change:+.1}% ({what}).");
    }
    out
}

/// `bench python [--baseline-ref REF] [--alternations N] ...`: installs our package (release)
/// into the oracle venv and runs the script, which prints the table and writes it to
/// `target/bench-python/table.md`. With a baseline, the package as it was at `REF` goes into a
/// venv of its own (`target/bench-baseline-venv`), the same script runs N times (default 3) in
/// each venv, alternately, and a before → now table of the medians is added.
fn python(sh: &Shell, args: &[String]) -> Result<()> {
    let (baseline, alternations, args) = alternation_args(args)?;
    crate::common::step("installing riegeli (Python, release) into the oracle venv");
    let python = crate::python::install_package(sh)?;
    let Some(git_ref) = baseline else {
        crate::common::step("timing ours against array_record_module (C++), from Python");
        cmd!(sh, "{python} xtask/bench/python/bench_python.py {args...}").run()?;
        return Ok(());
    };
    let before = build_at(sh, &git_ref, Benchmark::Python)?;
    let work = crate::common::project_root().join("target/bench-python");
    sh.create_dir(&work)?;
    let script = crate::common::project_root().join("xtask/bench/python/bench_python.py");
    let tables = alternate(alternations, |round, which| {
        let program = if which == Which::Now { python.clone() } else { before.program.clone() };
        let out = work.join(format!("{}-{round}.md", which.name()));
        crate::common::step(&format!("round {}/{alternations}: {} ({})", round + 1, which.name(), program.display()));
        cmd!(sh, "{program} {script} --out {out}").args(&args).ignore_stdout().run()?;
        Ok(sh.read_file(&out)?)
    })?;
    // Ours' records/s and ours/C++ (C++ timed in the same process: the ratio sheds machine noise).
    let report = compare_tables(&tables, &[(3, "ours rec/s"), (4, "ours/C++")], &before.name);
    println!("{report}");
    sh.write_file(work.join("baseline.md"), &report)?;
    Ok(())
}

/// `bench grain`: Grain pipelines over array_record's data source, ours and our native
/// read-ahead, and the index memory of a reader, in the oracle venv
/// (`xtask/bench/python/bench_grain.py`, whose flags `args` are).
fn grain(sh: &Shell, args: &[String]) -> Result<()> {
    crate::common::step("installing riegeli (Python, release) into the oracle venv");
    let python = crate::python::install_package(sh)?;
    crate::common::step("a shuffled epoch through Grain: array_record's source, ours, our read-ahead, a list");
    cmd!(sh, "{python} xtask/bench/python/bench_grain.py {args...}").run()?;
    Ok(())
}

/// `bench arrow`: records as Arrow columns, ours (from Python, and riegeli-arrow alone through
/// `arrow_bench`) against ptars on the same records, in a venv of the oracle's packages and ptars
/// (`xtask/bench/python/bench_arrow.py`, whose flags `args` are).
fn arrow(sh: &Shell, args: &[String]) -> Result<()> {
    crate::common::step("building arrow_bench (release)");
    cmd!(sh, "cargo build --release --locked -p riegeli-bench --bin arrow_bench").run()?;
    let rust = target_dir().join("release/arrow_bench");
    let packages = [crate::python::oracle_packages(), crate::python::BENCH_ARROW_DEPS.to_vec()].concat();
    let python = crate::python::venv_with(sh, "bench-arrow-venv", &packages)?;
    crate::common::step("installing riegeli (Python, release) into the bench-arrow venv");
    crate::python::install_package_into(sh, &[&python])?;
    crate::common::step("records as Arrow: ours (to_arrow, all and projected) against ptars");
    cmd!(sh, "{python} xtask/bench/python/bench_arrow.py --rust-bench {rust} {args...}").run()?;
    Ok(())
}

/// `bench engines`: Beam and Ray reading the same records, in the engines venv
/// (`xtask/bench/python/bench_engines.py`, whose flags `args` are).
fn engines(sh: &Shell, args: &[String]) -> Result<()> {
    let python = crate::engines::latest_venv(sh)?;
    crate::common::step("installing riegeli (Python, release) into the engines venv");
    crate::python::install_package_into(sh, &[python.as_path()])?;
    crate::common::step("Beam: ReadFromRiegeli against ReadFromTFRecord; Ray: read_riegeli on 1 and 2 CPUs");
    cmd!(sh, "{python} xtask/bench/python/bench_engines.py {args...}").run()?;
    Ok(())
}

/// `bench objects [--baseline-ref REF] [--alternations N] ...`: reads from S3
/// (`xtask/s3-server`) and HTTP (nginx), on loopback behind a proxy adding latency, against the
/// same reads from local disk (`object_bench`). With a baseline, `object_bench` as it was at
/// `REF` and ours run N times (default 3) each, alternately, against the same servers, and a
/// before → now table of the medians is added.
fn objects(sh: &Shell, args: &[String]) -> Result<()> {
    let (baseline, alternations, args) = alternation_args(args)?;
    crate::common::step("building object_bench (release)");
    cmd!(sh, "cargo build --release --locked -p riegeli-bench --bin object_bench").run()?;
    let now = target_dir().join("release/object_bench");
    let before = baseline.map(|git_ref| build_at(sh, &git_ref, Benchmark::Objects)).transpose()?;
    let (_servers, env) = crate::objects::serve_for_bench(sh)?;
    let run = |program: &Path| -> Result<String> {
        let mut bench = cmd!(sh, "{program}").args(&args);
        for (key, value) in &env {
            bench = bench.env(key, value);
        }
        Ok(bench.read()?)
    };
    let Some(before) = before else {
        crate::common::step("S3 and HTTP with latency against local disk");
        println!("{}", run(&now)?);
        return Ok(());
    };
    // Each run's whole table is kept (`runs/now-1.md`, ...): the comparison takes a number of
    // each cell, the tables say more (requests, hedges, CPU).
    let work = crate::common::project_root().join("target/object-bench");
    sh.create_dir(work.join("runs"))?;
    let tables = alternate(alternations, |round, which| {
        let program = if which == Which::Now { &now } else { &before.program };
        crate::common::step(&format!("round {}/{alternations}: {} ({})", round + 1, which.name(), program.display()));
        let table = run(program.as_path())?;
        sh.write_file(work.join(format!("runs/{}-{}.md", which.name(), round + 1)), &table)?;
        Ok(table)
    })?;
    // The columns of the local and the remote reads.
    let report = compare_tables(&tables, &[(0, "local"), (1, "remote")], &before.name);
    println!("{report}");
    sh.write_file(work.join("baseline.md"), &report)?;
    Ok(())
}

/// Where this workspace's builds go (`CARGO_TARGET_DIR`, or `target/`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| crate::common::project_root().join("target"), PathBuf::from)
}

/// Takes `--baseline-ref REF` and `--alternations N` (default 3) out of `args`; the rest is the
/// benchmark's own.
fn alternation_args(args: &[String]) -> Result<(Option<String>, usize, Vec<String>)> {
    let (mut baseline, mut alternations, mut rest) = (None, 3, Vec::new());
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value")).cloned();
        match arg.as_str() {
            "--baseline-ref" => baseline = Some(value()?),
            "--alternations" => alternations = value()?.parse().context("--alternations")?,
            _ => rest.push(arg.clone()),
        }
    }
    Ok((baseline, alternations.max(1), rest))
}

/// Which build a round of [`alternate`] runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Before,
    Now,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Before => "before",
            Which::Now => "now",
        }
    }
}

/// Runs `round(i, which)` for the baseline and for ours, alternately (ours first in even rounds,
/// the baseline first in odd ones, so that neither always runs on a warmer machine), `n` times
/// each; returns the outputs, before's and now's.
fn alternate(n: usize, mut round: impl FnMut(usize, Which) -> Result<String>) -> Result<[Vec<String>; 2]> {
    let (mut before, mut now) = (Vec::new(), Vec::new());
    for i in 0..n {
        let order = if i % 2 == 0 { [Which::Now, Which::Before] } else { [Which::Before, Which::Now] };
        for which in order {
            let output = round(i, which)?;
            if which == Which::Now { now.push(output) } else { before.push(output) }
        }
    }
    Ok([before, now])
}

/// A row of a markdown table: its first cell, and the first number of each other cell.
type Row = (String, Vec<Option<f64>>);

/// The rows of the markdown tables in `text`: each row's first cell, and the first number of
/// each cell (`None` where it has none; thousands separators ignored).
fn markdown_rows(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix('|')?.strip_suffix('|'))
        .map(|row| row.split('|').map(str::trim).collect::<Vec<_>>())
        .filter(|cells| cells.len() > 1 && !cells.iter().all(|c| c.chars().all(|ch| matches!(ch, '-' | ':'))))
        .filter_map(|cells| {
            let (label, rest) = cells.split_first()?;
            let numbers = rest.iter().map(|cell| first_number(cell)).collect();
            Some(((*label).to_owned(), numbers))
        })
        .collect()
}

/// The first number in `cell` (`1,234.5` is 1234.5).
fn first_number(cell: &str) -> Option<f64> {
    let start = cell.find(|c: char| c.is_ascii_digit())?;
    let digits: String = cell[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, ',' | '.'))
        .filter(|&c| c != ',')
        .collect();
    digits.trim_end_matches('.').parse().ok()
}

/// A before → now table: for each row label found in every table of both runs and each of
/// `columns` (index after the label, name), the median over the runs of before and of now, and
/// the change.
fn compare_tables(tables: &[Vec<String>; 2], columns: &[(usize, &str)], baseline: &str) -> String {
    let [before, now] = tables.each_ref().map(|runs| runs.iter().map(|t| markdown_rows(t)).collect::<Vec<_>>());
    // The row's value in each run, in the order run.
    let values_of = |runs: &[Vec<Row>], label: &str, column: usize| -> Option<Vec<f64>> {
        runs.iter()
            .map(|rows| rows.iter().find(|(l, _)| l == label).and_then(|(_, v)| v.get(column).copied().flatten()))
            .collect()
    };
    let list = |values: &[f64]| values.iter().map(|v| format!("{v}")).collect::<Vec<_>>().join(", ");
    let mut out = format!(
        "Against the baseline `{baseline}`: medians of {} alternating runs each (before → now, change); \
         paired: the median of the runs' now/before ratios, run i of each side being alternated with \
         the other's (what drifts over the runs cancels in a pair)\n\n",
        now.len()
    );
    let _ = writeln!(
        out,
        "| row | measure | before | now | change | paired | runs before; now |\n|---|---|---:|---:|---:|---:|---|"
    );
    let labels: Vec<&String> = now.first().map(|rows| rows.iter().map(|(l, _)| l).collect()).unwrap_or_default();
    for label in labels {
        for &(column, name) in columns {
            let (Some(b), Some(n)) = (values_of(&before, label, column), values_of(&now, label, column)) else {
                continue;
            };
            let (Some(bm), Some(nm)) = (middle(b.clone()), middle(n.clone())) else { continue };
            let percent = |ratio: f64| format!("{:+.1}%", 100.0 * (ratio - 1.0));
            let change = if bm > 0.0 { percent(nm / bm) } else { "-".to_owned() };
            let ratios: Vec<f64> = b.iter().zip(&n).filter(|(b, _)| **b > 0.0).map(|(b, n)| n / b).collect();
            let paired = middle(ratios).map_or_else(|| "-".to_owned(), percent);
            let _ =
                writeln!(out, "| {label} | {name} | {bm} | {nm} | {change} | {paired} | {}; {} |", list(&b), list(&n));
        }
    }
    out
}

/// One timing line: `<impl> <name> <seconds> <records> <payload bytes>`.
fn parse(output: &str) -> Result<Vec<Timing>> {
    output
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [_, name, seconds, records, bytes] = fields.as_slice() else { bail!("unexpected line {line:?}") };
            Ok(Timing {
                name: (*name).to_owned(),
                seconds: seconds.parse()?,
                records: records.parse()?,
                bytes: bytes.parse()?,
            })
        })
        .collect()
}

/// One measurement of [`parse`].
#[derive(Clone)]
struct Timing {
    name: String,
    seconds: f64,
    records: u64,
    bytes: u64,
}

/// `bench array-record`'s large preset: (group size, compression).
const LARGE_CONFIGS: &[&str] =
    &["group_size:100,zstd:3", "group_size:1000,zstd:3", "group_size:100,uncompressed", "group_size:1000,uncompressed"];

fn array_record(sh: &Shell, args: &[String]) -> Result<()> {
    let mut size: Vec<String> = Vec::new();
    let mut configs = Vec::new();
    let mut repeat = "5".to_owned();
    let mut batch = "10000".to_owned();
    let mut alternations = 3_usize;
    let mut baseline = BaselineArg::None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value")).cloned();
        match arg.as_str() {
            "--large" => {
                size = vec!["--megabytes".into(), "100".into(), "--record-size".into(), "1024".into()];
                configs.extend(LARGE_CONFIGS.iter().map(|c| (*c).to_owned()));
            }
            "--megabytes" | "--record-size" => size.extend([arg.clone(), value()?]),
            "--config" => configs.push(value()?),
            "--repeat" => repeat = value()?,
            "--batch" => batch = value()?,
            "--alternations" => alternations = value()?.parse().context("--alternations")?,
            "--baseline" => baseline = BaselineArg::Binary(value()?),
            "--baseline-ref" => baseline = BaselineArg::Ref(value()?),
            other => bail!("unexpected argument {other:?}"),
        }
    }
    if configs.is_empty() {
        configs.push("group_size:100,zstd:3".to_owned());
    }
    let python = crate::python::venv(sh)?;
    let dir = crate::common::project_root().join("target").join("array-record-bench");
    std::fs::create_dir_all(&dir)?;
    crate::common::step("building array_record_bench (release)");
    cmd!(sh, "cargo build --release --quiet --locked -p riegeli-bench --bin array_record_bench").run()?;
    let example = Baseline {
        program: target_dir().join("release/array_record_bench"),
        prefix: Vec::new(),
        name: "now".to_owned(),
    };
    let baseline = baseline.resolve(sh, Benchmark::ArrayRecord)?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut report = String::new();
    let mut baseline_report = String::new();
    for (n, config) in configs.iter().enumerate() {
        // One file per parameter set; the example writes it only when it is missing or stale.
        let path = dir.join(format!("bench-{n}.array_record"));
        crate::common::step(&format!("{config}: our reader, then C++'s (array-record 0.8.6), on {}", path.display()));
        let size = &size;
        let run = |bench: &Baseline| {
            let (program, prefix) = (&bench.program, &bench.prefix);
            cmd!(sh, "{program} {prefix...} {path} {size...} --options {config} --repeat {repeat} --batch {batch}")
                .read()
                .context("array_record_bench failed")
        };
        let ours = run(&example)?;
        if let Some(baseline) = &baseline {
            // Alternating runs (ours first in even ones), each row's median.
            let [before, now] = alternate(alternations.max(1), |i, which| match which {
                Which::Now if i == 0 => Ok(ours.clone()),
                Which::Now => run(&example),
                Which::Before => run(baseline),
            })?;
            let median_rows = |runs: Vec<String>| -> Result<Vec<Timing>> {
                let runs = runs.iter().map(|r| parse(r)).collect::<Result<Vec<_>>>()?;
                let mut rows = runs.first().context("no runs")?.clone();
                for (n, row) in rows.iter_mut().enumerate() {
                    let seconds = runs.iter().filter_map(|r| r.get(n)).map(|t| t.seconds).collect();
                    row.seconds = middle(seconds).unwrap_or(row.seconds);
                }
                Ok(rows)
            };
            let (before, now) = (median_rows(before)?, median_rows(now)?);
            let _ = writeln!(
                baseline_report,
                "\n{config}: records/s before (`{}`) → now, medians of {alternations} alternating runs (each the best of {repeat})\n",
                baseline.name
            );
            let _ = writeln!(baseline_report, "| read | before | now | change |");
            let _ = writeln!(baseline_report, "|---|---:|---:|---:|");
            for (b, n) in before.iter().zip(&now) {
                let (rb, rn) = (b.records as f64 / b.seconds, n.records as f64 / n.seconds);
                let _ =
                    writeln!(baseline_report, "| {} | {rb:.0} | {rn:.0} | {:+.1}% |", n.name, 100.0 * (rn / rb - 1.0));
            }
        }
        let cpp = cmd!(sh, "{python} -c {CPP_TIMER} {path} {repeat}").read().context("the C++ timer failed")?;
        let file_size = std::fs::metadata(&path)?.len();
        let mut rows = parse(&ours)?;
        rows.extend(parse(&cpp)?.into_iter().map(|t| Timing { name: format!("C++ {}", t.name), ..t }));
        let cpp_rate = |random: bool| {
            rows.iter()
                .find(|t| t.name == if random { "C++ random" } else { "C++ read_all" })
                .map(|t| t.records as f64 / t.seconds)
        };
        let _ = writeln!(report, "\n{config} ({file_size} bytes on disk); best of {repeat}\n");
        let _ = writeln!(report, "| read | records/s | MB/s | vs C++ |");
        let _ = writeln!(report, "|---|---:|---:|---:|");
        for t in &rows {
            let rate = t.records as f64 / t.seconds;
            let mb = t.bytes as f64 / t.seconds / 1e6;
            let versus = cpp_rate(t.name.starts_with("random") || t.name == "C++ random")
                .map_or_else(|| "-".to_owned(), |c| format!("{:.2}", rate / c));
            let _ = writeln!(report, "| {} | {rate:.0} | {mb:.0} | {versus} |", t.name);
        }
    }
    println!("\nArrayRecord reads (load average before: {})", load.trim());
    println!("{report}");
    if !baseline_report.is_empty() {
        println!("{baseline_report}");
    }
    println!(
        "C++: reader.read(indices) and reader.read_all() through the Python binding (its thread pool); \
         MB/s counts record payload bytes."
    );
    Ok(())
}

/// Which benchmark a baseline build is for.
#[derive(Clone, Copy)]
enum Benchmark {
    /// `records_bench` (before it moved to xtask: `riegeli bench`).
    Records,
    /// `array_record_bench` (before: an example of riegeli-records).
    ArrayRecord,
    /// The Python package, installed into `target/bench-baseline-venv` (its `program` is that
    /// venv's python).
    Python,
    /// `object_bench` (before: an example of riegeli-object-store).
    Objects,
}

/// `--baseline BIN` or `--baseline-ref REF`, as given.
enum BaselineArg {
    None,
    Binary(String),
    Ref(String),
}

/// A build of a benchmark to run: `program prefix... ARGS`.
struct Baseline {
    program: PathBuf,
    /// `bench` for an older `riegeli` binary, whose `riegeli bench` was `records_bench`.
    prefix: Vec<String>,
    /// What the tables call it.
    name: String,
}

impl BaselineArg {
    /// The baseline to time, built first for `--baseline-ref`.
    fn resolve(self, sh: &Shell, benchmark: Benchmark) -> Result<Option<Baseline>> {
        match self {
            BaselineArg::None => Ok(None),
            BaselineArg::Binary(path) => {
                let program = PathBuf::from(&path);
                // An older `riegeli` binary: its `bench` subcommand takes records_bench's arguments.
                let old_cli = program.file_name().is_some_and(|name| name == "riegeli");
                let prefix = if old_cli { vec!["bench".to_owned()] } else { Vec::new() };
                Ok(Some(Baseline { program, prefix, name: path }))
            }
            BaselineArg::Ref(git_ref) => build_at(sh, &git_ref, benchmark).map(Some),
        }
    }
}

/// Builds `benchmark` (release) as it was at the git revision `git_ref`: its tree goes to
/// `target/bench-baseline/<commit>/` (by `git archive`, so no worktree is registered), which is
/// kept, with its own target directory, for the next run against the same commit. Revisions from
/// before the benchmarks moved to `xtask/bench/` have them as `riegeli bench` and as the
/// `array_record_bench` example of riegeli-records.
fn build_at(sh: &Shell, git_ref: &str, benchmark: Benchmark) -> Result<Baseline> {
    let spec = format!("{git_ref}^{{commit}}");
    let commit =
        cmd!(sh, "git rev-parse --verify {spec}").read().with_context(|| format!("{git_ref}: not a revision"))?;
    let short = commit.get(..12).unwrap_or(&commit);
    let dir = crate::common::project_root().join("target/bench-baseline").join(short);
    if !dir.join("Cargo.toml").is_file() {
        crate::common::step(&format!("extracting {git_ref} ({short}) into {}", dir.display()));
        std::fs::create_dir_all(&dir)?;
        let mut archive = Command::new("git")
            .args(["archive", "--format=tar", &commit])
            .current_dir(crate::common::project_root())
            .stdout(Stdio::piped())
            .spawn()
            .context("running git archive")?;
        let tar = Command::new("tar")
            .arg("-x")
            .current_dir(&dir)
            .stdin(archive.stdout.take().context("git archive's output")?)
            .status()
            .context("running tar")?;
        if !archive.wait()?.success() || !tar.success() {
            let _ = std::fs::remove_dir_all(&dir);
            bail!("could not extract {git_ref} into {}", dir.display());
        }
    }
    let _dir = sh.push_dir(&dir);
    let moved = dir.join("xtask/bench/Cargo.toml").is_file();
    crate::common::step(&format!("building the baseline at {git_ref} ({short}, release)"));
    let target = dir.join("target");
    // The program: (package, `--bin` or `--example`, name) as it was at the revision.
    let built = match (benchmark, moved) {
        (Benchmark::Python, _) => None,
        (Benchmark::Records, true) => Some(("riegeli-bench", "--bin", "records_bench")),
        (Benchmark::Records, false) => Some(("riegeli-cli", "--bin", "riegeli")),
        (Benchmark::ArrayRecord, true) => Some(("riegeli-bench", "--bin", "array_record_bench")),
        (Benchmark::ArrayRecord, false) => Some(("riegeli-records", "--example", "array_record_bench")),
        (Benchmark::Objects, true) => Some(("riegeli-bench", "--bin", "object_bench")),
        (Benchmark::Objects, false) => Some(("riegeli-object-store", "--example", "object_bench")),
    };
    let (program, prefix) = match built {
        Some((package, kind, name)) => {
            cmd!(sh, "cargo build --release --locked -p {package} {kind} {name}")
                .env("CARGO_TARGET_DIR", &target)
                .run()?;
            let dir = if kind == "--example" { "release/examples" } else { "release" };
            // An older `riegeli` binary: its `bench` subcommand takes records_bench's arguments.
            let prefix = if name == "riegeli" { vec!["bench".to_owned()] } else { Vec::new() };
            (target.join(dir).join(name), prefix)
        }
        None => {
            // The oracle venv's packages, and the package as it was, built from its tree.
            let python = crate::python::venv_with(sh, "bench-baseline-venv", &crate::python::oracle_packages())?;
            let wheel = crate::python::build_wheel(sh, &python, &target.join("python-wheel"), Some(&target))?;
            cmd!(sh, "{python} -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps {wheel}")
                .run()?;
            (python, Vec::new())
        }
    };
    Ok(Baseline { program, prefix, name: format!("{git_ref} ({short})") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_from_cells() {
        assert_eq!(first_number("12,345 rec/s"), Some(12345.0));
        assert_eq!(first_number("page cache 1.5 MB/s"), Some(1.5));
        assert_eq!(first_number("3.25×"), Some(3.25));
        assert_eq!(first_number("-"), None);
        let rows = markdown_rows("text\n| a | b |\n|---|---:|\n| read | 7 ms |\n| open | - |\n");
        assert_eq!(
            rows,
            [("a".to_owned(), vec![None]), ("read".to_owned(), vec![Some(7.0)]), ("open".to_owned(), vec![None])]
        );
    }

    #[test]
    fn records_rows_take_the_median_of_each_time() {
        let run = |read: f64, write: f64| serde_json::json!({"records": 7, "read_real_s": read, "write_real_s": write});
        let got = median(vec![run(3.0, 0.5), run(1.0, 0.9), run(2.0, 0.1)]).unwrap();
        assert_eq!(got["read_real_s"], 2.0);
        assert_eq!(got["write_real_s"], 0.5);
        assert_eq!(got["records"], 7);
        assert!(median(Vec::new()).is_none());
    }

    #[test]
    fn the_comparison_takes_medians_of_each_side() {
        let table = |x: u32, y: u32| format!("| w | x | y |\n|---|---|---|\n| read | {x} | {y} rec/s |\n");
        let before = vec![table(10, 100), table(30, 300), table(20, 200)];
        let now = vec![table(11, 90), table(12, 110), table(50, 100)];
        let report = compare_tables(&[before, now], &[(0, "x"), (1, "y")], "old");
        // Paired: 11/10, 12/30 and 50/20 (median 1.1); 90/100, 110/300 and 100/200 (median 0.5).
        assert!(report.contains("| read | x | 20 | 12 | -40.0% | +10.0% | 10, 30, 20; 11, 12, 50 |"), "{report}");
        assert!(
            report.contains("| read | y | 200 | 100 | -50.0% | -50.0% | 100, 300, 200; 90, 110, 100 |"),
            "{report}"
        );
    }
}
