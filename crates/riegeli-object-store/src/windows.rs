//! The read-ahead windows: what a read that finds nothing fetched asks for,
//! the windows a sequential read keeps ahead of itself, and the first windows
//! of an object to be read from its start. Policy only: the cache asks for
//! what these say.

use std::ops::Range;

use crate::config::FetchConfig;

/// The read-ahead window that follows a run of sequential reads `run` bytes
/// long: as long as the run, from an eighth of a window up to a whole one.
fn window_after(config: &FetchConfig, run: u64) -> u64 {
    let window = config.sequential_window.max(1);
    run.clamp((window / 8).max(1), window)
}

/// The most ranges [`first_windows`] asks for.
const MOST_FIRST_WINDOWS: usize = 64;

/// The ranges a sequential read from the start of an object asks for first:
/// what its first read fetches ([`FetchConfig::min_fetch`]), then the
/// read-ahead's windows as they grow (see [`next_window`]), then whole
/// windows, half the read-ahead's depth of them (at least one). At most
/// [`FetchConfig::max_in_flight`] ranges, and never more than
/// [`MOST_FIRST_WINDOWS`] (a configuration that bounds neither the depth nor
/// the requests in flight, with tiny windows, would ask for billions).
///
/// The windows past the growing ones keep the connection busy while the
/// requests that follow them, made once the opening's answer came, make
/// their round trip: with only the growing windows asked for, nothing
/// arrived for most of a round trip (20 ms on the bench, of a read of about
/// 120 ms).
pub(crate) fn first_windows(config: &FetchConfig) -> Vec<Range<u64>> {
    let window = config.sequential_window.max(1);
    let whole = (config.sequential_depth / 2).max(1);
    let most = config.max_in_flight.clamp(1, MOST_FIRST_WINDOWS);
    let mut cursor = config.min_fetch.max(1);
    let mut ranges = Vec::new();
    ranges.push(0..cursor);
    let mut wholes = 0;
    while cursor < u64::MAX && wholes < whole && ranges.len() < most {
        let size = window_after(config, cursor);
        let end = cursor.saturating_add(size);
        ranges.push(cursor..end);
        wholes += u64::from(size == window);
        cursor = end;
    }
    ranges
}

/// What a read of `len` bytes at `pos` asks for when none of its bytes is
/// fetched or being fetched: its own bytes, at least
/// [`FetchConfig::min_fetch`] (a chunk header and what follows), and past
/// the `limit` of a byte range at least an eighth of a window (reading
/// finishes the chunk that crosses it in pieces larger than a minimal fetch,
/// but with no window ahead); then, for a read from the very start of an
/// object with no limit, the read-ahead's first window after them. A read
/// from the start is most often the first of a sequential read: asked for
/// together, reading on waits for no second round trip (at most an eighth
/// of a window is fetched in vain).
pub(crate) fn on_miss(
    config: &FetchConfig,
    pos: u64,
    len: u64,
    limit: Option<u64>,
) -> (Range<u64>, Option<Range<u64>>) {
    let mut want = len.max(config.min_fetch);
    if limit.is_some_and(|limit| pos >= limit) {
        want = want.max(config.sequential_window / 8);
    }
    let own = pos..pos.saturating_add(want);
    let first = (pos == 0 && limit.is_none()).then(|| {
        let first = window_after(config, want);
        want..want.saturating_add(first)
    });
    (own, first)
}

