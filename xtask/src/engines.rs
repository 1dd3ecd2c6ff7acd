//! `cargo xtask engines`: the Apache Beam and Ray Data I/O of the Python package
//! (`riegeli.beam`, `riegeli.ray`) tested on a DirectRunner with 2 worker processes and on a
//! local Ray cluster, at both ends of the ranges the package declares, each in a venv of its
//! own: Beam and Ray need a protobuf older than the one the oracle venv pins.

use anyhow::Result;
use xshell::{Shell, cmd};

/// The engines at their latest releases (`target/engines-venv`, also `bench engines`'s).
const LATEST: &[&str] = &["apache-beam==2.77.0", "ray[data]==2.60.0"];

/// The engines at the lowest versions `crates/riegeli-python/pyproject.toml` declares
/// (`target/engines-lowest-venv`).
const LOWEST: &[&str] = &["apache-beam==2.50.0", "ray[data]==2.41.0"];

/// What the engine tests need besides the engines, pinned to versions that install with both
/// sets on Python 3.11: the C++ implementation (array-record, to read back what they write) and
/// pytest; and google-crc32c for `bench engines`, where Beam's TFRecord reader checks crc32c
/// through it (without it, or crcmod or python-snappy, that reader refuses to run).
const TEST_DEPS: &[&str] = &["array-record==0.8.6", "pytest==9.2.0", "google-crc32c==1.9.0"];

/// The test files, each run by its own pytest: Ray's raylet is started by a fork of the test
/// process, which can hang if a Beam pipeline left gRPC threads in it.
const SUITES: &[&str] = &["test_beam.py", "test_ray.py"];

/// Creates (once) `target/engines-venv`, the latest engines with [`TEST_DEPS`]; returns its
/// python.
pub(crate) fn latest_venv(sh: &Shell) -> Result<std::path::PathBuf> {
    crate::python::venv_with(sh, "engines-venv", &[LATEST, TEST_DEPS].concat())
}

/// Builds and installs the Python package (release) into the venvs of the latest and of the
/// lowest engines (created once) and runs the tests in `crates/riegeli-python/tests_engines`
/// in each.
pub(crate) fn tests(sh: &Shell) -> Result<()> {
    crate::python::check_lowest_pins(sh, LOWEST)?;
    let latest = latest_venv(sh)?;
    let lowest = crate::python::venv_with(sh, "engines-lowest-venv", &[LOWEST, TEST_DEPS].concat())?;
    crate::python::install_package_into(sh, &[latest.as_path(), lowest.as_path()])?;
    for (python, engines) in [(&latest, LATEST), (&lowest, LOWEST)] {
        crate::common::step(&format!("engines: {}", engines.join(", ")));
        for suite in SUITES {
            let path = format!("crates/riegeli-python/tests_engines/{suite}");
            cmd!(sh, "{python} -m pytest -q {path}").run()?;
        }
    }
    Ok(())
}
