//! `agentls acp` beside a peer ACP agent run the same way (issue 27, item 9): both over their
//! real stdio (ACP 1: newline-delimited JSON-RPC) against the same fake Anthropic endpoint
//! ([`Provider`]) on 127.0.0.1, with the same private home and the same empty workspace. The peer
//! is Zed's Claude Agent adapter (`@zed-industries/claude-agent-acp`, which starts the Claude Code
//! CLI of the Claude Agent SDK as its child), installed by scripts/install-acp-peer.
//!
//! Each run is a fresh process: `initialize`, `session/new`, a settle, resident memory, then two
//! prompts in that session, each from this client's write of `session/prompt` to the first byte,
//! at the provider, of the model request that carries the prompt's text (a marker unique to the
//! run finds it, so a side request of either agent is not mistaken for it), then to the
//! `session/prompt` reply. The agents take turns in each round, in a rotating order.
//!
//! Invariants: both agents get the same environment but for the peer's switches that stop its
//! calls to hosts other than the provider (there is no network here; they are listed in the
//! report); a run counts only when both turns end with `end_turn` and the provider saw the
//! prompt; the peer's memory is that of its whole process tree (the adapter and the CLI it
//! starts), summed from each process's VmRSS, and its process group is killed after each run.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::PATIENCE;
use crate::client::{Incoming, Peer, Writer, write_to};
use crate::procfs;
use crate::provider::{Answered, Provider};
use crate::report::{Met, Row, Section};
use crate::request::short_reply;
use crate::stats::{fmt_mib, fmt_ms, fmt_opt_ms, median, ms, percentile};
use crate::subjects::{Scratch, command};

/// Time after the `session/new` reply before memory is read: what either agent does after
/// creating a session (the peer's CLI child finishing its start, agentls's warm-up) counts.
const SETTLE: Duration = Duration::from_secs(1);

/// The environment only the peer gets: what keeps the Claude Code CLI from calling hosts other
/// than the provider (telemetry, error reports, update checks), none of which exist here.
pub const PEER_ENV: [(&str, &str); 2] =
    [("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"), ("DISABLE_AUTOUPDATER", "1")];

/// An ACP agent and how to start it.
#[derive(Debug, Clone)]
pub struct Agent {
    pub name: &'static str,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl Agent {
    pub fn agentls(binary: &Path) -> Self {
        // Absolute: the agent runs in the workspace folder.
        let program = std::path::absolute(binary).unwrap_or_else(|_| binary.to_path_buf());
        Self { name: "agentls", program, args: vec!["acp".into()], env: Vec::new() }
    }

    /// The peer in the folder scripts/install-acp-peer printed.
    pub fn claude_agent_acp(dir: &Path) -> Self {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let agent = dir.join("node_modules/@zed-industries/claude-agent-acp/dist/index.js");
        Self {
            name: "claude-agent-acp",
            program: dir.join("node_modules/.bin/node"),
            args: vec![agent.display().to_string()],
            env: PEER_ENV.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }
}

/// One fresh process's measurements.
#[derive(Debug, Clone)]
pub struct Run {
    pub initialize_ms: f64,
    pub session_new_ms: f64,
    /// The agent process's VmRSS after the settle.
    pub rss_kib: u64,
    /// The sum over the agent and its descendants.
    pub tree_rss_kib: u64,
    pub processes: usize,
    /// Per prompt: `session/prompt` → first byte of the model request carrying it.
    pub to_request_ms: Vec<f64>,
    /// Per prompt: `session/prompt` → its reply.
    pub turn_ms: Vec<f64>,
    /// Per prompt: the model requests whose first byte came after the prompt was sent.
    pub requests: Vec<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct AcpStats {
    pub runs: Vec<Run>,
    pub errors: Vec<String>,
}

impl AcpStats {
    pub fn column(&self, f: impl Fn(&Run) -> f64) -> Vec<f64> {
        self.runs.iter().map(f).collect()
    }
}

/// A connection to an agent over its stdio: one JSON object a line each way, through the
/// client's driver ([`Peer`]). Requests from the agent are answered at once from the reader
/// thread: a permission request `cancelled` (the prompts here need none), anything else "method
/// not found" (this client advertises no file system and no terminal).
struct Connection {
    peer: Peer,
}

fn answer(message: &Value) -> Option<Value> {
    let id = message.get("id")?;
    let method = message.get("method")?.as_str()?;
    Some(match method {
        "session/request_permission" => {
            json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "cancelled"}}})
        }
        _ => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}}),
    })
}

