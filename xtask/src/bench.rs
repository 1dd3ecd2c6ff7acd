//! `cargo xtask bench [array-record | criterion args]`.
//!
//! `bench array-record` times our ArrayRecord reader and C++'s (through the
//! oracle venv) on the same generated file in one run, and prints a table.

use anyhow::{Context, Result, bail};
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
    if args.first().map(String::as_str) == Some("array-record") {
        return array_record(sh);
    }
    cmd!(sh, "cargo bench --workspace {args...}").run()?;
    Ok(())
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
