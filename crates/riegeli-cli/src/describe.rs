//! `riegeli describe` and `riegeli verify`: chunk-level inspection.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use riegeli_records::{
    ChunkReadOptions, ChunkReader, ChunkType, CompressionType, DecodedRecords, Disposition, TrailerDetector,
};
use serde_json::json;

use crate::exit::Failed;
use crate::io::{self, PathArg};
use crate::{array_record, progress, proto};

/// Arguments of `riegeli describe`.
#[derive(Debug, Args)]
pub(crate) struct DescribeArgs {
    /// Files to describe (`-` for standard input).
    #[arg(required = true)]
    files: Vec<PathArg>,
    /// Decode and print the file metadata chunk.
    #[arg(long)]
    show_records_metadata: bool,
    /// Print the size of every record.
    #[arg(long)]
    show_record_sizes: bool,
    /// Print every record (escaped).
    #[arg(long)]
    show_records: bool,
    /// One JSON object per chunk instead of text.
    #[arg(long)]
    json: bool,
    /// Describe ArrayRecord files as plain Riegeli/records: no ArrayRecord summary,
    /// footer and postscript chunks not marked.
    #[arg(long)]
    plain: bool,
}

/// Arguments of `riegeli verify`.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// Files to verify (`-` for standard input).
    #[arg(required = true)]
    files: Vec<PathArg>,
    /// Print nothing for files without problems.
    #[arg(long, short)]
    quiet: bool,
    /// Check ArrayRecord files as plain Riegeli/records only (not their footer).
    #[arg(long)]
    plain: bool,
    /// Chunks checked and decoded ahead on this many background threads while
    /// the file is read (0: all on one thread). Default: 1 when the machine has
    /// more than one core.
    #[arg(long, short = 'j', value_name = "N")]
    threads: Option<usize>,
}

pub(crate) fn chunk_type_name(chunk_type: u8) -> String {
    match ChunkType::from_byte(chunk_type) {
        Some(ChunkType::FileSignature) => "FILE_SIGNATURE".into(),
        Some(ChunkType::FileMetadata) => "FILE_METADATA".into(),
        Some(ChunkType::Padding) => "PADDING".into(),
        Some(ChunkType::Simple) => "SIMPLE".into(),
        Some(ChunkType::Transposed) => "TRANSPOSED".into(),
        _ => format!("UNKNOWN_{chunk_type:#04x}"),
    }
}

fn compression_name(data: &[u8]) -> &'static str {
    match data.first().map(|&b| CompressionType::from_byte(b)) {
        Some(Ok(CompressionType::None)) => "NONE",
        Some(Ok(CompressionType::Brotli)) => "BROTLI",
        Some(Ok(CompressionType::Zstd)) => "ZSTD",
        Some(Ok(CompressionType::Snappy)) => "SNAPPY",
        _ => "UNKNOWN",
    }
}

/// The number of records of the first data chunk before `end` (an ArrayRecord
/// file's group size), reading chunks from the beginning of `input`.
fn first_group_size(input: &io::Input, end: u64) -> Result<Option<u64>> {
    let Some(file) = input.seekable() else { return Ok(None) };
    let mut reader = ChunkReader::new(file, ChunkReadOptions::default(), 0);
    while let Some(chunk) = reader.read_chunk().ok().flatten() {
        if chunk.begin >= end {
            break;
        }
        if ChunkType::holds_records(chunk.header.chunk_type(), chunk.header.num_records()) {
            return Ok(Some(chunk.header.num_records()));
        }
    }
    Ok(None)
}

/// What `describe` says of a file before its chunks.
struct FileFacts {
    name: String,
    /// Unknown for standard input.
    size: Option<u64>,
}

/// What the footer of an ArrayRecord file says (`array_record` in both outputs).
struct ArrayRecordFacts {
    num_records: u64,
    num_chunks: usize,
    /// The records of the first data chunk.
    group_size: Option<u64>,
    writer_options: Option<String>,
    index_source: &'static str,
    footer_offset: u64,
    postscript_offset: u64,
    /// Why the footer cannot be used (the records were indexed by a scan).
    fallback_reason: Option<String>,
}

