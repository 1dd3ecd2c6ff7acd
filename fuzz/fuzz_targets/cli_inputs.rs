//! Fuzz target `cli_inputs`: see [`riegeli_fuzz::cli::cli_inputs`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::cli::cli_inputs(data));
