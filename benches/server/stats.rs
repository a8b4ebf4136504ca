//! Order statistics and the number formats the report uses.

use std::time::Duration;

/// The `p`-th percentile (0–100) by nearest rank; `None` for no samples.
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

pub fn median(samples: &[f64]) -> Option<f64> {
    percentile(samples, 50.0)
}

pub fn ms(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// Milliseconds with precision that suits the size: `0.042 ms`, `1.38 ms`, `198 ms`.
pub fn fmt_ms(value: f64) -> String {
    if value < 1.0 {
        format!("{value:.3} ms")
    } else if value < 10.0 {
        format!("{value:.2} ms")
    } else if value < 100.0 {
        format!("{value:.1} ms")
    } else {
        format!("{value:.0} ms")
    }
}

pub fn fmt_opt_ms(value: Option<f64>) -> String {
    value.map_or_else(|| "—".into(), fmt_ms)
}

pub fn fmt_mib(kib: f64) -> String {
    format!("{:.1} MB", kib * 1024.0 / 1e6)
}

/// Thousands separated by commas: `10,000`.
pub fn fmt_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
