//! Fuzz target `simple_chunk`: see [`riegeli_fuzz::codec::simple_chunk`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::codec::simple_chunk(data));
