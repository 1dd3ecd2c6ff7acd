//! The error type of riegeli-records.

use riegeli_codec::CodecError;
use riegeli_framing::FramingError;

/// An error of a [`RecordReader`](crate::RecordReader) or
/// [`RecordWriter`](crate::RecordWriter).
///
/// One pointer wide. Errors from file contents carry the file position of the
/// chunk or block involved ([`position`](Self::position)).
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
    /// Block or chunk framing is damaged (hash mismatch, inconsistent block header, ...).
    #[error("corrupt file: {0}")]
    Framing(#[source] FramingError),
    /// Chunk data failed to decode.
    #[error("corrupt chunk at file position {pos}: {source}")]
    Codec {
        /// Where the chunk begins.
        pos: u64,
        /// What the codec found.
        #[source]
        source: CodecError,
    },
    /// The file ends inside a chunk.
    #[error("truncated file: incomplete chunk at file position {pos} (file ends at {end})")]
    Truncated {
        /// Where the incomplete chunk begins.
        pos: u64,
        /// Where the data ends.
        end: u64,
    },
    /// A structural problem other than a hash or codec failure.
    #[error("invalid file at position {pos}: {message}")]
    Invalid {
        /// The position involved.
        pos: u64,
        /// What is wrong.
        message: String,
    },
    /// A header asks for more than a configured limit allows.
    #[error("chunk at file position {pos}: {limit} {requested} exceeds the limit {max}")]
    LimitExceeded {
        /// Where the chunk begins.
        pos: u64,
        /// The limit's name.
        limit: &'static str,
        /// The value in the header.
        requested: u64,
        /// The limit.
        max: u64,
    },
    /// The writer's options or arguments are unusable.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The reader or writer was used wrongly (e.g. written to after an error).
    #[error("usage error: {0}")]
    Usage(&'static str),
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Self(Box::new(kind))
    }

    pub(crate) fn invalid(pos: u64, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid { pos, message: message.into() })
    }

    pub(crate) fn codec(pos: u64, source: CodecError) -> Self {
        Self::new(ErrorKind::Codec { pos, source })
    }

    /// A copy of an error about file contents (I/O and usage errors, which
    /// cannot be cloned, become `Invalid` with their message). Used when the
    /// original stays with pending damage for `recover()`.
    pub(crate) fn duplicate(&self) -> Self {
        let kind = match self.kind() {
            ErrorKind::Framing(e) => ErrorKind::Framing(e.clone()),
            ErrorKind::Codec { pos, source } => ErrorKind::Codec { pos: *pos, source: source.clone() },
            ErrorKind::Truncated { pos, end } => ErrorKind::Truncated { pos: *pos, end: *end },
            ErrorKind::LimitExceeded { pos, limit, requested, max } => {
                ErrorKind::LimitExceeded { pos: *pos, limit, requested: *requested, max: *max }
            }
            other => ErrorKind::Invalid { pos: self.position().unwrap_or(0), message: other.to_string() },
        };
        Self::new(kind)
    }

    /// The kind of error.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// The file position of the chunk or block involved, if the error comes from file contents.
    pub fn position(&self) -> Option<u64> {
        match &*self.0 {
            ErrorKind::Framing(e) => Some(e.position()),
            ErrorKind::Codec { pos, .. }
            | ErrorKind::Truncated { pos, .. }
            | ErrorKind::Invalid { pos, .. }
            | ErrorKind::LimitExceeded { pos, .. } => Some(*pos),
            ErrorKind::Io(_) | ErrorKind::InvalidArgument(_) | ErrorKind::Usage(_) => None,
        }
    }

    /// Whether the error is damaged or unacceptable file contents, which
    /// recovery can skip (as opposed to an I/O or usage error).
    pub fn is_corruption(&self) -> bool {
        self.position().is_some()
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
    fn from(e: FramingError) -> Self {
        Self::new(ErrorKind::Framing(e))
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
