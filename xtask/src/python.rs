//! The Python oracle: a venv with Google's C++ Riegeli (through array-record 0.8.6), where the
//! Python package of this repository is also built and tested.

use std::path::PathBuf;

use anyhow::{Context, Result};
use xshell::{Shell, cmd};

/// The PyPI package that wraps Riegeli's C++ writer and reader.
const ORACLE: &str = "array-record==0.8.6";

/// What the tests of the Python package (`crates/riegeli-python`) need besides the oracle:
/// `grain` runs a pipeline over `riegeli.array_record.ArrayRecordDataSource` (it installs
/// from wheels in seconds, with numpy).
const PYTHON_TEST_DEPS: &[&str] = &["pytest==9.2.0", "protobuf==7.36.2", "grain==0.2.18"];

/// Creates (once) `target/oracle-venv` with the oracle and the Python test dependencies
/// installed; returns its python.
pub(crate) fn venv(sh: &Shell) -> Result<PathBuf> {
    let mut packages = vec![ORACLE];
    packages.extend_from_slice(PYTHON_TEST_DEPS);
    venv_with(sh, "oracle-venv", &packages)
}

/// Creates (once) `target/<name>` with `packages` installed (again when the list changes,
/// as a stamp file in the venv tells); returns its python.
pub(crate) fn venv_with(sh: &Shell, name: &str, packages: &[&str]) -> Result<PathBuf> {
    let dir = crate::common::project_root().join("target").join(name);
    let python = dir.join("bin").join("python");
    let stamp = dir.join(".installed");
    let wanted = packages.join(" ");
    if !python.exists() {
        crate::common::step(&format!("creating {} with {wanted}", dir.display()));
        let python3 = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        cmd!(sh, "{python3} -m venv {dir}").run().context("python3 -m venv failed (is Python 3 installed?)")?;
    }
    if sh.read_file(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        cmd!(sh, "{python} -m pip install --quiet --disable-pip-version-check {packages...}").run()?;
        sh.write_file(&stamp, &wanted)?;
    }
    Ok(python)
}

/// Builds and installs the Python package (`pip install ./crates/riegeli-python`: maturin
/// from PyPI, a release build of the extension) into the oracle venv, and runs its pytest
/// suite there, interop with array-record's C++ included.
pub(crate) fn package_tests(sh: &Shell) -> Result<()> {
    let python = install_package(sh)?;
    cmd!(sh, "{python} -m pytest -q crates/riegeli-python/tests").run()?;
    Ok(())
}

/// Builds and installs the Python package (release) into the oracle venv; returns its python.
pub(crate) fn install_package(sh: &Shell) -> Result<PathBuf> {
    let python = venv(sh)?;
    install_package_into(sh, &python)?;
    Ok(python)
}

/// Builds and installs the Python package (release) with `python`.
pub(crate) fn install_package_into(sh: &Shell, python: &std::path::Path) -> Result<()> {
    cmd!(
        sh,
        "{python} -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps ./crates/riegeli-python"
    )
    .run()
    .context("building the Python package failed")?;
    Ok(())
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
