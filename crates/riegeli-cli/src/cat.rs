//! `riegeli cat` and `riegeli count`.

use std::io::Write;
use std::sync::{Arc, Mutex};

use std::io::IsTerminal;

use anyhow::{Context, Result, bail};
use base64::Engine;
use clap::{Args, ValueEnum};
use riegeli_codec::varint;
use riegeli_records::{
    ChunkReadOptions, ChunkReader, Disposition, IndexSource, RecordPosition, RecordReader, RecordReaderOptions,
    SkippedRegion, TrailerDetector,
};
use serde_json::json;

use crate::exit::{Failed, Usage};
use crate::io::{self, PathArg};
use crate::{array_record, progress, proto, text};

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
    /// reporting each on stderr, instead of failing; an ArrayRecord file whose
    /// footer is unusable or cut off is then read by a scan.
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
    /// Print the records with these indices, in this order: a comma-separated list of
    /// indices and half-open ranges `A..B` (e.g. `0,7,100..200`). Random access through
    /// the ArrayRecord footer (other files are indexed by a scan first).
    #[arg(long, value_name = "LIST", conflicts_with = "from")]
    records: Option<String>,
    /// Print the records of the chunks that begin in this byte range of the file,
    /// `START..END` or `START..` (to the end): the ranges of any partition of a file
    /// print each of its records once, as workers splitting a file read it.
    #[arg(long, value_name = "START..END", conflicts_with_all = ["records", "from"])]
    byte_range: Option<String>,
    /// Read ArrayRecord files as plain Riegeli/records: their footer and postscript
    /// are printed as records.
    #[arg(long, conflicts_with = "records")]
    plain: bool,
    /// Chunks decoded ahead on this many background threads while records are
    /// printed (0: decode on the printing thread). Default: 1 when the machine
    /// has more than one core.
    #[arg(long, short = 'j', value_name = "N")]
    threads: Option<usize>,
}

impl CatArgs {
    fn decoding_threads(&self) -> usize {
        decoding_threads(self.threads)
    }
}

/// Background decoding threads for `-j`: by default 1 when the machine has
/// more than one core.
pub(crate) fn decoding_threads(threads: Option<usize>) -> usize {
    threads.unwrap_or_else(|| usize::from(std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)))
}

/// Arguments of `riegeli count`.
#[derive(Debug, Args)]
pub(crate) struct CountArgs {
    /// Files to count (`-` for standard input).
    #[arg(required = true)]
    files: Vec<PathArg>,
    /// Skip damaged regions (reported on stderr) instead of failing; an
    /// ArrayRecord file whose footer is unusable or cut off is then counted by a scan.
    #[arg(long)]
    skip_corrupted: bool,
    /// Count ArrayRecord files as plain Riegeli/records: their footer and postscript
    /// records are counted too.
    #[arg(long)]
    plain: bool,
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

/// `--byte-range START..END` or `START..`.
fn parse_byte_range(text: &str) -> Result<std::ops::Range<u64>> {
    let bad = || Usage(format!("--byte-range {text:?}: expected START..END or START.. (byte offsets)"));
    let (start, end) = text.split_once("..").ok_or_else(bad)?;
    let start: u64 = start.trim().parse().map_err(|_| bad())?;
    let end: u64 = match end.trim() {
        "" => u64::MAX,
        end => end.parse().map_err(|_| bad())?,
    };
    if end < start {
        return Err(Usage(format!("--byte-range {text:?}: the range ends before it begins")).into());
    }
    Ok(start..end)
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

/// What names a record in messages and in `--format json`.
#[derive(Clone, Copy)]
enum Label {
    /// Its position (sequential reading).
    Pos(RecordPosition),
    /// Its index (random access through `--records`).
    Index(u64),
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pos(pos) => write!(f, "{pos}"),
            Self::Index(index) => write!(f, "#{index}"),
        }
    }
}

/// Prints records as `--format` says.
struct Printer {
    format: Format,
    pretty: bool,
    skip_corrupted: bool,
    proto: Option<proto::ProtoPrinter>,
    /// `--format proto-json`: records decoded in batches by riegeli-arrow
    /// and printed from its columns (when the type has a JSON form there;
    /// `proto` prints the others).
    json: Option<JsonBatch>,
}

