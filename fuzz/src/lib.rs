//! The checks behind the cargo-fuzz targets in `fuzz_targets/`, one function
//! per target, kept in a library so that the regression tests of each crate
//! can replay `fuzz/regressions/` through the same calls.
#![forbid(unsafe_code)]

pub mod array_record;
pub mod cli;
pub mod codec;
pub mod framing;
pub mod options;
pub mod records;
pub mod recovery;
// Shared by `array_record`, `records` and `recovery` (as `super::seeds`, here and in the
// regression tests of riegeli-records, which include those files and this one).
mod seeds;

// The CLI's input parsers, compiled here from its sources (it is a binary
// crate); `cli` checks them. At the root, as in the CLI, where `input.rs`
// finds `crate::tfrecord`.
#[path = "../../crates/riegeli-cli/src/input.rs"]
mod input;
#[path = "../../crates/riegeli-cli/src/tfrecord.rs"]
mod tfrecord;
