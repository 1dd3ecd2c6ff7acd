//! The Python oracle: a venv with Google's C++ Riegeli (through array-record 0.8.6).

use std::path::PathBuf;

use anyhow::{Context, Result};
use xshell::{Shell, cmd};

/// The PyPI package that wraps Riegeli's C++ writer and reader.
const ORACLE: &str = "array-record==0.8.6";

/// Creates (once) `target/oracle-venv` with the oracle installed; returns its python.
pub(crate) fn venv(sh: &Shell) -> Result<PathBuf> {
    let dir = crate::common::project_root().join("target").join("oracle-venv");
    let python = dir.join("bin").join("python");
    let stamp = dir.join(".installed");
    if !stamp.exists() {
        crate::common::step(&format!("creating {} with {ORACLE}", dir.display()));
        let python3 = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        cmd!(sh, "{python3} -m venv {dir}").run().context("python3 -m venv failed (is Python 3 installed?)")?;
        cmd!(sh, "{python} -m pip install --quiet --disable-pip-version-check {ORACLE}").run()?;
        sh.write_file(&stamp, ORACLE)?;
    }
    Ok(python)
}

/// Runs the live interop tests: Rust tests marked `#[ignore]` whose names
/// contain `interop`, given the oracle's python in `RIEGELI_ORACLE_PYTHON`.
pub(crate) fn interop(sh: &Shell) -> Result<()> {
    let python = venv(sh)?;
    cmd!(sh, "cargo test --workspace --all-features --locked -- --ignored interop")
        .env("RIEGELI_ORACLE_PYTHON", &python)
        .run()?;
    Ok(())
}
