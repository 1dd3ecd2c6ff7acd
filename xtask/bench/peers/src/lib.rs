//! Shared inputs for the side-by-side benchmarks in `benches/`, which compare
//! riegeli-rs with peer implementations of the same formats on the same bytes.
//!
//! Every generator is seeded, so runs (and machines) see identical inputs.

use rand::{Rng, SeedableRng, rngs::StdRng};

/// `n` increasing nanosecond timestamps, one per millisecond with up to
/// ±50 µs of jitter, starting in 2026.
pub fn timestamps_ns(n: usize, seed: u64) -> Vec<i64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let start: i64 = 1_780_000_000_000_000_000;
    (0..n).map(|i| start + i as i64 * 1_000_000 + rng.gen_range(-50_000..=50_000)).collect()
}

/// `n` values uniform in `-100..=100`.
pub fn random_small_i32(n: usize, seed: u64) -> Vec<i32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-100..=100)).collect()
}

/// `n` values uniform over all of `i64` (every miniblock 64 bits wide).
pub fn full_width_i64(n: usize, seed: u64) -> Vec<i64> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.r#gen()).collect()
}
