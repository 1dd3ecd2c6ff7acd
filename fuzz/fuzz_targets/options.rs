//! Fuzz target `options`: see [`riegeli_fuzz::options::options`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::options::options(data));
