//! ArrayRecord files (google/array_record): recognising them, and what the
//! commands show of their footer and postscript.
//!
//! An ArrayRecord file is a Riegeli/records file whose last 64 KiB begin with
//! a postscript chunk (three copies of a `RiegeliPostscript` holding the
//! footer's offset and a magic number); the footer chunk indexes every data
//! chunk. The library reads them ([`ArrayRecordReader`]); this module only
//! recognises them cheaply, from the raw bytes at `size - 65536`, so that a
//! plain file costs one small read.

use std::path::Path;

use anyhow::{Context, Result};
use riegeli_records::{ArrayRecordReader, IndexSource};

use crate::io::Seekable;
use crate::{io, progress};

/// Where an ArrayRecord file's footer and postscript are.
pub(crate) type Trailer = riegeli_records::ArrayRecordTrailer;

/// Recognises an ArrayRecord file by the postscript at `size - 65536` (one
/// small chunk read). `None` for plain files (and for standard input, which
/// cannot seek).
pub(crate) fn detect(path: &Path) -> Result<Option<Trailer>> {
    if path.as_os_str() == "-" {
        return Ok(None);
    }
    let file = io::open_file(path)?;
    riegeli_records::find_array_record_trailer(file).with_context(|| io::name(path))
}

/// What the footer says of an ArrayRecord file, read by [`ArrayRecordReader`].
pub(crate) struct Summary {
    pub(crate) num_records: u64,
    pub(crate) num_chunks: usize,
    pub(crate) writer_options: Option<String>,
    pub(crate) index_source: IndexSource,
    pub(crate) fallback_reason: Option<String>,
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

/// Opens `path` with an [`ArrayRecordReader`] and summarises its index. When
/// the file has an ArrayRecord `trailer` whose footer cannot be used, says so
/// on stderr (one line, the reader's fallback reason); files without one are
/// indexed by a scan, quietly.
pub(crate) fn open(path: &Path, trailer: Option<Trailer>) -> Result<(ArrayRecordReader<Seekable>, Summary)> {
    let (reader, summary) = open_with(path, trailer)?;
    if trailer.is_some()
        && let Some(reason) = &summary.fallback_reason
    {
        progress::note(&format!("riegeli: {}: ArrayRecord footer unusable: {reason}", io::name(path)));
    }
    Ok((reader, summary))
}

/// [`open`] without the notice (for `verify`, which reports problems on stdout).
pub(crate) fn open_with(path: &Path, trailer: Option<Trailer>) -> Result<(ArrayRecordReader<Seekable>, Summary)> {
    let name = io::name(path);
    let reader = riegeli_object_store::array_record_reader(io::open_file(path)?, Default::default())
        .with_context(|| name.clone())?;
    let footer_offset = trailer.map(|t| t.footer_offset);
    let damage = reader.skipped_regions().iter().filter(|r| Some(r.begin()) != footer_offset).cloned().collect();
    let summary = Summary {
        num_records: reader.num_records(),
        num_chunks: reader.num_chunks(),
        writer_options: reader.writer_options().map(str::to_owned),
        index_source: reader.index_source(),
        fallback_reason: reader.fallback_reason().map(str::to_owned),
        damage,
    };
    Ok((reader, summary))
}
