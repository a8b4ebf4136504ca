//! Cold start and memory: each subject is started `rounds` times, the subjects taking turns in
//! each round (in a rotating order, so none always goes first after another's exit). Measured:
//! spawn → arrival of the `initialize` reply; resident memory after `initialized` and a settle;
//! and, in the first rounds, wake-ups (context switches of all threads) over one idle second.

use std::collections::BTreeMap;
use std::thread;
use std::time::Duration;

use crate::procfs;
use crate::stats::{median, ms};
use crate::subjects::{Scratch, Subject, start};

/// Time after `initialized` before memory is read: what the server does after the handshake
/// (watchers, configuration) is part of "after start".
const SETTLE: Duration = Duration::from_millis(150);
const IDLE_WINDOW: Duration = Duration::from_secs(1);
const IDLE_ROUNDS: usize = 3;

#[derive(Debug, Clone, Default)]
pub struct StartStats {
    pub init_ms: Vec<f64>,
    /// The round of each entry of `init_ms`, to pair subjects started back to back.
    pub init_rounds: Vec<usize>,
    pub rss_kib: Vec<f64>,
    pub idle_wakeups_per_s: Vec<f64>,
    pub threads: Vec<f64>,
    pub errors: Vec<String>,
}

impl StartStats {
    pub fn init_median(&self) -> Option<f64> {
        median(&self.init_ms)
    }
    pub fn rss_median(&self) -> Option<f64> {
        median(&self.rss_kib)
    }
    pub fn wakeups_median(&self) -> Option<f64> {
        median(&self.idle_wakeups_per_s)
    }
}

/// The per-round ratios `a / b` of the start times, for the rounds where both started: a slow phase
/// of the machine slows both subjects of a round, so these vary less than either median does.
pub fn paired_ratios(a: &StartStats, b: &StartStats) -> Vec<f64> {
    let by_round: BTreeMap<usize, f64> =
        b.init_rounds.iter().copied().zip(b.init_ms.iter().copied()).collect();
    a.init_rounds
        .iter()
        .zip(&a.init_ms)
        .filter_map(|(round, ms)| by_round.get(round).map(|floor| ms / floor))
        .collect()
}

fn one(subject: &Subject, round: usize, stats: &mut StartStats) -> Result<(), String> {
    let scratch = Scratch::new().map_err(|e| e.to_string())?;
    // No provider is contacted at start; the URL only has to be well formed.
    let (server, took) = start(subject, &scratch, "http://127.0.0.1:9")?;
    stats.init_ms.push(ms(took));
    stats.init_rounds.push(round);
    thread::sleep(SETTLE);
    let pid = server.pid();
    if let Some(rss) = procfs::rss_kib(pid) {
        stats.rss_kib.push(rss as f64);
    }
    if let Some(threads) = procfs::threads(pid) {
        stats.threads.push(threads as f64);
    }
    if round < IDLE_ROUNDS {
        let before = procfs::context_switches(pid);
        thread::sleep(IDLE_WINDOW);
        let after = procfs::context_switches(pid);
        stats.idle_wakeups_per_s.push((after - before) as f64 / IDLE_WINDOW.as_secs_f64());
    }
    server.stop();
    Ok(())
}

pub fn measure(subjects: &[Subject], rounds: usize) -> BTreeMap<&'static str, StartStats> {
    let mut all: BTreeMap<&'static str, StartStats> = BTreeMap::new();
    for round in 0..rounds {
        for k in 0..subjects.len() {
            let subject = &subjects[(round + k) % subjects.len()];
            let stats = all.entry(subject.name()).or_default();
            if let Err(e) = one(subject, round, stats) {
                stats.errors.push(e);
            }
        }
    }
    all
}
