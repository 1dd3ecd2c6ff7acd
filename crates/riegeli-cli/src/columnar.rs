//! `riegeli convert --to parquet`: records as Arrow batches (riegeli-arrow's
//! readers) written to a Parquet file batch by batch.

use anyhow::{Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use clap::ValueEnum;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use riegeli_arrow::{
    ArrayRecordArrowReader, ArrowReader, ArrowReaderOptions, BadRecords, ProtoDecoder, RecordFormat, RecordSelection,
};
use riegeli_codec::FieldProjection;
use riegeli_records::{RecordReader, RecordReaderOptions};

use crate::exit::Usage;
use crate::io::{self, Input};
use crate::{array_record, progress, proto};

/// Compression of the Parquet file's column chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ParquetCompression {
    /// Zstandard (at the default level).
    Zstd,
    /// Snappy.
    Snappy,
    /// Uncompressed.
    None,
}

impl ParquetCompression {
    fn to_parquet(self) -> Compression {
        match self {
            Self::Zstd => Compression::ZSTD(ZstdLevel::default()),
            Self::Snappy => Compression::SNAPPY,
            Self::None => Compression::UNCOMPRESSED,
        }
    }
}

/// What `convert --to parquet` was asked.
pub(crate) struct ToParquet<'a> {
    pub(crate) out: &'a std::path::Path,
    /// `--columns`: field paths (`a`, `b.c`), or feature names with `--example`.
    pub(crate) columns: Option<Vec<String>>,
    pub(crate) compression: ParquetCompression,
    /// The records are `tf.train.Example`s (`--example`), not of the type in the metadata.
    pub(crate) example: bool,
    pub(crate) skip_corrupted: bool,
}

/// Rows per batch read and written (a Parquet row group holds several).
const BATCH_ROWS: usize = 8192;

/// `--columns a,b.c`: the field paths, none empty.
pub(crate) fn parse_columns(text: &str) -> Result<Vec<String>> {
    let columns: Vec<String> = text.split(',').map(|c| c.trim().to_owned()).collect();
    if columns.iter().any(String::is_empty) {
        return Err(Usage(format!("--columns {text:?}: expected field paths separated by commas (a,b.c)")).into());
    }
    Ok(columns)
}

/// Batches from either reader.
enum Batches {
    Sequential(Box<ArrowReader<Input>>),
    ByIndex(Box<ArrayRecordArrowReader<riegeli_records::ArrayRecordReader<io::Seekable>>>),
}

impl Batches {
    fn next_batch(&mut self) -> riegeli_arrow::Result<Option<RecordBatch>> {
        match self {
            Self::Sequential(reader) => reader.next_batch(),
            Self::ByIndex(reader) => reader.next_batch(),
        }
    }

    fn schema(&self) -> Option<SchemaRef> {
        match self {
            Self::Sequential(reader) => reader.schema(),
            Self::ByIndex(reader) => reader.schema(),
        }
    }
}

/// A riegeli-arrow error that is the command line's fault (a projection
/// naming no field, a type with no Arrow form) becomes a usage error.
fn arrow_error(name: &str, e: riegeli_arrow::Error) -> anyhow::Error {
    match e.kind() {
        riegeli_arrow::ErrorKind::Projection(_) => Usage(format!("{name}: --columns: {e}")).into(),
        riegeli_arrow::ErrorKind::Type(_) => Usage(format!("{name}: --to parquet: {e}")).into(),
        _ => anyhow::Error::new(e).context(name.to_owned()),
    }
}

/// The reader's options: the record format and projection asked for; bad
/// records fail (the loop below reports and skips them with `--skip-corrupted`).
fn reader_options(args: &ToParquet<'_>, format: RecordFormat) -> ArrowReaderOptions {
    ArrowReaderOptions {
        batch_size: BATCH_ROWS,
        projection: args.columns.clone(),
        bad_records: BadRecords::Fail,
        format,
        ..Default::default()
    }
}

/// The record format: `tf.train.Example`s with `--example`, else the type
/// the file's metadata names (read from `metadata`), a usage error when it
/// names none.
fn record_format(
    args: &ToParquet<'_>,
    name: &str,
    metadata: impl FnOnce() -> Result<Option<riegeli_records::RecordsMetadata>>,
) -> Result<RecordFormat> {
    if args.example {
        return Ok(RecordFormat::Example(None));
    }
    let metadata = metadata().with_context(|| format!("{name}: cannot read the metadata"))?;
    let message = proto::from_metadata(metadata, name, "parquet").map_err(|e| match e.downcast::<Usage>() {
        // Said for `--to parquet`, with the way out for tf.train.Example files.
        Ok(Usage(text)) => Usage(format!(
            "{} (or give --example if the records are tf.train.Example)",
            text.replace("--format parquet", "--to parquet")
        ))
        .into(),
        Err(e) => e,
    })?;
    Ok(RecordFormat::Proto(message))
}

