//! `riegeli write`, `convert`, `recover` and `concat`.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use riegeli_codec::{CompressionType, CompressorOptions};
use riegeli_records::{
    ArrayRecordWriter, ArrayRecordWriterOptions, ChunkReadOptions, ChunkReader, ChunkType, RecordReader, RecordWriter,
    RecordWriterOptions, RecordsMetadata, index_riegeli_file, set_record_type,
};

use crate::columnar::{ParquetCompression, ToParquet};
use crate::exit::Usage;
use crate::input::{InputFormat, for_each_record};
use crate::io::{self, PathArg};
use crate::progress;
use crate::tfrecord::{TfCompression, TfWriter};

/// Arguments of `riegeli write`.
#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    /// The file to create (`-` for standard output).
    out: PathArg,
    /// Writer options in the C++ option grammar, e.g. `transpose,zstd:3,chunk_size:1M`;
    /// with --array-record, ArrayRecord's grammar, e.g. `group_size:100,transpose,zstd:3`.
    #[arg(long, short, default_value = "default")]
    options: String,
    /// Write an ArrayRecord file: chunks of `group_size` records and a footer that
    /// indexes them, for random access by record index (google/array_record).
    #[arg(long)]
    array_record: bool,
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
    /// Encode chunks on N threads. Default: every core when the machine has more than
    /// one and --options does not say `parallelism` (the file is byte-identical to a serial
    /// write); `-j 1` (or `parallelism:0` in the options) encodes serially.
    #[arg(long = "threads", short = 'j', value_name = "N")]
    threads: Option<usize>,
}

/// Arguments of `riegeli convert`.
#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// Input file (`-` for standard input).
    input: PathArg,
    /// Output file (`-` for standard output).
    out: PathArg,
    /// Writer options: Riegeli's grammar for `--to riegeli` (default `default`);
    /// ArrayRecord's for `--to array-record`, which then re-encodes every record.
    /// Without them, `--to array-record` copies the input's chunks when their record
    /// counts allow (the footer takes the input's compression).
    #[arg(long, short)]
    options: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Container::Riegeli)]
    to: Container,
    /// Input format (detected from the file signature when omitted).
    #[arg(long, value_enum)]
    from: Option<Container>,
    /// Compression of TFRecord input or output (default none).
    #[arg(long, value_enum)]
    tfrecord_compression: Option<TfCompression>,
    /// Encode chunks on N threads. Default: every core when the machine has more than
    /// one and --options does not say `parallelism` (the file is byte-identical to a serial
    /// write); `-j 1` (or `parallelism:0` in the options) encodes serially.
    #[arg(long = "threads", short = 'j', value_name = "N")]
    threads: Option<usize>,
    /// With `--to parquet`: only these columns, field paths separated by commas
    /// (`a,b.c`; feature names with --example). Transposed chunks then decompress
    /// only those fields.
    #[arg(long, value_name = "LIST")]
    columns: Option<String>,
    /// With `--to parquet`: compression of the Parquet column chunks (default zstd).
    #[arg(long, value_enum, value_name = "CODEC")]
    parquet_compression: Option<ParquetCompression>,
    /// With `--to parquet`: the records are `tf.train.Example`s (a column per
    /// feature, typed from the first records) rather than of the type in the file metadata.
    #[arg(long)]
    example: bool,
    /// With `--to parquet`: skip damaged regions and records that do not parse,
    /// reporting each on stderr, instead of failing.
    #[arg(long)]
    skip_corrupted: bool,
}

/// File formats `convert` reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Container {
    /// Riegeli/records.
    Riegeli,
    /// ArrayRecord (Riegeli/records with a footer indexing the chunks); read as Riegeli.
    ArrayRecord,
    /// TFRecord.
    Tfrecord,
    /// Apache Parquet (output only): a column per field of the records' protobuf
    /// type (from the file metadata), or per feature of `tf.train.Example`s (--example).
    Parquet,
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
    /// Encode chunks on N threads. Default: every core when the machine has more than
    /// one and --options does not say `parallelism` (the file is byte-identical to a serial
    /// write); `-j 1` (or `parallelism:0` in the options) encodes serially.
    #[arg(long = "threads", short = 'j', value_name = "N")]
    threads: Option<usize>,
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
    /// Encode chunks on N threads. Default: every core when the machine has more than
    /// one and --options does not say `parallelism` (the file is byte-identical to a serial
    /// write); `-j 1` (or `parallelism:0` in the options) encodes serially.
    #[arg(long = "threads", short = 'j', value_name = "N")]
    threads: Option<usize>,
}

