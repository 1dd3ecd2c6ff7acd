//! Fuzz target `block_header`: see [`riegeli_fuzz::framing::block_header`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::framing::block_header(data));
