//! `cargo xtask ci`: the whole CI job, in order.

use anyhow::{Result, bail};
use xshell::{Shell, cmd};

use crate::common::step;

/// The cargo-machete release this check was written against.
const CARGO_MACHETE_VERSION: &str = "0.9.2";

/// The cargo-deny release whose deny.toml format this check was written against.
const CARGO_DENY_VERSION: &str = "0.20.2";

/// Codec feature sets checked besides the default (`--no-default-features` and each codec alone).
const FEATURE_MATRIX: &[&str] = &["", "brotli", "brotli-c", "zstd", "snappy"];

pub(crate) fn run(sh: &Shell, args: &[String]) -> Result<()> {
    let skip_interop = args.iter().any(|a| a == "--no-interop");
    let skip_python = args.iter().any(|a| a == "--no-python");
    step("fmt");
    cmd!(sh, "cargo fmt --all --check").run()?;
    // The crates outside the workspace, too.
    for manifest in crate::common::OTHER_WORKSPACES.iter().map(|dir| format!("{dir}/Cargo.toml")) {
        cmd!(sh, "cargo fmt --check --manifest-path {manifest}").run()?;
    }
    crate::tidy::run(sh)?;
    step("unused dependencies");
    unused_dependencies(sh)?;
    step("dependency policy: cargo deny check licenses bans (deny.toml)");
    dependency_policy(sh)?;
    step("clippy");
    cmd!(sh, "cargo clippy --workspace --all-targets --all-features --locked -- -D warnings").run()?;
    step("test");
    cmd!(sh, "cargo test --workspace --all-features --locked").run()?;
    step("loom: the pool, work queue and write-behind thread model-checked");
    // Its own target directory: `--cfg loom` would otherwise rebuild everything in `target/`.
    // No codec features: the model tests need none, and the build stays small.
    cmd!(sh, "cargo test --locked -p riegeli-records --lib --release --no-default-features loom")
        .env("RUSTFLAGS", "--cfg loom")
        .env("CARGO_TARGET_DIR", "target/loom")
        .run()?;
    step("codec feature matrix");
    // Without any codec, the tests check that compressed data is `Unsupported`;
    // each codec alone must at least build with its tests.
    cmd!(sh, "cargo test --locked -p riegeli-codec --no-default-features").run()?;
    // The default brotli is Google's C library (`brotli-c`); the pure-Rust one must pass too.
    cmd!(sh, "cargo test --locked -p riegeli-codec --no-default-features --features brotli,zstd,snappy").run()?;
    for features in FEATURE_MATRIX.iter().filter(|f| !f.is_empty()) {
        cmd!(sh, "cargo check --locked -p riegeli-codec --tests --no-default-features --features={features}").run()?;
    }
    step("doc");
    cmd!(sh, "cargo doc --workspace --no-deps --document-private-items --locked")
        .env("RUSTDOCFLAGS", "-D warnings")
        .run()?;
    step("fuzz check");
    {
        let _dir = sh.push_dir("fuzz");
        cmd!(sh, "cargo check --locked --bins").env("RUSTFLAGS", "--cfg fuzzing").run()?;
    }
    step("testdata check");
    crate::testdata::check(sh)?;
    if skip_interop {
        step("interop skipped (--no-interop)");
    } else {
        step("interop with the C++ implementation");
        crate::python::interop(sh)?;
    }
    if skip_python {
        step("python package skipped (--no-python)");
    } else {
        step("python package: its wheel in target/oracle-venv and oracle-lowest-venv, pytest, stubtest");
        crate::python::package_tests(sh)?;
    }
    if skip_python {
        step("engines skipped (--no-python)");
    } else {
        step("engines: riegeli.beam and riegeli.ray, latest and lowest engines, pytest");
        crate::engines::tests(sh)?;
    }
    if skip_python {
        step("object storage skipped (--no-python)");
    } else {
        step("object storage: moto_server and nginx on loopback, live Rust, CLI and Python tests");
        crate::objects::tests(sh)?;
    }
    step("ci passed");
    Ok(())
}

/// Runs cargo-machete (installed if missing) over every Cargo.toml of the repository: the
/// workspace and [`crate::common::OTHER_WORKSPACES`]. False positives are listed in the crate's
/// `[package.metadata.cargo-machete] ignored`, with the reason.
fn unused_dependencies(sh: &Shell) -> Result<()> {
    // Called as `cargo-machete`, not `cargo machete`: under `cargo xtask` the latter takes its
    // own name and flags for directories to scan.
    if cmd!(sh, "cargo-machete --version").quiet().ignore_stdout().ignore_stderr().run().is_err() {
        cmd!(sh, "cargo install cargo-machete --version {CARGO_MACHETE_VERSION} --locked").run()?;
    }
    // cargo-machete exits 0 when it cannot read a manifest; that must fail too.
    let output = cmd!(sh, "cargo-machete --skip-target-dir .").ignore_status().output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprint!("{}{stderr}", String::from_utf8_lossy(&output.stdout));
    if !output.status.success() || stderr.lines().any(|line| line.starts_with("error")) {
        bail!("cargo machete: unused dependencies, or a manifest it could not read");
    }
    Ok(())
}

/// Checks `deny.toml`'s license allow-list and bans with cargo-deny (installed if missing),
/// against the lockfile: neither check needs the advisory database. (Not `--frozen`: on a fresh
/// machine the crates of other platforms, which `cargo metadata` reads, are not downloaded yet.)
fn dependency_policy(sh: &Shell) -> Result<()> {
    // Called as `cargo-deny`, as cargo-machete above.
    if cmd!(sh, "cargo-deny --version").quiet().ignore_stdout().ignore_stderr().run().is_err() {
        cmd!(sh, "cargo install cargo-deny --version {CARGO_DENY_VERSION} --locked").run()?;
    }
    cmd!(sh, "cargo-deny --locked check --hide-inclusion-graph licenses bans").run()?;
    Ok(())
}
