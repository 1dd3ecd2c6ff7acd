//! `riegeli write`, `convert`, `recover` and `concat`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine;
use clap::{Args, ValueEnum};
use riegeli_records::{RecordReader, RecordWriter, RecordWriterOptions, RecordsMetadata};

use crate::tfrecord::{TfCompression, TfReader, TfWriter};
use crate::{PathArg, Usage, io, progress};

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

/// Arguments of `riegeli write`.
#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    /// The file to create (`-` for standard output).
    out: PathArg,
    /// Writer options in the C++ option grammar, e.g. `transpose,zstd:3,chunk_size:1M`.
    #[arg(long, short, default_value = "default")]
    options: String,
    /// How records arrive.
    #[arg(long, short = 'f', value_enum, default_value_t = InputFormat::Delimited)]
    input_format: InputFormat,
    /// Read records from this file instead of standard input.
    #[arg(long, short)]
    input: Option<PathArg>,
    /// Compression of a TFRecord input.
    #[arg(long, value_enum, default_value_t = TfCompression::None)]
    tfrecord_compression: TfCompression,
    /// A human-readable comment stored in the file metadata.
    #[arg(long)]
    metadata_comment: Option<String>,
    /// Full name of the proto message type of the records, stored in the metadata.
    #[arg(long, requires = "descriptor_set")]
    record_type: Option<String>,
    /// A serialized FileDescriptorSet defining --record-type (e.g. from `protoc --include_imports -o`).
    #[arg(long, requires = "record_type")]
    descriptor_set: Option<PathArg>,
}

/// Arguments of `riegeli convert`.
#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// Input file (`-` for standard input).
    input: PathArg,
    /// Output file (`-` for standard output).
    out: PathArg,
    /// Writer options for Riegeli output.
    #[arg(long, short, default_value = "default")]
    options: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Container::Riegeli)]
    to: Container,
    /// Input format (detected from the file signature when omitted).
    #[arg(long, value_enum)]
    from: Option<Container>,
    /// Compression of TFRecord input or output.
    #[arg(long, value_enum, default_value_t = TfCompression::None)]
    tfrecord_compression: TfCompression,
}

/// File formats `convert` reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Container {
    /// Riegeli/records.
    Riegeli,
    /// TFRecord.
    Tfrecord,
}

/// Arguments of `riegeli recover`.
#[derive(Debug, Args)]
pub(crate) struct RecoverArgs {
    /// The damaged file.
    input: PathArg,
    /// The new file.
    out: PathArg,
    /// Writer options for the new file.
    #[arg(long, short, default_value = "default")]
    options: String,
}

/// Arguments of `riegeli concat`.
#[derive(Debug, Args)]
pub(crate) struct ConcatArgs {
    /// The file to create.
    out: PathArg,
    /// Files to concatenate, in order.
    #[arg(required = true)]
    inputs: Vec<PathArg>,
    /// Writer options when records must be re-encoded (inputs not padded to 64 KiB).
    #[arg(long, short, default_value = "default")]
    options: String,
    /// Always re-encode record by record.
    #[arg(long)]
    records: bool,
}

