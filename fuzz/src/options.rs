//! The check behind the `options` fuzz target: the option grammars of
//! `RecordWriterOptions` (C++ Riegeli's), `ArrayRecordWriterOptions` and
//! `ArrayRecordReaderOptions` (array-record's) on arbitrary strings.
//!
//! Properties: parsing never panics, and neither do the getters of what it
//! parses; an error names a non-empty message; what `RecordWriterOptions`
//! writes with `Display` parses back to equal options; what
//! `ArrayRecordWriterOptions` writes (C++'s `ToString()`, stored in footers)
//! parses back to options that write the same string and are equal in every
//! setting it writes (it leaves out `transpose_bucket_size` without
//! `transpose`, and the snappy level, as C++ does).
//!
//! The same function replays `fuzz/regressions/options/` in
//! `crates/riegeli-records/tests/fuzz_regressions.rs` (which includes this
//! file with `#[path]`), so this file uses only `riegeli_records` and `std`.

use riegeli_records::{ArrayRecordReaderOptions, ArrayRecordWriterOptions, ParseOptionsError, RecordWriterOptions};

/// The input, as UTF-8 (invalid sequences replaced), goes to every parser.
pub fn options(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    record_writer_options(&text);
    array_record_writer_options(&text);
    array_record_reader_options(&text);
}

fn check_error(text: &str, error: &ParseOptionsError) {
    assert!(!error.message.is_empty(), "{text:?}: an error without a message");
    assert!(!error.to_string().is_empty());
}

fn record_writer_options(text: &str) {
    let options = match text.parse::<RecordWriterOptions>() {
        Ok(options) => options,
        Err(error) => return check_error(text, &error),
    };
    let written = options.to_string();
    let again = written
        .parse::<RecordWriterOptions>()
        .unwrap_or_else(|e| panic!("{text:?} -> {written:?} does not parse: {e}"));
    assert_eq!(again, options, "{text:?} -> {written:?}");
    assert_eq!(again.to_string(), written);
}

fn array_record_writer_options(text: &str) {
    let options = match text.parse::<ArrayRecordWriterOptions>() {
        Ok(options) => options,
        Err(error) => return check_error(text, &error),
    };
    let written = options.to_string();
    let again = written
        .parse::<ArrayRecordWriterOptions>()
        .unwrap_or_else(|e| panic!("{text:?} -> {written:?} does not parse: {e}"));
    assert_eq!(again.to_string(), written, "{text:?}");
    let settings = |o: &ArrayRecordWriterOptions| {
        (
            o.group_size,
            o.transpose,
            o.transpose.then_some(o.transpose_bucket_size),
            o.compression,
            o.pad_to_block_boundary,
            o.parallelism,
        )
    };
    assert_eq!(settings(&again), settings(&options), "{text:?} -> {written:?}");
}

fn array_record_reader_options(text: &str) {
    match text.parse::<ArrayRecordReaderOptions>() {
        Ok(options) => assert!(options.parallelism < i32::MAX as usize, "{text:?}: {options:?}"),
        Err(error) => check_error(text, &error),
    }
}
