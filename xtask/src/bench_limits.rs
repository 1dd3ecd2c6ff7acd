//! `cargo xtask bench limits [--megabytes N] [--rounds R] [--huge-mib M] [--skip-huge] [--huge-only] [--out PATH]`:
//! one markdown table on how the `riegeli` CLI fares against the limits of the machine and of
//! C++: (A) `verify`, `cat` and `count` against `dd` reading the same file from the page cache;
//! (B) `riegeli write` on every core and on one against C++'s writer; (C) `cat --records` with
//! 10,000 random indices of an ArrayRecord file against C++'s `read(indices)`; (D) the peak memory
//! of each command on a file of four huge records, checked against two chunks and 64 MiB (the run
//! fails, after writing the table, when a command holds more; `--huge-only` measures only D). Commands are timed as whole processes, best of
//! `--rounds`, every competitor of a row in turn within a round so that machine noise hits them
//! alike. The inputs are generated here (deterministic) and written once per run with
//! `riegeli write`, under `<target dir>/bench-limits/` (the target dir honours
//! `CARGO_TARGET_DIR`); the table goes to stdout and to `--out`.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::str::FromStr;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use xshell::{Shell, cmd};

/// The words of the English-like text of sections B, C and D, separated by spaces.
const WORDS: &str = "the of and to in a is that for it as was with be by on not he this are or his from at which but have \
     an had they you were their one all we can her has there been if more when will would who so no \
     record file chunk reader writer compression block header index data stream memory thread parallel \
     format";

/// The option sets of section B.
const WRITE_OPTIONS: &[&str] = &["zstd:3", "brotli:6", "snappy", "transpose,zstd:3"];

/// The number of records of the text file of sections B and C.
const TEXT_RECORDS: u64 = 100_000;

/// The number of distinct random indices read in section C.
const INDICES: usize = 10_000;

/// Free disk space (bytes) below which section D is left out.
const HUGE_MIN_FREE: u64 = 10_000_000_000;

/// The command line of `bench limits`.
struct Flags {
    megabytes: u64,
    rounds: u32,
    huge_mib: u64,
    skip_huge: bool,
    huge_only: bool,
    out: Option<PathBuf>,
}

/// What every section uses: our binary, the C++ side and the working directory.
struct Bench {
    riegeli: PathBuf,
    /// `hash_ceiling` (xtask/bench): the file hashed in memory on every core.
    hash_ceiling: PathBuf,
    python: PathBuf,
    script: PathBuf,
    work: PathBuf,
    rounds: u32,
}

/// One competitor of a row.
enum Timed {
    /// A process timed as a whole, its stdout going to /dev/null.
    Process(Command),
    /// A process that prints the seconds it measured itself as its last line.
    Inner(Command),
}

/// A xorshift64* generator (seed non-zero): the same inputs on every run.
struct Rng(u64);

impl Rng {
    /// The next pseudo-random number.
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A pseudo-random number below `n` (> 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `bench limits ARGS`: builds the CLI, measures sections A to D and prints and writes the table.
pub(crate) fn run(sh: &Shell, args: &[String]) -> Result<()> {
    let flags = parse_flags(args)?;
    let target = target_dir();
    let work = target.join("bench-limits");
    sh.create_dir(&work)?;
    crate::common::step("building riegeli-cli (release)");
    cmd!(sh, "cargo build --release --locked -p riegeli-cli").env("CARGO_TARGET_DIR", &target).run()?;
    cmd!(sh, "cargo build --release --locked -p riegeli-bench --bin hash_ceiling")
        .env("CARGO_TARGET_DIR", &target)
        .run()?;
    let b = Bench {
        riegeli: target.join("release/riegeli"),
        hash_ceiling: target.join("release/hash_ceiling"),
        python: crate::python::venv(sh)?,
        script: crate::common::project_root().join("xtask/bench/python/cxx_limits.py"),
        work: work.clone(),
        rounds: flags.rounds.max(1),
    };
    let load_start = load_average();
    let mut body = String::new();
    if !flags.huge_only {
        body += &file_speed(&b, flags.megabytes)?;
        let text = text_input(&b)?;
        body += &writes(&b, &text)?;
        body += &random_access(&b, &text)?;
        remove(&text)?;
    }
    let mut over = Vec::new();
    if !flags.skip_huge {
        body += &huge(&b, flags.huge_mib, &mut over)?;
    }
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let table = format!(
        "# `cargo xtask bench limits`\n\nriegeli-cli {}, {cores} cores; best of {} rounds; load average {load_start} at \
         the start, {} at the end.\n{body}",
        revision(sh),
        b.rounds,
        load_average()
    );
    println!("{table}");
    let out = flags.out.unwrap_or_else(|| work.join("table.md"));
    sh.write_file(&out, &table)?;
    eprintln!("table written to {}", out.display());
    if !over.is_empty() {
        bail!("peak memory over two chunks and 64 MiB: {}", over.join("; "));
    }
    Ok(())
}

/// Reads the flags of `bench limits`.
fn parse_flags(args: &[String]) -> Result<Flags> {
    let mut flags = Flags { megabytes: 300, rounds: 3, huge_mib: 900, skip_huge: false, huge_only: false, out: None };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--megabytes" => flags.megabytes = number(arg, value()?)?,
            "--rounds" => flags.rounds = number(arg, value()?)?,
            "--huge-mib" => flags.huge_mib = number(arg, value()?)?,
            "--skip-huge" => flags.skip_huge = true,
            "--huge-only" => flags.huge_only = true,
            "--out" => flags.out = Some(PathBuf::from(value()?)),
            other => bail!("unexpected argument {other:?}"),
        }
    }
    Ok(flags)
}