/// What `describe` says of one chunk.
struct ChunkFacts {
    begin: u64,
    chunk_type: String,
    data_size: u64,
    num_records: u64,
    decoded_data_size: u64,
    /// For chunks whose data is compressed (simple, transposed, metadata).
    compression: Option<&'static str>,
    /// `FOOTER` or `POSTSCRIPT` of an ArrayRecord file.
    role: Option<&'static str>,
    /// With `--show-record-sizes`.
    record_sizes: Option<Vec<usize>>,
    /// With `--show-records`, escaped as text.
    records: Option<Vec<String>>,
    /// With `--show-records-metadata`, the serialized `RecordsMetadata`.
    metadata: Option<Vec<u8>>,
    /// Block headers inside the chunk whose hash failed (ignored: the chunk is intact).
    damaged_block_headers: Vec<u64>,
    /// Why the chunk cannot be decoded.
    problem: Option<String>,
}

/// One entry of a file's description, in file order. `describe` builds each
/// once and prints it as text or as a JSON line, so that both say the same.
enum Entry {
    ArrayRecord(ArrayRecordFacts),
    Chunk(Box<ChunkFacts>),
    /// Damage between chunks (what was skipped), or a cut after an ArrayRecord footer.
    Corrupted(String),
}

/// How `describe` prints.
#[derive(Clone, Copy)]
enum Format {
    /// Protocol-buffer-like text, one `file { ... }` block per file.
    Text,
    /// One JSON object per entry, each naming its file.
    Json,
}

impl Format {
    /// What comes before a file's entries.
    fn begin_file(self, out: &mut dyn Write, file: &FileFacts) -> Result<()> {
        if let Format::Text = self {
            writeln!(out, "file {{\n  filename: {:?}", file.name)?;
            if let Some(size) = file.size {
                writeln!(out, "  file_size: {size}")?;
            }
        }
        Ok(())
    }

    /// What comes after a file's entries.
    fn end_file(self, out: &mut dyn Write) -> Result<()> {
        if let Format::Text = self {
            writeln!(out, "}}")?;
        }
        Ok(())
    }

    fn entry(self, out: &mut dyn Write, file: &FileFacts, entry: &Entry) -> Result<()> {
        match self {
            Format::Text => text_entry(out, entry),
            Format::Json => {
                let mut object = json_entry(entry)?;
                object["file"] = json!(file.name);
                if let Some(size) = file.size {
                    object["file_size"] = json!(size);
                }
                writeln!(out, "{object}")?;
                Ok(())
            }
        }
    }
}

/// An entry as indented text inside its `file { ... }` block.
fn text_entry(out: &mut dyn Write, entry: &Entry) -> Result<()> {
    match entry {
        Entry::ArrayRecord(a) => {
            writeln!(out, "  array_record {{")?;
            writeln!(out, "    num_records: {}", a.num_records)?;
            writeln!(out, "    num_chunks: {}", a.num_chunks)?;
            if let Some(g) = a.group_size {
                writeln!(out, "    group_size: {g}")?;
            }
            if let Some(w) = &a.writer_options {
                writeln!(out, "    writer_options: {w:?}")?;
            }
            writeln!(out, "    index_source: {}", a.index_source)?;
            writeln!(out, "    footer_offset: {}", a.footer_offset)?;
            writeln!(out, "    postscript_offset: {}", a.postscript_offset)?;
            if let Some(reason) = &a.fallback_reason {
                writeln!(out, "    # FOOTER UNUSABLE: {reason}")?;
            }
            writeln!(out, "  }}")?;
        }
        Entry::Chunk(c) => {
            writeln!(out, "  chunk {{")?;
            writeln!(out, "    chunk_begin: {}", c.begin)?;
            writeln!(out, "    chunk_type: {}", c.chunk_type)?;
            writeln!(out, "    data_size: {}", c.data_size)?;
            writeln!(out, "    num_records: {}", c.num_records)?;
            writeln!(out, "    decoded_data_size: {}", c.decoded_data_size)?;
            if let Some(compression) = c.compression {
                writeln!(out, "    compression_type: {compression}")?;
            }
            if let Some(role) = c.role {
                writeln!(out, "    array_record: {role}")?;
            }
            if let Some(sizes) = &c.record_sizes {
                let sizes: Vec<String> = sizes.iter().map(usize::to_string).collect();
                writeln!(out, "    record_sizes: [{}]", sizes.join(", "))?;
            }
            for record in c.records.iter().flatten() {
                writeln!(out, "    record: \"{record}\"")?;
            }
            if let Some(m) = &c.metadata {
                writeln!(out, "    records_metadata {{")?;
                write!(out, "{}", proto::metadata_text(m, "      ")?)?;
                writeln!(out, "    }}")?;
            }
            for block in &c.damaged_block_headers {
                writeln!(out, "    # DAMAGED BLOCK HEADER (ignored) at {block}")?;
            }
            if let Some(p) = &c.problem {
                writeln!(out, "    # FILE CORRUPTED: {p}")?;
            }
            writeln!(out, "  }}")?;
        }
        Entry::Corrupted(text) => writeln!(out, "  # FILE CORRUPTED: {text}")?,
    }
    Ok(())
}

