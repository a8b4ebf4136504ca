//! Which provider delta arrived when: the text deltas the provider sent (with their send times)
//! matched to the notifications that carried them (with their arrival times). The server may
//! merge deltas that queued up, so a delta counts as delivered by the first notification that
//! brings the received text up to the delta's end; a delta whose text never arrives is lost.

use std::time::Instant;

/// One streamed reply, as measured.
#[derive(Debug, Clone, Default)]
pub struct StreamRun {
    pub sent: usize,
    /// Added latency of each provider delta that arrived, in milliseconds.
    pub latencies_ms: Vec<f64>,
    /// Provider deltas whose text never arrived.
    pub lost: usize,
    /// Whether the text that arrived is exactly the text sent.
    pub identical: bool,
    /// Notifications that carried text.
    pub notifications: usize,
    /// How far the provider itself fell behind its schedule at worst (ms).
    pub provider_behind_ms: f64,
    /// The provider's achieved rate (deltas/s).
    pub achieved_rate: f64,
    /// Server CPU time per provider delta (µs), and its context switches per delta.
    pub cpu_us_per_delta: Option<f64>,
    pub switches_per_delta: Option<f64>,
}

/// Matches provider deltas to the arrivals that completed them (by cumulative text length).
pub fn match_deltas(sent: &[(String, Instant)], arrived: &[(Instant, String)]) -> StreamRun {
    let expected: String = sent.iter().map(|(t, _)| t.as_str()).collect();
    let received: String = arrived.iter().map(|(_, t)| t.as_str()).collect();
    let mut latencies = Vec::with_capacity(sent.len());
    let mut lost = 0;
    let (mut j, mut covered, mut end) = (0usize, 0usize, 0usize);
    for (text, at) in sent {
        end += text.len();
        while covered < end && j < arrived.len() {
            covered += arrived[j].1.len();
            j += 1;
        }
        if covered >= end && j > 0 {
            latencies.push(crate::stats::ms(arrived[j - 1].0.saturating_duration_since(*at)));
        } else {
            lost += 1;
        }
    }
    let first = sent.first().map(|s| s.1);
    let last = sent.last().map(|s| s.1);
    let achieved_rate = match (first, last) {
        (Some(a), Some(b)) if b > a => (sent.len() - 1) as f64 / (b - a).as_secs_f64(),
        _ => 0.0,
    };
    StreamRun {
        sent: sent.len(),
        latencies_ms: latencies,
        lost,
        identical: expected == received,
        notifications: arrived.len(),
        achieved_rate,
        ..StreamRun::default()
    }
}