/// `value` of flag `arg`, parsed.
fn number<T: FromStr>(arg: &str, value: &str) -> Result<T> {
    value.parse().ok().with_context(|| format!("{arg} {value:?}: not a number"))
}

/// Cargo's target directory: `CARGO_TARGET_DIR` (relative to the workspace root when relative), else
/// `<root>/target`.
fn target_dir() -> PathBuf {
    let root = crate::common::project_root();
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// The three load averages of `/proc/loadavg`.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    if fields.is_empty() { "unknown".to_owned() } else { fields.join(" ") }
}

/// The commit checked out, and whether the work tree differs from it.
fn revision(sh: &Shell) -> String {
    let head = cmd!(sh, "git rev-parse --short HEAD").quiet().read().unwrap_or_else(|_| "(no git)".to_owned());
    let dirty = cmd!(sh, "git status --porcelain --untracked-files=no").quiet().read().unwrap_or_default();
    if dirty.trim().is_empty() { format!("at {head}") } else { format!("at {head} + uncommitted changes") }
}

impl Bench {
    /// `riegeli args...`.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.riegeli);
        command.args(args);
        command
    }

    /// `riegeli args...`, timed as a whole process.
    fn ours(&self, args: &[&str]) -> Timed {
        Timed::Process(self.command(args))
    }

    /// `cxx_limits.py args...` in the oracle venv, which times itself.
    fn cxx(&self, args: &[&str]) -> Timed {
        let mut command = Command::new(&self.python);
        command.arg(&self.script).args(args);
        Timed::Inner(command)
    }

    /// Writes the delimited stream `input` to `out` with `riegeli write --options options extra...`.
    fn create(&self, input: &Path, options: &str, extra: &[&str], out: &Path) -> Result<()> {
        let (input, out) = (input.display().to_string(), out.display().to_string());
        let args = [&["write", "--input-format", "delimited", "--input", &input, "--options", options], extra, &[&out]];
        execute(&mut self.command(&args.concat()), false)?;
        Ok(())
    }
}

/// Runs `command` to completion, its stdout captured or to /dev/null; fails with its stderr.
fn execute(command: &mut Command, capture: bool) -> Result<Output> {
    command.stdout(if capture { Stdio::piped() } else { Stdio::null() });
    let output = command.output().with_context(|| format!("running {command:?}"))?;
    if !output.status.success() {
        bail!("{command:?} failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(output)
}

/// The seconds one run of `timed` takes.
fn seconds(timed: &mut Timed) -> Result<f64> {
    match timed {
        Timed::Process(command) => {
            let start = Instant::now();
            execute(command, false)?;
            Ok(start.elapsed().as_secs_f64())
        }
        Timed::Inner(command) => {
            let output = String::from_utf8_lossy(&execute(command, true)?.stdout).into_owned();
            let last = output.lines().last().unwrap_or_default().trim();
            last.parse().with_context(|| format!("{command:?} printed {output:?}, not seconds"))
        }
    }
}

/// The best seconds of each competitor over `rounds` rounds, the competitors in turn in each round.
fn best_of<const N: usize>(rounds: u32, competitors: &mut [Timed; N]) -> Result<[f64; N]> {
    let mut best = [f64::INFINITY; N];
    for _ in 0..rounds {
        for (best, timed) in best.iter_mut().zip(competitors.iter_mut()) {
            *best = best.min(seconds(timed)?);
        }
    }
    Ok(best)
}

/// `a / b` as `0.72×`.
fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}×", a / b)
}

