//! The fastest any reader can check a file's hashes on this machine: loads FILE into memory
//! (not timed), then hashes it in 64 KiB pieces on THREADS threads (default: every core) and
//! prints the seconds of the hashing, best of 5, as its last line. `cargo xtask bench limits`
//! puts it beside `dd` on the same file: every byte of a Riegeli file is hashed by a reader that
//! checks it, so no such reader can run faster than this.
//!
//! `cargo run --release -p riegeli-bench --bin hash_ceiling -- FILE [THREADS]`

#![allow(clippy::print_stdout, reason = "the output is the report")]

use std::hint::black_box;
use std::time::Instant;

/// The piece each hash call covers: the size of a Riegeli block.
const PIECE: usize = 64 << 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        return Err("usage: hash_ceiling FILE [THREADS]".into());
    };
    let threads: usize = match args.get(2) {
        Some(n) => n.parse()?,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    if threads == 0 {
        return Err("THREADS must be at least 1".into());
    }
    let data = std::fs::read(path)?;
    let pieces: Vec<&[u8]> = data.chunks(PIECE).collect();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        let total = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    let pieces = &pieces;
                    scope.spawn(move || {
                        pieces.iter().skip(t).step_by(threads).fold(0u64, |acc, p| acc ^ riegeli_hash::hash(p))
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap_or(0)).fold(0, |a, b| a ^ b)
        });
        black_box(total);
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!("{} bytes hashed on {threads} threads", data.len());
    println!("{best:.6}");
    Ok(())
}