/// An entry as a JSON object (without the file's name and size, which the caller adds).
fn json_entry(entry: &Entry) -> Result<serde_json::Value> {
    Ok(match entry {
        Entry::ArrayRecord(a) => {
            let mut object = json!({
                "num_records": a.num_records,
                "num_chunks": a.num_chunks,
                "group_size": a.group_size,
                "writer_options": a.writer_options,
                "index_source": a.index_source,
                "footer_offset": a.footer_offset,
                "postscript_offset": a.postscript_offset,
            });
            if let Some(reason) = &a.fallback_reason {
                object["fallback_reason"] = json!(reason);
            }
            json!({ "array_record": object })
        }
        Entry::Chunk(c) => {
            let mut object = json!({
                "chunk_begin": c.begin,
                "chunk_type": c.chunk_type,
                "data_size": c.data_size,
                "num_records": c.num_records,
                "decoded_data_size": c.decoded_data_size,
            });
            if let Some(compression) = c.compression {
                object["compression_type"] = json!(compression);
            }
            if let Some(role) = c.role {
                object["array_record"] = json!(role);
            }
            if let Some(sizes) = &c.record_sizes {
                object["record_sizes"] = json!(sizes);
            }
            if let Some(records) = &c.records {
                object["records"] = json!(records);
            }
            if let Some(m) = &c.metadata {
                object["records_metadata"] = proto::metadata_json(m)?;
            }
            if !c.damaged_block_headers.is_empty() {
                object["damaged_block_headers"] = json!(c.damaged_block_headers);
            }
            if let Some(p) = &c.problem {
                object["corrupted"] = json!(p);
            }
            object
        }
        Entry::Corrupted(text) => json!({ "corrupted": text }),
    })
}

/// The ArrayRecord summary of a file, and whether its footer cannot be used.
fn array_record_facts(input: &io::Input, trailer: array_record::Trailer) -> Result<(ArrayRecordFacts, bool)> {
    let (_, summary) = array_record::open(input, Some(trailer))?;
    let facts = ArrayRecordFacts {
        num_records: summary.num_records,
        num_chunks: summary.num_chunks,
        group_size: first_group_size(input, trailer.footer_offset)?,
        writer_options: summary.writer_options.clone(),
        index_source: summary.index_source_name(),
        footer_offset: trailer.footer_offset,
        postscript_offset: trailer.postscript_pos,
        fallback_reason: summary.fallback_reason.clone(),
    };
    Ok((facts, summary.footer_problem.is_some()))
}

