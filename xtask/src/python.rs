//! The Python oracle: a venv with Google's C++ Riegeli (through array-record 0.8.6), where the
//! Python package of this repository is also built and tested.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use xshell::{Shell, cmd};

/// The PyPI package that wraps Riegeli's C++ writer and reader.
const ORACLE: &str = "array-record==0.8.6";

/// What the tests of the Python package (`crates/riegeli-python`) need besides the oracle, at
/// the latest releases: `grain` runs a pipeline over `riegeli.array_record.ArrayRecordDataSource`
/// (it installs from wheels in seconds, with numpy); mypy checks the stubs (`stubtest`).
/// pyarrow, polars, duckdb and pandas: consumers of the Arrow batches (`test_arrow.py`, which
/// skips without them, as in the lowest venv); each has wheels for the CI platforms.
const PYTHON_TEST_DEPS: &[&str] = &[
    "pytest==9.2.0",
    "protobuf==7.36.2",
    "grain==0.2.18",
    "mypy==2.4.1",
    "pyarrow==26.0.1",
    "polars==2.1.0",
    "duckdb==2.0.1",
    "pandas==3.1.1",
];

/// What `cargo xtask bench arrow` times ours against, besides pyarrow and protobuf above: ptars
/// (a Rust protobuf-to-Arrow converter; it adds googleapis-common-protos). In a venv of its own
/// (`target/bench-arrow-venv`, the oracle venv's packages and these), so that the venv the tests
/// run in never holds what only a benchmark wants.
pub(crate) const BENCH_ARROW_DEPS: &[&str] = &["ptars==0.0.25"];

/// protobuf and grain (the `grain` extra) at the lowest versions that
/// `crates/riegeli-python/pyproject.toml` declares: the suite runs with them too, in
/// `target/oracle-lowest-venv` (with the oracle and pytest).
const LOWEST_DECLARED: &[&str] = &["protobuf==3.20.3", "grain==0.2.6"];

/// The package's declared requirements, whose lower bounds the lowest pins must be.
const PYPROJECT: &str = "crates/riegeli-python/pyproject.toml";

/// Creates (once) `target/oracle-venv` with the oracle and the Python test dependencies
/// installed; returns its python.
pub(crate) fn venv(sh: &Shell) -> Result<PathBuf> {
    venv_with(sh, "oracle-venv", &oracle_packages())
}

/// What the oracle venv holds: the oracle and the Python test dependencies.
pub(crate) fn oracle_packages() -> Vec<&'static str> {
    [&[ORACLE], PYTHON_TEST_DEPS].concat()
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

/// Builds the Python package (a wheel: maturin from PyPI, a release build of the extension)
/// and installs it into the oracle venv, where its pytest suite runs (interop with
/// array-record's C++ included) and `mypy.stubtest` checks its stubs, and into
/// `target/oracle-lowest-venv`, where the suite runs on the lowest protobuf and grain declared.
pub(crate) fn package_tests(sh: &Shell) -> Result<()> {
    check_lowest_pins(sh, LOWEST_DECLARED)?;
    let latest = venv(sh)?;
    let lowest = venv_with(sh, "oracle-lowest-venv", &[&[ORACLE, "pytest==9.2.0"], LOWEST_DECLARED].concat())?;
    install_package_into(sh, &[latest.as_path(), lowest.as_path()])?;
    for python in [&latest, &lowest] {
        crate::common::step(&format!("pytest crates/riegeli-python/tests with {}", python.display()));
        cmd!(sh, "{python} -m pytest -q crates/riegeli-python/tests").run()?;
    }
    crate::common::step("mypy.stubtest riegeli: the .pyi files against the installed package");
    // From another directory, so that the installed package is checked, not the sources.
    let config = crate::common::project_root().join(PYPROJECT);
    let allowlist = crate::common::project_root().join("crates/riegeli-python/stubtest-allowlist.txt");
    let _dir = sh.push_dir(std::env::temp_dir());
    cmd!(sh, "{latest} -m mypy.stubtest riegeli --mypy-config-file {config} --allowlist {allowlist}").run()?;
    Ok(())
}

