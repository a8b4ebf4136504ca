//! The process benchmarks of docs/benchmarks.md: the release `agentls` binary over its real stdio,
//! side by side with a bare `lsp-server` floor and lsp-ai, against a fake Anthropic endpoint on
//! 127.0.0.1 (streaming latency, cold start and memory, time before a model request leaves,
//! concurrent sessions, incremental `didChange`), grep and glob against ripgrep, the tables
//! of scripts/bench-patch and the criterion benches read back, and `agentls acp` beside a peer
//! ACP agent (section `acp`, written to its own part of the doc). `scripts/bench` builds everything
//! and runs this with the paths of the peers; alone (`cargo bench --bench server`) it measures
//! agentls and prints the tables; without any argument (`cargo test --all-targets`) it runs a
//! short smoke test of every measurement instead.
//!
//! Usage: `server [--quick] [--floor BIN] [--lsp-ai BIN | --lsp-ai-missing WHY] [--rg BIN]
//! [--tree DIR] [--patch-output FILE] [--criterion-dir DIR --criterion-since EPOCH]
//! [--acp-peer DIR | --acp-peer-missing WHY] [--docs FILE] [--command TEXT] [--commit TEXT]
//! [--started EPOCH] [--only SECTION,...]` (`--acp-peer`: the folder scripts/install-acp-peer
//! printed).
//!
//! Invariant: every row states its target, agentls's number and the peer's or floor's from the
//! same run; a measurement that fails becomes a row saying so, never a silent gap.

mod acp;
mod client;
mod delivery;
mod did_change;
/// The tests' LSP framing and editor answers (one codec, one policy for tests and benches).
#[path = "../../tests/support/lsp_wire.rs"]
mod lsp_wire;
/// The tests' fake provider (one fake for tests and benches); `provider` is its blocking face.
#[allow(dead_code)]
#[path = "../../tests/support/mock_provider.rs"]
mod mock_provider;
mod patch;
mod procfs;
mod provider;
mod report;
mod request;
mod search;
mod sessions;
mod start;
mod stats;
mod stream;
mod subjects;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use report::{Met, Row, Section};
use stats::{fmt_count, fmt_mib, fmt_ms, fmt_opt_ms, median, percentile};
use subjects::{Kind, Subject};

/// How long any single step may take before the run reports it as failed.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Prompts per ACP run: the first of a fresh process and one more in the same session.
const ACP_PROMPTS: usize = 2;

#[derive(Debug, Default)]
struct Options {
    quick: bool,
    /// The agentls binary to measure (default: the one cargo built for this bench).
    agentls: Option<PathBuf>,
    floor: Option<PathBuf>,
    lsp_ai: Option<PathBuf>,
    lsp_ai_missing: Option<String>,
    rg: Option<PathBuf>,
    tree: Option<PathBuf>,
    patch_output: Option<PathBuf>,
    criterion_dir: Option<PathBuf>,
    criterion_since: Option<u64>,
    docs: Option<PathBuf>,
    command: Option<String>,
    commit: Option<String>,
    started: Option<u64>,
    only: Option<Vec<String>>,
    acp_peer: Option<PathBuf>,
    acp_peer_missing: Option<String>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--quick" => options.quick = true,
            // What `cargo bench` passes to every bench target.
            "--bench" => {}
            "--agentls" => options.agentls = Some(value()?.into()),
            "--floor" => options.floor = Some(value()?.into()),
            "--lsp-ai" => options.lsp_ai = Some(value()?.into()),
            "--lsp-ai-missing" => options.lsp_ai_missing = Some(value()?),
            "--rg" => options.rg = Some(value()?.into()),
            "--tree" => options.tree = Some(value()?.into()),
            "--patch-output" => options.patch_output = Some(value()?.into()),
            "--criterion-dir" => options.criterion_dir = Some(value()?.into()),
            "--criterion-since" => {
                options.criterion_since =
                    Some(value()?.parse().map_err(|e| format!("--criterion-since: {e}"))?)
            }
            "--docs" => options.docs = Some(value()?.into()),
            "--command" => options.command = Some(value()?),
            "--commit" => options.commit = Some(value()?),
            "--started" => options.started = Some(value()?.parse().map_err(|e| format!("--started: {e}"))?),
            "--acp-peer" => options.acp_peer = Some(value()?.into()),
            "--acp-peer-missing" => options.acp_peer_missing = Some(value()?),
            "--only" => options.only = Some(value()?.split(',').map(str::to_string).collect()),
            other => {
                return Err(format!("unknown argument {other}; see the usage in benches/server/main.rs"));
            }
        }
    }
    Ok(options)
}

/// How long and how often: the full run and `--quick`.
struct Plan {
    stream_seconds: f64,
    start_rounds: usize,
    request_servers: usize,
    request_prompts: usize,
    search_runs: usize,
    sessions_seconds: f64,
    acp_rounds: usize,
}

