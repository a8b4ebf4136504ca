//! The pure parts of the benchmark suite (`benches/server`, run by scripts/bench), which a
//! `harness = false` bench cannot test itself: writing docs/benchmarks.md keeps every hand-written
//! section, scripts/bench-patch's table is read back whole, delivered deltas are matched to the
//! notifications that completed them (merged ones included) and lost ones counted.

#![allow(dead_code)]

#[path = "../benches/server/delivery.rs"]
mod delivery;
#[path = "../benches/server/patch.rs"]
mod patch;
#[path = "../benches/server/report.rs"]
mod report;
#[path = "../benches/server/stats.rs"]
mod stats;

use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use report::{BEGIN, END, Met, Row, Section};

const HAND_WRITTEN: &str = "# Benchmarks\n\n**How to run.** scripts/bench.\n\n## apply_patch (editing engine)\n\nBy hand.\n\n## Neovim plugin\n\nAlso by hand.\n";

fn generated(value: &str) -> String {
    let mut section = Section::new("Streaming", "How.");
    section.rows.push(Row::new("1,000 deltas/s", "p99 < 1 ms", value, "floor 0.03 ms", Met::No));
    report::markdown(&["- Command: `scripts/bench`".to_string()], &[section])
}

#[test]
fn the_generated_part_goes_before_the_hand_written_sections_and_keeps_them() {
    let doc = report::splice(HAND_WRITTEN, &generated("p99 3 ms"));
    let expected = format!(
        "# Benchmarks\n\n**How to run.** scripts/bench.\n\n{}\n## apply_patch (editing engine)\n\nBy hand.\n\n## Neovim plugin\n\nAlso by hand.\n",
        generated("p99 3 ms")
    );
    assert_eq!(doc, expected);
}

#[test]
fn a_second_run_replaces_only_the_generated_part() {
    let first = report::splice(HAND_WRITTEN, &generated("p99 3 ms"));
    let second = report::splice(&first, &generated("p99 0.8 ms"));
    assert_eq!(second, report::splice(HAND_WRITTEN, &generated("p99 0.8 ms")));
    assert_eq!(second.matches(BEGIN).count(), 1);
    assert_eq!(second.matches(END).count(), 1);
    assert!(!second.contains("p99 3 ms"), "the old numbers are gone");
}

#[test]
fn the_table_says_target_measured_reference_and_verdict() {
    let text = generated("p99 3 ms");
    assert!(text.starts_with(BEGIN) && text.trim_end().ends_with(END), "{text}");
    assert!(text.contains("| measure | target | agentls | peer / floor (same run) | met? |"), "{text}");
    assert!(
        text.contains("| 1,000 deltas/s | p99 < 1 ms | p99 3 ms | floor 0.03 ms | **not met** |"),
        "{text}"
    );
}

#[test]
fn the_bench_patch_table_is_read_whole() {
    // scripts/bench-patch's output, as printed.
    let output = "agentls baseline peak RSS (one-line patch): 11.6 MiB\n\
        workload    agentls git apply GNU patch   input MiB    agentls RSS  git apply RSS\n\
        a              28.8      89.0      20.3         2.8       17.3 MiB       10.9 MiB\n\
        b              57.1     135.9     306.2         0.4       13.8 MiB        4.8 MiB\n\
        c              64.0     100.1     147.6        10.0       51.2 MiB       74.0 MiB\n";
    let table = patch::parse(output);
    assert_eq!(table.baseline_rss_mib, Some(11.6));
    assert_eq!(
        table
            .workloads
            .iter()
            .map(|w| (w.name.as_str(), w.agentls_ms, w.git_ms, w.gnu_ms))
            .collect::<Vec<_>>(),
        vec![("a", 28.8, 89.0, 20.3), ("b", 57.1, 135.9, 306.2), ("c", 64.0, 100.1, 147.6)]
    );
    assert_eq!(table.workloads[2].agentls_rss_mib, 51.2);
    assert_eq!(table.workloads[0].input_mib, 2.8);
}

fn at(base: Instant, ms: u64) -> Instant {
    base + Duration::from_millis(ms)
}

#[test]
fn merged_notifications_deliver_every_delta_they_complete() {
    let t = Instant::now();
    let sent =
        vec![("a0 ".to_string(), at(t, 0)), ("a1 ".to_string(), at(t, 1)), ("a2 ".to_string(), at(t, 2))];
    // The first delta alone at 3 ms, the next two merged into one notification at 10 ms.
    let arrived = vec![(at(t, 3), "a0 ".to_string()), (at(t, 10), "a1 a2 ".to_string())];
    let run = delivery::match_deltas(&sent, &arrived);
    assert_eq!(run.latencies_ms, vec![3.0, 9.0, 8.0]);
    assert_eq!((run.lost, run.identical, run.notifications, run.sent), (0, true, 2, 3));
}

#[test]
fn a_notification_split_mid_delta_delivers_it_with_the_later_part() {
    let t = Instant::now();
    let sent = vec![("abcd".to_string(), at(t, 0))];
    let arrived = vec![(at(t, 1), "ab".to_string()), (at(t, 5), "cd".to_string())];
    assert_eq!(delivery::match_deltas(&sent, &arrived).latencies_ms, vec![5.0]);
}

#[test]
fn missing_text_is_lost_and_changed_text_is_not_identical() {
    let t = Instant::now();
    let sent = vec![("a0 ".to_string(), at(t, 0)), ("a1 ".to_string(), at(t, 1))];
    let run = delivery::match_deltas(&sent, &[(at(t, 2), "a0 ".to_string())]);
    assert_eq!((run.lost, run.identical, run.latencies_ms.len()), (1, false, 1));
    let run = delivery::match_deltas(&sent, &[(at(t, 2), "a0 ".to_string()), (at(t, 3), "b1 ".to_string())]);
    assert_eq!((run.lost, run.identical), (0, false));
}

#[test]
fn percentiles_are_nearest_rank() {
    let samples: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(stats::percentile(&samples, 50.0), Some(50.0));
    assert_eq!(stats::percentile(&samples, 99.0), Some(99.0));
    assert_eq!(stats::percentile(&samples, 100.0), Some(100.0));
    assert_eq!(stats::percentile(&samples, 0.0), Some(1.0));
    assert_eq!(stats::median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(stats::percentile(&[], 50.0), None);
    assert_eq!(stats::fmt_count(10_000), "10,000");
    assert_eq!(stats::fmt_ms(0.0421), "0.042 ms");
}

#[test]
fn the_acp_part_has_markers_of_its_own_and_leaves_the_rest_alone() {
    let acp = |value: &str| {
        let mut section = Section::new("ACP", "How.");
        section.rows.push(Row::new("first prompt", "(none set)", value, "peer 400 ms", Met::NoTarget));
        report::markdown_between(report::ACP_BEGIN, report::ACP_END, "ACP (generated)", &[], &[section])
    };
    let whole = report::splice(HAND_WRITTEN, &generated("p99 3 ms"));
    let first = report::splice_acp(&whole, &acp("2 ms"));
    assert_eq!(
        first,
        format!("{}\n\n{}", whole.trim_end(), acp("2 ms")),
        "appended when it has no markers yet"
    );
    let second = report::splice_acp(&first, &acp("1 ms"));
    assert_eq!(second, format!("{}\n\n{}", whole.trim_end(), acp("1 ms")));
    assert_eq!(report::splice(&second, &generated("p99 3 ms")), second, "the whole run's part is its own");
    assert_eq!(second.matches(BEGIN).count(), 1);
    assert_eq!(second.matches(report::ACP_BEGIN).count(), 1);
}
