//! Fuzz target `chunk_parse`: see [`riegeli_fuzz::framing::chunk_parse`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::framing::chunk_parse(data));
