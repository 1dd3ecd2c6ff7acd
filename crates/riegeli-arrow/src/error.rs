//! `Error`: what can go wrong turning records into Arrow batches.

use riegeli_records::RecordPosition;

/// The error of this crate: one pointer wide, its [`ErrorKind`] behind it.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(Box<ErrorKind>);

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading the file failed (I/O or corruption), as riegeli-records reports it.
    #[error(transparent)]
    Records(riegeli_records::Error),
    /// The message type cannot be had: no type given and none in the file's
    /// metadata, invalid file descriptors, an unknown type name, or a type
    /// that has no Arrow form (a recursive type not projected away, a group).
    #[error("{0}")]
    Type(String),
    /// A projection names a field that is not there, or goes through a field
    /// that is not a message.
    #[error("projection: {0}")]
    Projection(String),
    /// A record is not a valid message of the type (or not a valid
    /// `tf.train.Example`, or one that does not fit the feature spec).
    #[error("record {index}{}: {reason}", position.map(|p| format!(" (at {p})")).unwrap_or_default())]
    BadRecord {
        /// The record's index among the records given to the decoder, from 0.
        index: u64,
        /// Where the record is in the file, when the records come from a reader.
        position: Option<RecordPosition>,
        /// What is wrong with it, and at which byte of the record.
        reason: String,
    },
    /// Records asked for by index that are not there.
    #[error("out of range: {0}")]
    OutOfRange(String),
    /// Arrow refused to build an array (e.g. more than 2 GiB of strings in one batch).
    #[error("arrow: {0}")]
    Arrow(#[source] arrow_schema::ArrowError),
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Self(Box::new(kind))
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// What went wrong, owned.
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }

    /// Whether the error is about one record (the others can still be read).
    pub fn is_bad_record(&self) -> bool {
        matches!(*self.0, ErrorKind::BadRecord { .. })
    }

    pub(crate) fn type_error(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Type(message.into()))
    }

    pub(crate) fn projection(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Projection(message.into()))
    }
}

impl From<riegeli_records::Error> for Error {
    fn from(error: riegeli_records::Error) -> Self {
        Self::new(ErrorKind::Records(error))
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(error: arrow_schema::ArrowError) -> Self {
        Self::new(ErrorKind::Arrow(error))
    }
}

/// The result of this crate's functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;
