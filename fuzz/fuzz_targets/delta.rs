//! Fuzz target `delta`: see [`riegeli_fuzz::codec::delta`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::codec::delta(data));
