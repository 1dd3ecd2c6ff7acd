//! Progress bars (indicatif) on long work, drawn only when standard error is a
//! terminal: bytes of input read, against the input's size when it is known.
//!
//! Messages printed while a bar is shown go through [`note`], which hides the
//! bar for the moment so that lines do not mix.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, WeakProgressBar};

/// The bar being drawn, if any, so that [`note`] can suspend it (weak: the bar
/// is cleared when its input is dropped).
static CURRENT: Mutex<Option<WeakProgressBar>> = Mutex::new(None);

/// Whether progress may be drawn: standard error is a terminal and
/// `RIEGELI_NO_PROGRESS` is not set.
pub(crate) fn enabled() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("RIEGELI_NO_PROGRESS").is_none()
}

/// A bar over `len` bytes (a byte counter when `len` is unknown), labelled `name`;
/// hidden unless `show` and [`enabled`]. It is cleared when dropped.
pub(crate) fn bar(name: &str, len: Option<u64>, show: bool) -> ProgressBar {
    if !show || !enabled() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
    let style = match len {
        Some(_) => ProgressStyle::with_template("{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}"),
        None => ProgressStyle::with_template("{prefix} {spinner} {bytes} {bytes_per_sec}"),
    };
    if let Ok(style) = style {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(name.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    if let Ok(mut current) = CURRENT.lock() {
        *current = Some(bar.downgrade());
    }
    bar
}

/// Prints `line` on standard error without garbling a bar being drawn.
pub(crate) fn note(line: &str) {
    let current = current();
    match current {
        Some(bar) => bar.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    }
}

/// Prints `line` on standard output without garbling a bar being drawn.
pub(crate) fn out(line: &str) {
    let current = current();
    match current {
        Some(bar) => bar.suspend(|| println!("{line}")),
        None => println!("{line}"),
    }
}

/// Clears the bar being drawn (before an error message, or at the end).
pub(crate) fn clear() {
    if let Ok(mut current) = CURRENT.lock()
        && let Some(bar) = current.take().and_then(|weak| weak.upgrade())
    {
        bar.finish_and_clear();
    }
}

fn current() -> Option<ProgressBar> {
    CURRENT.lock().ok()?.as_ref()?.upgrade().filter(|bar| !bar.is_finished())
}