impl Plan {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                stream_seconds: 1.5,
                start_rounds: 15,
                request_servers: 3,
                request_prompts: 4,
                search_runs: 3,
                sessions_seconds: 1.0,
                acp_rounds: 5,
            }
        } else {
            Self {
                stream_seconds: 5.0,
                start_rounds: 41,
                request_servers: 15,
                request_prompts: 6,
                search_runs: 7,
                sessions_seconds: 3.0,
                acp_rounds: 15,
            }
        }
    }
}

fn read_first_line(path: &str) -> Option<String> {
    Some(std::fs::read_to_string(path).ok()?.lines().next()?.trim().to_string())
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split(':').nth(1)))
        .map_or_else(|| "unknown CPU".to_string(), |m| m.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().to_string())))
        .and_then(|v| v.trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or_else(String::new, |kib| format!(", {:.0} GiB RAM", kib / 1024.0 / 1024.0));
    let kernel = read_first_line("/proc/sys/kernel/osrelease").unwrap_or_default();
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))
        })
        .unwrap_or_else(|| "Linux".into());
    format!("{model}, {cores} cores{memory}; {os}, kernel {kernel}")
}

fn default_tree() -> PathBuf {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo"));
    cargo_home.join("registry/src")
}

fn p50_p99(samples: &[f64]) -> String {
    format!("p50 {} / p99 {}", fmt_opt_ms(percentile(samples, 50.0)), fmt_opt_ms(percentile(samples, 99.0)))
}

fn delivered(run: &delivery::StreamRun) -> String {
    format!(
        "{} lost, text {}",
        fmt_count(run.lost as u64),
        if run.identical { "identical" } else { "DIFFERENT" }
    )
}

fn streaming_section(agentls: &Subject, plan: &Plan) -> Section {
    let mut section = Section::new(
        "Streaming: provider delta → editor notification",
        "The fake provider streams one text delta per SSE event at a fixed rate and timestamps each just before \
         its write; this client timestamps each `agentls/event` `assistant_text_delta` when the read that \
         completed it returns. A delta counts as delivered by the first notification that brings the received \
         text up to its end (the server may merge queued deltas). Each rate runs in a fresh server after a \
         200-delta warm-up turn; the client announces no `deltaIntervalMs`. Floors: this client reading the same \
         stream directly, and agentls's own model client (`agentls::llm::Client`) in-process, without session, \
         event pump or LSP wire.",
    );
    for (rate, target) in [(1_000.0, 1.0), (10_000.0, 2.0)] {
        let count = (rate * plan.stream_seconds) as usize;
        let label = format!("{} deltas/s ({} deltas)", fmt_count(rate as u64), fmt_count(count as u64));
        let through = stream::through_agentls(agentls, rate, count);
        let direct = stream::direct(rate, count);
        let in_process = stream::in_process_client(rate, count);
        let floor = match (&direct, &in_process) {
            (Ok(d), Ok(c)) => format!(
                "direct read {}; llm client in-process {}",
                p50_p99(&d.latencies_ms),
                p50_p99(&c.latencies_ms)
            ),
            (Err(e), _) | (_, Err(e)) => format!("failed: {e}"),
        };
        match through {
            Ok(run) => {
                let p99 = percentile(&run.latencies_ms, 99.0).unwrap_or(f64::INFINITY);
                section.rows.push(Row::new(
                    format!("{label}: added latency"),
                    format!("p99 < {target} ms"),
                    p50_p99(&run.latencies_ms),
                    floor,
                    Met::from(p99 < target && run.lost == 0),
                ));
                let floor_delivery = direct.as_ref().map_or_else(|e| format!("failed: {e}"), delivered);
                section.rows.push(Row::new(
                    format!("{label}: lost deltas, text"),
                    "0 lost, identical",
                    delivered(&run),
                    format!("direct read: {floor_delivery}"),
                    Met::from(run.lost == 0 && run.identical),
                ));
                section.notes.push(format!(
                    "{label}: max latency {}; {} notifications for {} deltas; server CPU {:.1} µs and {:.2} context \
                     switches per delta; provider achieved {:.0} deltas/s, at worst {} behind its schedule.",
                    fmt_opt_ms(percentile(&run.latencies_ms, 100.0)),
                    fmt_count(run.notifications as u64),
                    fmt_count(run.sent as u64),
                    run.cpu_us_per_delta.unwrap_or(f64::NAN),
                    run.switches_per_delta.unwrap_or(f64::NAN),
                    run.achieved_rate,
                    fmt_ms(run.provider_behind_ms),
                ));
            }
            Err(e) => {
                section.rows.push(Row::new(
                    format!("{label}: added latency"),
                    format!("p99 < {target} ms"),
                    format!("failed: {e}"),
                    floor,
                    Met::NotMeasured,
                ));
            }
        }
    }
    section
}