/// Builds and installs the Python package (release) into the oracle venv; returns its python.
pub(crate) fn install_package(sh: &Shell) -> Result<PathBuf> {
    let python = venv(sh)?;
    install_package_into(sh, &[&python])?;
    Ok(python)
}

/// Builds the Python package (release) once, as a wheel in `target/python-wheel`, and installs
/// it with each of `pythons`.
pub(crate) fn install_package_into(sh: &Shell, pythons: &[&Path]) -> Result<()> {
    let Some(first) = pythons.first() else { return Ok(()) };
    let dir = crate::common::project_root().join("target").join("python-wheel");
    let wheel = build_wheel(sh, first, &dir, None)?;
    for python in pythons {
        cmd!(sh, "{python} -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps {wheel}")
            .run()?;
    }
    Ok(())
}

/// Builds the Python package of the current directory's tree (release) with `python` as one
/// wheel in `dir` (emptied first), its Rust built under `target` if given (else where cargo
/// builds by default); returns the wheel.
pub(crate) fn build_wheel(sh: &Shell, python: &Path, dir: &Path, target: Option<&Path>) -> Result<PathBuf> {
    let _ = std::fs::remove_dir_all(dir);
    let mut build = cmd!(
        sh,
        "{python} -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir {dir} ./crates/riegeli-python"
    );
    if let Some(target) = target {
        build = build.env("CARGO_TARGET_DIR", target);
    }
    build.run().context("building the Python package failed")?;
    std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .context("pip wheel left no wheel")
}

/// Fails unless each `name==version` of `pins` is the lower bound `"name>=version"` that the
/// package declares in [`PYPROJECT`] (`2.50` and `2.50.0` being the same): the lowest venvs
/// test the ranges users get.
pub(crate) fn check_lowest_pins(sh: &Shell, pins: &[&str]) -> Result<()> {
    let pyproject = sh.read_file(PYPROJECT)?;
    for pin in pins {
        let Some((name, version)) = pin.split_once("==") else { bail!("{pin}: not name==version") };
        let Some(floor) = declared_floor(&pyproject, name) else { bail!("{PYPROJECT} declares no \"{name}>=...\"") };
        if !same_version(floor, version) {
            bail!("{PYPROJECT} declares {name}>={floor}, but the lowest venv pins {pin}");
        }
    }
    Ok(())
}

/// The version of `"name>=version` in `pyproject` (the requirement as a TOML string).
fn declared_floor<'a>(pyproject: &'a str, name: &str) -> Option<&'a str> {
    let start = pyproject.find(&format!("\"{name}>="))? + name.len() + 3;
    let rest = &pyproject[start..];
    rest.find(['"', ',', ';', '<']).map(|end| rest[..end].trim())
}

/// Whether two release versions are the same, missing components counting as 0.
fn same_version(a: &str, b: &str) -> bool {
    a.trim_end_matches(".0") == b.trim_end_matches(".0")
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

#[cfg(test)]
mod tests {
    use super::{declared_floor, same_version};

    #[test]
    fn floors_are_read_from_requirement_strings() {
        let pyproject = "dependencies = [\"protobuf>=3.20.3\"]\nray = [\"ray[data]>=2.41, <3\"]\nx = [\"grain\"]";
        assert_eq!(declared_floor(pyproject, "protobuf"), Some("3.20.3"));
        assert_eq!(declared_floor(pyproject, "ray[data]"), Some("2.41"));
        assert_eq!(declared_floor(pyproject, "grain"), None);
        assert_eq!(declared_floor(pyproject, "ray"), None);
        assert!(same_version("2.41", "2.41.0") && same_version("2.50.0", "2.50") && same_version("3", "3.0.0"));
        assert!(!same_version("2.5", "2.50") && !same_version("2.41", "2.41.1") && !same_version("0.2.6", "0.2"));
    }
}