/// The size of `path` in bytes.
fn file_size(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path).with_context(|| format!("reading the size of {}", path.display()))?.len())
}

/// Removes the file `path`.
fn remove(path: &Path) -> Result<()> {
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))
}

/// A buffered new file.
fn create_file(path: &Path) -> Result<BufWriter<File>> {
    Ok(BufWriter::new(File::create(path).with_context(|| format!("creating {}", path.display()))?))
}

/// Writes `n` as a LEB128 varint.
fn put_varint(out: &mut impl Write, mut n: u64) -> std::io::Result<()> {
    while n >= 0x80 {
        out.write_all(&[(n as u8) | 0x80])?;
        n >>= 7;
    }
    out.write_all(&[n as u8])
}

/// The words of [`WORDS`].
fn english() -> Vec<&'static str> {
    WORDS.split_whitespace().collect()
}

/// A pseudo-random lowercase word of 2 to 10 letters.
fn random_word(rng: &mut Rng) -> Vec<u8> {
    (0..2 + rng.below(9)).map(|_| b'a' + rng.below(26) as u8).collect()
}

/// Sets `out` to `len` bytes of words of `vocab`, drawn at random and joined with spaces.
fn text(rng: &mut Rng, vocab: &[impl AsRef<[u8]>], len: usize, out: &mut Vec<u8>) {
    out.clear();
    while out.len() < len {
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend_from_slice(vocab[rng.below(vocab.len() as u64) as usize].as_ref());
    }
    out.truncate(len);
}

/// Writes `count` records of [`text`] from `vocab` to `path` as a delimited stream, the length of
/// each drawn by `len`.
fn write_text(
    path: &Path,
    vocab: &[impl AsRef<[u8]>],
    count: u64,
    rng: &mut Rng,
    len: impl Fn(&mut Rng) -> usize,
) -> Result<()> {
    let mut out = create_file(path)?;
    let mut record = Vec::new();
    for _ in 0..count {
        let n = len(rng);
        text(rng, vocab, n, &mut record);
        put_varint(&mut out, n as u64)?;
        out.write_all(&record)?;
    }
    out.flush().with_context(|| format!("writing {}", path.display()))
}