fn parse_options(text: &str) -> Result<RecordWriterOptions> {
    text.parse::<RecordWriterOptions>().map_err(|e| Usage(format!("--options: {e}")).into())
}

/// The encoding threads of a Riegeli write: `-j N` (1: serially), else the options' own
/// `parallelism`, else every core when there are several. Applied after the options were
/// recorded in the metadata, so that the file does not depend on it.
fn with_threads(options: RecordWriterOptions, text: &str, threads: Option<usize>) -> RecordWriterOptions {
    let parallelism = match threads {
        Some(n) => n.max(1),
        None if text.split(',').any(|option| option.split(':').next().map(str::trim) == Some("parallelism")) => {
            return options;
        }
        None => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
    };
    RecordWriterOptions { parallelism: if parallelism > 1 { parallelism } else { 0 }, ..options }
}

fn parse_array_options(text: &str) -> Result<ArrayRecordWriterOptions> {
    text.parse::<ArrayRecordWriterOptions>().map_err(|e| Usage(format!("--options (ArrayRecord): {e}")).into())
}

/// Starts an ArrayRecord file; options the writer rejects are a usage error.
fn array_record_writer(dest: io::Output, options: ArrayRecordWriterOptions) -> Result<Sink> {
    match ArrayRecordWriter::with_io_thread(dest, options) {
        Ok(writer) => Ok(Sink::ArrayRecord(Box::new(writer))),
        Err(e) if matches!(e.kind(), riegeli_records::ErrorKind::InvalidArgument(_)) => {
            Err(Usage(format!("--options (ArrayRecord): {e}")).into())
        }
        Err(e) => Err(e.into()),
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
    // Check the options before reading anything.
    let array_options = if args.array_record { Some(parse_array_options(&args.options)?) } else { None };
    let mut options = if args.array_record { RecordWriterOptions::default() } else { parse_options(&args.options)? };
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
        // Check now that the descriptors build and define the type, rather
        // than leave an unreadable file (and name the types they define).
        let source = format!("--descriptor-set {}", set_path.display());
        let desc =
            crate::proto::message_type(set.file.clone(), record_type, &source).map_err(|e| Usage(format!("{e:#}")))?;
        // The type's file and its dependencies, dependencies first.
        set_record_type(&mut metadata, desc.full_name(), &set.file).map_err(|e| Usage(format!("{source}: {e}")))?;
        has_metadata = true;
    }
    let metadata = has_metadata.then_some(metadata);
    io::check_output_is_not_an_input(&args.out, args.input.as_deref())?;
    let input = boxed_input(args.input.as_deref())?;
    let dest = io::create(&args.out)?;
    let mut sink = match array_options {
        Some(array_options) => {
            let metadata = metadata.map(|mut m| {
                m.record_writer_options = array_options.to_string();
                m
            });
            array_record_writer(
                dest,
                ArrayRecordWriterOptions {
                    metadata: metadata.map(|m| prost::Message::encode_to_vec(&m)),
                    ..array_options
                },
            )?
        }
        None => {
            if let Some(mut m) = metadata {
                m.record_writer_options = options.to_string();
                options.metadata = Some(prost::Message::encode_to_vec(&m));
            }
            let options = with_threads(options, &args.options, args.threads);
            Sink::Riegeli(Box::new(RecordWriter::with_io_thread(dest, options)?))
        }
    };
    for_each_record(input, args.input_format, args.tfrecord_compression, |record| sink.write(record))?;
    sink.finish()
}

/// Detects the input container from its first bytes (standard input: Riegeli).
fn detect(input: &io::Input) -> Result<Container> {
    let Some(mut file) = input.seekable() else { return Ok(Container::Riegeli) };
    let mut start = [0u8; 8];
    let n = file.read(&mut start)?;
    Ok(if n == 8 && start == [0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f] {
        Container::Riegeli
    } else {
        Container::Tfrecord
    })
}

/// Where `convert` writes records.
enum Sink {
    Riegeli(Box<RecordWriter<io::Output>>),
    ArrayRecord(Box<ArrayRecordWriter<io::Output>>),
    /// The TFRecord writer writes to the output shared with the sink, which finishes it after.
    TfRecord(TfWriter<'static>, SharedOutput),
}

impl Sink {
    fn write(&mut self, record: &[u8]) -> Result<()> {
        match self {
            Self::Riegeli(w) => Ok(w.write_record(record)?),
            Self::ArrayRecord(w) => Ok(w.write_record(record)?),
            Self::TfRecord(w, _) => w.write(record),
        }
    }

