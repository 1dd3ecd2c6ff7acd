//! `riegeli cat` and `riegeli count`.

use std::io::Write;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use base64::Engine;
use clap::{Args, ValueEnum};
use riegeli_records::{ChunkReader, RecordPosition, RecordReader, RecordReaderOptions, SkippedRegion};
use serde_json::json;

use crate::{Failed, PathArg, Usage, io};

/// How `cat` prints records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// One record per line, C-escaped (`\n`, `\\`, `\xNN`; valid UTF-8 kept).
    Text,
    /// One record per line in lowercase hex.
    Hex,
    /// One record per line in standard base64.
    Base64,
    /// JSON lines: {"pos": "chunk/index", "size": N, "data": "..."} (`data_base64` when not UTF-8).
    Json,
    /// Each record as its varint length then its bytes (protobuf's delimited stream).
    Delimited,
}

/// Arguments of `riegeli cat`.
#[derive(Debug, Args)]
pub(crate) struct CatArgs {
    /// Files to print (`-` for standard input).
    #[arg(required = true)]
    files: Vec<PathArg>,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Skip damaged regions (reported on stderr) instead of failing.
    #[arg(long)]
    skip_corrupted: bool,
    /// Start at this record position: `chunk_begin/index` or a numeric position.
    #[arg(long)]
    start: Option<String>,
    /// Print at most this many records (per file).
    #[arg(long, short = 'n')]
    limit: Option<u64>,
}

/// Arguments of `riegeli count`.
#[derive(Debug, Args)]
pub(crate) struct CountArgs {
    /// Files to count (`-` for standard input).
    #[arg(required = true)]
    files: Vec<PathArg>,
    /// Skip damaged regions (reported on stderr) instead of failing.
    #[arg(long)]
    skip_corrupted: bool,
}

/// C-style escaping that keeps valid UTF-8 text readable.
pub(crate) fn escape_text(record: &[u8]) -> String {
    let mut out = String::with_capacity(record.len());
    for chunk in record.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Installs a recovery callback that reports regions on stderr and counts them.
pub(crate) fn report_skipped<R: std::io::Read>(
    reader: &mut RecordReader<R>,
    name: &str,
) -> Arc<Mutex<Vec<SkippedRegion>>> {
    let regions = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&regions);
    let name = name.to_owned();
    reader.set_recovery(move |region| {
        eprintln!("riegeli: {name}: {region}");
        if let Ok(mut regions) = sink.lock() {
            regions.push(region.clone());
        }
        true
    });
    regions
}

fn parse_start(text: &str) -> Result<Start> {
    if text.contains('/') {
        return Ok(Start::Position(text.parse().map_err(|e| Usage(format!("--start {text:?}: {e}")))?));
    }
    Ok(Start::Numeric(text.parse().map_err(|_| Usage(format!("--start {text:?}: expected chunk/index or a number")))?))
}

enum Start {
    Position(RecordPosition),
    Numeric(u64),
}

pub(crate) fn cat(args: CatArgs) -> Result<()> {
    let start = args.start.as_deref().map(parse_start).transpose()?;
    let mut out = io::create(std::path::Path::new("-"))?;
    let mut buf = Vec::new();
    for path in &args.files {
        let name = io::name(path);
        let input = io::open(path)?;
        let mut reader = RecordReader::new(input);
        if args.skip_corrupted {
            report_skipped(&mut reader, &name);
        }
        match start {
            Some(Start::Position(pos)) => reader.seek(pos).with_context(|| format!("{name}: cannot seek"))?,
            Some(Start::Numeric(pos)) => reader.seek_numeric(pos).with_context(|| format!("{name}: cannot seek"))?,
            None => {}
        }
        let mut printed = 0u64;
        while args.limit.is_none_or(|limit| printed < limit) {
            let Some(record) = reader.read_record().with_context(|| name.clone())? else { break };
            printed += 1;
            buf.clear();
            match args.format {
                Format::Text => {
                    buf.extend_from_slice(escape_text(&record).as_bytes());
                    buf.push(b'\n');
                }
                Format::Hex => {
                    for b in record.iter() {
                        buf.extend_from_slice(format!("{b:02x}").as_bytes());
                    }
                    buf.push(b'\n');
                }
                Format::Base64 => {
                    buf.extend_from_slice(base64::engine::general_purpose::STANDARD.encode(&record).as_bytes());
                    buf.push(b'\n');
                }
                Format::Json => {
                    let pos = reader.last_pos().map(|p| p.to_string()).unwrap_or_default();
                    let value = match std::str::from_utf8(&record) {
                        Ok(text) => json!({"pos": pos, "size": record.len(), "data": text}),
                        Err(_) => json!({
                            "pos": pos,
                            "size": record.len(),
                            "data_base64": base64::engine::general_purpose::STANDARD.encode(&record),
                        }),
                    };
                    buf.extend_from_slice(value.to_string().as_bytes());
                    buf.push(b'\n');
                }
                Format::Delimited => {
                    let mut len = record.len() as u64;
                    while len >= 0x80 {
                        buf.push((len as u8) | 0x80);
                        len >>= 7;
                    }
                    buf.push(len as u8);
                    buf.extend_from_slice(&record);
                }
            }
            out.write_all(&buf)?;
        }
    }
    out.flush()?;
    Ok(())
}

pub(crate) fn count(args: CountArgs) -> Result<()> {
    let mut total = 0u64;
    let mut failed = false;
    for path in &args.files {
        let name = io::name(path);
        let input = io::open(path)?;
        // Counting needs no decoding: chunk headers say how many records each chunk holds.
        let mut reader = ChunkReader::new(input, RecordReaderOptions::default());
        let mut count = 0u64;
        loop {
            match reader.read_chunk() {
                Ok(Some(chunk)) => {
                    let h = chunk.header();
                    if matches!(h.chunk_type(), b'r' | b't') {
                        count += h.num_records();
                    }
                }
                Ok(None) => break,
                Err(e) if e.is_corruption() && args.skip_corrupted => {
                    if let Some(region) = reader.recover()? {
                        eprintln!("riegeli: {name}: {region}");
                    }
                }
                Err(e) => {
                    eprintln!("riegeli: {name}: {e}");
                    failed = true;
                    break;
                }
            }
        }
        total += count;
        if args.files.len() > 1 {
            println!("{count} {name}");
        } else {
            println!("{count}");
        }
    }
    if args.files.len() > 1 {
        println!("{total} total");
    }
    if failed { Err(Failed.into()) } else { Ok(()) }
}
