//! The error type of riegeli-records.

use riegeli_codec::CodecError;
use riegeli_framing::FramingError;

/// An error of a [`RecordReader`](crate::RecordReader),
/// [`RecordWriter`](crate::RecordWriter) or the ArrayRecord types.
///
/// One pointer wide. What went wrong is its [`kind`](Self::kind): the
/// underlying reader or writer failed ([`ErrorKind::Io`]), the file's bytes
/// are damaged ([`ErrorKind::Corrupt`], with the [`Corruption`] found and the
/// file position it concerns), or something else that is not about the file.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(Box<ErrorKind>);

/// The kinds of [`Error`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The underlying reader or writer failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The file's bytes are damaged or not what the format allows; recovery
    /// can skip the region.
    #[error("corrupt file at position {pos}: {cause}")]
    Corrupt {
        /// The file position of the chunk, block or record involved.
        pos: u64,
        /// What is wrong there.
        cause: Corruption,
    },
    /// A chunk could not be encoded or framed for writing.
    #[error("cannot write the chunk at file position {pos}: {source}")]
    Encode {
        /// Where the chunk was to begin.
        pos: u64,
        /// What the encoder or the framing found.
        #[source]
        source: EncodeError,
    },
    /// The options or arguments are unusable.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The reader or writer was used wrongly (e.g. written to after an error).
    #[error("usage error: {0}")]
    Usage(&'static str),
    /// A failure inside the library, not about the file: a worker thread
    /// panicked (a bug) or the threads could not do their work.
    #[error("internal error: {0}")]
    Internal(&'static str),
}

/// What is wrong with a file's bytes ([`ErrorKind::Corrupt`]).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// Block or chunk framing is damaged (hash mismatch, inconsistent block header, ...).
    #[error("{0}")]
    Framing(#[source] FramingError),
    /// Chunk data failed to decode.
    #[error("chunk data: {0}")]
    Codec(#[source] CodecError),
    /// The file ends inside a chunk.
    #[error("incomplete chunk (the file ends at {end})")]
    Truncated {
        /// Where the data ends.
        end: u64,
    },
    /// The file does not begin with a Riegeli/records file signature.
    #[error("missing file signature: not a Riegeli/records file")]
    MissingSignature,
    /// A header asks for more than a configured limit allows.
    #[error("{limit} {requested} exceeds the limit {max}")]
    LimitExceeded {
        /// The limit's name.
        limit: &'static str,
        /// The value in the header.
        requested: u64,
        /// The limit.
        max: u64,
    },
    /// A chunk of a type this reader does not know claims to hold records.
    #[error("unknown chunk type {chunk_type:#04x} with records")]
    UnknownChunkType {
        /// The chunk type byte.
        chunk_type: u8,
    },
    /// A chunk decoded to another number of records than its header says.
    #[error("chunk decoded to {decoded} records, its header says {header}")]
    RecordCount {
        /// The header's `num_records`.
        header: u64,
        /// The records decoded.
        decoded: u64,
    },
    /// The metadata chunk is not a valid `RecordsMetadata`.
    #[error("metadata is not a valid RecordsMetadata: {0}")]
    Metadata(String),
    /// A record is not a valid protocol buffer message of the type asked for.
    #[error("record is not a valid message: {0}")]
    Message(String),
    /// The ArrayRecord postscript or footer is missing or invalid.
    #[error("ArrayRecord index: {0}")]
    Index(IndexCorruption),
    /// A chunk disagrees with its ArrayRecord footer entry.
    #[error("chunk header {field} {header} differs from the index's {index}")]
    IndexMismatch {
        /// The header field.
        field: &'static str,
        /// Its value in the chunk header.
        header: u64,
        /// Its value in the footer.
        index: u64,
    },
}

/// What is wrong with an ArrayRecord file's index ([`Corruption::Index`]):
/// its postscript (the chunk at `size - 65536`), its footer, or, for a file
/// read by a scan, its first chunk.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum IndexCorruption {
    /// The file is shorter than the 64 KiB the postscript's block takes.
    #[error("an ArrayRecord file is at least 64 KiB long, this one {size} bytes")]
    TooShort {
        /// The file's size.
        size: u64,
    },
    /// The chunk at `size - 65536` holds no postscript record.
    #[error("the chunk there holds other records")]
    NotPostscript,
    /// No postscript record names a footer (reported when nothing more precise is known).
    #[error("no valid postscript record")]
    NoPostscriptRecord,
    /// Something is wrong with the postscript chunk.
    #[error("no postscript at size - 65536: {}", Detail(.0))]
    Postscript(Box<Corruption>),
    /// Something is wrong with the footer a postscript names.
    #[error("the footer at {offset}: {}", Detail(.cause))]
    Footer {
        /// Where the postscript says the footer begins.
        offset: u64,
        /// What is wrong there.
        cause: Box<Corruption>,
    },
    /// The postscript names a footer that is not before it.
    #[error("offset {offset} is not before the postscript at {postscript}")]
    FooterNotBeforePostscript {
        /// The footer offset named.
        offset: u64,
        /// Where the postscript chunk begins.
        postscript: u64,
    },
    /// The footer chunk runs into the postscript's block.
    #[error("chunk ends at {end} past the postscript")]
    FooterPastPostscript {
        /// Where the footer chunk ends.
        end: u64,
    },
    /// The footer is not a simple chunk.
    #[error("not a simple chunk")]
    FooterNotSimpleChunk,
    /// The footer's first record is not the metadata this reader knows.
    #[error("record 0 is not RiegeliFooterMetadata version 1")]
    FooterMetadata,
    /// The footer's metadata announces another number of chunks than it has entries.
    #[error("{announced} chunks announced, {present} entries present")]
    ChunkCount {
        /// `num_chunks` in the footer's metadata.
        announced: u64,
        /// The entries after it.
        present: u64,
    },
    /// A footer entry does not parse.
    #[error("entry {entry} is not an ArrayRecordFooter: {error}")]
    EntryNotParsed {
        /// The entry's index.
        entry: u64,
        /// What the protobuf decoder says.
        error: prost::DecodeError,
    },
    /// A footer entry lacks a field.
    #[error("entry {entry} has no {field}")]
    EntryField {
        /// The entry's index.
        entry: u64,
        /// The field missing: `chunk_offset` or `num_records`.
        field: &'static str,
    },
    /// A footer entry counts no records, or more than `max_num_records`.
    #[error("entry {entry} (chunk at {offset}) counts {count} records, not 1 to max_num_records {max}")]
    EntryRecordCount {
        /// The entry's index.
        entry: u64,
        /// Its chunk offset.
        offset: u64,
        /// Its record count.
        count: u64,
        /// The limit `max_num_records`.
        max: u64,
    },
    /// A chunk offset does not follow the one before it, or is not before the footer.
    #[error("entry {entry}: chunk offset {offset} is not between {previous} and the footer")]
    OffsetsOutOfOrder {
        /// The entry's index.
        entry: u64,
        /// Its chunk offset.
        offset: u64,
        /// The least offset it could have.
        previous: u64,
    },
    /// The entries' record counts add up past `u64::MAX`.
    #[error("record counts overflow")]
    RecordCountOverflow,
    /// The entries' record counts do not add up to the footer's `num_records`.
    #[error("chunk record counts add up to {sum}, the footer says {footer}")]
    RecordCountMismatch {
        /// The sum of the entries' counts.
        sum: u64,
        /// The footer's `num_records`.
        footer: u64,
    },
    /// A chunk other than the last holds another number of records than the first.
    #[error("chunk {chunk} at {offset} holds {count} records, not the group size {group}")]
    GroupSize {
        /// The chunk's index.
        chunk: u64,
        /// Its offset.
        offset: u64,
        /// Its record count.
        count: u64,
        /// The first chunk's record count.
        group: u64,
    },
    /// The last chunk holds more records than the first.
    #[error("the last chunk holds more than the group size {group}")]
    LastChunkOverGroupSize {
        /// The first chunk's record count.
        group: u64,
    },
    /// A scan found no Riegeli/records file signature chunk at the start.
    #[error("not an ArrayRecord or Riegeli/records file: corrupt file at position {pos}: {cause}")]
    NotRiegeli {
        /// Where the damage is.
        pos: u64,
        /// What it is.
        cause: Box<Corruption>,
    },
    /// The index cannot be read and the reader was not asked to scan.
    #[error(
        "{} (a file cut short or damaged, or not an ArrayRecord file; \
         the option scan_fallback reads what records there are by a scan)",
        Detail(.0)
    )]
    NoScanFallback(Box<Corruption>),
}

