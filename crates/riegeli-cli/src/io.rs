//! Opening inputs and outputs (`-` is standard input/output; an `s3://`,
//! `gs://`, `az://` or `http(s)://` URL is an object, read by ranged requests).

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use indicatif::ProgressBar;
use riegeli_object_store::FetchConfig;
use riegeli_records::ReadHints;

use crate::exit::Usage;
use crate::progress;

/// A path argument: a file, or `-` for standard input/output.
pub(crate) type PathArg = PathBuf;

/// An input: a file or object (seekable) or standard input, with a progress
/// bar that follows the bytes read (hidden unless [`Input::with_progress`]
/// showed it). Opened once by [`open`]: a command that reads it several ways
/// (finding an ArrayRecord trailer, the index, the metadata, the records)
/// reads clones of it ([`Input::seekable`]).
pub(crate) struct Input {
    src: Src,
    bar: ProgressBar,
    name: String,
}

enum Src {
    Seekable(Seekable),
    Stdin(io::Stdin),
}

/// A local file, or an object in object storage.
pub(crate) type Seekable = riegeli_object_store::Location;

impl Input {
    /// Whether the input is standard input (which cannot seek).
    pub(crate) fn is_stdin(&self) -> bool {
        matches!(self.src, Src::Stdin(_))
    }

    /// The input's name in messages (see [`name`]).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Another reader of the opened file or object, from its start, sharing
    /// its handle (a file) or its fetched bytes (an object); `None` for
    /// standard input.
    pub(crate) fn seekable(&self) -> Option<Seekable> {
        let Src::Seekable(seekable) = &self.src else { return None };
        let mut other = seekable.clone();
        other.seek(io::SeekFrom::Start(0)).ok()?;
        Some(other)
    }

    /// Another input reading the opened file or object from its start (see
    /// [`seekable`](Self::seekable)), without a progress bar; `None` for standard input.
    pub(crate) fn again(&self) -> Option<Input> {
        let src = Src::Seekable(self.seekable()?);
        Some(Input { src, bar: ProgressBar::hidden(), name: self.name.clone() })
    }

    /// Shows a progress bar of the bytes read (labelled `name`) when `show` and
    /// standard error is a terminal.
    pub(crate) fn with_progress(mut self, name: &str, show: bool) -> Self {
        let len = size_of(&mut self);
        let here = match &mut self.src {
            Src::Seekable(f) => f.stream_position().unwrap_or(0),
            Src::Stdin(_) => 0,
        };
        self.bar = progress::bar(name, len, show);
        self.bar.set_position(here);
        self
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match &mut self.src {
            Src::Seekable(f) => f.read(buf)?,
            Src::Stdin(s) => s.read(buf)?,
        };
        self.bar.inc(n as u64);
        Ok(n)
    }
}

impl Seek for Input {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        match &mut self.src {
            Src::Seekable(f) => {
                let here = f.seek(pos)?;
                self.bar.set_position(here);
                Ok(here)
            }
            Src::Stdin(_) => Err(io::Error::new(io::ErrorKind::Unsupported, "standard input cannot seek")),
        }
    }
}

/// What a reader says it will read reaches the file or object (an object
/// fetches nothing ahead past a byte range).
impl ReadHints for Input {
    fn will_stop_at(&self, end: u64) {
        if let Src::Seekable(seekable) = &self.src {
            seekable.will_stop_at(end);
        }
    }

    fn will_read(&self, range: std::ops::Range<u64>) {
        if let Src::Seekable(seekable) = &self.src {
            seekable.will_read(range);
        }
    }
}

/// Opens `path`: standard input for `-`, else a file or an object's URL, as
/// every reader of riegeli-rs opens one ([`Seekable::open`]). Each command
/// opens each of its inputs once.
pub(crate) fn open(path: &Path) -> Result<Input> {
    let src = if path.as_os_str() == "-" {
        Src::Stdin(io::stdin())
    } else {
        let mut config = FetchConfig { read_from_start: FROM_START.load(Ordering::Relaxed), ..FetchConfig::default() };
        let objects = OBJECTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(dir) = &objects.cache_dir {
            config.cache_dir = Some(dir.clone());
        }
        drop(objects);
        let seekable = Seekable::open(path, config)?;
        if let Some(object) = seekable.object() {
            let mut objects = OBJECTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if objects.stats {
                objects.opened.push(object.clone());
            }
        }
        Src::Seekable(seekable)
    };
    Ok(Input { src, bar: ProgressBar::hidden(), name: name(path) })
}

/// How objects are opened (`--cache-dir`), and those opened, for `--stats`.
struct Objects {
    cache_dir: Option<PathBuf>,
    stats: bool,
    opened: Vec<riegeli_object_store::ObjectSource>,
}

static OBJECTS: Mutex<Objects> = Mutex::new(Objects { cache_dir: None, stats: false, opened: Vec::new() });

