//! Property tests of riegeli-framing against a naive model that walks the file
//! block by block, and golden files from the C++ implementation.

mod fuzz_regressions;
mod golden;
mod naive;
mod properties;
