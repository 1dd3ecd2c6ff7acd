//! ArrayRecord files (google/array_record): recognising them, and what the
//! commands show of their footer and postscript.
//!
//! An ArrayRecord file is a Riegeli/records file whose last 64 KiB begin with
//! a postscript chunk (three copies of a `RiegeliPostscript` holding the
//! footer's offset and a magic number); the footer chunk indexes every data
//! chunk. The library reads them ([`ArrayRecordReader`]); this module only
//! recognises them cheaply, from the raw bytes at `size - 65536`, so that a
//! plain file costs one small read.

use anyhow::{Context, Result};
use riegeli_codec::FieldProjection;
use riegeli_records::{ArrayRecordReader, ArrayRecordReaderOptions, IndexSource};

use crate::io::{Input, Seekable};
use crate::progress;

/// Where an ArrayRecord file's footer and postscript are.
pub(crate) type Trailer = riegeli_records::ArrayRecordTrailer;

/// Recognises an ArrayRecord file by the postscript at `size - 65536` (one
/// small chunk read, of the opened `input`). `None` for plain files (and for
/// standard input, which cannot seek).
pub(crate) fn detect(input: &Input) -> Result<Option<Trailer>> {
    let Some(file) = input.seekable() else { return Ok(None) };
    riegeli_records::find_array_record_trailer(file).with_context(|| input.name().to_owned())
}

/// What the footer says of an ArrayRecord file, read by [`ArrayRecordReader`].
pub(crate) struct Summary {
    pub(crate) num_records: u64,
    pub(crate) num_chunks: usize,
    pub(crate) writer_options: Option<String>,
    pub(crate) index_source: IndexSource,
    pub(crate) fallback_reason: Option<String>,
    /// What array_record's reader would refuse the file for: a footer that
    /// cannot be used, or (a file without a postscript) a footer that ends
    /// it, no postscript after it. The records are then indexed by a scan.
    pub(crate) footer_problem: Option<String>,
    /// Damaged regions the scan skipped, other than the footer itself.
    pub(crate) damage: Vec<riegeli_records::SkippedRegion>,
}

impl Summary {
    /// `"footer"` or `"scanned"`.
    pub(crate) fn index_source_name(&self) -> &'static str {
        match self.index_source {
            IndexSource::Footer => "footer",
            _ => "scanned",
        }
    }
}

/// The problem of a file that ends with the ArrayRecord footer at `footer`
/// and no postscript: it was cut short after its footer.
pub(crate) fn cut_after_footer(footer: u64) -> String {
    format!("ArrayRecord footer at {footer} without its postscript: the file was cut short after it")
}

/// What every command does with a file whose ArrayRecord footer cannot be
/// used or is cut off (`problem`), as with any damage: with
/// `--skip-corrupted` it says so in one line on stderr and reads on (by a
/// scan); without, it fails, saying so.
pub(crate) fn footer_problem(name: &str, problem: &str, skip_corrupted: bool) -> Result<()> {
    if !skip_corrupted {
        anyhow::bail!("{name}: {problem} (give --skip-corrupted to read its records anyway)");
    }
    progress::note(&format!("riegeli: {name}: {problem}"));
    Ok(())
}

/// Reads the opened `input` with an [`ArrayRecordReader`] and summarises its
/// index. A file without a usable footer is indexed by a scan (a plain file
/// quietly); [`Summary::footer_problem`] says whether it should have had one.
pub(crate) fn open(input: &Input, trailer: Option<Trailer>) -> Result<(ArrayRecordReader<Seekable>, Summary)> {
    open_projected(input, trailer, FieldProjection::all())
}

/// [`open`], the reader decoding only the fields of `field_projection` of
/// transposed chunks (`convert --to parquet --columns`).
pub(crate) fn open_projected(
    input: &Input,
    trailer: Option<Trailer>,
    field_projection: FieldProjection,
) -> Result<(ArrayRecordReader<Seekable>, Summary)> {
    let name = input.name();
    let file = input.seekable().with_context(|| format!("{name}: standard input cannot seek"))?;
    let options = ArrayRecordReaderOptions { scan_fallback: true, field_projection, ..Default::default() };
    let reader = ArrayRecordReader::with_options(file, options).with_context(|| name.to_owned())?;
    let index = reader.index();
    let footer_offset = trailer.map(|t| t.footer_offset).or(index.footer_without_postscript);
    let damage = index.skipped_regions.iter().filter(|r| Some(r.begin) != footer_offset).cloned().collect();
    let footer_problem = match (trailer, &index.fallback_reason) {
        (Some(_), Some(reason)) => Some(format!("ArrayRecord footer unusable: {reason}")),
        (Some(_), None) => None,
        (None, _) => index.footer_without_postscript.map(cut_after_footer),
    };
    let summary = Summary {
        num_records: reader.num_records(),
        num_chunks: index.num_chunks,
        writer_options: index.writer_options.clone(),
        index_source: index.index_source,
        fallback_reason: index.fallback_reason.clone(),
        footer_problem,
        damage,
    };
    Ok((reader, summary))
}