fn start_section(subjects: &[Subject], lsp_ai_missing: Option<&str>, plan: &Plan) -> Section {
    let mut section = Section::new(
        "Cold start and memory",
        &format!(
            "Each server is started {} times, the servers taking turns in a rotating order: time from spawn to the \
             arrival of the `initialize` reply (medians), resident memory (VmRSS) {} ms after `initialized`, and \
             wake-ups (context switches of all threads) over one idle second in the first 3 rounds. The floor is a \
             binary of the bare `lsp-server` crate that scripts/bench builds with the same release profile: it \
             answers `initialize` and reads every message.",
            plan.start_rounds, 150
        ),
    );
    let stats = start::measure(subjects, plan.start_rounds);
    let get = |name: &str| stats.get(name);
    let agentls = get("agentls");
    let floor = get("lsp-server floor");
    let lsp_ai = get("lsp-ai");
    let peer = |f: &dyn Fn(&start::StartStats) -> String| -> String {
        let floor = floor.map_or_else(|| "floor not built".into(), |s| format!("floor {}", f(s)));
        let lsp_ai = match (lsp_ai, lsp_ai_missing) {
            (Some(s), _) => format!("lsp-ai {}", f(s)),
            (None, Some(_)) => "lsp-ai not measured (see the header)".into(),
            (None, None) => "lsp-ai not given".into(),
        };
        format!("{floor}; {lsp_ai}")
    };
    let init = |s: &start::StartStats| fmt_opt_ms(s.init_median());
    let rss = |s: &start::StartStats| s.rss_median().map_or_else(|| "—".into(), fmt_mib);
    let wakeups =
        |s: &start::StartStats| s.wakeups_median().map_or_else(|| "—".into(), |w| format!("{w:.0}/s"));
    if let Some(a) = agentls {
        let ratio = match (a.init_median(), floor.and_then(|f| f.init_median())) {
            (Some(a), Some(f)) => Some(a / f),
            _ => None,
        };
        section.rows.push(Row::new(
            "spawn → `initialize` reply (median)",
            "≤ 1.5× the floor",
            format!("{}{}", init(a), ratio.map_or_else(String::new, |r| format!(" ({r:.2}× the floor)"))),
            peer(&init),
            ratio.map_or(Met::NotMeasured, |r| Met::from(r <= 1.5)),
        ));
        let rss_mb = a.rss_median().map(|k| k * 1024.0 / 1e6);
        section.rows.push(Row::new(
            "resident memory after start (median)",
            "< 8 MB",
            rss(a),
            peer(&rss),
            rss_mb.map_or(Met::NotMeasured, |m| Met::from(m < 8.0)),
        ));
        section.rows.push(Row::new(
            "wake-ups while idle (median of 3 × 1 s)",
            "0 (no polling at idle)",
            wakeups(a),
            peer(&wakeups),
            a.wakeups_median().map_or(Met::NotMeasured, |w| Met::from(w == 0.0)),
        ));
    }
    if let (Some(a), Some(f)) = (agentls, floor) {
        let ratios = start::paired_ratios(a, f);
        if let (Some(q1), Some(q2), Some(q3)) =
            (percentile(&ratios, 25.0), percentile(&ratios, 50.0), percentile(&ratios, 75.0))
        {
            section.notes.push(format!(
                "agentls / floor within each round (the two started back to back), over {} rounds: median \
                 {q2:.2}×, quartiles {q1:.2}× – {q3:.2}×. The target is judged on the ratio of the medians above.",
                ratios.len()
            ));
        }
    }
    for (name, s) in &stats {
        section.notes.push(format!(
            "{name}: `initialize` reply min {} / median {} / max {} over {} starts; {} threads after start; RSS min {} / max {}.{}",
            fmt_opt_ms(percentile(&s.init_ms, 0.0)),
            fmt_opt_ms(s.init_median()),
            fmt_opt_ms(percentile(&s.init_ms, 100.0)),
            s.init_ms.len(),
            median(&s.threads).map_or_else(|| "?".into(), |t| format!("{t:.0}")),
            percentile(&s.rss_kib, 0.0).map_or_else(|| "—".into(), fmt_mib),
            percentile(&s.rss_kib, 100.0).map_or_else(|| "—".into(), fmt_mib),
            if s.errors.is_empty() { String::new() } else { format!(" Errors: {}", s.errors.join("; ")) },
        ));
    }
    section
}

