//! Fuzz target `decompress_snappy`: see [`riegeli_fuzz::codec::decompress_snappy`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::codec::decompress_snappy(data));