fn line(message: &Value) -> Vec<u8> {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    line
}

fn read_loop(stdout: impl std::io::Read, writer: Writer, inbox: Sender<Incoming>) {
    let mut lines = BufReader::new(stdout);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match lines.read_until(b'\n', &mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let at = Instant::now();
        let Ok(message) = serde_json::from_slice::<Value>(&buffer) else { continue };
        if let Some(reply) = answer(&message) {
            let _ = write_to(&writer, &line(&reply));
        }
        if inbox.send(Incoming { at, message }).is_err() {
            return;
        }
    }
}

impl Connection {
    fn spawn(agent: &Agent, scratch: &Scratch, provider_url: &str) -> Result<Self, String> {
        let mut command: Command = command(&agent.program, scratch, provider_url);
        command.args(&agent.args).envs(agent.env.iter().map(|(k, v)| (k, v)));
        // Its own process group, so the peer's CLI child goes with it.
        command.process_group(0);
        let stderr = std::fs::File::create(scratch.path().join(format!("{}.stderr", agent.name)))
            .map_or_else(|_| Stdio::null(), Stdio::from);
        let peer = Peer::spawn(command, stderr, "acp-reader", line, read_loop)
            .map_err(|e| format!("{}: {e}", agent.program.display()))?;
        Ok(Self { peer })
    }

    fn request(&mut self, method: &str, params: Value) -> Result<(Value, Instant, Instant), String> {
        self.peer.exchange(method, params, PATIENCE)
    }

