//! What an MCP call costs through agentls, next to calling the same server directly, and what
//! configured MCP servers add to the start of a session (docs/benchmarks.md, "MCP"). The server
//! is `@modelcontextprotocol/server-everything` (installed by `scripts/install-mcp-servers`), its
//! `echo` tool, over stdio and over Streamable HTTP on 127.0.0.1; the model is the loopback fake
//! provider of the tests (`tests/support/mock_provider.rs`).
//!
//! - **direct**: one `rmcp` client (the SDK agentls uses), connected once, calls `echo` in a loop.
//! - **agentls**: the real binary (`agentls exec --json`) runs a session whose model calls
//!   `mcp__everything__echo` once per turn; a call's cost is the time between its
//!   `tool_call_start` and `tool_call_end` events (the server stamps both): the permission
//!   policy, the call, the result's conversion and truncation. A `read_file` of a small file in
//!   the same kind of run is the floor of a tool call without MCP.
//! - **start-up**: `agentls exec` from spawn to its first model request, with no MCP server and
//!   with three (server-everything over stdio and over HTTP, and mcp-server-time from PyPI over
//!   stdio): the first model request waits until the servers have started.
//!
//! Usage: `cargo bench --bench mcp [-- --calls N --rounds N]`; without `--bench` (as `cargo test
//! --all-targets` runs it) a short smoke run of every measurement.

#[path = "../tests/support/installed.rs"]
mod installed;
#[allow(dead_code)]
#[path = "../tests/support/mock_provider.rs"]
mod mock_provider;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use mock_provider::{Dialect, MockProvider, Turn};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

const MESSAGE: &str = "hello from the benchmark";

struct Options {
    calls: usize,
    rounds: usize,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let value = |name: &str| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
    };
    Options {
        calls: value("--calls").unwrap_or(if full { 40 } else { 3 }),
        rounds: value("--rounds").unwrap_or(if full { 5 } else { 1 }),
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}

fn p90(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get((samples.len() * 9).div_ceil(10).saturating_sub(1)).copied().unwrap_or(f64::NAN)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `echo` called `calls` times through one rmcp client; the first call (warming up) is left out.
async fn direct<T, E, A>(transport: T, calls: usize) -> Vec<f64>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    // The lifecycle agentls asks for: the current revision first, `initialize` for older servers.
    let lifecycle = rmcp::service::ClientLifecycleMode::Auto {
        preferred_versions: vec![rmcp::model::ProtocolVersion::LATEST],
        legacy_version: Some(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE),
    };
    let client = rmcp::service::serve_client_with_lifecycle_and_ct(
        (),
        transport,
        lifecycle,
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .expect("the MCP handshake");
    let mut took = Vec::new();
    for i in 0..=calls {
        let arguments = json!({"message": MESSAGE}).as_object().cloned().unwrap_or_default();
        let started = Instant::now();
        let result = client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
            .await
            .expect("echo answers");
        let elapsed = started.elapsed();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        if i > 0 {
            took.push(ms(elapsed));
        }
    }
    let _ = client.cancel().await;
    took
}

async fn direct_stdio(everything: &Path, calls: usize) -> Vec<f64> {
    let mut child = tokio::process::Command::new(everything)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("server-everything starts");
    let (stdout, stdin) = (child.stdout.take().expect("stdout"), child.stdin.take().expect("stdin"));
    let took = direct((stdout, stdin), calls).await;
    let _ = child.kill().await;
    took
}

async fn direct_http(url: &str, calls: usize) -> Vec<f64> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    direct(rmcp::transport::StreamableHttpClientTransport::from_config(config), calls).await
}

/// `agentls exec --json` in a fresh folder with `config` as the user's configuration.
fn exec(mock: &MockProvider, dir: &Path, config: &str) -> tokio::process::Command {
    std::fs::write(dir.join("config.toml"), config).expect("write the config");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentls"));
    cmd.args(["exec", "--json", "--provider", "anthropic", "go"])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("AGENTLS_CONFIG", dir.join("config.toml"))
        .env("AGENTLS_LOG", "off")
        .env(Dialect::Anthropic.key_var(), "sk-bench")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in mock.env() {
        cmd.env(k, v);
    }
    cmd
}

