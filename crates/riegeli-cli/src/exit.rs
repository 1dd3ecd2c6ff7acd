//! The errors that choose the exit code: [`Failed`] exits with 1 and [`Usage`] with 2 (any other
//! error exits with 1 and is printed on one line).

/// An error that means "the data is bad" (exit 1) rather than a usage error.
#[derive(Debug)]
pub(crate) struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("problems found")
    }
}

impl std::error::Error for Failed {}

/// A bad command line found after parsing (exit 2).
#[derive(Debug)]
pub(crate) struct Usage(pub(crate) String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}
