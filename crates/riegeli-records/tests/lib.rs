//! Integration tests of riegeli-records.

mod common;
mod corruption;
mod roundtrip;
mod search;
mod streams;
