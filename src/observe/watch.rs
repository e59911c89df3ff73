//! Process sampling from /proc: the CPU and memory of watched processes (the target) during a cell,
//! and the generator's own CPU.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

/// How often memory is sampled while a cell runs.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// What one process used during a cell.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub(crate) struct ProcessUsage {
    /// The process id.
    pub(crate) pid: u32,
    /// CPU time over wall time, in percent of one core (above 100 with several busy threads).
    pub(crate) cpu_percent: f64,
    /// Largest resident set seen, in KiB (`rss_peak_kb` in schema 2 of the JSON report; default
    /// when absent, so that such a report reads as far as its `schema_version`, which names
    /// why it is refused).
    #[serde(default)]
    pub(crate) rss_peak_kib: u64,
    /// Mean resident set over the samples, in KiB (`rss_mean_kb` in schema 2).
    #[serde(default)]
    pub(crate) rss_mean_kib: u64,
}

/// CPU time a process has used so far (user + system), or None if it is gone.
pub(crate) fn cpu_time(pid: Option<u32>) -> Option<Duration> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name (which may contain spaces) start at field 3.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(
        ticks as f64 / clock_ticks_per_second(),
    ))
}

/// The kernel's USER_HZ: 100 on every Linux this runs on (the ABI fixes what /proc reports).
fn clock_ticks_per_second() -> f64 {
    100.0
}

fn resident_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Samples processes from a background thread until [`Watch::finish`].
pub(crate) struct Watch {
    stop: Arc<AtomicBool>,
    sampler: JoinHandle<Vec<Vec<u64>>>,
    pids: Vec<u32>,
    cpu_before: Vec<Option<Duration>>,
    started: Instant,
}

impl Watch {
    /// Starts watching `pids` (a process that does not exist reports zeros).
    pub(crate) fn start(pids: &[u32]) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let stop = stop.clone();
            let pids = pids.to_vec();
            std::thread::spawn(move || {
                let mut samples = vec![Vec::new(); pids.len()];
                loop {
                    for (pid, samples) in pids.iter().zip(&mut samples) {
                        if let Some(kb) = resident_kb(*pid) {
                            samples.push(kb);
                        }
                    }
                    if stop.load(Ordering::Relaxed) {
                        return samples;
                    }
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
        };
        Watch {
            stop,
            sampler,
            pids: pids.to_vec(),
            cpu_before: pids.iter().map(|pid| cpu_time(Some(*pid))).collect(),
            started: Instant::now(),
        }
    }

    /// Stops sampling and reports each process's usage since [`Watch::start`].
    pub(crate) fn finish(self) -> Vec<ProcessUsage> {
        let wall = self.started.elapsed().as_secs_f64();
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.sampler.join().unwrap_or_default();
        self.pids
            .iter()
            .zip(self.cpu_before)
            .zip(samples)
            .map(|((&pid, before), samples)| {
                let used = before
                    .zip(cpu_time(Some(pid)))
                    .map_or(0.0, |(before, after)| (after - before).as_secs_f64());
                ProcessUsage {
                    pid,
                    cpu_percent: if wall > 0.0 { 100.0 * used / wall } else { 0.0 },
                    rss_peak_kib: samples.iter().copied().max().unwrap_or(0),
                    rss_mean_kib: if samples.is_empty() {
                        0
                    } else {
                        samples.iter().sum::<u64>() / samples.len() as u64
                    },
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_a_busy_process() {
        let me = std::process::id();
        let started = Instant::now();
        let watch = Watch::start(&[me, u32::MAX]);
        // Spins until this process has used 200 ms of CPU, however long a busy machine takes
        // to give it (a spin of 300 ms of wall time got 13% of a core at load 13 on 2 cores).
        let used_before = cpu_time(None).unwrap();
        let mut counter = 0u64;
        while cpu_time(None).unwrap() - used_before < Duration::from_millis(200) {
            for _ in 0..100_000 {
                counter = std::hint::black_box(counter.wrapping_add(1));
            }
        }
        let usage = watch.finish();
        let wall = started.elapsed().as_secs_f64();
        assert_eq!(usage.len(), 2);
        // Those 200 ms (less a clock tick at either end) over at most the test's wall time: an
        // idle process shows ~0.
        let used = usage[0].cpu_percent / 100.0 * wall;
        assert!(used >= 0.18, "{used} s of CPU seen: {usage:?}");
        assert!(usage[0].rss_peak_kib > 1000, "{usage:?}");
        assert_eq!(usage[1].rss_peak_kib, 0, "a missing process reports zeros");
        assert!(cpu_time(None).is_some());
    }
}
