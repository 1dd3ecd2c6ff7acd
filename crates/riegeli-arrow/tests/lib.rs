//! Integration tests of riegeli-arrow: one test binary.

mod common;
mod example;
mod proto;
mod sources;
