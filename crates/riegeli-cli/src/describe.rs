//! `riegeli describe` and `riegeli verify`: chunk-level inspection.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use riegeli_records::{
    ChunkDecoder, ChunkReadOptions, ChunkReader, ChunkType, CompressionType, DecodedRecords, Disposition,
    TrailerDetector,
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

/// A decoder of chunks for inspection, with the default limits.
fn decoder() -> ChunkDecoder {
    ChunkDecoder::new(&ChunkReadOptions::default())
}

/// The number of records of the first data chunk before `end` (an ArrayRecord
/// file's group size), reading chunks from the beginning of `input`.
fn first_group_size(input: &io::Input, end: u64) -> Result<Option<u64>> {
    let Some(file) = input.seekable() else { return Ok(None) };
    let mut reader = ChunkReader::new(file, ChunkReadOptions::default());
    while let Some(chunk) = reader.read_chunk().ok().flatten() {
        if chunk.begin() >= end {
            break;
        }
        if chunk.is_data() {
            return Ok(Some(chunk.header().num_records()));
        }
    }
    Ok(None)
}

/// Prints the ArrayRecord summary of a file (text, or one JSON object).
/// Returns whether its footer cannot be used.
fn describe_array_record(
    out: &mut dyn Write,
    input: &io::Input,
    name: &str,
    trailer: array_record::Trailer,
    json: bool,
) -> Result<bool> {
    let (_, summary) = array_record::open(input, Some(trailer))?;
    let group_size = first_group_size(input, trailer.footer_offset)?;
    if json {
        let mut object = json!({
            "num_records": summary.num_records,
            "num_chunks": summary.num_chunks,
            "group_size": group_size,
            "writer_options": summary.writer_options,
            "index_source": summary.index_source_name(),
            "footer_offset": trailer.footer_offset,
            "postscript_offset": trailer.postscript_pos,
        });
        if let Some(reason) = &summary.fallback_reason {
            object["fallback_reason"] = json!(reason);
        }
        writeln!(out, "{}", json!({"file": name, "array_record": object}))?;
        return Ok(summary.footer_problem.is_some());
    }
    writeln!(out, "  array_record {{")?;
    writeln!(out, "    num_records: {}", summary.num_records)?;
    writeln!(out, "    num_chunks: {}", summary.num_chunks)?;
    if let Some(g) = group_size {
        writeln!(out, "    group_size: {g}")?;
    }
    if let Some(w) = &summary.writer_options {
        writeln!(out, "    writer_options: {w:?}")?;
    }
    writeln!(out, "    index_source: {}", summary.index_source_name())?;
    writeln!(out, "    footer_offset: {}", trailer.footer_offset)?;
    writeln!(out, "    postscript_offset: {}", trailer.postscript_pos)?;
    if let Some(reason) = &summary.fallback_reason {
        writeln!(out, "    # FOOTER UNUSABLE: {reason}")?;
    }
    writeln!(out, "  }}")?;
    Ok(summary.footer_problem.is_some())
}

