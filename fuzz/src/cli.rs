//! The check behind the `cli_inputs` fuzz target: the record streams
//! `riegeli write --input-format` reads (`crates/riegeli-cli/src/input.rs`
//! and `tfrecord.rs`, which the fuzz crate compiles from the CLI's sources)
//! on arbitrary bytes.
//!
//! Properties: nothing panics; `lines` always succeeds and its records
//! joined by `\n` give the input back; the records parsed (all of them when
//! parsing succeeds, those before the error otherwise) written back in the
//! format, parse back to the same records: delimited (canonical varints),
//! JSON lines (`data` for UTF-8, `data_base64` otherwise, as `riegeli cat
//! --format json` writes them), TFRecord (with the same compression, by the
//! CLI's own writer); a plain TFRecord stream that parses whole is exactly
//! its records written back (the format has one encoding).
//!
//! The same function replays `fuzz/regressions/cli_inputs/` in the CLI's
//! unit tests (`crates/riegeli-cli/src/fuzz_regressions.rs` includes this
//! file), so it refers to the parsers as `crate::input` and `crate::tfrecord`,
//! which both crates have.

use std::io::Cursor;

use base64::Engine;

use crate::input::{InputFormat, for_each_record};
use crate::tfrecord::{TfCompression, TfWriter};

/// Input layout: byte 0 picks the format (`% 4`: delimited, lines, JSON,
/// TFRecord) and, for TFRecord, the compression (`/ 4 % 3`: none, gzip,
/// zlib); the rest is the stream.
pub fn cli_inputs(data: &[u8]) {
    let Some((&selector, stream)) = data.split_first() else { return };
    let format = match selector % 4 {
        0 => InputFormat::Delimited,
        1 => InputFormat::Lines,
        2 => InputFormat::Json,
        _ => InputFormat::Tfrecord,
    };
    let compression = match selector / 4 % 3 {
        0 => TfCompression::None,
        1 => TfCompression::Gzip,
        _ => TfCompression::Zlib,
    };
    let (records, result) = parse(stream, format, compression);
    if let Err(e) = &result {
        assert!(!format!("{e:#}").is_empty());
    }
    let written = write(&records, format, compression);
    let (again, again_result) = parse(&written, format, compression);
    assert!(again_result.is_ok(), "{format:?}: the records written back do not parse: {again_result:?}");
    assert_eq!(again, records, "{format:?}: the records written back parse differently");
    match format {
        InputFormat::Lines => {
            assert!(result.is_ok(), "lines: {result:?}");
            let mut joined = records.join(&b'\n');
            if stream.last() == Some(&b'\n') {
                joined.push(b'\n');
            }
            assert_eq!(joined, stream, "lines joined");
        }
        InputFormat::Tfrecord if compression == TfCompression::None && result.is_ok() => {
            assert_eq!(written, stream, "a plain TFRecord stream written back");
        }
        _ => {}
    }
}

/// The records of `stream`, and how parsing ended.
fn parse(stream: &[u8], format: InputFormat, compression: TfCompression) -> (Vec<Vec<u8>>, anyhow::Result<()>) {
    let mut records = Vec::new();
    let result = for_each_record(Box::new(Cursor::new(stream.to_vec())), format, compression, |record| {
        records.push(record.to_vec());
        Ok(())
    });
    (records, result)
}

/// `records` in `format`.
fn write(records: &[Vec<u8>], format: InputFormat, compression: TfCompression) -> Vec<u8> {
    let mut out = Vec::new();
    match format {
        InputFormat::Delimited => {
            for record in records {
                let mut len = record.len() as u64;
                while len >= 0x80 {
                    out.push((len as u8) | 0x80);
                    len >>= 7;
                }
                out.push(len as u8);
                out.extend_from_slice(record);
            }
        }
        InputFormat::Lines => {
            for record in records {
                out.extend_from_slice(record);
                out.push(b'\n');
            }
        }
        InputFormat::Json => {
            for record in records {
                let line = match std::str::from_utf8(record) {
                    Ok(text) => serde_json::json!({ "data": text }),
                    Err(_) => {
                        serde_json::json!({ "data_base64": base64::engine::general_purpose::STANDARD.encode(record) })
                    }
                };
                out.extend_from_slice(line.to_string().as_bytes());
                out.push(b'\n');
            }
        }
        InputFormat::Tfrecord => {
            let mut writer = TfWriter::new(Box::new(&mut out), compression);
            for record in records {
                writer.write(record).expect("writing to memory");
            }
            writer.finish().expect("writing to memory");
        }
    }
    out
}
