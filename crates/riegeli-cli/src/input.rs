//! The record streams `riegeli write` (and `convert --from tfrecord`, `bench`)
//! reads: delimited, lines, JSON lines and TFRecord.
//!
//! Kept apart from the commands, with only `tfrecord.rs` beside it, so that the
//! fuzz crate compiles these parsers from this file (`fuzz/src/cli.rs`, target
//! `cli_inputs`): it refers to `tfrecord` as `crate::tfrecord`, which both
//! crates declare at their root.

use std::io::{BufRead, BufReader, Read};

use anyhow::{Context, Result, bail};
use base64::Engine;
use clap::ValueEnum;

use crate::tfrecord::{TfCompression, TfReader};

/// Formats of records on standard input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum InputFormat {
    /// Each record as its varint length then its bytes (protobuf's delimited stream).
    Delimited,
    /// Each line is a record (without its `\n`).
    Lines,
    /// JSON lines as `riegeli cat --format json` writes them (`data` or `data_base64`).
    Json,
    /// A TFRecord file (see --tfrecord-compression).
    Tfrecord,
}

/// Calls `f` with each record of a delimited/lines/json/tfrecord stream.
pub(crate) fn for_each_record(
    input: Box<dyn Read>,
    format: InputFormat,
    compression: TfCompression,
    mut f: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut buf = Vec::new();
    match format {
        InputFormat::Delimited => {
            let mut reader = BufReader::with_capacity(1 << 16, input);
            let mut offset = 0u64;
            loop {
                let mut len = 0u64;
                let mut shift = 0;
                let mut byte = [0u8; 1];
                loop {
                    match reader.read(&mut byte)? {
                        0 if shift == 0 => return Ok(()),
                        0 => bail!("truncated length varint at input offset {offset}"),
                        _ => {}
                    }
                    offset += 1;
                    if shift >= 63 && byte[0] > 1 {
                        bail!("length varint overflows at input offset {offset}");
                    }
                    len |= u64::from(byte[0] & 0x7f) << shift;
                    shift += 7;
                    if byte[0] < 0x80 {
                        break;
                    }
                }
                if len > 1 << 31 {
                    bail!("record at input offset {offset} claims {len} bytes (over 2 GiB)");
                }
                buf.clear();
                if (&mut reader).take(len).read_to_end(&mut buf)? as u64 != len {
                    bail!("truncated record at input offset {offset}");
                }
                offset += len;
                f(&buf)?;
            }
        }
        InputFormat::Lines => {
            let mut reader = BufReader::with_capacity(1 << 16, input);
            loop {
                buf.clear();
                if reader.read_until(b'\n', &mut buf)? == 0 {
                    return Ok(());
                }
                if buf.last() == Some(&b'\n') {
                    buf.pop();
                }
                f(&buf)?;
            }
        }
        InputFormat::Json => {
            let reader = BufReader::with_capacity(1 << 16, input);
            for (number, line) in reader.lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                let value: serde_json::Value =
                    serde_json::from_str(&line).with_context(|| format!("input line {}", number + 1))?;
                if let Some(text) = value.get("data").and_then(|d| d.as_str()) {
                    f(text.as_bytes())?;
                } else if let Some(encoded) = value.get("data_base64").and_then(|d| d.as_str()) {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .with_context(|| format!("input line {}: data_base64", number + 1))?;
                    f(&bytes)?;
                } else {
                    bail!("input line {}: no \"data\" or \"data_base64\" string", number + 1);
                }
            }
            Ok(())
        }
        InputFormat::Tfrecord => {
            let mut reader = TfReader::new(input, compression);
            while reader.read_into(&mut buf)? {
                f(&buf)?;
            }
            Ok(())
        }
    }
}
