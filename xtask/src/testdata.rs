//! `cargo xtask testdata [--check]`: golden files from the C++ implementation.

use anyhow::{Result, bail};
use xshell::{Shell, cmd};

pub(crate) fn run(sh: &Shell, args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("--check") => check(sh),
        None => generate(sh),
        Some(other) => bail!("unexpected argument {other:?}; usage: cargo xtask testdata [--check]"),
    }
}

/// Regenerates every golden file, its manifest and `SHA256SUMS`.
fn generate(sh: &Shell) -> Result<()> {
    let python = crate::python::venv(sh)?;
    cmd!(sh, "{python} testdata/generate.py testdata").run()?;
    check(sh)
}

/// Verifies the committed golden files against `testdata/SHA256SUMS`.
pub(crate) fn check(sh: &Shell) -> Result<()> {
    let _dir = sh.push_dir("testdata");
    if !sh.path_exists("SHA256SUMS") {
        bail!("testdata/SHA256SUMS is missing: run cargo xtask testdata");
    }
    cmd!(sh, "sha256sum --quiet --strict -c SHA256SUMS").run()?;
    Ok(())
}
