//! `riegeli cat` and `riegeli count`.

use std::io::Write;
use std::sync::{Arc, Mutex};

use std::io::IsTerminal;

use anyhow::{Context, Result, bail};
use base64::Engine;
use clap::{Args, ValueEnum};
use riegeli_records::{ChunkReader, RecordPosition, RecordReader, RecordReaderOptions, SkippedRegion};
use serde_json::json;

use crate::{Failed, PathArg, Usage, io, progress, proto};

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
    /// Protobuf text format, one record per line, decoded with the record type and
    /// descriptors stored in the file metadata.
    ProtoText,
    /// Canonical protobuf JSON, one object per line, decoded with the record type and
    /// descriptors stored in the file metadata.
    ProtoJson,
}

impl Format {
    fn is_proto(self) -> bool {
        matches!(self, Self::ProtoText | Self::ProtoJson)
    }

    fn name(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Hex => "hex",
            Self::Base64 => "base64",
            Self::Json => "json",
            Self::Delimited => "delimited",
            Self::ProtoText => "proto-text",
            Self::ProtoJson => "proto-json",
        }
    }
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
    /// Skip damaged regions (and, for proto formats, records that do not parse),
    /// reporting each on stderr, instead of failing.
    #[arg(long)]
    skip_corrupted: bool,
    /// Start at this record position: `chunk_begin/index` (as `--format json` prints
    /// it) or a numeric position (`chunk_begin + index`, any byte offset is allowed).
    #[arg(long, visible_alias = "start", value_name = "POS")]
    from: Option<String>,
    /// Print at most this many records (per file).
    #[arg(long, short = 'n', value_name = "N")]
    limit: Option<u64>,
    /// For proto-text and proto-json: print each record over several indented lines,
    /// records separated by a blank line.
    #[arg(long)]
    pretty: bool,
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
        progress::note(&format!("riegeli: {name}: {region}"));
        if let Ok(mut regions) = sink.lock() {
            regions.push(region.clone());
        }
        true
    });
    regions
}

fn parse_start(text: &str) -> Result<Start> {
    if text.contains('/') {
        return Ok(Start::Position(text.parse().map_err(|e| Usage(format!("--from {text:?}: {e}")))?));
    }
    Ok(Start::Numeric(
        text.parse().map_err(|_| Usage(format!("--from {text:?}: expected chunk_begin/index or a number")))?,
    ))
}

#[derive(Clone, Copy)]
enum Start {
    Position(RecordPosition),
    Numeric(u64),
}

impl Start {
    /// Whether a record at `pos` comes before the start (and is not printed).
    fn skips(self, pos: RecordPosition) -> bool {
        match self {
            Self::Position(start) => pos < start,
            Self::Numeric(start) => pos.numeric() < start,
        }
    }
}

/// Appends `len` as a protobuf varint.
fn push_varint(buf: &mut Vec<u8>, mut len: u64) {
    while len >= 0x80 {
        buf.push((len as u8) | 0x80);
        len >>= 7;
    }
    buf.push(len as u8);
}

