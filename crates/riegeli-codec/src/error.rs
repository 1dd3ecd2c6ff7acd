//! The error type of riegeli-codec.

/// What went wrong while decoding or encoding chunk data, and where.
///
/// `offset` is the byte offset within the chunk data (or within the decoded
/// buffer named by `what`) where the problem was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at offset {offset} of {what}")]
pub struct CodecError {
    what: &'static str,
    offset: u64,
    kind: CodecErrorKind,
}

/// The kinds of [`CodecError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecErrorKind {
    /// The input ends too early.
    #[error("truncated: needed {needed} more bytes")]
    Truncated {
        /// Bytes missing (at least).
        needed: u64,
    },
    /// A varint is longer than its type allows or overflows it.
    #[error("varint overflows {bits} bits")]
    VarintOverflow {
        /// 32 or 64.
        bits: u32,
    },
    /// A varint is not in its shortest form where the format requires it.
    #[error("non-canonical varint")]
    NonCanonicalVarint,
    /// The data contradicts itself or its chunk header.
    #[error("invalid data: {reason}")]
    Invalid {
        /// What is inconsistent.
        reason: &'static str,
    },
    /// A declared size exceeds a configured limit.
    #[error("{limit} exceeded: {requested} > {max}")]
    LimitExceeded {
        /// The limit's name.
        limit: &'static str,
        /// The size asked for by the data.
        requested: u64,
        /// The limit.
        max: u64,
    },
    /// A feature of the format this build does not support (for example a
    /// compression type whose cargo feature is off).
    #[error("unsupported: {what}")]
    Unsupported {
        /// What is unsupported.
        what: &'static str,
    },
    /// The underlying compressor or decompressor failed.
    #[error("{codec} failed: {message}")]
    Compression {
        /// The codec.
        codec: &'static str,
        /// Its message.
        message: String,
    },
}

impl CodecError {
    /// An error of `kind` at `offset` of `what`.
    pub fn new(what: &'static str, offset: u64, kind: CodecErrorKind) -> Self {
        Self { what, offset, kind }
    }

    pub(crate) fn truncated(what: &'static str, offset: u64, needed: u64) -> Self {
        Self::new(what, offset, CodecErrorKind::Truncated { needed })
    }

    pub(crate) fn invalid(what: &'static str, offset: u64, reason: &'static str) -> Self {
        Self::new(what, offset, CodecErrorKind::Invalid { reason })
    }

    pub(crate) fn limit(what: &'static str, offset: u64, limit: &'static str, requested: u64, max: u64) -> Self {
        Self::new(what, offset, CodecErrorKind::LimitExceeded { limit, requested, max })
    }

    /// The kind of error.
    pub fn kind(&self) -> &CodecErrorKind {
        &self.kind
    }

    /// The part of the data where the error was found (e.g. `"simple chunk sizes"`).
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// The byte offset within [`what`](Self::what).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The same error, moved `delta` bytes later and renamed to `what` (for
    /// errors of a part reported as errors of the whole).
    pub fn within(mut self, what: &'static str, delta: u64) -> Self {
        self.what = what;
        self.offset = self.offset.saturating_add(delta);
        self
    }
}