fn parse_options(text: &str) -> Result<RecordWriterOptions> {
    text.parse::<RecordWriterOptions>().map_err(|e| Usage(format!("--options: {e}")).into())
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

/// The records' input (standard input by default), with a progress bar unless
/// someone is typing the records.
pub(crate) fn boxed_input(path: Option<&Path>) -> Result<Box<dyn Read>> {
    let path = path.unwrap_or(Path::new("-"));
    let typed = path.as_os_str() == "-" && std::io::IsTerminal::is_terminal(&std::io::stdin());
    Ok(Box::new(io::open(path)?.with_progress(&io::name(path), !typed)))
}

pub(crate) fn write(args: WriteArgs) -> Result<()> {
    let mut options = parse_options(&args.options)?;
    let mut metadata = RecordsMetadata::default();
    let mut has_metadata = false;
    if let Some(comment) = &args.metadata_comment {
        metadata.file_comment = comment.clone();
        has_metadata = true;
    }
    if let (Some(record_type), Some(set_path)) = (&args.record_type, &args.descriptor_set) {
        let bytes = std::fs::read(set_path).with_context(|| format!("cannot read {}", set_path.display()))?;
        let set = <prost_types::FileDescriptorSet as prost::Message>::decode(bytes.as_slice()).map_err(|e| {
            Usage(format!("--descriptor-set {}: not a serialized FileDescriptorSet: {e}", set_path.display()))
        })?;
        // Check now that the type is defined, rather than leave an unreadable file.
        let desc = crate::proto::message_type(
            set.file.clone(),
            record_type,
            &format!("--descriptor-set {}", set_path.display()),
        )
        .map_err(|e| Usage(format!("{e:#}")))?;
        metadata.record_type_name = desc.full_name().to_owned();
        metadata.file_descriptor = set.file;
        has_metadata = true;
    }
    if has_metadata {
        metadata.record_writer_options = options.to_string();
        options = options.set_metadata(Some(metadata));
    }
    io::check_output_is_not_an_input(&args.out, args.input.as_deref())?;
    let input = boxed_input(args.input.as_deref())?;
    let dest = io::create(&args.out)?;
    let mut writer = RecordWriter::new(dest, options)?;
    for_each_record(input, args.input_format, args.tfrecord_compression, |record| Ok(writer.write_record(record)?))?;
    writer.close()?.flush()?;
    Ok(())
}

/// Detects the input container from its first bytes.
fn detect(path: &Path) -> Result<Container> {
    if path.as_os_str() == "-" {
        return Ok(Container::Riegeli);
    }
    let mut start = [0u8; 8];
    let mut file = io::open_file(path)?;
    let n = file.read(&mut start)?;
    Ok(if n == 8 && start == [0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f] {
        Container::Riegeli
    } else {
        Container::Tfrecord
    })
}

/// Where `convert` writes records.
enum Sink {
    Riegeli(Box<RecordWriter<Box<dyn Write>>>),
    TfRecord(TfWriter<'static>),
}

impl Sink {
    fn write(&mut self, record: &[u8]) -> Result<()> {
        match self {
            Self::Riegeli(w) => Ok(w.write_record(record)?),
            Self::TfRecord(w) => w.write(record),
        }
    }

    fn finish(self) -> Result<()> {
        match self {
            Self::Riegeli(w) => Ok(w.close()?.flush()?),
            Self::TfRecord(w) => w.finish(),
        }
    }
}

pub(crate) fn convert(args: ConvertArgs) -> Result<()> {
    io::check_output_is_not_an_input(&args.out, [args.input.as_path()])?;
    let options = parse_options(&args.options)?;
    let from = match args.from {
        Some(from) => from,
        None => detect(&args.input)?,
    };
    let name = io::name(&args.input);
    let mut reader = match from {
        Container::Riegeli => Some(RecordReader::new(io::open(&args.input)?.with_progress(&name, true))),
        Container::Tfrecord => None,
    };
    let metadata = match reader.as_mut() {
        Some(reader) => reader.read_metadata().with_context(|| name.clone())?,
        None => None,
    };
    let dest = io::create(&args.out)?;
    let mut sink = match args.to {
        Container::Riegeli => {
            let mut options = options;
            if let Some(mut m) = metadata {
                m.record_writer_options = options.to_string();
                options = options.set_metadata(Some(m));
            }
            Sink::Riegeli(Box::new(RecordWriter::new(dest, options)?))
        }
        Container::Tfrecord => Sink::TfRecord(TfWriter::new(dest, args.tfrecord_compression)),
    };
    match reader {
        Some(mut reader) => {
            while let Some(record) = reader.read_record().with_context(|| name.clone())? {
                sink.write(&record)?;
            }
        }
        None => {
            let input: Box<dyn Read> = Box::new(io::open(&args.input)?.with_progress(&name, true));
            for_each_record(input, InputFormat::Tfrecord, args.tfrecord_compression, |r| sink.write(r))?;
        }
    }
    sink.finish()
}

pub(crate) fn recover(args: RecoverArgs) -> Result<()> {
    io::check_output_is_not_an_input(&args.out, [args.input.as_path()])?;
    let options = parse_options(&args.options)?;
    let name = io::name(&args.input);
    let mut reader = RecordReader::new(io::open(&args.input)?.with_progress(&name, true));
    let regions = crate::cat::report_skipped(&mut reader, &name);
    let metadata = reader.read_metadata().ok().flatten();
    let options = match metadata {
        Some(m) => options.set_metadata(Some(m)),
        None => options,
    };
    let mut writer = RecordWriter::new(io::create(&args.out)?, options)?;
    let mut count = 0u64;
    while let Some(record) = reader.read_record()? {
        writer.write_record(&record)?;
        count += 1;
    }
    writer.close()?.flush()?;
    let regions = regions.lock().map(|r| r.clone()).unwrap_or_default();
    let lost: u64 = regions.iter().map(|r| r.len()).sum();
    drop(reader);
    progress::note(&format!(
        "riegeli: {name}: recovered {count} records; skipped {} damaged region(s), {lost} bytes",
        regions.len()
    ));
    Ok(())
}

pub(crate) fn concat(args: ConcatArgs) -> Result<()> {
    io::check_output_is_not_an_input(&args.out, args.inputs.iter().map(|p| p.as_path()))?;
    let mut options = parse_options(&args.options)?;
    // Physical concatenation needs Riegeli files that end at a block boundary; anything
    // else goes record by record, where a bad input is reported as such.
    let padded = !args.records
        && args.inputs.iter().all(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() % 65536 == 0 && m.len() > 0)
                && detect(p).is_ok_and(|c| c == Container::Riegeli)
        });
    let mut dest = io::create(&args.out)?;
    if padded {
        // Every input ends at a block boundary: byte concatenation is a valid file.
        for path in &args.inputs {
            let mut file = io::open(path)?.with_progress(&io::name(path), true);
            std::io::copy(&mut file, &mut dest)?;
        }
        dest.flush()?;
        return Ok(());
    }
    let mut writer = None;
    for path in &args.inputs {
        let name = io::name(path);
        let mut reader = RecordReader::new(io::open(path)?.with_progress(&name, true));
        let metadata = reader.read_metadata().with_context(|| name.clone())?;
        if writer.is_none() {
            if let Some(m) = metadata {
                options = options.set_metadata(Some(m));
            }
            writer = Some(RecordWriter::new(std::mem::replace(&mut dest, Box::new(std::io::sink())), options.clone())?);
        }
        let w = writer.as_mut().context("writer")?;
        while let Some(record) = reader.read_record().with_context(|| name.clone())? {
            w.write_record(&record)?;
        }
    }
    if let Some(w) = writer {
        w.close()?.flush()?;
    }
    Ok(())
}