pub(crate) fn cat(args: CatArgs) -> Result<()> {
    let start = args.from.as_deref().map(parse_start).transpose()?;
    if args.pretty && !args.format.is_proto() {
        return Err(Usage("--pretty applies to --format proto-text and proto-json".to_owned()).into());
    }
    let mut out = io::create(std::path::Path::new("-"))?;
    // A bar on a terminal that also shows the records would mix with them.
    let show_progress = !std::io::stdout().is_terminal();
    let mut buf = Vec::new();
    for path in &args.files {
        let name = io::name(path);
        let input = io::open(path)?.with_progress(&name, show_progress);
        let stdin = input.is_stdin();
        let mut reader = RecordReader::new(input);
        if args.skip_corrupted {
            report_skipped(&mut reader, &name);
        }
        let printer = if args.format.is_proto() {
            let metadata = reader.read_metadata().with_context(|| format!("{name}: cannot read the metadata"))?;
            let desc = proto::from_metadata(metadata, &name, args.format.name())?;
            Some(proto::ProtoPrinter::new(desc, args.pretty))
        } else {
            None
        };
        match start {
            // Standard input cannot seek: records before the start are read and dropped.
            _ if stdin => {}
            Some(Start::Position(pos)) => {
                reader.seek(pos).with_context(|| format!("{name}: cannot seek to {pos}"))?;
            }
            Some(Start::Numeric(pos)) => {
                reader.seek_numeric(pos).with_context(|| format!("{name}: cannot seek to {pos}"))?;
            }
            None => {}
        }
        // A `chunk/index` start must name a chunk boundary; the first read tells.
        let mut seeked_to = match start {
            Some(Start::Position(pos)) if !stdin => Some(pos),
            _ => None,
        };
        let mut printed = 0u64;
        while args.limit.is_none_or(|limit| printed < limit) {
            let record = match reader.read_record() {
                Ok(record) => record,
                Err(e) if e.is_corruption() && seeked_to.is_some_and(|p| e.position() == Some(p.chunk_begin())) => {
                    let pos = seeked_to.map(|p| p.chunk_begin()).unwrap_or_default();
                    return Err(Usage(format!(
                        "{name}: --from: no chunk begins at {pos} (take positions from `cat --format json`, \
                         or give a numeric position)"
                    ))
                    .into());
                }
                Err(e) => return Err(anyhow::Error::new(e).context(name.clone())),
            };
            seeked_to = None;
            let Some(record) = record else { break };
            let pos = reader.last_pos().unwrap_or_default();
            if stdin && start.is_some_and(|start| start.skips(pos)) {
                continue;
            }
            buf.clear();
            match args.format {
                Format::Text => {
                    buf.extend_from_slice(escape_text(&record).as_bytes());
                    buf.push(b'\n');
                }
                Format::Hex => {
                    const DIGITS: &[u8; 16] = b"0123456789abcdef";
                    for &b in record.iter() {
                        buf.extend_from_slice(&[DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]]);
                    }
                    buf.push(b'\n');
                }
                Format::Base64 => {
                    buf.extend_from_slice(base64::engine::general_purpose::STANDARD.encode(&record).as_bytes());
                    buf.push(b'\n');
                }
                Format::Json => {
                    let pos = pos.to_string();
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
                    push_varint(&mut buf, record.len() as u64);
                    buf.extend_from_slice(&record);
                }
                Format::ProtoText | Format::ProtoJson => {
                    let printer = printer.as_ref().context("record type")?;
                    let decoded = match args.format {
                        Format::ProtoText => printer.text(&record),
                        _ => printer.json(&record),
                    };
                    match decoded {
                        Ok(text) => {
                            if args.pretty && printed > 0 {
                                buf.push(b'\n');
                            }
                            buf.extend_from_slice(text.as_bytes());
                            buf.push(b'\n');
                        }
                        Err(e) if args.skip_corrupted => {
                            progress::note(&format!("riegeli: {name}: record {pos}: {e:#}; skipped"));
                            continue;
                        }
                        Err(e) => bail!("{name}: record {pos}: {e:#}"),
                    }
                }
            }
            printed += 1;
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
        let input = io::open(path)?.with_progress(&name, true);
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
                    if let Some(region) = reader.recover().with_context(|| name.clone())? {
                        progress::note(&format!("riegeli: {name}: {region}"));
                    }
                }
                Err(e) => {
                    progress::note(&format!("riegeli: {name}: {e}"));
                    failed = true;
                    break;
                }
            }
        }
        total += count;
        if args.files.len() > 1 {
            progress::out(&format!("{count} {name}"));
        } else {
            progress::out(&format!("{count}"));
        }
    }
    if args.files.len() > 1 {
        println!("{total} total");
    }
    if failed { Err(Failed.into()) } else { Ok(()) }
}
