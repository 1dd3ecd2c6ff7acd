//! Opening inputs and outputs (`-` is standard input/output).

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::Path;

use anyhow::{Context, Result};

/// An input: a file (seekable) or standard input.
pub(crate) enum Input {
    File(File),
    Stdin(io::Stdin),
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::File(f) => f.read(buf),
            Self::Stdin(s) => s.read(buf),
        }
    }
}

impl Seek for Input {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        match self {
            Self::File(f) => f.seek(pos),
            Self::Stdin(_) => Err(io::Error::new(io::ErrorKind::Unsupported, "standard input cannot seek")),
        }
    }
}

/// Opens `path`, or standard input for `-`.
pub(crate) fn open(path: &Path) -> Result<Input> {
    if path.as_os_str() == "-" {
        return Ok(Input::Stdin(io::stdin()));
    }
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(Input::File(file))
}

/// Opens a file that must be seekable.
pub(crate) fn open_file(path: &Path) -> Result<File> {
    File::open(path).with_context(|| format!("cannot open {}", path.display()))
}

/// Creates `path` for writing, or standard output for `-`.
pub(crate) fn create(path: &Path) -> Result<Box<dyn Write>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufWriter::with_capacity(1 << 16, io::stdout())));
    }
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(Box::new(BufWriter::with_capacity(1 << 16, file)))
}

/// The size of a file input, if known.
pub(crate) fn size_of(input: &mut Input) -> Option<u64> {
    match input {
        Input::File(f) => {
            let here = f.stream_position().ok()?;
            let end = f.seek(io::SeekFrom::End(0)).ok()?;
            f.seek(io::SeekFrom::Start(here)).ok()?;
            Some(end)
        }
        Input::Stdin(_) => None,
    }
}

/// Whether the error is a closed pipe on output (e.g. `riegeli cat f | head`).
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| cause.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe))
}

/// Display name of a path argument.
pub(crate) fn name(path: &Path) -> String {
    if path.as_os_str() == "-" { "<stdin>".to_owned() } else { path.display().to_string() }
}
