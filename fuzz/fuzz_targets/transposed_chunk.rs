//! Fuzz target `transposed_chunk`: see [`riegeli_fuzz::codec::transposed_chunk`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::codec::transposed_chunk(data));
