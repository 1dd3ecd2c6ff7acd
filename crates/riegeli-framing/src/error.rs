//! The error type of riegeli-framing.

use crate::position::PositionOverflow;

/// What went wrong while framing or parsing, and at which file position.
///
/// Every error carries the physical file position of the structure involved
/// (the block header or chunk that failed), so that recovery and `riegeli verify`
/// can report it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at file position {pos}")]
pub struct FramingError {
    pos: u64,
    kind: FramingErrorKind,
}

/// The kinds of [`FramingError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FramingErrorKind {
    /// The input ends before the structure does. Not corruption when more input
    /// may follow: feed at least `needed` bytes (counted from the start of the
    /// slice that was passed) and call again.
    #[error("need more input: {what} needs {needed} bytes, {have} available")]
    Incomplete {
        /// The structure being read.
        what: &'static str,
        /// Bytes of input needed in all.
        needed: u64,
        /// Bytes of input given.
        have: u64,
    },
    /// A stored hash does not match the bytes it covers (spec: "header_hash does
    /// not match").
    #[error("{what} hash mismatch: stored {stored:#018x}, computed {computed:#018x}")]
    HashMismatch {
        /// The structure whose hash failed.
        what: &'static str,
        /// The hash stored in the file.
        stored: u64,
        /// The hash of the bytes read.
        computed: u64,
    },
    /// A block header whose hash matches but whose fields break the spec's
    /// constraints (`previous_chunk % kBlockSize < kUsableBlockSize && next_chunk > 0
    /// && (next_chunk - 1) % kBlockSize >= kBlockHeaderSize`).
    #[error("invalid block header: {reason}")]
    InvalidBlockHeader {
        /// The constraint broken.
        reason: &'static str,
    },
    /// A valid block header inside a chunk that disagrees with the chunk's
    /// position or length.
    #[error("block header {field} is {found}, but the chunk implies {expected}")]
    BlockHeaderMismatch {
        /// `previous_chunk` or `next_chunk`.
        field: &'static str,
        /// The value implied by the chunk being read.
        expected: u64,
        /// The value stored in the block header.
        found: u64,
    },
    /// A chunk header whose hash matches but whose fields are impossible.
    #[error("invalid chunk header: {reason}")]
    InvalidChunkHeader {
        /// The problem.
        reason: &'static str,
    },
    /// A chunk cannot begin at this position (inside or right after a block header).
    #[error("not a possible chunk boundary")]
    InvalidChunkBoundary,
    /// Position arithmetic overflowed `u64`.
    #[error("{what} overflows the 64-bit file position space")]
    Overflow {
        /// The quantity being computed.
        what: &'static str,
    },
}

impl FramingError {
    pub(crate) fn new(pos: u64, kind: FramingErrorKind) -> Self {
        Self { pos, kind }
    }

    /// An error of `kind` at file position `pos` (for layers above framing
    /// that find framing problems themselves).
    pub fn from_kind(pos: u64, kind: FramingErrorKind) -> Self {
        Self::new(pos, kind)
    }

    pub(crate) fn incomplete(pos: u64, what: &'static str, needed: u64, have: usize) -> Self {
        Self::new(pos, FramingErrorKind::Incomplete { what, needed, have: have as u64 })
    }

    pub(crate) fn hash_mismatch(pos: u64, what: &'static str, stored: u64, computed: u64) -> Self {
        Self::new(pos, FramingErrorKind::HashMismatch { what, stored, computed })
    }

    pub(crate) fn overflow(pos: u64, what: &'static str) -> Self {
        Self::new(pos, FramingErrorKind::Overflow { what })
    }

    /// The kind of error.
    pub fn kind(&self) -> &FramingErrorKind {
        &self.kind
    }

    /// The physical file position of the block header or chunk involved.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Whether more input could resolve the error (see [`FramingErrorKind::Incomplete`]).
    pub fn is_incomplete(&self) -> bool {
        matches!(self.kind, FramingErrorKind::Incomplete { .. })
    }

    /// The number of input bytes needed, if the error is [`FramingErrorKind::Incomplete`].
    pub fn needed(&self) -> Option<u64> {
        match self.kind {
            FramingErrorKind::Incomplete { needed, .. } => Some(needed),
            _ => None,
        }
    }

    /// Whether the error means the bytes are damaged (as opposed to merely incomplete).
    pub fn is_corruption(&self) -> bool {
        !self.is_incomplete()
    }
}

/// Attaches a position and a description to a [`PositionOverflow`].
pub(crate) trait OverflowAt<T> {
    fn at(self, pos: u64, what: &'static str) -> Result<T, FramingError>;
}

impl<T> OverflowAt<T> for Result<T, PositionOverflow> {
    #[inline]
    fn at(self, pos: u64, what: &'static str) -> Result<T, FramingError> {
        self.map_err(|PositionOverflow| FramingError::overflow(pos, what))
    }
}
