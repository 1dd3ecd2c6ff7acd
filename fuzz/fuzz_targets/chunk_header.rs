//! Fuzz target `chunk_header`: see [`riegeli_fuzz::framing::chunk_header`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::framing::chunk_header(data));
