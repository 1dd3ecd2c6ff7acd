//! `SkippedRegion`: a damaged part of a file that recovery skipped.

use std::fmt;

/// A region of the file skipped because it could not be read, as reported by
/// recovery: the file positions `[begin, end)` and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRegion {
    begin: u64,
    end: u64,
    message: String,
}

impl SkippedRegion {
    pub(crate) fn new(begin: u64, end: u64, message: String) -> Self {
        Self { begin, end: end.max(begin), message }
    }
    /// Where the skipped region begins.
    pub fn begin(&self) -> u64 {
        self.begin
    }
    /// Where the skipped region ends (where reading resumed, or the end of the file).
    pub fn end(&self) -> u64 {
        self.end
    }
    /// The number of bytes skipped.
    pub fn len(&self) -> u64 {
        self.end - self.begin
    }
    /// Whether no byte was skipped.
    pub fn is_empty(&self) -> bool {
        self.begin == self.end
    }
    /// What was wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SkippedRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipped [{}, {}): {}", self.begin, self.end, self.message)
    }
}