fn request_section(
    agentls: &Subject,
    lsp_ai: Option<&Subject>,
    lsp_ai_missing: Option<&str>,
    plan: &Plan,
) -> Section {
    let mut section = Section::new(
        "Time before a model request leaves",
        &format!(
            "From this client's write of `agentls.prompt` to the first byte of the model request at the fake \
             provider ({} fresh servers, one session each, {} prompts one after another; each turn ends before the \
             next prompt). lsp-ai: the same from a `textDocument/completion` (it calls the model for completions). \
             Floor: this client writing the request itself, on a new connection and on a kept-alive one.",
            plan.request_servers, plan.request_prompts
        ),
    );
    let ours = request::agentls(agentls, plan.request_servers, plan.request_prompts);
    let theirs = match (lsp_ai, lsp_ai_missing) {
        (Some(subject), _) => request::lsp_ai(subject, plan.request_servers, plan.request_prompts)
            .map_err(|e| format!("lsp-ai failed: {e}")),
        (None, Some(_)) => Err("lsp-ai not measured (see the header)".into()),
        (None, None) => Err("lsp-ai not given".into()),
    };
    let direct = request::direct(plan.request_prompts.max(3));
    let reference = |first: bool| {
        let pick = |s: &request::RequestStats| if first { median(&s.first_ms) } else { median(&s.later_ms) };
        let lsp_ai =
            theirs.as_ref().map_or_else(|e| e.clone(), |s| format!("lsp-ai {}", fmt_opt_ms(pick(s))));
        let floor = direct
            .as_ref()
            .map_or_else(|e| format!("floor failed: {e}"), |s| format!("floor {}", fmt_opt_ms(pick(s))));
        format!("{lsp_ai}; {floor} ({} connection)", if first { "new" } else { "kept-alive" })
    };
    match ours {
        Ok(stats) => {
            for (first, samples, what) in [
                (true, &stats.first_ms, "first prompt of a fresh server (median)"),
                (false, &stats.later_ms, "later prompts (median)"),
            ] {
                let m = median(samples);
                section.rows.push(Row::new(
                    what,
                    "< 0.5 ms",
                    fmt_opt_ms(m),
                    reference(first),
                    m.map_or(Met::NotMeasured, |m| Met::from(m < 0.5)),
                ));
            }
            section.notes.push(format!(
                "agentls first prompts: {}; later prompts p99 {}.",
                stats.first_ms.iter().map(|v| fmt_ms(*v)).collect::<Vec<_>>().join(", "),
                fmt_opt_ms(percentile(&stats.later_ms, 99.0))
            ));
        }
        Err(e) => section.rows.push(Row::new(
            "prompt → first request byte",
            "< 0.5 ms",
            format!("failed: {e}"),
            reference(true),
            Met::NotMeasured,
        )),
    }
    section
}

fn patch_section(output: Option<&Path>, criterion: &Criterion) -> Section {
    let mut section = Section::new(
        "apply_patch against `git apply` and GNU `patch`",
        "`scripts/bench-patch` in the same run: the best wall time of a fresh process on a fresh copy of the tree, \
         the three tools taking turns in each round (see the apply_patch section below for the workloads and \
         the history).",
    );
    let Some(text) = output.and_then(|p| std::fs::read_to_string(p).ok()) else {
        section.rows.push(Row::new("(scripts/bench-patch was not run)", "—", "—", "—", Met::NotMeasured));
        return section;
    };
    let table = patch::parse(&text);
    for w in &table.workloads {
        let (target, ok) = if w.name == "a" {
            ("faster than GNU patch and `git apply`", w.agentls_ms < w.gnu_ms && w.agentls_ms < w.git_ms)
        } else {
            ("faster than `git apply`", w.agentls_ms < w.git_ms)
        };
        section.rows.push(Row::new(
            patch::describe(&w.name),
            target,
            format!("{:.1} ms", w.agentls_ms),
            format!("git apply {:.1} ms; GNU patch {:.1} ms", w.git_ms, w.gnu_ms),
            Met::from(ok),
        ));
    }
    if let Some(baseline) = table.baseline_rss_mib {
        let memory: Vec<String> = table
            .workloads
            .iter()
            .map(|w| {
                format!(
                    "({}) {:.1} MiB for {:.1} MiB of input ({:.1}×; git apply peak {:.1} MiB)",
                    w.name,
                    w.agentls_rss_mib - baseline,
                    w.input_mib,
                    (w.agentls_rss_mib - baseline) / w.input_mib.max(0.1),
                    w.git_rss_mib
                )
            })
            .collect();
        section.notes.push(format!(
            "Peak memory above agentls's own baseline of {baseline:.1} MiB: {}.",
            memory.join("; ")
        ));
    }
    for (id, what) in [("a_100k_lines_200_hunks", "(a)"), ("c_10mib_single_line/one_replacement", "(c)")] {
        if let Some(ns) = criterion.median_ns(id) {
            section.notes.push(format!(
                "In memory (`cargo bench --bench apply_patch`, parse + apply + hunks) {what}: {}.",
                fmt_ms(ns / 1e6)
            ));
        }
    }
    section
}

