//! Fuzz target `record_reader_recovery`: see [`riegeli_fuzz::recovery::record_reader_recovery`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::recovery::record_reader_recovery(data));
