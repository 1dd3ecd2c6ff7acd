//! Tail tolerance, as policy (no I/O): when a request that has not answered
//! gets a hedged duplicate, derived from the first-byte latencies seen so
//! far, and how long a retry waits.

use std::time::Duration;

/// A request is hedged no sooner than this, however fast the server was.
pub(crate) const HEDGE_FLOOR: Duration = Duration::from_millis(50);

/// ... and no later than this, however slow (also the deadline before any
/// latency was seen).
pub(crate) const HEDGE_CEILING: Duration = Duration::from_secs(2);

/// Latencies seen before their percentile is trusted (before, the slowest
/// seen is, with a wider margin).
const MIN_SAMPLES: usize = 8;

/// The latencies kept: the most recent ones.
const KEPT: usize = 64;

/// The first-byte latencies of the most recent requests of an object.
#[derive(Debug, Default)]
pub(crate) struct Latencies {
    /// Microseconds, a ring of the last [`KEPT`].
    recent: Vec<u64>,
    next: usize,
}

impl Latencies {
    /// Notes the first-byte latency of a request that answered.
    pub(crate) fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        if self.recent.len() < KEPT {
            self.recent.push(micros);
        } else if let Some(slot) = self.recent.get_mut(self.next) {
            *slot = micros;
        }
        self.next = (self.next + 1) % KEPT;
    }

    /// How long a request may go without an answer before it is hedged:
    /// twice the 95th percentile of the recent first-byte latencies, within
    /// [`HEDGE_FLOOR`] and [`HEDGE_CEILING`]. Twice: a request is hedged when
    /// it is slower than the slow ones, not one in twenty. Before
    /// [`MIN_SAMPLES`] were seen, three times the slowest seen (the first
    /// requests of an object, asked for together, are hedged once the
    /// others' answers say they are late); before any, the ceiling.
    pub(crate) fn hedge_after(&self) -> Duration {
        let Some(&slowest) = self.recent.iter().max() else { return HEDGE_CEILING };
        if self.recent.len() < MIN_SAMPLES {
            return Duration::from_micros(slowest).saturating_mul(3).clamp(HEDGE_FLOOR, HEDGE_CEILING);
        }
        let mut sorted = self.recent.clone();
        sorted.sort_unstable();
        let at = (sorted.len() * 95).div_ceil(100).saturating_sub(1);
        let p95 = Duration::from_micros(sorted.get(at).copied().unwrap_or(u64::MAX));
        p95.saturating_mul(2).clamp(HEDGE_FLOOR, HEDGE_CEILING)
    }
}

/// How long a response body may go without a byte before the request is
/// given up as stalled (and retried): the hedge's deadline, four times, at
/// least a second, at most `timeout`.
pub(crate) fn stall_after(hedge_after: Duration, timeout: Duration) -> Duration {
    hedge_after.saturating_mul(4).max(Duration::from_secs(1)).min(timeout)
}

/// The wait before retry `attempt` (1, 2, ...): 100 ms, doubling, at most 2 s.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(100).saturating_mul(1 << attempt.saturating_sub(1).min(5)).min(Duration::from_secs(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_deadline_follows_the_slow_answers_within_its_bounds() {
        let mut latencies = Latencies::default();
        // No answer seen: the ceiling.
        assert_eq!(latencies.hedge_after(), HEDGE_CEILING);
        // Too few for a percentile: three times the slowest, within the bounds.
        latencies.record(ms(30));
        assert_eq!(latencies.hedge_after(), ms(90));
        latencies.record(ms(10));
        assert_eq!(latencies.hedge_after(), ms(90));
        latencies.record(ms(900));
        assert_eq!(latencies.hedge_after(), HEDGE_CEILING);
        let mut latencies = Latencies::default();
        for _ in 0..MIN_SAMPLES - 1 {
            latencies.record(ms(10));
        }
        assert_eq!(latencies.hedge_after(), HEDGE_FLOOR);
        latencies.record(ms(20));
        // Fast answers: the floor.
        assert_eq!(latencies.hedge_after(), HEDGE_FLOOR);
        // 100 answers: 90 of 30 ms, 10 of 200 ms. The 95th percentile is 200 ms; the
        // deadline twice that.
        let mut latencies = Latencies::default();
        for i in 0..100 {
            latencies.record(if i % 10 == 0 { ms(200) } else { ms(30) });
        }
        assert_eq!(latencies.hedge_after(), ms(400));
        // Only the last 64 count: 64 answers of 40 ms bring it down to 80 ms.
        for _ in 0..KEPT {
            latencies.record(ms(40));
        }
        assert_eq!(latencies.hedge_after(), ms(80));
        // One slow answer in 64 is under the 95th percentile: no change.
        latencies.record(ms(5000));
        assert_eq!(latencies.hedge_after(), ms(80));
        // A slow server: the ceiling.
        for _ in 0..KEPT {
            latencies.record(ms(3000));
        }
        assert_eq!(latencies.hedge_after(), HEDGE_CEILING);
    }

    #[test]
    fn retries_back_off_and_stalls_are_bounded() {
        let waits: Vec<Duration> = (1..=8).map(backoff).collect();
        assert_eq!(waits[..5], [ms(100), ms(200), ms(400), ms(800), ms(1600)]);
        assert!(waits[5..].iter().all(|&w| w == ms(2000)), "{waits:?}");
        assert_eq!(backoff(u32::MAX), ms(2000));
        assert_eq!(stall_after(ms(50), ms(10_000)), ms(1000));
        assert_eq!(stall_after(ms(2000), ms(10_000)), ms(8000));
        assert_eq!(stall_after(ms(2000), ms(3000)), ms(3000));
    }
}
