//! Fuzz target `decompress_zstd`: see [`riegeli_fuzz::codec::decompress_zstd`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::codec::decompress_zstd(data));