/// Records of `--format proto-json` decoded but not printed yet.
struct JsonBatch {
    rows: proto::JsonRows,
    /// The records pushed since the last flush.
    pending: Vec<Label>,
    /// Records printed so far (with `--pretty`, a blank line goes between them).
    printed: u64,
}

/// Records decoded at a time by `--format proto-json`.
const JSON_BATCH: usize = 1024;

impl Printer {
    /// The printer of `args.format`, for records of type `desc` in the proto formats.
    fn new(args: &CatArgs, desc: Option<prost_reflect::MessageDescriptor>) -> Self {
        let json = match (&desc, args.format) {
            (Some(desc), Format::ProtoJson) => {
                proto::JsonRows::new(desc).map(|rows| JsonBatch { rows, pending: Vec::new(), printed: 0 })
            }
            _ => None,
        };
        Self {
            format: args.format,
            pretty: args.pretty,
            skip_corrupted: args.skip_corrupted,
            proto: desc.map(|desc| proto::ProtoPrinter::new(desc, args.pretty)),
            json,
        }
    }

    /// `--format proto-json` through riegeli-arrow: decodes `record` into the
    /// batch, printing the batch into `buf` when it is full.
    fn push_json(
        &mut self,
        buf: &mut Vec<u8>,
        out: &mut dyn Write,
        record: &[u8],
        label: Label,
        name: &str,
    ) -> Result<bool> {
        let Some(json) = &mut self.json else { bail!("record type") };
        match json.rows.push(record) {
            Ok(()) => json.pending.push(label),
            Err(e) if self.skip_corrupted => {
                progress::note(&format!("riegeli: {name}: record {label}: {e:#}; skipped"));
                return Ok(false);
            }
            Err(e) => {
                // The records before it are printed first.
                self.finish(buf, out, name)?;
                out.write_all(buf)?;
                buf.clear();
                bail!("{name}: record {label}: {e:#}");
            }
        }
        if json.pending.len() >= JSON_BATCH {
            self.finish(buf, out, name)?;
        }
        Ok(true)
    }

    /// Prints into `buf` the records decoded and not printed yet (of
    /// `--format proto-json`). A record that cannot be printed (a timestamp
    /// out of range) fails after the records before it were written to
    /// `out`, or is skipped with `--skip-corrupted` (it was counted for
    /// `--limit` when it was decoded).
    fn finish(&mut self, buf: &mut Vec<u8>, out: &mut dyn Write, name: &str) -> Result<()> {
        let Some(json) = &mut self.json else { return Ok(()) };
        if json.pending.is_empty() {
            return Ok(());
        }
        let batch = json.rows.flush()?;
        for (row, label) in json.pending.drain(..).enumerate() {
            let before = buf.len();
            if self.pretty && json.printed > 0 {
                buf.push(b'\n');
            }
            match json.rows.write_row(&batch, row, self.pretty, buf) {
                Ok(()) => {
                    buf.push(b'\n');
                    json.printed += 1;
                }
                Err(e) => {
                    buf.truncate(before);
                    if self.skip_corrupted {
                        progress::note(&format!("riegeli: {name}: record {label}: {e:#}; skipped"));
                        continue;
                    }
                    out.write_all(buf)?;
                    buf.clear();
                    bail!("{name}: record {label}: {e:#}");
                }
            }
        }
        Ok(())
    }
}