    fn finish(self) -> Result<()> {
        match self {
            Self::Riegeli(w) => w.close()?.finish(),
            Self::ArrayRecord(w) => w.close()?.finish(),
            Self::TfRecord(w, shared) => {
                w.finish()?;
                let output =
                    std::rc::Rc::try_unwrap(shared.0).map_err(|_| anyhow::anyhow!("the output is still shared"))?;
                output.into_inner().finish()
            }
        }
    }
}

/// An output the TFRecord writer writes through (it erases the type it writes to).
#[derive(Clone)]
struct SharedOutput(std::rc::Rc<std::cell::RefCell<io::Output>>);

impl Write for SharedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.borrow_mut().flush()
    }
}

/// ArrayRecord options that keep what can be seen of a Riegeli/records file's
/// encoding: the first data chunk's compression (at the codec's default
/// level), transposition and record count (the group size when chunks must be
/// re-encoded), and whether it is padded to a block boundary.
fn infer_array_options(input: &io::Input) -> Result<ArrayRecordWriterOptions> {
    let name = input.name().to_owned();
    let file = input.seekable().with_context(|| format!("{name}: standard input cannot seek"))?;
    let mut reader = ChunkReader::new(file, ChunkReadOptions::default(), 0);
    let mut options = ArrayRecordWriterOptions::default();
    let chunk = loop {
        match reader.read_chunk().with_context(|| name.clone())? {
            None => return Ok(options),
            Some(chunk) if ChunkType::holds_records(chunk.header.chunk_type(), chunk.header.num_records()) => {
                break chunk;
            }
            Some(_) => {}
        }
    };
    let h = chunk.header;
    options.transpose = h.chunk_type() == ChunkType::Transposed.to_byte();
    options.group_size = h.num_records().min(i32::MAX as u64);
    match chunk.data.first().map(|&b| CompressionType::from_byte(b)) {
        Some(Ok(CompressionType::None)) => options.compression = CompressorOptions::uncompressed(),
        Some(Ok(CompressionType::Brotli)) => options.compression = CompressorOptions::brotli(),
        Some(Ok(CompressionType::Snappy)) => options.compression = CompressorOptions::snappy(),
        _ => {}
    }
    let padded = chunk.end.is_multiple_of(BLOCK_SIZE)
        || reader.read_chunk().ok().flatten().is_some_and(|next| {
            next.header.chunk_type() == ChunkType::Padding.to_byte() && next.end.is_multiple_of(BLOCK_SIZE)
        });
    options.pad_to_block_boundary = padded;
    Ok(options)
}

/// The block size: padding ends at a multiple of it.
const BLOCK_SIZE: u64 = 1 << 16;

/// `convert --to array-record` without options: index the input, copying its chunks.
fn index_to_array_record(args: &ConvertArgs, input: io::Input) -> Result<()> {
    let name = io::name(&args.input);
    if input.is_stdin() {
        return Err(Usage(
            "--to array-record copies chunks from a file: standard input cannot seek (or give --options to re-encode)"
                .to_owned(),
        )
        .into());
    }
    // An ArrayRecord input keeps the options its footer states; a plain one those its chunks show.
    let stated = match crate::array_record::detect(&input)? {
        Some(trailer) => {
            let (_, summary) = crate::array_record::open(&input, Some(trailer))?;
            if let Some(problem) = &summary.footer_problem {
                progress::note(&format!("riegeli: {name}: {problem}"));
            }
            summary.writer_options.and_then(|text| text.parse::<ArrayRecordWriterOptions>().ok())
        }
        None => None,
    };
    let options = match stated {
        Some(options) => options,
        None => infer_array_options(&input)?,
    };
    let input = input.with_progress(&name, true);
    let (dest, report) = index_riegeli_file(input, io::create(&args.out)?, options).with_context(|| name.clone())?;
    dest.finish()?;
    let what = if report.reencoded_records > 0 {
        format!("re-encoded {} records in groups of {}", report.reencoded_records, report.group_size)
    } else {
        format!("copied {} chunks (group size {}) without re-encoding", report.copied_chunks, report.group_size)
    };
    let dropped = if report.dropped_old_trailer { "; dropped the old footer and postscript" } else { "" };
    progress::note(&format!("riegeli: {name}: {what}; {} records{dropped}", report.num_records));
    Ok(())
}

