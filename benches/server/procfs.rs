//! What /proc tells about a running process: resident memory (now and peak), CPU time over all
//! its threads, context switches (wake-ups) and thread count.

use std::fs;
use std::time::Duration;

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Resident set size now, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

/// Peak resident set size, in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

pub fn threads(pid: u32) -> Option<u64> {
    status_kib(pid, "Threads:")
}

fn tasks(pid: u32) -> Vec<String> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// CPU time spent by all live threads (scheduler accounting, nanosecond resolution).
pub fn cpu(pid: u32) -> Duration {
    let nanos: u64 = tasks(pid)
        .iter()
        .filter_map(|task| fs::read_to_string(format!("/proc/{pid}/task/{task}/schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

/// Voluntary plus involuntary context switches of all live threads: each wake-up of a thread
/// that was waiting counts once.
pub fn context_switches(pid: u32) -> u64 {
    tasks(pid)
        .iter()
        .filter_map(|task| fs::read_to_string(format!("/proc/{pid}/task/{task}/status")).ok())
        .map(|status| {
            status
                .lines()
                .filter(|l| {
                    l.starts_with("voluntary_ctxt_switches:") || l.starts_with("nonvoluntary_ctxt_switches:")
                })
                .filter_map(|l| l.split(':').nth(1)?.trim().parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// The machine's load average over the last minute.
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}