pub(crate) fn describe(args: DescribeArgs) -> Result<()> {
    let mut out = io::create(std::path::Path::new("-"))?;
    let format = if args.json { Format::Json } else { Format::Text };
    let mut problems = false;
    for path in &args.files {
        let mut input = io::open(path)?;
        let trailer = if args.plain { None } else { array_record::detect(&input)? };
        let file = FileFacts { size: io::size_of(&mut input), name: io::name(path) };
        let name = &file.name;
        format.begin_file(&mut out, &file)?;
        if let Some(trailer) = trailer {
            let (facts, unusable) = array_record_facts(&input, trailer)?;
            problems |= unusable;
            format.entry(&mut out, &file, &Entry::ArrayRecord(facts))?;
        }
        let mut reader = ChunkReader::new(input, ChunkReadOptions::default(), 0);
        let limits = ChunkReadOptions::default();
        // Without a known trailer (standard input), the postscript is known by its records.
        let mut detector = TrailerDetector::default();
        // Where the chunk the detector holds back begins (maybe a footer).
        let mut held = None;
        loop {
            let chunk = match reader.read_chunk() {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) if e.is_corruption() => {
                    problems = true;
                    let region = reader.recover().with_context(|| name.clone())?;
                    let text = region.map_or_else(|| e.to_string(), |r| r.to_string());
                    format.entry(&mut out, &file, &Entry::Corrupted(text))?;
                    continue;
                }
                Err(e) => return Err(anyhow::Error::new(e).context(name.clone())),
            };
            let h = &chunk.header;
            let mut problem = None;
            let records = match chunk.decode(&limits) {
                Ok(records) => records,
                Err(e) => {
                    problem = Some(format!("cannot decode chunk at {}: {e}", chunk.begin));
                    None
                }
            };
            let metadata = if args.show_records_metadata && h.chunk_type() == ChunkType::FileMetadata.to_byte() {
                match chunk.serialized_metadata(&limits) {
                    Ok(m) => Some(m.to_vec()),
                    Err(e) => {
                        problem = Some(format!("cannot decode metadata at {}: {e:#}", chunk.begin));
                        None
                    }
                }
            } else {
                None
            };
            problems |= problem.is_some();
            // The ArrayRecord footer and postscript (on standard input, where the file's end
            // cannot be read first, the postscript is known by its records).
            let role = match (trailer, &records) {
                (Some(t), _) if chunk.begin == t.footer_offset => Some("FOOTER"),
                (Some(t), _) if chunk.begin == t.postscript_pos => Some("POSTSCRIPT"),
                (None, Some(decoded)) if !args.plain && !decoded.is_empty() => {
                    let step = detector.feed(chunk.begin, h, || Some(decoded), || None::<DecodedRecords>);
                    held = (step.this == Disposition::Hold).then_some(chunk.begin);
                    (step.this == Disposition::Drop).then_some("POSTSCRIPT")
                }
                _ => None,
            };
            let compression = matches!(
                ChunkType::from_byte(h.chunk_type()),
                Some(ChunkType::Simple | ChunkType::Transposed | ChunkType::FileMetadata)
            )
            .then(|| compression_name(&chunk.data));
            let facts = ChunkFacts {
                begin: chunk.begin,
                chunk_type: chunk_type_name(h.chunk_type()),
                data_size: h.data_size(),
                num_records: h.num_records(),
                decoded_data_size: h.decoded_data_size(),
                compression,
                role,
                record_sizes: records
                    .as_ref()
                    .filter(|_| args.show_record_sizes)
                    .map(|records| records.iter().map(|r| r.len()).collect()),
                records: records
                    .as_ref()
                    .filter(|_| args.show_records)
                    .map(|records| records.iter().map(|r| crate::text::escape_text(&r)).collect()),
                metadata,
                damaged_block_headers: chunk.damaged_block_headers.to_vec(),
                problem,
            };
            format.entry(&mut out, &file, &Entry::Chunk(Box::new(facts)))?;
        }
        // A footer that ends the file: its postscript was cut off.
        if let Some(footer) = held.filter(|_| detector.finish(|| None::<DecodedRecords>)) {
            problems = true;
            format.entry(&mut out, &file, &Entry::Corrupted(array_record::cut_after_footer(footer)))?;
        }
        format.end_file(&mut out)?;
    }
    out.flush()?;
    if problems { Err(Failed.into()) } else { Ok(()) }
}

/// Records read per batch when `verify` reads an ArrayRecord file through its footer.
const VERIFY_BATCH: u64 = 1 << 14;

/// Checks an ArrayRecord file's footer against its chunks: the footer must be
/// usable, and every record must be readable through it (each chunk's header
/// agreeing with its footer entry). Returns the number of indexed chunks, or
/// the problem (with its position).
fn verify_footer(input: &io::Input, trailer: array_record::Trailer) -> Result<usize, String> {
    let (mut reader, summary) = array_record::open(input, Some(trailer)).map_err(|e| format!("{e:#}"))?;
    if summary.index_source != riegeli_records::IndexSource::Footer {
        let reason = summary.fallback_reason.unwrap_or_default();
        return Err(format!("footer (at {}) unusable: {reason}", trailer.footer_offset));
    }
    let n = summary.num_records;
    for start in (0..n).step_by(VERIFY_BATCH as usize) {
        let end = n.min(start + VERIFY_BATCH);
        reader.read_batch(start..end).map_err(|e| format!("records {start}..{end} through the footer: {e}"))?;
    }
    Ok(summary.num_chunks)
}

