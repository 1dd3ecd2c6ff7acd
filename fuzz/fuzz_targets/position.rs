//! Fuzz target `position`: see [`riegeli_fuzz::framing::position`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::framing::position(data));