/// Refuses the flags that mean nothing for the output asked (Riegeli writers'
/// with `--to parquet`, Parquet's with any other output).
fn check_convert_flags(args: &ConvertArgs) -> Result<()> {
    let refuse = |flag: &str, why: &str| Err(Usage(format!("{flag} {why}")).into());
    if args.from == Some(Container::Parquet) {
        return refuse("--from parquet:", "Parquet is an output only");
    }
    if args.to == Container::Parquet {
        let riegeli_only = [
            ("--options", args.options.is_some()),
            ("--threads", args.threads.is_some()),
            ("--tfrecord-compression", args.tfrecord_compression.is_some()),
        ];
        if let Some(flag) = riegeli_only.iter().find(|(_, given)| *given).map(|(flag, _)| *flag) {
            return refuse(flag, "applies to Riegeli, ArrayRecord and TFRecord outputs, not --to parquet");
        }
        return Ok(());
    }
    let parquet_only = [
        ("--columns", args.columns.is_some()),
        ("--parquet-compression", args.parquet_compression.is_some()),
        ("--example", args.example),
        ("--skip-corrupted", args.skip_corrupted),
    ];
    match parquet_only.iter().find(|(_, given)| *given).map(|(flag, _)| *flag) {
        Some(flag) => refuse(flag, "applies to --to parquet"),
        None => Ok(()),
    }
}

pub(crate) fn convert(args: ConvertArgs) -> Result<()> {
    check_convert_flags(&args)?;
    let columns = args.columns.as_deref().map(crate::columnar::parse_columns).transpose()?;
    io::check_output_is_not_an_input(&args.out, [args.input.as_path()])?;
    // Opened once: its format is detected, then it is read.
    let input = io::open(&args.input)?;
    let from = match args.from {
        Some(from) => from,
        None => detect(&input)?,
    };
    if args.to == Container::Parquet {
        if from == Container::Tfrecord {
            return Err(Usage(format!(
                "{}: --to parquet reads Riegeli and ArrayRecord files, and this is not one \
                 (convert TFRecord files to Riegeli first)",
                input.name()
            ))
            .into());
        }
        let args = ToParquet {
            out: &args.out,
            columns,
            compression: args.parquet_compression.unwrap_or(ParquetCompression::Zstd),
            example: args.example,
            skip_corrupted: args.skip_corrupted,
        };
        return crate::columnar::to_parquet(input, args);
    }
    let tfrecord_compression = args.tfrecord_compression.unwrap_or(TfCompression::None);
    let array_options = match (&args.options, args.to) {
        (Some(text), Container::ArrayRecord) => Some(parse_array_options(text)?),
        (None, Container::ArrayRecord) if from != Container::Tfrecord => return index_to_array_record(&args, input),
        (None, Container::ArrayRecord) => Some(ArrayRecordWriterOptions::default()),
        _ => None,
    };
    // Check the options before creating the output.
    let options = match args.to {
        Container::ArrayRecord => RecordWriterOptions::default(),
        _ => parse_options(args.options.as_deref().unwrap_or("default"))?,
    };
    let name = io::name(&args.input);
    let input = input.with_progress(&name, true);
    let (mut reader, tfrecord) = match from {
        Container::Riegeli | Container::ArrayRecord | Container::Parquet => (Some(RecordReader::new(input)), None),
        Container::Tfrecord => (None, Some(input)),
    };
    let metadata = match reader.as_mut() {
        Some(reader) => reader.read_metadata().with_context(|| name.clone())?,
        None => None,
    };
    let dest = io::create(&args.out)?;
    let mut reencoding = None;
    let mut sink = match (args.to, array_options) {
        (Container::ArrayRecord, Some(array_options)) => {
            let group_size = array_options.group_size;
            let metadata = metadata.map(|mut m| {
                m.record_writer_options = array_options.to_string();
                m
            });
            reencoding = Some(group_size);
            array_record_writer(
                dest,
                ArrayRecordWriterOptions {
                    metadata: metadata.map(|m| prost::Message::encode_to_vec(&m)),
                    ..array_options
                },
            )?
        }
        (Container::Riegeli | Container::ArrayRecord, _) => {
            let mut options = options;
            if let Some(mut m) = metadata {
                m.record_writer_options = options.to_string();
                options.metadata = Some(prost::Message::encode_to_vec(&m));
            }
            let options = with_threads(options, args.options.as_deref().unwrap_or("default"), args.threads);
            Sink::Riegeli(Box::new(RecordWriter::with_io_thread(dest, options)?))
        }
        (Container::Tfrecord, _) => {
            let shared = SharedOutput(std::rc::Rc::new(std::cell::RefCell::new(dest)));
            Sink::TfRecord(TfWriter::new(Box::new(shared.clone()), tfrecord_compression), shared)
        }
        // (Written by `columnar::to_parquet` above.)
        (Container::Parquet, _) => anyhow::bail!("--to parquet: internal error: not a record sink"),
    };
    let mut count = 0u64;
    match reader {
        Some(mut reader) => {
            while let Some(record) = reader.read_record().with_context(|| name.clone())? {
                sink.write(&record)?;
                count += 1;
            }
        }
        None => {
            let input: Box<dyn Read> = Box::new(tfrecord.context("the input")?);
            for_each_record(input, InputFormat::Tfrecord, tfrecord_compression, |r| {
                count += 1;
                sink.write(r)
            })?;
        }
    }
    sink.finish()?;
    if let Some(group_size) = reencoding {
        progress::note(&format!("riegeli: {name}: re-encoded {count} records in groups of {group_size}"));
    }
    Ok(())
}

