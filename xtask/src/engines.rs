//! `cargo xtask engines`: the Apache Beam and Ray Data I/O of the Python package
//! (`riegeli.beam`, `riegeli.ray`) tested on a DirectRunner with 2 worker processes and on a
//! local Ray cluster, in a venv of their own: Beam and Ray need a protobuf older than the one
//! the oracle venv pins.

use anyhow::Result;
use xshell::{Shell, cmd};

/// What the engine tests need, pinned to versions that install together on Python 3.11:
/// the engines, the C++ implementation (array-record, to read back what they write) and pytest;
/// and google-crc32c for `bench engines`, where Beam's TFRecord reader checks crc32c through it
/// (without it, or crcmod or python-snappy, that reader refuses to run).
pub(crate) const ENGINE_DEPS: &[&str] =
    &["apache-beam==2.77.0", "ray[data]==2.52.0", "array-record==0.8.6", "pytest==9.2.0", "google-crc32c==1.9.0"];

/// The test files, each run by its own pytest: Ray's raylet is started by a fork of the test
/// process, which can hang if a Beam pipeline left gRPC threads in it.
const SUITES: &[&str] = &["test_beam.py", "test_ray.py"];

/// Builds and installs the Python package (release) into `target/engines-venv` (created once
/// with [`ENGINE_DEPS`]) and runs the tests in `crates/riegeli-python/tests_engines`.
pub(crate) fn tests(sh: &Shell) -> Result<()> {
    let python = crate::python::venv_with(sh, "engines-venv", ENGINE_DEPS)?;
    crate::python::install_package_into(sh, &python)?;
    for suite in SUITES {
        let path = format!("crates/riegeli-python/tests_engines/{suite}");
        cmd!(sh, "{python} -m pytest -q {path}").run()?;
    }
    Ok(())
}
