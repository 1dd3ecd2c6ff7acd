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
    Index(String),
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
    pub fn corruption(&self) -> Option<&Corruption> {
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
}
