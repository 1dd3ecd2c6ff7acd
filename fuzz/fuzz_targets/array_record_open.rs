//! Fuzz target `array_record_open`: see [`riegeli_fuzz::records::array_record_open`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::records::array_record_open(data));