/// A corruption inside an [`IndexCorruption`]: an index problem without the
/// "ArrayRecord index: " that the outer one says already.
struct Detail<'a>(&'a Corruption);

impl std::fmt::Display for Detail<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Corruption::Index(cause) => cause.fmt(f),
            other => other.fmt(f),
        }
    }
}

/// Why a chunk could not be encoded ([`ErrorKind::Encode`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The codec failed (e.g. too many records for a transposed chunk).
    #[error(transparent)]
    Codec(CodecError),
    /// The chunk cannot be framed (e.g. it would pass the largest file position).
    #[error(transparent)]
    Framing(FramingError),
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Self(Box::new(kind))
    }

    /// File contents at `pos` are damaged: `cause`.
    pub(crate) fn corrupt(pos: u64, cause: Corruption) -> Self {
        Self::new(ErrorKind::Corrupt { pos, cause })
    }

    pub(crate) fn codec(pos: u64, source: CodecError) -> Self {
        Self::corrupt(pos, Corruption::Codec(source))
    }

    pub(crate) fn internal(what: &'static str) -> Self {
        Self::new(ErrorKind::Internal(what))
    }

    /// The kind of error.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// What is wrong with the file, for an [`ErrorKind::Corrupt`] error.
    pub(crate) fn corruption(&self) -> Option<&Corruption> {
        match &*self.0 {
            ErrorKind::Corrupt { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// The file position of the chunk, block or record involved, for errors
    /// about a place in the file (corruption, and chunks that cannot be written).
    pub fn position(&self) -> Option<u64> {
        match &*self.0 {
            ErrorKind::Corrupt { pos, .. } | ErrorKind::Encode { pos, .. } => Some(*pos),
            ErrorKind::Io(_) | ErrorKind::InvalidArgument(_) | ErrorKind::Usage(_) | ErrorKind::Internal(_) => None,
        }
    }

    /// Whether the error is damaged or unacceptable file contents, which
    /// recovery can skip (as opposed to an I/O, usage or internal error).
    pub fn is_corruption(&self) -> bool {
        matches!(&*self.0, ErrorKind::Corrupt { .. })
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self::new(kind)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::new(ErrorKind::Io(e))
    }
}

impl From<FramingError> for Error {
    /// Damaged framing read from a file, at the position the framing error names.
    fn from(e: FramingError) -> Self {
        Self::corrupt(e.position(), Corruption::Framing(e))
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_corrupt_errors_are_corruption() {
        let corrupt = Error::corrupt(7, Corruption::MissingSignature);
        assert!(corrupt.is_corruption());
        assert_eq!(corrupt.position(), Some(7));
        assert!(matches!(corrupt.corruption(), Some(Corruption::MissingSignature)));
        for error in [
            Error::internal("a worker panicked"),
            Error::from(std::io::Error::other("disk")),
            Error::new(ErrorKind::Usage("closed")),
            Error::new(ErrorKind::InvalidArgument("bad".into())),
        ] {
            assert!(!error.is_corruption(), "{error}");
            assert_eq!(error.position(), None, "{error}");
            assert!(error.corruption().is_none());
        }
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }

    /// The messages of the index problems, which the Python and CLI tests
    /// match parts of, word for word as they were when they were strings.
    #[test]
    fn index_corruption_messages() {
        let framing = || Box::new(Corruption::Truncated { end: 70000 });
        let index = |cause| Box::new(Corruption::Index(cause));
        // Field 1, a varint, cut short.
        let error = <() as prost::Message>::decode(&[0x08][..]).unwrap_err();
        let cases = [
            (IndexCorruption::TooShort { size: 5 }, "an ArrayRecord file is at least 64 KiB long, this one 5 bytes"),
            (IndexCorruption::NoPostscriptRecord, "no valid postscript record"),
            (
                IndexCorruption::Postscript(index(IndexCorruption::NotPostscript)),
                "no postscript at size - 65536: the chunk there holds other records",
            ),
            (
                IndexCorruption::Postscript(framing()),
                "no postscript at size - 65536: incomplete chunk (the file ends at 70000)",
            ),
            (
                IndexCorruption::Footer { offset: 64, cause: index(IndexCorruption::FooterNotSimpleChunk) },
                "the footer at 64: not a simple chunk",
            ),
            (
                IndexCorruption::FooterNotBeforePostscript { offset: 9, postscript: 8 },
                "offset 9 is not before the postscript at 8",
            ),
            (IndexCorruption::FooterPastPostscript { end: 70 }, "chunk ends at 70 past the postscript"),
            (IndexCorruption::FooterMetadata, "record 0 is not RiegeliFooterMetadata version 1"),
            (IndexCorruption::ChunkCount { announced: 3, present: 2 }, "3 chunks announced, 2 entries present"),
            (
                IndexCorruption::EntryNotParsed { entry: 4, error },
                "entry 4 is not an ArrayRecordFooter: failed to decode Protobuf message: invalid varint",
            ),
            (IndexCorruption::EntryField { entry: 1, field: "chunk_offset" }, "entry 1 has no chunk_offset"),
            (
                IndexCorruption::EntryRecordCount { entry: 2, offset: 100, count: 0, max: 16 },
                "entry 2 (chunk at 100) counts 0 records, not 1 to max_num_records 16",
            ),
            (
                IndexCorruption::OffsetsOutOfOrder { entry: 3, offset: 50, previous: 101 },
                "entry 3: chunk offset 50 is not between 101 and the footer",
            ),
            (IndexCorruption::RecordCountOverflow, "record counts overflow"),
            (
                IndexCorruption::RecordCountMismatch { sum: 10, footer: 11 },
                "chunk record counts add up to 10, the footer says 11",
            ),
            (
                IndexCorruption::GroupSize { chunk: 1, offset: 200, count: 4, group: 5 },
                "chunk 1 at 200 holds 4 records, not the group size 5",
            ),
            (IndexCorruption::LastChunkOverGroupSize { group: 5 }, "the last chunk holds more than the group size 5"),
            (
                IndexCorruption::NotRiegeli { pos: 0, cause: Box::new(Corruption::MissingSignature) },
                "not an ArrayRecord or Riegeli/records file: corrupt file at position 0: \
                 missing file signature: not a Riegeli/records file",
            ),
            (
                IndexCorruption::NoScanFallback(index(IndexCorruption::TooShort { size: 0 })),
                "an ArrayRecord file is at least 64 KiB long, this one 0 bytes (a file cut short or damaged, \
                 or not an ArrayRecord file; the option scan_fallback reads what records there are by a scan)",
            ),
        ];
        for (cause, message) in cases {
            assert_eq!(cause.to_string(), message);
        }
        let error = Error::corrupt(64, Corruption::Index(IndexCorruption::FooterNotSimpleChunk));
        assert_eq!(error.to_string(), "corrupt file at position 64: ArrayRecord index: not a simple chunk");
    }
}