/// The next window a sequential read at `pos` asks for, when what is fetched
/// or being fetched from `pos` on runs without a gap to `covered` (`None`:
/// far enough ahead). Whole windows are kept up to
/// [`FetchConfig::sequential_depth`] windows ahead of `pos`, never past the
/// object's `size` nor the `limit` of a byte range.
///
/// The first windows of a run of sequential reads that began at `run_start`
/// are smaller: each is as long as the run so far, from an eighth of a window
/// up to a whole one. Requests in flight share the connection's bandwidth, so
/// eight whole windows asked for at once would all arrive together, the
/// reader idle until then and the windows after them asked for only then;
/// small first windows arrive first, and reading them keeps the rest coming.
/// A reader with a limit (one byte range of an object split among many) asks
/// for whole windows at once: fewer requests for its range.
pub(crate) fn next_window(
    config: &FetchConfig,
    size: u64,
    limit: Option<u64>,
    run_start: u64,
    pos: u64,
    covered: u64,
) -> Option<Range<u64>> {
    let window = config.sequential_window.max(1);
    let reach = window.saturating_mul(config.sequential_depth.max(1) - 1);
    let stop = size.min(limit.unwrap_or(u64::MAX));
    if covered >= stop || covered.saturating_sub(pos) > reach {
        return None;
    }
    let run = if limit.is_some() { window } else { covered - run_start.min(covered) };
    Some(covered..covered.saturating_add(window_after(config, run)).min(stop))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_windows_run_on_from_the_start_to_whole_windows_whatever_the_config() {
        let (k, m) = (64u64 << 10, 1u64 << 20);
        let ranges = first_windows(&FetchConfig::default());
        let whole = 8 * (k + m);
        assert_eq!(
            ranges,
            [
                0..k,
                k..k + m,
                k + m..2 * (k + m),
                2 * (k + m)..4 * (k + m),
                4 * (k + m)..8 * (k + m),
                whole..whole + 8 * m,
                whole + 8 * m..whole + 16 * m,
                whole + 16 * m..whole + 24 * m,
                whole + 24 * m..whole + 32 * m,
            ]
        );
        // Half the depth in whole windows, at least one; no more requests than may be in flight.
        for (depth, wholes) in [(0, 1), (1, 1), (2, 1), (3, 1), (6, 3), (16, 8)] {
            let config = FetchConfig { sequential_depth: depth, max_in_flight: 64, ..FetchConfig::default() };
            let ranges = first_windows(&config);
            assert_eq!(ranges.iter().filter(|r| r.end - r.start == 8 * m).count(), wholes, "depth {depth}");
            assert_eq!(ranges.len(), 5 + wholes, "depth {depth}");
        }
        let extremes = [(1, 1, 8, 16), (0, 0, 8, 16), (u64::MAX, u64::MAX, u64::MAX, usize::MAX), (1, u64::MAX, 8, 16)];
        for (min_fetch, sequential_window, sequential_depth, max_in_flight) in extremes.into_iter().chain([
            (1 << 30, 8 << 20, 8, 16),
            (1, 1 << 20, u64::MAX, 3),
            (1, 1, u64::MAX, 0),
            (1, 1, u64::MAX, usize::MAX),
        ]) {
            let config =
                FetchConfig { min_fetch, sequential_window, sequential_depth, max_in_flight, ..FetchConfig::default() };
            let ranges = first_windows(&config);
            assert!(ranges.len() <= max_in_flight.clamp(1, MOST_FIRST_WINDOWS) && ranges[0].start == 0, "{ranges:?}");
            assert!(ranges.iter().all(|r| r.start < r.end), "{ranges:?}");
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start), "{ranges:?}");
        }
    }

    #[test]
    fn a_miss_asks_for_its_bytes_and_from_the_start_the_first_window() {
        let (k, m) = (64u64 << 10, 1u64 << 20);
        let config = FetchConfig { sequential_window: 8 * m, ..FetchConfig::default() };
        assert_eq!(on_miss(&config, 0, 100, None), (0..k, Some(k..k + m)));
        assert_eq!(on_miss(&config, 0, 3 * m, None), (0..3 * m, Some(3 * m..6 * m)));
        assert_eq!(on_miss(&config, 5, 100, None), (5..5 + k, None));
        // A byte range: no first window; past its end, an eighth of a window.
        assert_eq!(on_miss(&config, 0, 100, Some(10 * m)), (0..k, None));
        assert_eq!(on_miss(&config, 10 * m, 100, Some(10 * m)), (10 * m..11 * m, None));
        assert_eq!(on_miss(&config, u64::MAX - 1, 100, None), (u64::MAX - 1..u64::MAX, None));
    }

    #[test]
    fn windows_grow_with_the_run_and_stop_at_the_depth_the_size_and_the_limit() {
        let m = 1u64 << 20;
        let config = FetchConfig { sequential_window: 8 * m, sequential_depth: 4, ..FetchConfig::default() };
        let size = 1000 * m;
        // A run of 2 MiB from 10 MiB: the next window is as long as the run.
        assert_eq!(next_window(&config, size, None, 10 * m, 12 * m, 12 * m), Some(12 * m..14 * m));
        // Short runs: an eighth of a window; long ones: a whole window.
        assert_eq!(next_window(&config, size, None, 12 * m, 12 * m, 12 * m), Some(12 * m..13 * m));
        assert_eq!(next_window(&config, size, None, 0, 100 * m, 100 * m), Some(100 * m..108 * m));
        // Three windows ahead of the read at most (a depth of 4), then nothing.
        assert_eq!(next_window(&config, size, None, 0, 100 * m, 124 * m), Some(124 * m..132 * m));
        assert_eq!(next_window(&config, size, None, 0, 100 * m, 124 * m + 1), None);
        // Never past the object's end.
        assert_eq!(next_window(&config, 105 * m, None, 0, 100 * m, 100 * m), Some(100 * m..105 * m));
        assert_eq!(next_window(&config, 105 * m, None, 0, 100 * m, 105 * m), None);
        // A limit: whole windows from the first, none past it.
        assert_eq!(next_window(&config, size, Some(20 * m), 12 * m, 12 * m, 12 * m), Some(12 * m..20 * m));
        assert_eq!(next_window(&config, size, Some(20 * m), 12 * m, 12 * m, 20 * m), None);
    }
}