/// Section A: `verify`, `cat` and `count` against `dd` on the same files, in the page cache.
fn file_speed(b: &Bench, megabytes: u64) -> Result<String> {
    let mut out = format!(
        "\n## A. Reads at file speed\n\n`riegeli verify FILE`, `riegeli cat --format delimited FILE` and `riegeli \
         count FILE` against `dd if=FILE of=/dev/null bs=1M` on the same file, in the page cache (read once before); \
         ~{megabytes} MB of records of pseudo-random lowercase words (a vocabulary of 2,000, so that snappy finds some matches) per file; each command \
         a whole process with its output to /dev/null. MB/s = file bytes / second; / dd = ours MB/s / dd's. \
         The hash ceiling is the file, already in memory, hashed in 64 KiB pieces on every core (riegeli-hash's \
         `hash_ceiling` example, which times itself): a reader that checks every hash, as `verify` and `cat` do, \
         cannot be faster.\n\n\
         | file | MB | dd MB/s | hash ceiling MB/s | ceiling / dd | verify MB/s | verify / dd | cat MB/s | cat / dd | \
         count MB/s | count / dd |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    let mut rng = Rng(0x00A5_EED5);
    let vocab: Vec<Vec<u8>> = (0..2_000).map(|_| random_word(&mut rng)).collect();
    for size in [100u64, 1024] {
        let input = b.work.join(format!("a-{size}.delimited"));
        crate::common::step(&format!("A: generating {megabytes} MB of {size} B records"));
        write_text(&input, &vocab, (megabytes * 1_000_000).div_ceil(size), &mut rng, |_| size as usize)?;
        for options in ["uncompressed", "snappy"] {
            let file = b.work.join(format!("a-{size}-{options}.riegeli"));
            b.create(&input, options, &[], &file)?;
            crate::common::step(&format!("A: dd, verify, cat, count on {}", file.display()));
            let f = file.display().to_string();
            let dd = || {
                let mut dd = Command::new("dd");
                dd.args([format!("if={f}").as_str(), "of=/dev/null", "bs=1M"]);
                dd
            };
            execute(&mut dd(), false)?;
            let mut row = [
                Timed::Process(dd()),
                Timed::Inner({
                    let mut ceiling = Command::new(&b.hash_ceiling);
                    ceiling.arg(&f);
                    ceiling
                }),
                b.ours(&["verify", &f]),
                b.ours(&["cat", "--format", "delimited", &f]),
                b.ours(&["count", &f]),
            ];
            let bytes = file_size(&file)? as f64;
            let mbps = best_of(b.rounds, &mut row)?.map(|s| bytes / 1e6 / s);
            let _ = write!(out, "| {options}, {size} B records | {:.0} | {:.0} |", bytes / 1e6, mbps[0]);
            for ours in &mbps[1..] {
                let _ = write!(out, " {ours:.0} | {} |", ratio(*ours, mbps[0]));
            }
            out.push('\n');
            remove(&file)?;
        }
        remove(&input)?;
    }
    Ok(out)
}

/// The delimited input of sections B and C: 100,000 records of 512 to 1535 bytes (~1 KiB) of
/// English-like text.
fn text_input(b: &Bench) -> Result<PathBuf> {
    crate::common::step("B, C: generating 100,000 records of ~1 KiB of English-like text");
    let path = b.work.join("text.delimited");
    write_text(&path, &english(), TEXT_RECORDS, &mut Rng(0x7E47), |rng| 512 + rng.below(1024) as usize)?;
    Ok(path)
}

/// Section B: `riegeli write` on every core and on one against C++'s writer.
fn writes(b: &Bench, input: &Path) -> Result<String> {
    let mut out = format!(
        "\n## B. Writing from the CLI\n\n{TEXT_RECORDS} records of ~1 KiB of English-like text ({:.0} MB delimited): \
         `riegeli write --input-format delimited --input IN --options OPTS OUT` with its default threads and with \
         `-j 1`, against C++'s ArrayRecordWriter (array-record 0.8.6, `group_size` making ~1 MiB chunks, single \
         threaded); seconds.\n\n\
         | options | ours default s | ours -j 1 s | C++ s | default vs -j 1 | default vs C++ |\n\
         |---|---:|---:|---:|---:|---:|\n",
        file_size(input)? as f64 / 1e6
    );
    let i = input.display().to_string();
    let ours_file = b.work.join("b-ours.riegeli").display().to_string();
    let cxx_file = b.work.join("b-cxx.array_record").display().to_string();
    for options in WRITE_OPTIONS {
        crate::common::step(&format!("B: writing with {options}"));
        let write = |threads: &[&str]| {
            let args = [&["write", "--input-format", "delimited", "--input", &i], threads, &["--options", options]];
            b.ours(&[&args.concat()[..], &[&ours_file]].concat())
        };
        let mut row = [write(&[]), write(&["-j", "1"]), b.cxx(&["write", &i, &cxx_file, options])];
        let [all, one, cxx] = best_of(b.rounds, &mut row)?;
        let (one_vs, cxx_vs) = (ratio(one, all), ratio(cxx, all));
        let _ = writeln!(out, "| `{options}` | {all:.2} | {one:.2} | {cxx:.2} | {one_vs} | {cxx_vs} |");
    }
    remove(Path::new(&ours_file))?;
    remove(Path::new(&cxx_file))?;
    out += "\nOurs is timed as a whole process, reading the input file included; C++ only its write loop and \
            `close()` (the records are read into memory before the timer starts). Ours writes a Riegeli file, C++ \
            an ArrayRecord file (the same chunks plus a footer). The speedups are time of -j 1 (or C++) / time of \
            ours by default.\n";
    Ok(out)
}

/// Section C: `riegeli cat --records` with random indices against C++'s `read(indices)`.
fn random_access(b: &Bench, input: &Path) -> Result<String> {
    let file = b.work.join("c.array_record");
    b.create(input, "group_size:100,zstd:3", &["--array-record"], &file)?;
    let mut rng = Rng(0x00C0_FFEE);
    let mut all: Vec<u64> = (0..TEXT_RECORDS).collect();
    for i in 0..INDICES {
        let j = i + rng.below((all.len() - i) as u64) as usize;
        all.swap(i, j);
    }
    let mut sorted = all[..INDICES].to_vec();
    sorted.sort_unstable();
    let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let (random, sorted) = (join(&all[..INDICES]), join(&sorted));
    let indices = b.work.join("c.indices");
    std::fs::write(&indices, &random).with_context(|| format!("writing {}", indices.display()))?;
    let (f, ix) = (file.display().to_string(), indices.display().to_string());
    crate::common::step(&format!("C: random access to {f}"));
    // One JSON line per record: does the whole list reach `cat` and come back?
    let got = execute(&mut b.command(&["cat", "--format", "json", "--records", &random, &f]), true)?;
    let records = got.stdout.iter().filter(|&&c| c == b'\n').count();
    if records != INDICES {
        bail!("cat --records with {INDICES} indices printed {records} records");
    }
    let mut row = [
        b.ours(&["cat", "--format", "delimited", "--records", &random, &f]),
        b.ours(&["cat", "--format", "delimited", "--records", &sorted, &f]),
        b.ours(&["cat", "--format", "delimited", &f]),
        b.cxx(&["read", &f, &ix]),
    ];
    let best = best_of(b.rounds, &mut row)?;
    let mut out = format!(
        "\n## C. Random access from the CLI\n\nAn ArrayRecord file of {TEXT_RECORDS} records of ~1 KiB of text \
         ({:.0} MB, `riegeli write --array-record --options group_size:100,zstd:3`); {INDICES} distinct random \
         indices (fixed seed) as one comma-separated `--records` argument ({} bytes); ours timed as whole processes \
         with the output to /dev/null, C++'s `reader.read(indices)` (its thread pool) inside Python on an open \
         reader.\n\n| what | seconds | records/s |\n|---|---:|---:|\n",
        file_size(&file)? as f64 / 1e6,
        random.len()
    );
    let whats = [
        ("`cat --records LIST` (random order)", INDICES as f64),
        ("`cat --records LIST` (the same indices sorted)", INDICES as f64),
        ("`cat` (whole file)", TEXT_RECORDS as f64),
        ("C++ `reader.read(indices)` (random order)", INDICES as f64),
    ];
    for ((what, records), seconds) in whats.iter().zip(&best) {
        let _ = writeln!(out, "| {what} | {seconds:.3} | {:.0} |", records / seconds);
    }
    remove(&file)?;
    remove(&indices)?;
    Ok(out)
}

/// Section D: peak memory of each command on a file of four records of `mib` MiB, when the disk
/// has room; the huge files are removed afterwards. The commands over two chunks and 64 MiB go
/// to `over`.
fn huge(b: &Bench, mib: u64, over: &mut Vec<String>) -> Result<String> {
    let out = "\n## D. Peak memory on huge chunks\n\n".to_owned();
    let free = free_bytes(&b.work)?;
    if free < HUGE_MIN_FREE {
        return Ok(
            out + &format!("Left out: {:.1} GB free under {}, less than 10 GB.\n", free as f64 / 1e9, b.work.display())
        );
    }
    let dir = b.work.join("huge");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let rows = huge_rows(b, &dir, mib, over);
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    Ok(out + &rows?)
}

/// The free space of the filesystem of `path`, from `df`.
fn free_bytes(path: &Path) -> Result<u64> {
    let output = execute(Command::new("df").args(["--output=avail", "-B1"]).arg(path), true)?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines().nth(1).and_then(|l| l.trim().parse().ok()).with_context(|| format!("df said {text:?}"))
}

/// Writes four records of `mib` MiB each as a delimited stream, a MiB at a time: slices at
/// pseudo-random offsets of 8 MiB of English-like text.
fn write_huge(path: &Path, mib: u64) -> Result<()> {
    const PIECE: usize = 1 << 20;
    let mut rng = Rng(0x00B1_6B16);
    let mut pool = Vec::new();
    text(&mut rng, &english(), 8 * PIECE, &mut pool);
    let mut out = create_file(path)?;
    for _ in 0..4 {
        put_varint(&mut out, mib << 20)?;
        for _ in 0..mib {
            let at = rng.below((pool.len() - PIECE) as u64) as usize;
            out.write_all(&pool[at..at + PIECE])?;
        }
    }
    out.flush().with_context(|| format!("writing {}", path.display()))
}

/// Peak resident memory (MB, from `/usr/bin/time -f %M`) and seconds of one run of `riegeli args`.
fn peak(b: &Bench, args: &[&str]) -> Result<(f64, f64)> {
    let mut command = Command::new("/usr/bin/time");
    command.args(["-f", "%M"]).arg(&b.riegeli).args(args);
    let start = Instant::now();
    let output = execute(&mut command, false)?;
    let seconds = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let kib: f64 = last.trim().parse().with_context(|| format!("/usr/bin/time said {stderr:?}"))?;
    Ok((kib * 1024.0 / 1e6, seconds))
}

/// The most a command may hold at its peak on chunks of `mib` MiB of records: two chunks and
/// 64 MiB (what reading ahead may hold besides), in MB as [`peak`] reports.
fn peak_bound_mb(mib: u64) -> f64 {
    ((2 * mib + 64) << 20) as f64 / 1e6
}

/// The rows of section D, on files in `dir`; the commands over [`peak_bound_mb`] go to `over`.
fn huge_rows(b: &Bench, dir: &Path, mib: u64, over: &mut Vec<String>) -> Result<String> {
    let input = dir.join("huge.delimited");
    crate::common::step(&format!("D: generating 4 records of {mib} MiB"));
    write_huge(&input, mib)?;
    let [i, f, recovered, converted] = ["huge.delimited", "huge.riegeli", "recovered.riegeli", "converted.riegeli"]
        .map(|n| dir.join(n).display().to_string());
    let commands: [&[&str]; 7] = [
        &["write", "--input-format", "delimited", "--input", &i, "--options", "zstd:1", &f],
        &["cat", "--format", "delimited", &f],
        &["cat", "-j", "2", "--format", "delimited", &f],
        &["recover", "--options", "zstd:1", &f, &recovered],
        &["convert", "--options", "zstd:1", &f, &converted],
        &["count", &f],
        &["verify", &f],
    ];
    let names = [(&i, "IN"), (&f, "FILE"), (&recovered, "OUT"), (&converted, "OUT")];
    let bound = peak_bound_mb(mib);
    let mut rows = String::new();
    for (n, args) in commands.iter().enumerate() {
        crate::common::step(&format!("D: riegeli {}", args[0]));
        let (mb, seconds) = peak(b, args)?;
        let shown: Vec<&str> =
            args.iter().map(|a| names.iter().find(|(path, _)| path == a).map_or(*a, |(_, name)| name)).collect();
        let shown = format!("riegeli {}", shown.join(" "));
        let within = if mb <= bound { "yes" } else { "**no**" };
        let _ = writeln!(rows, "| `{shown}` | {mb:.0} | {within} | {seconds:.1} |");
        if mb > bound {
            over.push(format!("`{shown}` {mb:.0} MB"));
        }
        if n == 0 {
            remove(&input)?;
        }
    }
    // The chunks holding records, from `describe --json` (one line per chunk, among others).
    let described = execute(&mut b.command(&["describe", "--json", &f]), true)?;
    let chunks = String::from_utf8_lossy(&described.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|entry| entry.get("chunk_begin").is_some() && entry["num_records"].as_u64().is_some_and(|n| n > 0))
        .count();
    Ok(format!(
        "A file of 4 records of {mib} MiB each (English-like text; {:.0} MB on disk, {chunks} chunks holding \
         records), written with `riegeli write --options zstd:1`; recover and convert re-encode it with `zstd:1`. \
         Peak RSS from `/usr/bin/time -f %M`, one run each, output to /dev/null; within = at most two chunks of \
         records and 64 MiB ({bound:.0} MB), what reading and writing hold at most.\n\n\
         | command | peak RSS MB | within | seconds |\n|---|---:|---|---:|\n{rows}",
        file_size(Path::new(&f))? as f64 / 1e6
    ))
}