pub(crate) fn verify(args: VerifyArgs) -> Result<()> {
    let mut any_problem = false;
    for path in &args.files {
        let name = io::name(path);
        let input = io::open(path)?;
        let trailer = if args.plain { None } else { array_record::detect(&input)? };
        // The footer is checked through the same opened input.
        let footer_input = input.again();
        let input = input.with_progress(&name, true);
        let threads = crate::cat::decoding_threads(args.threads);
        let mut reader = ChunkReader::new(input, ChunkReadOptions::default(), threads);
        let limits = ChunkReadOptions::default();
        let (mut chunks, mut records, mut problems) = (0u64, 0u64, 0u64);
        // Records of the ArrayRecord footer and postscript, which are not data.
        let mut trailer_records = 0u64;
        // Without a known trailer (standard input), the detector finds one; the
        // records of the chunk it holds back.
        let mut detector = TrailerDetector::default();
        let (mut held_records, mut held_begin) = (0u64, 0u64);
        // Whether the detector holds a chunk back: its last step said `Hold`.
        let mut holding = false;
        let mut what = String::new();
        let found = "; an ArrayRecord trailer (its footer is checked only in a file)";
        loop {
            let (chunk, decoded) = match reader.read_decoded() {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) if e.is_corruption() => {
                    problems += 1;
                    let region = reader.recover().with_context(|| name.clone())?;
                    match region {
                        Some(r) => progress::out(&format!("{name}: {r}")),
                        None => progress::out(&format!("{name}: {e}")),
                    }
                    continue;
                }
                Err(e) => return Err(anyhow::Error::new(e).context(name.clone())),
            };
            chunks += 1;
            for block in &chunk.damaged_block_headers {
                problems += 1;
                progress::out(&format!(
                    "{name}: block header at {block}: hash mismatch (ignored; its chunk is intact)"
                ));
            }
            if chunk.begin == 0
                && (chunk.header.chunk_type() != ChunkType::FileSignature.to_byte() || chunk.header.data_size() != 0)
            {
                problems += 1;
                progress::out(&format!("{name}: position 0: missing file signature"));
            }
            match decoded {
                Ok(Some(decoded)) => {
                    let n = decoded.len() as u64;
                    records += n;
                    if trailer.is_some_and(|t| chunk.begin == t.footer_offset || chunk.begin == t.postscript_pos) {
                        trailer_records += n;
                    } else if trailer.is_none() && !args.plain && n > 0 {
                        let step =
                            detector.feed(chunk.begin, &chunk.header, || Some(decoded), || None::<DecodedRecords>);
                        if holding && !step.release_held {
                            trailer_records += held_records;
                        }
                        holding = step.this == Disposition::Hold;
                        match step.this {
                            Disposition::Keep => {}
                            Disposition::Hold => (held_records, held_begin) = (n, chunk.begin),
                            Disposition::Drop => {
                                trailer_records += n;
                                what = found.to_owned();
                            }
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    problems += 1;
                    progress::out(&format!("{name}: chunk at {}: cannot decode: {e}", chunk.begin));
                }
            }
            if chunk.header.chunk_type() == ChunkType::FileMetadata.to_byte()
                && let Err(e) = chunk.serialized_metadata(&limits)
            {
                problems += 1;
                progress::out(&format!("{name}: metadata chunk at {}: {e:#}", chunk.begin));
            }
        }
        if detector.finish(|| None::<DecodedRecords>) {
            // A footer ends the file: its postscript was cut off.
            trailer_records += held_records;
            problems += 1;
            progress::out(&format!("{name}: {}", array_record::cut_after_footer(held_begin)));
        }
        records -= trailer_records;
        if let (Some(trailer), Some(footer_input)) = (trailer, &footer_input) {
            match verify_footer(footer_input, trailer) {
                Ok(num_chunks) => what = format!("; ArrayRecord, the footer indexes {num_chunks} chunks"),
                Err(problem) => {
                    problems += 1;
                    progress::out(&format!("{name}: ArrayRecord {problem}"));
                }
            }
        }
        if problems > 0 {
            any_problem = true;
            progress::out(&format!("{name}: {problems} problem(s); {chunks} good chunks, {records} records readable"));
        } else if !args.quiet {
            progress::out(&format!("{name}: OK ({chunks} chunks, {records} records{what})"));
        }
    }
    if any_problem { Err(Failed.into()) } else { Ok(()) }
}