pub(crate) fn describe(args: DescribeArgs) -> Result<()> {
    let mut out = io::create(std::path::Path::new("-"))?;
    let mut problems = false;
    for path in &args.files {
        let mut input = io::open(path)?;
        let trailer = if args.plain { None } else { array_record::detect(&input)? };
        let size = io::size_of(&mut input);
        let name = io::name(path);
        if !args.json {
            writeln!(out, "file {{\n  filename: {:?}", name)?;
            if let Some(size) = size {
                writeln!(out, "  file_size: {size}")?;
            }
        }
        if let Some(trailer) = trailer {
            problems |= describe_array_record(&mut out, &input, &name, trailer, args.json)?;
        }
        let mut reader = ChunkReader::new(input, ChunkReadOptions::default());
        let mut decoder = decoder();
        // Without a known trailer (standard input), the postscript is known by its records.
        let mut detector = TrailerDetector::new();
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
                    if args.json {
                        writeln!(out, "{}", json!({"file": name, "corrupted": text}))?;
                    } else {
                        writeln!(out, "  # FILE CORRUPTED: {text}")?;
                    }
                    continue;
                }
                Err(e) => return Err(anyhow::Error::new(e).context(name.clone())),
            };
            let h = chunk.header();
            let mut problem = None;
            let records = match decoder.records(&chunk) {
                Ok(records) => records,
                Err(e) => {
                    problem = Some(format!("cannot decode chunk at {}: {e}", chunk.begin()));
                    None
                }
            };
            let metadata = if args.show_records_metadata && h.chunk_type() == ChunkType::FileMetadata.to_byte() {
                match decoder.serialized_metadata(&chunk) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        problem = Some(format!("cannot decode metadata at {}: {e:#}", chunk.begin()));
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
                (Some(t), _) if chunk.begin() == t.footer_offset => Some("FOOTER"),
                (Some(t), _) if chunk.begin() == t.postscript_pos => Some("POSTSCRIPT"),
                (None, Some(decoded)) if !args.plain && !decoded.is_empty() => {
                    let step = detector.feed(chunk.begin(), h, || Some(decoded), || None::<DecodedRecords>);
                    held = (step.this == Disposition::Hold).then_some(chunk.begin());
                    (step.this == Disposition::Drop).then_some("POSTSCRIPT")
                }
                _ => None,
            };
            let compression = matches!(
                ChunkType::from_byte(h.chunk_type()),
                Some(ChunkType::Simple | ChunkType::Transposed | ChunkType::FileMetadata)
            )
            .then(|| compression_name(chunk.data()));
            if args.json {
                let mut object = json!({
                    "file": name,
                    "chunk_begin": chunk.begin(),
                    "chunk_type": chunk_type_name(h.chunk_type()),
                    "data_size": h.data_size(),
                    "num_records": h.num_records(),
                    "decoded_data_size": h.decoded_data_size(),
                });
                if let Some(c) = compression {
                    object["compression_type"] = json!(c);
                }
                if let Some(role) = role {
                    object["array_record"] = json!(role);
                }
                if let Some(records) = &records {
                    if args.show_record_sizes {
                        object["record_sizes"] = json!(records.iter().map(|r| r.len()).collect::<Vec<_>>());
                    }
                    if args.show_records {
                        object["records"] =
                            json!(records.iter().map(|r| crate::text::escape_text(&r)).collect::<Vec<_>>());
                    }
                }
                if let Some(m) = &metadata {
                    object["records_metadata"] = proto::metadata_json(m)?;
                }
                if let Some(p) = &problem {
                    object["corrupted"] = json!(p);
                }
                writeln!(out, "{object}")?;
            } else {
                writeln!(out, "  chunk {{")?;
                writeln!(out, "    chunk_begin: {}", chunk.begin())?;
                writeln!(out, "    chunk_type: {}", chunk_type_name(h.chunk_type()))?;
                writeln!(out, "    data_size: {}", h.data_size())?;
                writeln!(out, "    num_records: {}", h.num_records())?;
                writeln!(out, "    decoded_data_size: {}", h.decoded_data_size())?;
                if let Some(c) = compression {
                    writeln!(out, "    compression_type: {c}")?;
                }
                if let Some(role) = role {
                    writeln!(out, "    array_record: {role}")?;
                }
                if let Some(records) = &records {
                    if args.show_record_sizes {
                        let sizes: Vec<String> = records.iter().map(|r| r.len().to_string()).collect();
                        writeln!(out, "    record_sizes: [{}]", sizes.join(", "))?;
                    }
                    if args.show_records {
                        for record in records.iter() {
                            writeln!(out, "    record: \"{}\"", crate::text::escape_text(&record))?;
                        }
                    }
                }
                if let Some(m) = &metadata {
                    writeln!(out, "    records_metadata {{")?;
                    write!(out, "{}", proto::metadata_text(m, "      ")?)?;
                    writeln!(out, "    }}")?;
                }
                for block in chunk.damaged_block_headers() {
                    writeln!(out, "    # DAMAGED BLOCK HEADER (ignored) at {block}")?;
                }
                if let Some(p) = &problem {
                    writeln!(out, "    # FILE CORRUPTED: {p}")?;
                }
                writeln!(out, "  }}")?;
            }
        }
        // A footer that ends the file: its postscript was cut off.
        if let Some(footer) = held.filter(|_| detector.finish(|| None::<DecodedRecords>)) {
            problems = true;
            let text = array_record::cut_after_footer(footer);
            if args.json {
                writeln!(out, "{}", json!({"file": name, "corrupted": text}))?;
            } else {
                writeln!(out, "  # FILE CORRUPTED: {text}")?;
            }
        }
        if !args.json {
            writeln!(out, "}}")?;
        }
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
        reader
            .read_range_parallel(start..end)
            .map_err(|e| format!("records {start}..{end} through the footer: {e}"))?;
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
        let mut reader = ChunkReader::with_decoding_threads(input, ChunkReadOptions::default(), threads);
        let mut decoder = decoder();
        let (mut chunks, mut records, mut problems) = (0u64, 0u64, 0u64);
        // Records of the ArrayRecord footer and postscript, which are not data.
        let mut trailer_records = 0u64;
        // Without a known trailer (standard input), the detector finds one; the
        // records of the chunk it holds back.
        let mut detector = TrailerDetector::new();
        let (mut held_records, mut held_begin) = (0u64, 0u64);
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
            for block in chunk.damaged_block_headers() {
                problems += 1;
                progress::out(&format!(
                    "{name}: block header at {block}: hash mismatch (ignored; its chunk is intact)"
                ));
            }
            if chunk.begin() == 0
                && (chunk.header().chunk_type() != ChunkType::FileSignature.to_byte()
                    || chunk.header().data_size() != 0)
            {
                problems += 1;
                progress::out(&format!("{name}: position 0: missing file signature"));
            }
            match decoded {
                Ok(Some(decoded)) => {
                    let n = decoded.len() as u64;
                    records += n;
                    if trailer.is_some_and(|t| chunk.begin() == t.footer_offset || chunk.begin() == t.postscript_pos) {
                        trailer_records += n;
                    } else if trailer.is_none() && !args.plain && n > 0 {
                        let holding = detector.holds();
                        let step =
                            detector.feed(chunk.begin(), chunk.header(), || Some(decoded), || None::<DecodedRecords>);
                        if holding && !step.release_held {
                            trailer_records += held_records;
                        }
                        match step.this {
                            Disposition::Keep => {}
                            Disposition::Hold => (held_records, held_begin) = (n, chunk.begin()),
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
                    progress::out(&format!("{name}: chunk at {}: cannot decode: {e}", chunk.begin()));
                }
            }
            if chunk.header().chunk_type() == ChunkType::FileMetadata.to_byte()
                && let Err(e) = decoder.serialized_metadata(&chunk)
            {
                problems += 1;
                progress::out(&format!("{name}: metadata chunk at {}: {e:#}", chunk.begin()));
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