impl Printer {
    /// Appends `record` to `buf`, formatted; `Ok(false)` when it is skipped (a
    /// record that does not parse as the proto type, with `--skip-corrupted`).
    /// A delimited record, and a large record in a format that can be written
    /// in pieces, goes to `out` instead, after what `buf` holds (`buf` is then
    /// empty): never copied twice, nor held whole.
    fn format(
        &mut self,
        buf: &mut Vec<u8>,
        out: &mut dyn Write,
        record: &[u8],
        label: Label,
        name: &str,
        first: bool,
    ) -> Result<bool> {
        if record.len() >= STREAM_RECORDS_FROM {
            match self.format {
                Format::Delimited | Format::Hex | Format::Base64 => {
                    self.stream(buf, out, record)?;
                    return Ok(true);
                }
                Format::Json => {
                    stream_json(buf, out, record, label)?;
                    return Ok(true);
                }
                _ => {}
            }
        }
        match self.format {
            Format::Text => {
                buf.extend_from_slice(text::escape_text(record).as_bytes());
                buf.push(b'\n');
            }
            Format::Hex => {
                const DIGITS: &[u8; 16] = b"0123456789abcdef";
                for &b in record {
                    buf.extend_from_slice(&[DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]]);
                }
                buf.push(b'\n');
            }
            Format::Base64 => {
                buf.extend_from_slice(base64::engine::general_purpose::STANDARD.encode(record).as_bytes());
                buf.push(b'\n');
            }
            Format::Json => {
                let mut value = match label {
                    Label::Pos(pos) => json!({"pos": pos.to_string()}),
                    Label::Index(index) => json!({"index": index}),
                };
                value["size"] = json!(record.len());
                match std::str::from_utf8(record) {
                    Ok(text) => value["data"] = json!(text),
                    Err(_) => value["data_base64"] = json!(base64::engine::general_purpose::STANDARD.encode(record)),
                }
                buf.extend_from_slice(value.to_string().as_bytes());
                buf.push(b'\n');
            }
            Format::Delimited => {
                // Straight to `out` (after what `buf` holds): one copy of the record, not two.
                varint::encode_u64(record.len() as u64, buf);
                out.write_all(buf)?;
                buf.clear();
                out.write_all(record)?;
            }
            Format::ProtoJson if self.json.is_some() => return self.push_json(buf, out, record, label, name),
            Format::ProtoText | Format::ProtoJson => {
                let printer = self.proto.as_ref().context("record type")?;
                let decoded = match self.format {
                    Format::ProtoText => printer.text(record),
                    _ => printer.json(record),
                };
                match decoded {
                    Ok(text) => {
                        if self.pretty && !first {
                            buf.push(b'\n');
                        }
                        buf.extend_from_slice(text.as_bytes());
                        buf.push(b'\n');
                    }
                    Err(e) if self.skip_corrupted => {
                        progress::note(&format!("riegeli: {name}: record {label}: {e:#}; skipped"));
                        return Ok(false);
                    }
                    Err(e) => bail!("{name}: record {label}: {e:#}"),
                }
            }
        }
        Ok(true)
    }
}

/// Records from this size on are written out in pieces as they are formatted.
const STREAM_RECORDS_FROM: usize = 1 << 20;

impl Printer {
    /// Writes `buf` and then `record` formatted, piece by piece, to `out`;
    /// leaves `buf` empty.
    fn stream(&self, buf: &mut Vec<u8>, out: &mut dyn Write, record: &[u8]) -> Result<()> {
        // Pieces of a multiple of 3 bytes, so that base64 pieces concatenate.
        const PIECE: usize = 3 << 16;
        if self.format == Format::Delimited {
            varint::encode_u64(record.len() as u64, buf);
        }
        out.write_all(buf)?;
        buf.clear();
        for piece in record.chunks(PIECE) {
            match self.format {
                Format::Delimited => out.write_all(piece)?,
                Format::Base64 => {
                    let text = base64::engine::general_purpose::STANDARD.encode(piece);
                    out.write_all(text.as_bytes())?;
                }
                _ => {
                    const DIGITS: &[u8; 16] = b"0123456789abcdef";
                    buf.extend(piece.iter().flat_map(|&b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]]));
                    out.write_all(buf)?;
                    buf.clear();
                }
            }
        }
        if self.format != Format::Delimited {
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// A large record as `--format json` prints it, written to `out` (after what
/// `buf` holds) as it is escaped, never held whole: the same line as the
/// `serde_json` object of small records (keys in order: `data` or
/// `data_base64`, then `index` or `pos`, then `size`).
fn stream_json(buf: &mut Vec<u8>, out: &mut dyn Write, record: &[u8], label: Label) -> Result<()> {
    // Pieces of a multiple of 3 bytes, so that base64 pieces concatenate.
    const PIECE: usize = 3 << 16;
    out.write_all(buf)?;
    buf.clear();
    match std::str::from_utf8(record) {
        Ok(text) => {
            out.write_all(b"{\"data\":")?;
            serde_json::to_writer(&mut *out, text)?;
        }
        Err(_) => {
            out.write_all(b"{\"data_base64\":\"")?;
            for piece in record.chunks(PIECE) {
                out.write_all(base64::engine::general_purpose::STANDARD.encode(piece).as_bytes())?;
            }
            out.write_all(b"\"")?;
        }
    }
    let label = match label {
        Label::Pos(pos) => format!("\"pos\":{}", json!(pos.to_string())),
        Label::Index(index) => format!("\"index\":{index}"),
    };
    out.write_all(format!(",{label},\"size\":{}}}\n", record.len()).as_bytes())?;
    Ok(())
}

/// One item of a `--records` list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pick {
    One(u64),
    Range(std::ops::Range<u64>),
}