fn search_section(agentls: &Subject, rg: Option<&Path>, tree: &Path, plan: &Plan) -> Section {
    let mut section = Section::new(
        "grep and glob against ripgrep",
        &format!(
            "`agentls tool grep|glob --cwd TREE` against `rg --no-require-git` (the same ignore rules) on {}, \
             both printing every result into a pipe; median wall time of {} runs each, taking turns, after one \
             untimed run of each (warm page cache). The 1.3× target is the project's own (issue 15 asks for the \
             comparison). `glob` lists matches most recently modified first, so it reads each match's \
             modification time (one `statx` per file) where `rg --files` reads directories only.",
            tree.display(),
            plan.search_runs
        ),
    );
    let Some(rg) = rg else {
        section.rows.push(Row::new("(ripgrep not found)", "≤ 1.3× rg", "—", "—", Met::NotMeasured));
        return section;
    };
    let scratch = match subjects::Scratch::new() {
        Ok(s) => s,
        Err(e) => return Section::failed(&section.title, &section.method, &e.to_string()),
    };
    let config = match search::unlimited_config(scratch.path()) {
        Ok(c) => c,
        Err(e) => return Section::failed(&section.title, &section.method, &e.to_string()),
    };
    let tools = search::Tools { agentls: agentls.binary.clone(), rg: rg.to_path_buf(), config };
    for (name, result) in search::measure(&tools, tree, plan.search_runs) {
        match result {
            Ok(r) => {
                let ratio = r.ratio();
                section.rows.push(Row::new(
                    name.clone(),
                    "≤ 1.3× rg",
                    format!(
                        "{}{}",
                        fmt_opt_ms(median(&r.agentls_ms)),
                        ratio.map_or_else(String::new, |x| format!(" ({x:.2}×)"))
                    ),
                    format!("rg {}", fmt_opt_ms(median(&r.rg_ms))),
                    ratio.map_or(Met::NotMeasured, |x| {
                        Met::from(x <= 1.3 && r.agentls_results == r.rg_results)
                    }),
                ));
                section.notes.push(format!(
                    "{name}: {} results from agentls, {} from rg{}.",
                    fmt_count(r.agentls_results as u64),
                    fmt_count(r.rg_results as u64),
                    if r.agentls_results == r.rg_results {
                        ""
                    } else {
                        " (they differ: not met whatever the time)"
                    }
                ));
            }
            Err(e) => {
                section.rows.push(Row::new(name, "≤ 1.3× rg", format!("failed: {e}"), "—", Met::NotMeasured))
            }
        }
    }
    section
}

fn sessions_section(agentls: &Subject, plan: &Plan) -> Section {
    const SESSIONS: usize = 8;
    const RATE: f64 = 1_000.0;
    let count = (RATE * plan.sessions_seconds) as usize;
    let mut section = Section::new(
        "8 concurrent sessions streaming and editing",
        &format!(
            "One server, {SESSIONS} sessions prompted at once. Each model reply streams {} text deltas at {} per \
             second (so {} per second in all) and calls `read_file`; the next reply calls `edit_file` (approval \
             `auto`: the server sends `workspace/applyEdit`, which this client applies), the last one answers. \
             Latency per delta is measured as in the streaming rows.",
            fmt_count(count as u64),
            fmt_count(RATE as u64),
            fmt_count((RATE * SESSIONS as f64) as u64)
        ),
    );
    match sessions::measure(agentls, SESSIONS, RATE, count) {
        Ok(run) => {
            let p99 = percentile(&run.stream.latencies_ms, 99.0).unwrap_or(f64::INFINITY);
            section.rows.push(Row::new(
                "added latency of every delta",
                "p99 < 2 ms (the 10,000/s target; no own target)",
                p50_p99(&run.stream.latencies_ms),
                "—",
                Met::from(p99 < 2.0),
            ));
            section.rows.push(Row::new(
                "lost deltas, text; edits applied",
                format!("0 lost, identical; {SESSIONS} of {SESSIONS}"),
                format!(
                    "{}; {} `applyEdit`, {} `edit_file` ok",
                    delivered(&run.stream),
                    run.edits_applied,
                    run.edits_ok
                ),
                "—",
                Met::from(
                    run.stream.lost == 0
                        && run.stream.identical
                        && run.edits_ok == SESSIONS
                        && run.edits_applied == SESSIONS,
                ),
            ));
            section.rows.push(Row::new(
                "peak resident memory (at the end)",
                "(none set)",
                format!(
                    "{} ({})",
                    run.peak_rss_kib.map_or_else(|| "—".into(), |k| fmt_mib(k as f64)),
                    run.rss_after_kib.map_or_else(|| "—".into(), |k| fmt_mib(k as f64))
                ),
                "—",
                Met::NoTarget,
            ));
            section.rows.push(Row::new(
                "all 8 turns done (3 model calls each)",
                "(none set)",
                fmt_ms(stats::ms(run.wall)),
                format!("the streams alone last {}", fmt_ms(plan.sessions_seconds * 1e3)),
                Met::NoTarget,
            ));
            section.notes.push(format!(
                "Max latency {}; {} notifications for {} deltas; server CPU {} in all ({:.1} µs per delta, edits included); provider at worst {} behind its schedule.",
                fmt_opt_ms(percentile(&run.stream.latencies_ms, 100.0)),
                fmt_count(run.stream.notifications as u64),
                fmt_count(run.stream.sent as u64),
                fmt_ms(stats::ms(run.cpu)),
                run.stream.cpu_us_per_delta.unwrap_or(f64::NAN),
                fmt_ms(run.stream.provider_behind_ms)
            ));
        }
        Err(e) => return Section::failed(&section.title, &section.method, &e),
    }
    section
}