/// One session whose model calls `tool` with `arguments` `calls + 1` times in a row: each call's
/// `tool_call_start` → `tool_call_end` (the first left out).
async fn through_agentls(config: &str, tool: &str, arguments: Value, calls: usize) -> Vec<f64> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("small.txt"), "one line\n").expect("write");
    let mock = MockProvider::start(Dialect::Anthropic).await;
    for i in 0..=calls {
        mock.push(Turn::new().tool_call(&format!("c{i}"), tool, arguments.clone()));
    }
    mock.push(Turn::new().text("done"));
    let out = exec(&mock, dir.path(), config).output().await.expect("agentls exec runs");
    assert!(out.status.success(), "agentls exec: {}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let at = |kind: &str, call: &str| {
        events
            .iter()
            .find(|e| e["kind"] == kind && e["data"]["call_id"] == call)
            .and_then(|e| e["timestamp"].as_str())
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .unwrap_or_else(|| panic!("no {kind} of {call}"))
    };
    (1..=calls)
        .map(|i| {
            let call = format!("c{i}");
            let end =
                events.iter().find(|e| e["kind"] == "tool_call_end" && e["data"]["call_id"] == call.as_str());
            assert_eq!(end.map(|e| &e["data"]["status"]), Some(&json!("ok")), "{end:?}");
            let took = at("tool_call_end", &call) - at("tool_call_start", &call);
            took.num_microseconds().unwrap_or_default() as f64 / 1000.0
        })
        .collect()
}

/// Spawn → the first model request, for a session with `config`.
async fn first_request(config: &str) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Turn::new().text("done"));
    let started = Instant::now();
    let mut child = exec(&mock, dir.path(), config).spawn().expect("agentls exec starts");
    let deadline = started + Duration::from_secs(60);
    while mock.requests().is_empty() {
        assert!(Instant::now() < deadline, "no model request within 60 s");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = ms(started.elapsed());
    let status = child.wait().await.expect("agentls exec ends");
    assert!(status.success(), "agentls exec failed");
    took
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn row(what: &str, direct: &mut [f64], through: &mut [f64]) {
    let (d, t) = (median(direct), median(through));
    println!(
        "| {what} | {d:.2} ms (p90 {:.2}) | {t:.2} ms (p90 {:.2}) | {:+.2} ms |",
        p90(direct),
        p90(through),
        t - d
    );
}

#[tokio::main]
async fn main() {
    let Options { calls, rounds } = options();
    let everything = installed::everything();
    let time_server = installed::time_server();
    let load_before = load();
    let (mut http, url) = installed::everything_http().await;
    let stdio_config =
        format!("[mcp_servers.everything]\ncommand = \"{}\"\npermission = \"allow\"\n", everything.display());
    let http_config = format!("[mcp_servers.everything]\nurl = \"{url}\"\npermission = \"allow\"\n");
    let echo = json!({"message": MESSAGE});

    let (mut direct_s, mut direct_h, mut agentls_s, mut agentls_h, mut floor) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        direct_s.extend(direct_stdio(&everything, calls).await);
        direct_h.extend(direct_http(&url, calls).await);
        agentls_s.extend(through_agentls(&stdio_config, "mcp__everything__echo", echo.clone(), calls).await);
        agentls_h.extend(through_agentls(&http_config, "mcp__everything__echo", echo.clone(), calls).await);
        floor.extend(through_agentls("", "read_file", json!({"file_path": "small.txt"}), calls).await);
    }

    let three = format!(
        "{stdio_config}[mcp_servers.web]\nurl = \"{url}\"\npermission = \"allow\"\n\
         [mcp_servers.time]\ncommand = \"{}\"\nargs = [\"--local-timezone\", \"UTC\"]\n",
        time_server.display()
    );
    let time_config = format!(
        "[mcp_servers.time]\ncommand = \"{}\"\nargs = [\"--local-timezone\", \"UTC\"]\n",
        time_server.display()
    );
    let configs = [
        ("no MCP server", String::new()),
        ("server-everything over stdio (npm)", stdio_config.clone()),
        ("server-everything over HTTP, already running", http_config.clone()),
        ("mcp-server-time over stdio (PyPI)", time_config),
        ("all three", three),
    ];
    let mut starts: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for _ in 0..rounds.max(3) {
        for (samples, (_, config)) in starts.iter_mut().zip(&configs) {
            samples.push(first_request(config).await);
        }
    }
    let _ = http.kill().await;

    println!("\nMCP: {calls} calls x {rounds} rounds; load average {load_before} before, {} after\n", load());
    println!(
        "| `echo` of server-everything | direct (rmcp client) | through agentls (`tool_call_start` → `tool_call_end`) | added |"
    );
    println!("|---|---|---|---|");
    row("stdio", &mut direct_s, &mut agentls_s);
    row("Streamable HTTP (127.0.0.1)", &mut direct_h, &mut agentls_h);
    println!(
        "| floor: `read_file` of a small file, no MCP | | {:.2} ms (p90 {:.2}) | |",
        median(&mut floor),
        p90(&mut floor)
    );
    println!("\n| `agentls exec`: spawn → first model request | median | max |");
    println!("|---|---|---|");
    for (samples, (what, _)) in starts.iter_mut().zip(&configs) {
        let max = samples.iter().copied().fold(f64::NAN, f64::max);
        println!("| {what} | {:.0} ms | {max:.0} ms |", median(samples));
    }
}
