//! The checks behind the cargo-fuzz targets in `fuzz_targets/`, one function
//! per target, kept in a library so that the regression tests of each crate
//! can replay `fuzz/regressions/` through the same calls.
#![forbid(unsafe_code)]

pub mod codec;
pub mod framing;
pub mod records;