fn did_change_section(subjects: &[Subject], lsp_ai_missing: Option<&str>, criterion: &Criterion) -> Section {
    const LINES: usize = 50_000;
    const CHANGES: usize = 10_000;
    let mut section = Section::new(
        "10,000 incremental didChange on a 50,000-line buffer",
        "A 50,000-line buffer (1.6 MB) is opened, then 10,000 one-character insertions are sent, each its own \
         `didChange` and its own write, spread over the buffer, as fast as the pipe takes them; then one request \
         that is answered only after all were applied (agentls: `agentls.listSessions`; the floor and lsp-ai: \
         `shutdown`, which lsp-ai answers after its document worker drained). Time per change = the span from the first write to \
         that answer, divided by the changes. lsp-ai gets 1,000 changes (it takes about 10 ms each). For agentls the buffer is then \
         checked through a prompt with a range as context.",
    );
    // lsp-ai takes about 10 ms a change here: 10,000 would take minutes, a tenth says as much.
    const LSP_AI_CHANGES: usize = CHANGES / 10;
    let mut results = Vec::new();
    for subject in subjects {
        let changes = if subject.kind == Kind::LspAi { LSP_AI_CHANGES } else { CHANGES };
        results.push((subject.name(), did_change::measure(subject, LINES, changes)));
    }
    let find = |name: &str| results.iter().find(|(n, _)| *n == name).map(|(_, r)| r);
    let peer = |f: &dyn Fn(&did_change::ChangeRun) -> String| {
        let floor = match find("lsp-server floor") {
            Some(Ok(r)) => format!("floor {}", f(r)),
            Some(Err(e)) => format!("floor failed: {e}"),
            None => "floor not built".into(),
        };
        let lsp_ai = match (find("lsp-ai"), lsp_ai_missing) {
            (Some(Ok(r)), _) => format!("lsp-ai {}", f(r)),
            (Some(Err(e)), _) => format!("lsp-ai failed: {e}"),
            (None, Some(_)) => "lsp-ai not measured (see the header)".into(),
            (None, None) => "lsp-ai not given".into(),
        };
        format!("{floor}; {lsp_ai}")
    };
    let per_change = |r: &did_change::ChangeRun| {
        let each = if r.per_change_ms < 1.0 {
            format!("{:.1} µs", r.per_change_ms * 1e3)
        } else {
            fmt_ms(r.per_change_ms)
        };
        if r.changes == CHANGES {
            each
        } else {
            format!("{each} (over {} changes)", fmt_count(r.changes as u64))
        }
    };
    let memory = |r: &did_change::ChangeRun| {
        format!(
            "{} (peak {})",
            r.rss_after_kib.map_or_else(|| "—".into(), |k| fmt_mib(k as f64)),
            r.peak_rss_kib.map_or_else(|| "—".into(), |k| fmt_mib(k as f64))
        )
    };
    match find("agentls") {
        Some(Ok(run)) => {
            section.rows.push(Row::new(
                "time per change",
                "(none set)",
                format!("{} ({} in all)", per_change(run), fmt_ms(run.total_ms)),
                peer(&per_change),
                Met::NoTarget,
            ));
            section.rows.push(Row::new(
                "resident memory after the changes",
                "(none set)",
                memory(run),
                peer(&memory),
                Met::NoTarget,
            ));
            let verified = run.verified.clone().unwrap_or(Err("not checked".into()));
            section.rows.push(Row::new(
                "the server's buffer after the changes",
                "the client's text",
                verified.clone().map_or_else(|e| e, |()| "identical (checked lines)".into()),
                "—",
                Met::from(verified.is_ok()),
            ));
            if let Some(open) = run.rss_open_kib {
                section.notes.push(format!(
                    "agentls resident memory with the buffer open, before the changes: {}.",
                    fmt_mib(open as f64)
                ));
            }
        }
        Some(Err(e)) => return Section::failed(&section.title, &section.method, e),
        None => {}
    }
    let parts: Vec<String> = [
        ("decode_params", "decoding the params (bytes → typed)"),
        ("document_store_insert", "the document store's insertion"),
        ("floor_rope_insert", "a bare ropey insertion (floor)"),
    ]
    .iter()
    .filter_map(|(id, what)| {
        criterion
            .median_ns(&format!("did_change_50k_lines/{id}"))
            .map(|ns| format!("{what} {:.2} µs", ns / 1e3))
    })
    .collect();
    if !parts.is_empty() {
        section
            .notes
            .push(format!("In-process (`cargo bench --bench did_change`, medians): {}.", parts.join("; ")));
    }
    section
}