/// `--cache-dir` and `--stats`.
pub(crate) fn configure_objects(cache_dir: Option<PathBuf>, stats: bool) {
    let mut objects = OBJECTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    objects.cache_dir = cache_dir;
    objects.stats = stats;
}

/// With `--stats`, what each object opened fetched, on stderr.
pub(crate) fn print_stats() {
    let objects = OBJECTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for object in &objects.opened {
        let s = object.stats();
        eprintln!(
            "riegeli: {}: {} requests, {} bytes fetched; cache: {} hits ({} bytes), {} misses, {} damaged; {} retries, {} hedges, {} refetched",
            object.url(),
            s.requests,
            s.bytes,
            s.cache_hits,
            s.cache_bytes,
            s.cache_misses,
            s.cache_damaged,
            s.retries,
            s.hedges,
            s.refetches
        );
    }
}

/// Whether the command reads its files whole, from their start.
static FROM_START: AtomicBool = AtomicBool::new(false);

/// Tells [`open`] that the command reads its files whole, from their start: an object's
/// first bytes are then fetched with its opening (see `FetchConfig::read_from_start`), which
/// saves a round trip. Not for a command that reads only an index, some records or a range.
pub(crate) fn read_objects_from_start() {
    FROM_START.store(true, Ordering::Relaxed);
}

/// Refuses an output that is also one of the inputs: creating it would truncate the input.
pub(crate) fn check_output_is_not_an_input<'a>(
    out: &Path,
    inputs: impl IntoIterator<Item = &'a Path>,
) -> Result<(), Usage> {
    if out.as_os_str() == "-" {
        return Ok(());
    }
    let same = Usage(format!("{}: the output is also an input; write to another file", out.display()));
    if out.to_str().is_some_and(riegeli_object_store::is_url) {
        return if inputs.into_iter().any(|input| input == out) { Err(same) } else { Ok(()) };
    }
    let Ok(out_real) = out.canonicalize() else { return Ok(()) };
    for input in inputs {
        if input.as_os_str() != "-" && input.canonicalize().is_ok_and(|real| real == out_real) {
            return Err(Usage(format!("{}: the output is also an input; write to another file", out.display())));
        }
    }
    Ok(())
}

/// Output buffer size: large writes, few system calls.
const OUTPUT_BUFFER: usize = 1 << 20;

/// An output: standard output, or a file or an object created by
/// [`Destination::create`](riegeli_object_store::Destination::create), the one way every
/// writer of riegeli-rs creates a path or a URL. [`finish`](Output::finish) it: an object
/// appears only then, and one dropped unfinished (a failed command) is aborted.
pub(crate) struct Output(BufWriter<Target>);

enum Target {
    Stdout(Box<dyn Write + Send>),
    Dest(riegeli_object_store::Destination),
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Stdout(out) => out.write(buf),
            Self::Dest(dest) => dest.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Stdout(out) => out.flush(),
            Self::Dest(dest) => dest.flush(),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Output {
    /// Writes what is buffered and finishes the file or object (completing an upload).
    pub(crate) fn finish(self) -> Result<()> {
        match self.0.into_inner().map_err(io::IntoInnerError::into_error)? {
            Target::Stdout(mut out) => out.flush()?,
            Target::Dest(dest) => dest.finish()?,
        }
        Ok(())
    }
}

/// Creates `path` (a path or an object's URL) for writing, or standard output for `-`. The
/// writer can move to another thread (a `RecordWriter`'s I/O thread).
pub(crate) fn create(path: &Path) -> Result<Output> {
    if path.as_os_str() == "-" {
        return Ok(Output(BufWriter::with_capacity(OUTPUT_BUFFER, Target::Stdout(stdout_file()))));
    }
    let dest = riegeli_object_store::Destination::create(path, riegeli_object_store::UploadConfig::default())?;
    Ok(Output(BufWriter::with_capacity(OUTPUT_BUFFER, Target::Dest(dest))))
}

/// Standard output as a file of its own descriptor: `Stdout` is line-buffered
/// and searches every write for a newline, which for binary output is pure cost.
/// (Falls back to `Stdout` where the descriptor cannot be duplicated.)
fn stdout_file() -> Box<dyn Write + Send> {
    #[cfg(unix)]
    let owned = std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned();
    #[cfg(windows)]
    let owned = std::os::windows::io::AsHandle::as_handle(&io::stdout()).try_clone_to_owned();
    #[cfg(any(unix, windows))]
    if let Ok(owned) = owned {
        return Box::new(File::from(owned));
    }
    Box::new(io::stdout())
}

/// The size of a file input, if known.
pub(crate) fn size_of(input: &mut Input) -> Option<u64> {
    match &mut input.src {
        Src::Seekable(Seekable::Object(o)) => Some(o.size()),
        Src::Seekable(f) => {
            let here = f.stream_position().ok()?;
            let end = f.seek(io::SeekFrom::End(0)).ok()?;
            f.seek(io::SeekFrom::Start(here)).ok()?;
            Some(end)
        }
        Src::Stdin(_) => None,
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
