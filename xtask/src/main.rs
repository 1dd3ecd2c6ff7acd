//! Repository automation, run as `cargo xtask <task>` (the cargo-xtask pattern).
//!
//! Tasks:
//! - `ci`: everything `.ci/run` checks, in order;
//! - `fuzz <target> [--seconds N]` (or `fuzz all`): run cargo-fuzz targets, installing cargo-fuzz if missing;
//! - `testdata [--check]`: regenerate the golden files through a venv with the C++
//!   implementation (array-record), or verify them against `SHA256SUMS`;
//! - `interop`: live tests against the C++ implementation (venv created on demand);
//! - `python`: the Python package's wheel into that venv and its pytest suite and `mypy.stubtest`,
//!   the suite also with the lowest protobuf and grain declared (also in `ci`);
//! - `engines`: the Beam and Ray I/O of the Python package, with the latest and the lowest
//!   engines declared, each set in a venv of its own (also in `ci`);
//! - `objects`: object storage URLs against moto_server and nginx on loopback (also in `ci`);
//! - `bench records [...]`: the records_benchmark table, side by side with C++ and riegeli 0.2.1;
//!   `bench array-record`: our ArrayRecord reader against C++'s on the same file, as a table;
//!   `bench engines`: Beam and Ray reading the same records (Riegeli against TFRecord, 1 and 2 CPUs);
//!   `bench arrow`: records as Arrow columns, ours against ptars (all columns and 2 of 20);
//!   `bench limits`: the CLI at the machine's limits, and its peak memory on huge chunks;
//!   `bench [criterion args]`: criterion benches (none of these is part of `ci`; the programs
//!   they time live in `xtask/bench/`);
//! - `release <version>`: bump every crate, require a CHANGELOG section, package in order;
//! - `tidy`: no two modules of a crate import each other (also a step of `ci`).
#![allow(clippy::print_stdout, reason = "xtask reports progress to the terminal")]
#![allow(clippy::print_stderr, reason = "xtask reports progress to the terminal")]

mod bench;
mod bench_limits;
mod ci;
mod common;
mod engines;
mod fuzz;
mod objects;
mod python;
mod release;
mod testdata;
mod tidy;

use anyhow::{Result, bail};
use xshell::Shell;

fn main() -> Result<()> {
    let sh = Shell::new()?;
    sh.change_dir(common::project_root());
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("ci") => ci::run(&sh, rest),
        Some("fuzz") => fuzz::run(&sh, rest),
        Some("testdata") => testdata::run(&sh, rest),
        Some("interop") => python::interop(&sh),
        Some("python") => python::package_tests(&sh),
        Some("engines") => engines::tests(&sh),
        Some("objects") => objects::tests(&sh),
        Some("bench") => bench::run(&sh, rest),
        Some("release") => release::run(&sh, rest),
        Some("tidy") => tidy::run(&sh),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n\
                 tasks:\n  \
                 ci                          fmt, module cycles, unused deps, clippy, tests, feature matrix, docs,\n  \
                                             fuzz check, testdata check, interop, python package tests, engines,\n  \
                                             object storage (--no-interop skips interop, --no-python the last three)\n  \
                 fuzz <target|all> [--seconds N]  run cargo-fuzz targets (default 60 s each)\n  \
                 testdata [--check]          regenerate golden files with the C++ implementation, or verify them\n  \
                 interop                     live interop tests against the C++ implementation\n  \
                 python                      build the Python package into the oracle venv: pytest, stubtest; pytest\n  \
                                             again with the lowest protobuf and grain declared\n  \
                 engines                     riegeli.beam and riegeli.ray on Beam's DirectRunner and a local Ray cluster,\n  \
                                             latest and lowest engines declared\n  \
                 objects                     reading s3:// and http:// URLs against moto_server and nginx on loopback\n  \
                 bench records [--generate text|proto|random] [--megabytes N] [--repeat N] [--config OPTS]...\n  \
                                             records_benchmark table: ours, C++ (array-record), riegeli 0.2.1\n  \
                 bench [ARGS]                criterion benches of every crate\n  \
                 bench array-record [--large] our ArrayRecord reader vs C++'s on one file (table)\n  \
                                             (both: --baseline-ref REF times the same benchmark built at REF too,\n  \
                                             --baseline BIN one built before)\n  \
                 bench objects [--megabytes N] [--latency-ms N] [--rounds N] [--servers s3,http]\n  \
                                             S3 (xtask/s3-server) and HTTP (nginx) with latency vs local disk (table)\n  \
                 bench python [--records N] [--record-size B] [--options STR] [--rounds R]\n  \
                                             Python package vs array_record_module (C++) on the same files (table)\n  \
                 bench grain [--shards N] [--records-per-shard N] [--rounds R] [--workers W]\n  \
                                             Grain over array_record's source, ours, our read-ahead (table)\n  \
                 bench arrow [--records N] [--rounds R] [--columns a,b]\n  \
                                             records as Arrow: to_arrow (all, projected) vs ptars, Rust alone (table)\n  \
                 bench engines [--megabytes N] [--files N] [--record-size B] [--rounds R]\n  \
                                             Beam ReadFromRiegeli vs ReadFromTFRecord, Ray read_riegeli on 1 and 2 CPUs\n  \
                 bench limits [--skip-huge | --huge-only] [--huge-mib M] [--rounds R]\n  \
                                             the CLI vs dd and C++; peak memory on huge chunks, checked (table)\n  \
                 release <version>           bump versions, check CHANGELOG, package in dependency order\n  \
                 tidy                        no two modules of a crate import each other"
            );
            bail!("no task given")
        }
    }
}
