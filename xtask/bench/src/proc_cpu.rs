//! CPU time from Linux's `/proc`, for the benchmarks (`None` where there is none): the one
//! reader of it, included with `#[path]` by each benchmark binary that reports CPU.

use std::path::Path;
use std::time::Duration;

/// Clock ticks per second of `/proc`'s times (`USER_HZ`, 100 on Linux).
const TICKS_PER_SECOND: u64 = 100;

fn ticks(n: u64) -> Duration {
    Duration::from_millis(n * 1000 / TICKS_PER_SECOND)
}

/// The name and CPU time (user + system) of the task whose `stat` file is `path`
/// (`/proc/self/stat`, `/proc/PID/stat`, `/proc/self/task/TID/stat`).
pub(crate) fn task_cpu(path: &Path) -> Option<(String, Duration)> {
    let stat = std::fs::read_to_string(path).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let name = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let used = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((name, ticks(used)))
}

/// CPU time of this process (user + system).
#[allow(dead_code, reason = "not every binary including this file reports it")]
pub(crate) fn process_cpu() -> Option<Duration> {
    task_cpu(Path::new("/proc/self/stat")).map(|(_, used)| used)
}

/// The machine's busy CPU time, all cores together: every state of `/proc/stat`'s first line
/// but idle and iowait.
#[allow(dead_code, reason = "not every binary including this file reports it")]
pub(crate) fn machine_busy() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    // user nice system idle iowait irq softirq steal
    let v: Vec<u64> = line.split_whitespace().take(8).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    let busy = v.iter().sum::<u64>() - v.get(3)? - v.get(4)?;
    Some(ticks(busy))
}