fn parse_picks(text: &str) -> Result<Vec<Pick>, Usage> {
    let bad = |item: &str| Usage(format!("--records {text:?}: {item:?} is not an index or a range A..B"));
    let mut picks = Vec::new();
    for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
        match item.split_once("..") {
            Some((a, b)) => {
                let a: u64 = a.trim().parse().map_err(|_| bad(item))?;
                let b: u64 = b.trim().parse().map_err(|_| bad(item))?;
                if a > b {
                    return Err(Usage(format!("--records {text:?}: the range {item:?} ends before it begins")));
                }
                picks.push(Pick::Range(a..b));
            }
            None => picks.push(Pick::One(item.parse().map_err(|_| bad(item))?)),
        }
    }
    if picks.is_empty() {
        return Err(Usage(format!("--records {text:?}: no index given")));
    }
    Ok(picks)
}

/// Records read per batch by `--records` (decoded in parallel).
const BATCH: usize = 4096;

/// `cat --records`: random access through an [`ArrayRecordReader`](riegeli_records::ArrayRecordReader).
fn cat_picks(
    args: &CatArgs,
    path: &std::path::Path,
    picks: &[Pick],
    printer: &mut Printer,
    out: &mut dyn Write,
) -> Result<()> {
    if path.as_os_str() == "-" {
        return Err(Usage("--records needs a file: standard input cannot seek".to_owned()).into());
    }
    // Opened once: the trailer, the index, the metadata and the records are read from it.
    let input = io::open(path)?;
    let name = input.name().to_owned();
    let trailer = array_record::detect(&input)?;
    let (mut reader, summary) = array_record::open(&input, trailer)?;
    if let Some(problem) = &summary.footer_problem {
        array_record::footer_problem(&name, problem, args.skip_corrupted)?;
    }
    if let Some(region) = summary.damage.first() {
        if !args.skip_corrupted {
            bail!("{name}: {region} (record indices would not be those of the intact file; give --skip-corrupted)");
        }
        for region in &summary.damage {
            progress::note(&format!("riegeli: {name}: {region}"));
        }
    }
    if printer.format.is_proto() {
        let mut plain = RecordReader::new(input.seekable().context("a file")?);
        let metadata = plain.read_metadata().with_context(|| format!("{name}: cannot read the metadata"))?;
        let desc = proto::from_metadata(metadata, &name, printer.format.name())?;
        *printer = Printer::new(args, Some(desc));
    }
    let n = summary.num_records;
    for pick in picks {
        let last = match pick {
            Pick::One(i) => Some(*i),
            Pick::Range(r) => r.end.checked_sub(1),
        };
        if let Some(last) = last.filter(|&last| last >= n) {
            return Err(Usage(format!("{name}: --records: index {last} out of range: the file has {n} records")).into());
        }
    }
    let mut indices = picks.iter().flat_map(|pick| match pick {
        Pick::One(i) => *i..*i + 1,
        Pick::Range(r) => r.clone(),
    });
    // In file order, batches stream the records; in any other order, one batch decodes each
    // chunk once (a chunk's records wanted by several batches would be decoded by each).
    let bounds = picks.iter().filter_map(|pick| match pick {
        Pick::One(i) => Some((*i, *i)),
        Pick::Range(r) => r.end.checked_sub(1).filter(|&last| last >= r.start).map(|last| (r.start, last)),
    });
    let mut previous = None;
    let ascending = bounds.into_iter().all(|(first, last)| {
        let in_order = previous.is_none_or(|p| first >= p);
        previous = Some(last);
        in_order
    });
    let batch_size = if ascending { BATCH as u64 } else { u64::MAX };
    let mut printed = 0u64;
    let mut buf = Vec::new();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        let room = args.limit.map_or(batch_size, |limit| (limit - printed).min(batch_size));
        batch.extend(indices.by_ref().take(room as usize));
        if batch.is_empty() {
            break;
        }
        let records = reader.read_batch(&batch).with_context(|| name.clone())?;
        buf.clear();
        for (&index, record) in batch.iter().zip(&records) {
            if printer.format(&mut buf, out, record, Label::Index(index), &name, printed == 0)? {
                printed += 1;
            }
        }
        printer.finish(&mut buf, out, &name)?;
        out.write_all(&buf)?;
    }
    Ok(())
}

