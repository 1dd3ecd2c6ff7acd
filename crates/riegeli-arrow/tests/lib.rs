//! Integration tests of riegeli-arrow: one test binary.

mod common;
mod direct;
mod example;
mod json;
mod proto;
mod sources;