pub(crate) fn recover(args: RecoverArgs) -> Result<()> {
    io::check_output_is_not_an_input(&args.out, [args.input.as_path()])?;
    let options = parse_options(&args.options)?;
    let name = io::name(&args.input);
    let mut reader = RecordReader::new(io::open(&args.input)?.with_progress(&name, true));
    let regions = crate::cat::report_skipped(&mut reader, &name);
    let metadata = reader.read_metadata().ok().flatten();
    let options = match metadata {
        Some(m) => RecordWriterOptions { metadata: Some(prost::Message::encode_to_vec(&m)), ..options },
        None => options,
    };
    let options = with_threads(options, &args.options, args.threads);
    let mut writer = RecordWriter::with_io_thread(io::create(&args.out)?, options)?;
    let mut count = 0u64;
    while let Some(record) = reader.read_record()? {
        writer.write_record(&record)?;
        count += 1;
    }
    writer.close()?.finish()?;
    let regions = regions.lock().map(|r| r.clone()).unwrap_or_default();
    let lost: u64 = regions.iter().map(|r| r.end - r.begin).sum();
    drop(reader);
    progress::note(&format!(
        "riegeli: {name}: recovered {count} records; skipped {} damaged region(s), {lost} bytes",
        regions.len()
    ));
    Ok(())
}

pub(crate) fn concat(args: ConcatArgs) -> Result<()> {
    io::check_output_is_not_an_input(&args.out, args.inputs.iter().map(|p| p.as_path()))?;
    let mut options = with_threads(parse_options(&args.options)?, &args.options, args.threads);
    // Physical concatenation needs Riegeli files that end at a block boundary; anything
    // else goes record by record, where a bad input is reported as such. ArrayRecord
    // files also go record by record: their footers and postscripts are not records.
    let padded = !args.records
        && args.inputs.iter().all(|p| {
            // (Checked one file at a time, each opened again to be read: a command may
            // concatenate more files than it may hold open.)
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() % 65536 == 0 && m.len() > 0)
                && io::open(p).is_ok_and(|input| {
                    detect(&input).is_ok_and(|c| c == Container::Riegeli)
                        && crate::array_record::detect(&input).is_ok_and(|t| t.is_none())
                })
        });
    let mut dest = io::create(&args.out)?;
    if padded {
        // Every input ends at a block boundary: byte concatenation is a valid file.
        for path in &args.inputs {
            let mut file = io::open(path)?.with_progress(&io::name(path), true);
            std::io::copy(&mut file, &mut dest)?;
        }
        return dest.finish();
    }
    let mut dest = Some(dest);
    let mut writer = None;
    for path in &args.inputs {
        let name = io::name(path);
        let mut reader = RecordReader::new(io::open(path)?.with_progress(&name, true));
        let metadata = reader.read_metadata().with_context(|| name.clone())?;
        if let Some(dest) = dest.take() {
            if let Some(m) = metadata {
                options.metadata = Some(prost::Message::encode_to_vec(&m));
            }
            writer = Some(RecordWriter::with_io_thread(dest, options.clone())?);
        }
        let w = writer.as_mut().context("writer")?;
        while let Some(record) = reader.read_record().with_context(|| name.clone())? {
            w.write_record(&record)?;
        }
    }
    match (writer, dest) {
        (Some(w), _) => w.close()?.finish(),
        (None, Some(dest)) => dest.finish(),
        (None, None) => Ok(()),
    }
}