pub(crate) fn cat(args: CatArgs) -> Result<()> {
    let start = args.from.as_deref().map(parse_start).transpose()?;
    let byte_range = args.byte_range.as_deref().map(parse_byte_range).transpose()?;
    if args.pretty && !args.format.is_proto() {
        return Err(Usage("--pretty applies to --format proto-text and proto-json".to_owned()).into());
    }
    let picks = args.records.as_deref().map(parse_picks).transpose()?;
    if picks.is_none() && byte_range.is_none() && start.is_none() {
        io::read_objects_from_start();
    }
    let mut out = io::create(std::path::Path::new("-"))?;
    // A bar on a terminal that also shows the records would mix with them.
    let show_progress = !std::io::stdout().is_terminal();
    let mut buf = Vec::new();
    for path in &args.files {
        let name = io::name(path);
        let mut printer = Printer::new(&args, None);
        if let Some(picks) = &picks {
            cat_picks(&args, path, picks, &mut printer, &mut out)?;
            continue;
        }
        // Opened once: the trailer and the footer are read from it as well as the records.
        let input = io::open(path)?;
        let trailer = if args.plain { None } else { array_record::detect(&input)? };
        let footer = match trailer {
            Some(trailer) => Some(array_record::open(&input, Some(trailer))?.1),
            None => None,
        };
        let input = input.with_progress(&name, show_progress);
        let stdin = input.is_stdin();
        if stdin && byte_range.is_some() {
            return Err(Usage("--byte-range needs a file: standard input cannot seek".to_owned()).into());
        }
        let options = RecordReaderOptions {
            read_array_record_trailer: args.plain,
            parallelism: args.decoding_threads(),
            ..RecordReaderOptions::default()
        };
        let mut reader = RecordReader::with_options(input, options);
        if let (Some(trailer), Some(summary)) = (trailer, footer) {
            // A footer that cannot be used fails the file, or with --skip-corrupted is told
            // of on stderr; the records are read in order anyway.
            if let Some(problem) = &summary.footer_problem {
                array_record::footer_problem(&name, problem, args.skip_corrupted)?;
            }
            let footer_damaged = summary.index_source != IndexSource::Footer;
            let skip = args.skip_corrupted;
            let name = name.clone();
            reader.set_recovery(move |region| {
                if footer_damaged && region.begin == trailer.footer_offset {
                    // The notice above told of it; the footer holds no records.
                    return true;
                }
                if skip {
                    progress::note(&format!("riegeli: {name}: {region}"));
                }
                skip
            });
        } else if args.skip_corrupted {
            report_skipped(&mut reader, &name);
        }
        if args.format.is_proto() {
            let metadata = reader.read_metadata().with_context(|| format!("{name}: cannot read the metadata"))?;
            let desc = proto::from_metadata(metadata, &name, args.format.name())?;
            printer = Printer::new(&args, Some(desc));
        }
        match start {
            // Standard input cannot seek: records before the start are read and dropped.
            _ if stdin => {}
            Some(Start::Position(pos)) => {
                reader.seek(pos).with_context(|| format!("{name}: cannot seek to {pos}"))?;
            }
            Some(Start::Numeric(pos)) => {
                // Past the end of the file: nothing to print, as from standard input (the
                // reader refuses to seek there, as C++'s).
                let size = reader.size().with_context(|| format!("{name}: cannot find the size"))?;
                let pos = pos.min(size);
                reader.seek_numeric(pos).with_context(|| format!("{name}: cannot seek to {pos}"))?;
            }
            None => {}
        }
        if let Some(range) = &byte_range {
            // (The reader tells the input: an object fetches no more than the range's chunks.)
            reader.set_byte_range(range.clone()).with_context(|| format!("{name}: --byte-range"))?;
        }
        // A `chunk/index` start must name a chunk boundary; the first read tells.
        let mut seeked_to = match start {
            Some(Start::Position(pos)) if !stdin => Some(pos),
            _ => None,
        };
        // Positions are printed in JSON, name records that do not parse in the proto formats,
        // and tell where `--from` starts on standard input; otherwise records are borrowed
        // from the reader (no reference count per record).
        let plain_format = matches!(args.format, Format::Text | Format::Hex | Format::Base64 | Format::Delimited);
        let wants_pos = !plain_format || (stdin && start.is_some());
        let mut printed = 0u64;
        while args.limit.is_none_or(|limit| printed < limit) {
            let owned;
            let mut pos = RecordPosition::default();
            let read = if wants_pos {
                match reader.read_record() {
                    Ok(Some(record)) => {
                        pos = reader.last_pos().unwrap_or_default();
                        owned = record;
                        Ok(Some(&owned[..]))
                    }
                    Ok(None) => Ok(None),
                    Err(e) => Err(e),
                }
            } else {
                reader.read_record_ref()
            };
            let record = match read {
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
            if stdin && start.is_some_and(|start| start.skips(pos)) {
                continue;
            }
            buf.clear();
            if printer.format(&mut buf, &mut out, record, Label::Pos(pos), &name, printed == 0)? {
                printed += 1;
                out.write_all(&buf)?;
            }
        }
        buf.clear();
        printer.finish(&mut buf, &mut out, &name)?;
        out.write_all(&buf)?;
        // An ArrayRecord file cut short after its footer: every record is there, but
        // array_record's reader refuses the file.
        if trailer.is_none()
            && let Some(footer) = reader.footer_without_postscript()
        {
            out.flush()?;
            array_record::footer_problem(&name, &array_record::cut_after_footer(footer), args.skip_corrupted)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Counts the records of a file from its chunk headers; an ArrayRecord
/// trailer (a footer chunk and the postscript pointing at it) is not counted
/// unless `plain`. Chunks are decoded only to confirm a trailer. A footer
/// that ends the file, no postscript after it, is a problem, as damage is.
fn count_chunks(input: io::Input, name: &str, args: &CountArgs) -> Result<(u64, bool)> {
    let input = input.with_progress(name, true);
    let mut reader = ChunkReader::new(input, ChunkReadOptions::default(), 0);
    let mut count = 0u64;
    let mut failed = false;
    let decode = |chunk: &riegeli_records::Chunk| chunk.decode(&ChunkReadOptions::default()).ok().flatten();
    let mut detector = TrailerDetector::lazy();
    // The chunk the detector holds back: maybe a footer.
    let mut held: Option<riegeli_records::Chunk> = None;
    loop {
        match reader.read_chunk() {
            Ok(Some(chunk))
                if riegeli_records::ChunkType::holds_records(chunk.header.chunk_type(), chunk.header.num_records()) =>
            {
                count += chunk.header.num_records();
                if args.plain {
                    continue;
                }
                let step =
                    detector.feed(chunk.begin, &chunk.header, || decode(&chunk), || held.as_ref().and_then(decode));
                if let Some(previous) = held.take()
                    && !step.release_held
                {
                    count -= previous.header.num_records();
                }
                match step.this {
                    Disposition::Keep => {}
                    Disposition::Hold => held = Some(chunk),
                    Disposition::Drop => count -= chunk.header.num_records(),
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) if e.is_corruption() && args.skip_corrupted => {
                if let Some(region) = reader.recover().with_context(|| name.to_owned())? {
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
    if let Some(last) = &held
        && detector.finish(|| decode(last))
    {
        count -= last.header.num_records();
        progress::note(&format!("riegeli: {name}: {}", array_record::cut_after_footer(last.begin)));
        failed |= !args.skip_corrupted;
    }
    Ok((count, failed))
}

pub(crate) fn count(args: CountArgs) -> Result<()> {
    let mut total = 0u64;
    let mut failed = false;
    for path in &args.files {
        let name = io::name(path);
        let input = io::open(path)?;
        let trailer = if args.plain { None } else { array_record::detect(&input)? };
        let count = match trailer {
            // The footer says how many records there are.
            Some(trailer) => {
                let (_, summary) = array_record::open(&input, Some(trailer))?;
                if let Some(problem) = &summary.footer_problem {
                    progress::note(&format!("riegeli: {name}: {problem}"));
                    failed |= !args.skip_corrupted;
                }
                for region in &summary.damage {
                    progress::note(&format!("riegeli: {name}: {region}"));
                }
                if !summary.damage.is_empty() && !args.skip_corrupted {
                    failed = true;
                }
                summary.num_records
            }
            None => {
                let (count, bad) = count_chunks(input, &name, &args)?;
                failed |= bad;
                count
            }
        };
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
