//! `cargo xtask ci`: the whole CI job, in order.

use anyhow::Result;
use xshell::{Shell, cmd};

/// Codec feature sets checked besides the default (`--no-default-features` and each codec alone).
const FEATURE_MATRIX: &[&str] = &["", "brotli", "brotli-c", "zstd", "snappy"];

pub(crate) fn run(sh: &Shell, args: &[String]) -> Result<()> {
    let skip_interop = args.iter().any(|a| a == "--no-interop");
    step("fmt");
    cmd!(sh, "cargo fmt --all --check").run()?;
    step("clippy");
    cmd!(sh, "cargo clippy --workspace --all-targets --all-features --locked -- -D warnings").run()?;
    step("test");
    cmd!(sh, "cargo test --workspace --all-features --locked").run()?;
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
    step("ci passed");
    Ok(())
}

pub(crate) fn step(name: &str) {
    eprintln!("\n==> {name}");
}