    /// Closes its input, gives it a moment, then kills its process group (the peer's CLI child
    /// included) and reaps it.
    fn stop(mut self) {
        self.peer.close(Duration::from_millis(500));
        let group = nix::unistd::Pid::from_raw(self.peer.pid() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.peer.child.wait();
    }
}

/// `pid` and every process below it.
fn process_tree(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter_map(|p| {
                    let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
                    // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
                    let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
                    Some((p, ppid))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut tree = vec![pid];
    let mut at = 0;
    while at < tree.len() {
        let parent = tree[at];
        tree.extend(parents.iter().filter(|(_, ppid)| *ppid == parent).map(|(p, _)| *p));
        at += 1;
    }
    tree
}

/// Collects the provider's records into `records` until one's body holds `marker` (waiting at
/// most [`PATIENCE`]); that request's first byte.
fn wait_for_marker(
    provider: &Provider,
    records: &mut Vec<Answered>,
    marker: &str,
) -> Result<Instant, String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        records.extend(provider.take());
        if let Some(record) = records.iter().find(|r| r.request.body_text().contains(marker)) {
            return Ok(record.request.arrived);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the provider saw no request carrying the prompt ({} other requests)",
                records.len()
            ));
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// One fresh process: start, session, settle, memory, `prompts` prompts.
pub fn one(agent: &Agent, prompts: usize, round: usize) -> Result<Run, String> {
    let scratch = Scratch::new().map_err(|e| e.to_string())?;
    let provider = Provider::start(short_reply()).map_err(|e| e.to_string())?;
    let mut conn = Connection::spawn(agent, &scratch, &provider.base_url())?;
    let result = drive(&mut conn, &scratch, &provider, prompts, round);
    conn.stop();
    result.map_err(|e| {
        let stderr = std::fs::read_to_string(scratch.path().join(format!("{}.stderr", agent.name)))
            .unwrap_or_default();
        let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
        if tail.is_empty() { e } else { format!("{e} (stderr: {tail})") }
    })
}

fn drive(
    conn: &mut Connection,
    scratch: &Scratch,
    provider: &Provider,
    prompts: usize,
    round: usize,
) -> Result<Run, String> {
    let init = json!({
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
        "clientInfo": {"name": "agentls-bench", "version": "1"}
    });
    let (result, _, at) = conn.request("initialize", init)?;
    if result.get("protocolVersion") != Some(&json!(1)) {
        return Err(format!("initialize: not protocol version 1: {result}"));
    }
    let initialize_ms = ms(at - conn.peer.spawned);
    let new = json!({"cwd": scratch.workspace(), "mcpServers": []});
    let (result, sent, at) = conn.request("session/new", new)?;
    let session_new_ms = ms(at - sent);
    let session =
        result.get("sessionId").and_then(Value::as_str).ok_or("session/new: no sessionId")?.to_string();
    thread::sleep(SETTLE);
    let pid = conn.peer.pid();
    let tree = process_tree(pid);
    let rss_kib = procfs::rss_kib(pid).ok_or("no VmRSS")?;
    let tree_rss_kib = tree.iter().filter_map(|p| procfs::rss_kib(*p)).sum();
    let mut run = Run {
        initialize_ms,
        session_new_ms,
        rss_kib,
        tree_rss_kib,
        processes: tree.len(),
        to_request_ms: Vec::new(),
        turn_ms: Vec::new(),
        requests: Vec::new(),
    };
    provider.take();
    for n in 0..prompts {
        let marker = format!("bench-marker-{round}-{n}-{}", std::process::id());
        let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": format!("Reply with ok. {marker}")}]});
        let (result, sent, at) = conn.request("session/prompt", prompt)?;
        let stop = result.get("stopReason").and_then(Value::as_str).unwrap_or("none");
        if stop != "end_turn" {
            return Err(format!("prompt {n}: stop reason {stop}, not end_turn"));
        }
        let mut records = Vec::new();
        let first_byte = wait_for_marker(provider, &mut records, &marker)?;
        run.to_request_ms.push(ms(first_byte.saturating_duration_since(sent)));
        run.turn_ms.push(ms(at - sent));
        run.requests.push(records.iter().filter(|r| r.request.arrived >= sent).count());
        conn.peer.seen.clear();
    }
    Ok(run)
}

/// `rounds` rounds; in each, every agent runs once, the order rotating.
pub fn measure(agents: &[Agent], rounds: usize, prompts: usize) -> Vec<AcpStats> {
    let mut all = vec![AcpStats::default(); agents.len()];
    for round in 0..rounds {
        for k in 0..agents.len() {
            let i = (round + k) % agents.len();
            match one(&agents[i], prompts, round) {
                Ok(run) => all[i].runs.push(run),
                Err(e) => all[i].errors.push(e),
            }
        }
    }
    all
}

/// The versions of the peer's parts, from its installed packages: adapter, SDK, Claude Code CLI.
pub fn peer_versions(dir: &Path) -> String {
    let field = |file: &str, key: &str| {
        std::fs::read_to_string(dir.join("node_modules").join(file))
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|v| v.get(key)?.as_str().map(str::to_string))
            .unwrap_or_else(|| "?".into())
    };
    let node = Command::new(dir.join("node_modules/.bin/node"))
        .arg("--version")
        .output()
        .ok()
        .map_or_else(|| "?".into(), |o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    format!(
        "`@zed-industries/claude-agent-acp` {} (`@anthropic-ai/claude-agent-sdk` {}, its Claude Code CLI {}) on Node {node}",
        field("@zed-industries/claude-agent-acp/package.json", "version"),
        field("@anthropic-ai/claude-agent-sdk/package.json", "version"),
        field("@anthropic-ai/claude-agent-sdk/manifest.json", "version"),
    )
}

fn p50_p90(samples: &[f64]) -> String {
    format!("{} (p90 {})", fmt_opt_ms(percentile(samples, 50.0)), fmt_opt_ms(percentile(samples, 90.0)))
}

fn mib(samples: &[f64]) -> String {
    median(samples).map_or_else(|| "—".into(), fmt_mib)
}

fn list_ms(samples: &[f64]) -> String {
    samples.iter().map(|v| fmt_ms(*v)).collect::<Vec<_>>().join(", ")
}

/// The section: agentls's column and the peer's, from the same rounds. `peer` is the peer's
/// statistics or why it was not measured.
pub fn section(ours: &AcpStats, peer: Result<&AcpStats, &str>, rounds: usize, prompts: usize) -> Section {
    let mut section = Section::new(
        "ACP: `agentls acp` beside claude-agent-acp",
        &format!(
            "{rounds} rounds; in each, both agents are started once as fresh processes (the order rotating) with the \
             same private home, empty workspace and fake Anthropic endpoint, and driven by this client over ACP \
             stdio: `initialize` (no file system, no terminal offered), `session/new`, {} s of settle, resident \
             memory, then {prompts} prompts in that session, one after another. Prompt → model request: from this \
             client's write of `session/prompt` to the first byte, at the provider, of the model request that \
             carries the prompt's text. Memory: VmRSS of the agent's process; for the peer also its whole process \
             tree (the adapter and the Claude Code CLI it starts per session; summed, so shared pages count \
             twice). Medians, p90 in brackets. No targets are set: this is a comparison.",
            SETTLE.as_secs()
        ),
    );
    let pick = |stats: &AcpStats, f: &dyn Fn(&Run) -> f64| stats.column(f);
    let peer_cell = |f: &dyn Fn(&AcpStats) -> String| match peer {
        Ok(stats) if !stats.runs.is_empty() => f(stats),
        Ok(stats) => format!("failed: {}", stats.errors.first().map_or("no run", String::as_str)),
        Err(why) => format!("not measured: {why}"),
    };
    if ours.runs.is_empty() {
        let error = ours.errors.first().map_or("no run", String::as_str);
        return Section::failed(&section.title, &section.method, error);
    }
    let mut row = |what: String, ours_cell: String, peer_text: String| {
        section.rows.push(Row::new(what, "(none set)", ours_cell, peer_text, Met::NoTarget));
    };
    row(
        "spawn → `initialize` reply".into(),
        p50_p90(&pick(ours, &|r| r.initialize_ms)),
        peer_cell(&|s| p50_p90(&pick(s, &|r| r.initialize_ms))),
    );
    row(
        "`session/new` → reply".into(),
        p50_p90(&pick(ours, &|r| r.session_new_ms)),
        peer_cell(&|s| p50_p90(&pick(s, &|r| r.session_new_ms))),
    );
    let memory = |s: &AcpStats| {
        let processes = median(&pick(s, &|r| r.processes as f64)).unwrap_or(1.0);
        let tree = mib(&pick(s, &|r| r.tree_rss_kib as f64));
        if processes > 1.0 {
            format!(
                "{tree} in all ({processes:.0} processes; the ACP process alone {})",
                mib(&pick(s, &|r| r.rss_kib as f64))
            )
        } else {
            format!("{tree} (1 process)")
        }
    };
    row(
        format!("resident memory after `initialize` + `session/new` + {} s", SETTLE.as_secs()),
        memory(ours),
        peer_cell(&memory),
    );
    for n in 0..prompts {
        let what = if n == 0 {
            "first `session/prompt` of a fresh process → model request at the provider".to_string()
        } else {
            format!("prompt {} of the same session → model request at the provider", n + 1)
        };
        let at = |r: &Run| r.to_request_ms.get(n).copied().unwrap_or(f64::NAN);
        row(what, p50_p90(&pick(ours, &at)), peer_cell(&|s| p50_p90(&pick(s, &at))));
    }
    for n in 0..prompts {
        let at = |r: &Run| r.turn_ms.get(n).copied().unwrap_or(f64::NAN);
        row(
            format!("prompt {} → `session/prompt` reply (a one-word answer)", n + 1),
            p50_p90(&pick(ours, &at)),
            peer_cell(&|s| p50_p90(&pick(s, &at))),
        );
    }
    let mut describe = |name: &str, stats: &AcpStats| {
        if stats.runs.is_empty() {
            return;
        }
        let requests: Vec<String> = (0..prompts)
            .map(|n| {
                let counts: Vec<f64> =
                    stats.runs.iter().map(|r| r.requests.get(n).copied().unwrap_or(0) as f64).collect();
                format!("{:.0}", median(&counts).unwrap_or(0.0))
            })
            .collect();
        section.notes.push(format!(
            "{name}: {} runs; first prompt → model request {}; resident memory min {} / max {}; model requests per \
             prompt (median) {}.{}",
            stats.runs.len(),
            list_ms(&pick(stats, &|r| r.to_request_ms.first().copied().unwrap_or(f64::NAN))),
            percentile(&pick(stats, &|r| r.tree_rss_kib as f64), 0.0).map_or_else(|| "—".into(), fmt_mib),
            percentile(&pick(stats, &|r| r.tree_rss_kib as f64), 100.0).map_or_else(|| "—".into(), fmt_mib),
            requests.join(", "),
            if stats.errors.is_empty() { String::new() } else { format!(" Failed runs: {}", stats.errors.join("; ")) }
        ));
    };
    describe("agentls", ours);
    if let Ok(stats) = peer {
        describe("claude-agent-acp", stats);
    }
    section.notes.push(format!(
        "The peer alone gets {} (it would otherwise call telemetry and update hosts, which do not exist here).",
        PEER_ENV.iter().map(|(k, v)| format!("`{k}={v}`")).collect::<Vec<_>>().join(" and ")
    ));
    section
}
