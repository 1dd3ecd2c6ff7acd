//! Fuzz target `decompress_brotli`: see [`riegeli_fuzz::codec::decompress_brotli`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::codec::decompress_brotli(data));