/// Criterion's results of this run (estimates newer than `since`).
struct Criterion {
    dir: Option<PathBuf>,
    since: Option<u64>,
}

impl Criterion {
    fn median_ns(&self, id: &str) -> Option<f64> {
        let path = self.dir.as_ref()?.join(id).join("new/estimates.json");
        let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
        let modified = modified.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
        if self.since.is_some_and(|since| modified < since) {
            return None;
        }
        let estimates: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
        estimates.pointer("/median/point_estimate")?.as_f64()
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join(name)).find(|p| p.is_file())
}

/// What `cargo test --all-targets` runs (it passes this bench no arguments, `cargo bench` passes
/// `--bench`): every path of the instrument once, briefly, against the server just built, failing
/// on lost or changed text, a missed edit, a wrong buffer or a missing measurement. Timings are
/// not judged here (the test build is unoptimised).
fn smoke(agentls: &Subject) -> Result<(), String> {
    fn check(ok: bool, what: &str) -> Result<(), String> {
        if ok { Ok(()) } else { Err(format!("smoke check failed: {what}")) }
    }
    let delivered_all = |run: &delivery::StreamRun, count: usize| {
        run.lost == 0 && run.identical && run.latencies_ms.len() == count
    };
    let run = stream::through_agentls(agentls, 2_000.0, 200)?;
    check(delivered_all(&run, 200), &format!("streaming through agentls: {run:?}"))?;
    check(delivered_all(&stream::direct(2_000.0, 200)?, 200), "the direct-read floor")?;
    check(delivered_all(&stream::in_process_client(2_000.0, 200)?, 200), "the in-process client")?;
    let started = start::measure(std::slice::from_ref(agentls), 1);
    let started = started.get("agentls").ok_or("no start measured")?;
    check(
        started.init_ms.len() == 1 && started.rss_kib.len() == 1 && started.errors.is_empty(),
        &format!("start: {started:?}"),
    )?;
    let requests = request::agentls(agentls, 1, 2)?;
    check(requests.first_ms.len() == 1 && requests.later_ms.len() == 1, "request timing")?;
    let sessions = sessions::measure(agentls, 2, 1_000.0, 100)?;
    check(
        delivered_all(&sessions.stream, 200) && sessions.edits_ok == 2 && sessions.edits_applied == 2,
        &format!("two sessions streaming and editing: {sessions:?}"),
    )?;
    let changes = did_change::measure(agentls, 5_000, 500)?;
    check(changes.verified == Some(Ok(())), &format!("didChange: {:?}", changes.verified))?;
    let acp = acp::one(&acp::Agent::agentls(&agentls.binary), ACP_PROMPTS, 0)?;
    check(acp.to_request_ms.len() == ACP_PROMPTS && acp.rss_kib > 0, &format!("ACP: {acp:?}"))?;
    Ok(())
}

