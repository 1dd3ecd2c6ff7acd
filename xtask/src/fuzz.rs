//! `cargo xtask fuzz <target|all> [--seconds N]`: run cargo-fuzz on this stable toolchain.
//!
//! For each target: replay `fuzz/regressions/<target>/` with the fuzz build
//! (where riegeli-framing's hash checks are off, unlike in `cargo test`), then
//! fuzz for N seconds with `fuzz/corpus/<target>/` as the corpus (gitignored, it
//! grows between runs) and the committed seeds of `fuzz/seeds/<target>/`, if
//! any. A crash leaves its input in `fuzz/artifacts/<target>/` and fails the task.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use xshell::{Shell, cmd};

/// The cargo-fuzz release whose flags this task was written against.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

pub(crate) fn run(sh: &Shell, args: &[String]) -> Result<()> {
    let mut target = None;
    let mut seconds = 60u64;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => {
                let value = it.next().context("--seconds needs a value")?;
                seconds = value.parse().context("--seconds N")?;
            }
            other if target.is_none() => target = Some(other.to_owned()),
            other => bail!("unexpected argument {other:?}"),
        }
    }
    let Some(target) = target else { bail!("usage: cargo xtask fuzz <target|all> [--seconds N]") };
    if cmd!(sh, "cargo fuzz --version").quiet().ignore_stdout().ignore_stderr().run().is_err() {
        cmd!(sh, "cargo install cargo-fuzz --version {CARGO_FUZZ_VERSION} --locked").run()?;
    }
    let _dir = sh.push_dir("fuzz");
    let targets = if target == "all" {
        cmd!(sh, "cargo fuzz list").read()?.lines().map(str::to_owned).collect()
    } else {
        vec![target]
    };
    // cargo-fuzz passes unstable flags to cargo and rustc (`-Zbuild-std` is
    // not among them without `--build-std`); RUSTC_BOOTSTRAP lets the stable
    // toolchain accept them. `--sanitizer none` because the sanitizers need
    // nightly (and the framing code is safe Rust). The build is cargo-fuzz's
    // default: optimized, with debug assertions and overflow checks.
    let _bootstrap = sh.push_env("RUSTC_BOOTSTRAP", "1");
    let max_time = format!("-max_total_time={seconds}");
    for target in targets {
        let regressions = regression_inputs(sh, &target)?;
        if !regressions.is_empty() {
            crate::common::step(&format!("fuzz {target}: replay {} regression(s)", regressions.len()));
            cmd!(sh, "cargo fuzz run --sanitizer none {target} {regressions...}").run()?;
        }
        crate::common::step(&format!("fuzz {target} for {seconds} s"));
        let corpus = format!("corpus/{target}");
        sh.create_dir(&corpus)?;
        // The committed seeds, read but never written (libFuzzer adds new inputs to the first directory).
        let seeds: Vec<String> =
            Some(format!("seeds/{target}")).filter(|dir| sh.path_exists(dir)).into_iter().collect();
        cmd!(
            sh,
            "cargo fuzz run --sanitizer none {target} {corpus} {seeds...} -- {max_time} -timeout=20 -print_final_stats=1"
        )
        .run()?;
    }
    Ok(())
}

/// The files in `fuzz/regressions/<target>/` (hidden ones such as `.gitkeep` excluded),
/// relative to `fuzz/`.
fn regression_inputs(sh: &Shell, target: &str) -> Result<Vec<PathBuf>> {
    let dir = PathBuf::from("regressions").join(target);
    if !sh.path_exists(&dir) {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = sh
        .read_dir(&dir)?
        .into_iter()
        .filter(|path| path.is_file())
        .filter(|path| !path.file_name().is_some_and(|name| name.to_string_lossy().starts_with('.')))
        .collect();
    files.sort();
    Ok(files)
}
