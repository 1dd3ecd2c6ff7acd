//! Fuzz target `array_record_reader`: see [`riegeli_fuzz::array_record::array_record_reader`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| riegeli_fuzz::array_record::array_record_reader(data));
