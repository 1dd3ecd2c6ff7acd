//! `SkippedRegion`: a damaged part of a file that recovery skipped.

use std::fmt;

/// A region of the file skipped because it could not be read, as reported by
/// recovery: the file positions `[begin, end)` and why (C++'s
/// `SkippedRegion`; its `length()` is `end - begin`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRegion {
    /// Where the skipped region begins.
    pub begin: u64,
    /// Where the skipped region ends (where reading resumed, or the end of
    /// the file); not before `begin`.
    pub end: u64,
    /// What was wrong.
    pub message: String,
}

impl SkippedRegion {
    pub(crate) fn new(begin: u64, end: u64, message: String) -> Self {
        Self { begin, end: end.max(begin), message }
    }
}

impl fmt::Display for SkippedRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipped [{}, {}): {}", self.begin, self.end, self.message)
    }
}