fn main() -> std::process::ExitCode {
    let agentls = Subject { kind: Kind::Agentls, binary: PathBuf::from(env!("CARGO_BIN_EXE_agentls")) };
    if std::env::args().len() == 1 {
        return match smoke(&agentls) {
            Ok(()) => {
                println!("benches/server smoke test: 1 passed, 0 failed");
                std::process::ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("benches/server smoke test: {e}");
                println!("benches/server smoke test: 0 passed, 1 failed");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let options = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("server bench: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let agentls = match options.agentls.clone() {
        Some(binary) => Subject { kind: Kind::Agentls, binary },
        None => agentls,
    };
    let plan = Plan::new(options.quick);
    let wanted = |name: &str| options.only.as_ref().is_none_or(|only| only.iter().any(|o| o == name));
    let floor = options.floor.clone().map(|binary| Subject { kind: Kind::Floor, binary });
    let lsp_ai = options.lsp_ai.clone().map(|binary| Subject { kind: Kind::LspAi, binary });
    let lsp_ai_missing = options.lsp_ai_missing.as_deref();
    let everyone: Vec<Subject> =
        [Some(agentls.clone()), floor.clone(), lsp_ai.clone()].into_iter().flatten().collect();
    let criterion = Criterion { dir: options.criterion_dir.clone(), since: options.criterion_since };
    let load_before = procfs::load_average();
    let began = std::time::Instant::now();

    let mut sections = Vec::new();
    let mut run = |name: &str, make: &mut dyn FnMut() -> Section| {
        if wanted(name) {
            eprintln!("server bench: {name} …");
            // Files written by earlier work (bench-patch's trees, the sessions' transcripts) are
            // flushed now, not by the kernel's writeback in the middle of this section's timings.
            nix::unistd::sync();
            let section = make();
            for row in &section.rows {
                eprintln!("  {}: {} [{}] ({:?})", row.what, row.agentls, row.reference, row.met);
            }
            sections.push(section);
        }
    };
    run("streaming", &mut || streaming_section(&agentls, &plan));
    run("start", &mut || start_section(&everyone, lsp_ai_missing, &plan));
    run("request", &mut || request_section(&agentls, lsp_ai.as_ref(), lsp_ai_missing, &plan));
    run("patch", &mut || patch_section(options.patch_output.as_deref(), &criterion));
    run("search", &mut || {
        let tree = options.tree.clone().unwrap_or_else(default_tree);
        let rg = options.rg.clone().or_else(|| find_on_path("rg"));
        search_section(&agentls, rg.as_deref(), &tree, &plan)
    });
    run("sessions", &mut || sessions_section(&agentls, &plan));
    run("did_change", &mut || did_change_section(&everyone, lsp_ai_missing, &criterion));

    let header = vec![
        format!("- Command: `{}`", options.command.as_deref().unwrap_or("cargo bench --bench server")),
        format!(
            "- Date: {}; commit {}; {} mode; the measurements took {:.0} s{}.",
            chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
            options.commit.as_deref().unwrap_or("(not given)"),
            if options.quick { "quick" } else { "full" },
            began.elapsed().as_secs_f64(),
            options.started.map_or_else(String::new, |started| {
                let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                format!(", the whole command {} s (builds included)", now.saturating_sub(started))
            })
        ),
        format!(
            "- Machine: {}; load average {} before the run, {} after.",
            machine(),
            load_before,
            procfs::load_average()
        ),
        format!(
            "- Peers: lsp-server floor {}; lsp-ai {}.",
            floor.as_ref().map_or_else(|| "not built".into(), |f| format!("`{}`", f.binary.display())),
            match (&lsp_ai, lsp_ai_missing) {
                (Some(s), _) => format!("`{}`", s.binary.display()),
                (None, Some(why)) => format!("not measured: {why}"),
                (None, None) => "not given".into(),
            }
        ),
        "- Targets are those of issue 15 and PRODUCT.md; \"met\" is judged on this run only.".to_string(),
    ];
    let acp_load_before = procfs::load_average();
    let acp_began = std::time::Instant::now();
    let acp_part = wanted("acp").then(|| {
        eprintln!("server bench: acp …");
        nix::unistd::sync();
        let ours = acp::Agent::agentls(&agentls.binary);
        let mut agents = vec![ours];
        if let Some(dir) = &options.acp_peer {
            agents.push(acp::Agent::claude_agent_acp(dir));
        }
        let stats = acp::measure(&agents, plan.acp_rounds, ACP_PROMPTS);
        let peer = match (stats.get(1), &options.acp_peer_missing) {
            (Some(s), _) => Ok(s),
            (None, Some(why)) => Err(why.as_str()),
            (None, None) => Err("no peer given (scripts/bench installs one)"),
        };
        let section = acp::section(&stats[0], peer, plan.acp_rounds, ACP_PROMPTS);
        for row in &section.rows {
            eprintln!("  {}: {} [{}]", row.what, row.agentls, row.reference);
        }
        section
    });
    let mut parts = Vec::new();
    if !sections.is_empty() {
        parts.push((
            report::markdown(&header, &sections),
            report::write_doc as fn(&Path, &str) -> std::io::Result<()>,
        ));
    }
    if let Some(section) = acp_part {
        let acp_header = vec![
            format!(
                "- Command: `{}`",
                options.command.as_deref().unwrap_or("cargo bench --bench server -- --only acp")
            ),
            format!(
                "- Date: {}; agentls `{}` ({}); {} mode; the measurements took {:.0} s.",
                chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
                agentls.binary.display(),
                options
                    .commit
                    .as_deref()
                    .map_or_else(|| "commit not given".into(), |c| format!("commit {c}")),
                if options.quick { "quick" } else { "full" },
                acp_began.elapsed().as_secs_f64(),
            ),
            format!(
                "- Peer: {}.",
                match (&options.acp_peer, &options.acp_peer_missing) {
                    (Some(dir), _) => acp::peer_versions(dir),
                    (None, Some(why)) => format!("not measured: {why}"),
                    (None, None) => "not given".into(),
                }
            ),
            format!(
                "- Machine: {}; load average {} before the run, {} after (other work on the cores shows in every \
                 figure; the two agents take turns in each round, so both see it alike).",
                machine(),
                acp_load_before,
                procfs::load_average()
            ),
        ];
        let generated = report::markdown_between(
            report::ACP_BEGIN,
            report::ACP_END,
            "Results of `scripts/bench --only acp` (generated)",
            &acp_header,
            &[section],
        );
        parts.push((generated, report::write_acp_doc as fn(&Path, &str) -> std::io::Result<()>));
    }
    for (generated, write) in parts {
        match &options.docs {
            Some(path) => {
                if let Err(e) = write(path, &generated) {
                    eprintln!("server bench: cannot write {}: {e}", path.display());
                    return std::process::ExitCode::FAILURE;
                }
                eprintln!("server bench: wrote {}", path.display());
            }
            None => println!("{generated}"),
        }
    }
    std::process::ExitCode::SUCCESS
}
