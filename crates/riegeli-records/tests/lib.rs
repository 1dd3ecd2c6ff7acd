//! Integration tests of riegeli-records.

mod array_record;
mod array_record_interop;
mod array_record_parallel;
mod common;
mod corruption;
mod direct_chunks;
mod fuzz_regressions;
mod golden;
mod interop;
mod parallel;
mod roundtrip;
mod search;
mod split;
mod streams;
mod writer_api;
mod writer_threads;
