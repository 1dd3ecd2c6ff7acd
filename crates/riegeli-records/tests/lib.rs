//! Integration tests of riegeli-records.

mod array_record;
mod array_record_interop;
mod common;
mod corruption;
mod golden;
mod interop;
mod roundtrip;
mod search;
mod streams;