/// Opens the batches of a sequential read or, for an ArrayRecord file, of a
/// read by index.
fn open_batches(input: Input, args: &ToParquet<'_>, name: &str) -> Result<Batches> {
    if let Some(trailer) = array_record::detect(&input)? {
        let file = input.seekable().context("a file")?;
        let format = record_format(args, name, || Ok(RecordReader::new(file).read_metadata()?))?;
        // The fields the columns need, so that transposed chunks decompress only their buckets.
        let projection = match &format {
            RecordFormat::Proto(message) => {
                let decoder = ProtoDecoder::new(message, args.columns.as_deref(), BadRecords::Fail)
                    .map_err(|e| arrow_error(name, e))?;
                decoder.field_projection().clone()
            }
            _ => FieldProjection::all(),
        };
        let (reader, summary) = array_record::open_projected(&input, Some(trailer), projection)?;
        if let Some(problem) = &summary.footer_problem {
            array_record::footer_problem(name, problem, args.skip_corrupted)?;
        }
        if let Some(region) = summary.damage.first() {
            if !args.skip_corrupted {
                anyhow::bail!("{name}: {region} (give --skip-corrupted to convert the readable records)");
            }
            for region in &summary.damage {
                progress::note(&format!("riegeli: {name}: {region}"));
            }
        }
        let reader = ArrayRecordArrowReader::new(reader_options(args, format), RecordSelection::All, |_| Ok(reader))
            .map_err(|e| arrow_error(name, e))?;
        return Ok(Batches::ByIndex(Box::new(reader)));
    }
    let source = input.with_progress(name, true);
    let stdin = source.is_stdin();
    let options = RecordReaderOptions { parallelism: crate::cat::decoding_threads(None), ..Default::default() };
    let mut reader = RecordReader::with_options(source, options);
    if args.skip_corrupted {
        crate::cat::report_skipped(&mut reader, name);
    }
    let format = record_format(args, name, || Ok(reader.read_metadata()?))?;
    let options = reader_options(args, format);
    // Standard input cannot go back to decode the current chunk again with the projection.
    let reader = if stdin { ArrowReader::without_seeking(reader, options) } else { ArrowReader::new(reader, options) }
        .map_err(|e| arrow_error(name, e))?;
    Ok(Batches::Sequential(Box::new(reader)))
}

/// `convert --to parquet`.
pub(crate) fn to_parquet(input: Input, args: ToParquet<'_>) -> Result<()> {
    let name = input.name().to_owned();
    let mut batches = open_batches(input, &args, &name)?;
    let properties = WriterProperties::builder().set_compression(args.compression.to_parquet()).build();
    let dest = io::create(args.out)?;
    let mut writer: Option<ArrowWriter<io::Output>> = None;
    let mut dest = Some(dest);
    let mut rows = 0u64;
    let mut skipped = 0u64;
    loop {
        let batch = match batches.next_batch() {
            Ok(Some(batch)) => batch,
            Ok(None) => break,
            Err(e) if e.is_bad_record() && args.skip_corrupted => {
                progress::note(&format!("riegeli: {name}: {e}; skipped"));
                skipped += 1;
                continue;
            }
            Err(e) if e.is_bad_record() => {
                return Err(anyhow::anyhow!("{name}: {e} (give --skip-corrupted to leave bad records out)"));
            }
            Err(e) => return Err(arrow_error(&name, e)),
        };
        rows += batch.num_rows() as u64;
        let writer = match &mut writer {
            Some(writer) => writer,
            None => writer.insert(ArrowWriter::try_new(
                dest.take().context("the output")?,
                batch.schema(),
                Some(properties.clone()),
            )?),
        };
        writer.write(&batch).with_context(|| format!("{name}: writing Parquet"))?;
    }
    let writer = match writer {
        Some(writer) => writer,
        // No records: a file of the schema and no rows (the schema of inferred
        // tf.train.Example features is then empty).
        None => {
            let schema = batches.schema().unwrap_or_else(|| std::sync::Arc::new(arrow_schema::Schema::empty()));
            ArrowWriter::try_new(dest.take().context("the output")?, schema, Some(properties))?
        }
    };
    let dest = writer.into_inner().with_context(|| format!("{name}: writing Parquet"))?;
    dest.finish()?;
    if skipped > 0 {
        progress::note(&format!("riegeli: {name}: wrote {rows} rows to Parquet; skipped {skipped} bad records"));
    }
    Ok(())
}
