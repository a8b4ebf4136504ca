//! The network benchmark of docs/benchmarks.md (issue 29): the `agentls` binary over its real
//! stdio against a TLS fake Anthropic endpoint (its own CA, HTTP/2 and HTTP/1.1 by ALPN) behind a
//! loopback latency proxy (a configurable round trip), beside a direct client in this process
//! (reqwest on the same TLS stack) in the same run. For each case it measures prompt → model
//! request at the provider and prompt → first text delta in the editor: (a) the first prompt of
//! a fresh session, (b) a later prompt, (c) a prompt after the provider closed the idle
//! connection (the editor sent `agentls/userTyping` when the user began to type; and, for
//! contrast, without it), (d) eight sessions prompted at once, with the TLS handshakes they cost.
//!
//! Usage: `network [--agentls BIN] [--rtt MS] [--rounds N] [--typing MS] [--docs FILE]
//! [--command TEXT] [--commit TEXT]`, where `--commit` says what was measured (the commit, the
//! build). `scripts/bench-network` builds the release binary and runs it (or measures the binary
//! it is given). Without arguments (`cargo test --all-targets`) it is a smoke test: one round at 10 ms.
//!
//! Invariant: every row states its target, agentls's figure and the direct client's from the
//! same run; a case that fails becomes an error, never a silent gap.

#[allow(dead_code)]
#[path = "../server/client.rs"]
mod client;
mod latency;
/// The tests' LSP framing and editor answers, which the client uses.
#[path = "../../tests/support/lsp_wire.rs"]
mod lsp_wire;
/// The tests' fake provider (one fake for the tests and the benches).
#[allow(dead_code)]
#[path = "../../tests/support/mock_provider.rs"]
mod mock_provider;
/// The tests' certificate authority (one CA maker for the tests and the benches).
#[allow(dead_code)]
#[path = "../../tests/support/tls.rs"]
mod tls;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use client::{Incoming, Server};
use mock_provider::{Dialect, MockProvider, Serving, Turn};
use serde_json::{Value, json};
use tls::TestCa;

/// How long any one step may take.
const PATIENCE: Duration = Duration::from_secs(60);
/// The markers of the generated part of docs/benchmarks.md this benchmark owns.
const BEGIN: &str = "<!-- BEGIN scripts/bench-network: generated, do not edit by hand -->";
const END: &str = "<!-- END scripts/bench-network -->";

struct Options {
    agentls: PathBuf,
    rtt: Duration,
    rounds: usize,
    /// How long "the user types" between a session's start (or `agentls/userTyping`) and the prompt.
    typing: Duration,
    docs: Option<PathBuf>,
    command: String,
    /// What was measured, for the report: "commit abc1234 (release build)".
    commit: String,
    smoke: bool,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        agentls: PathBuf::from(env!("CARGO_BIN_EXE_agentls")),
        rtt: Duration::from_millis(50),
        rounds: 7,
        typing: Duration::from_millis(1000),
        docs: None,
        command: "cargo bench --bench network".into(),
        commit: "commit unknown".into(),
        smoke: std::env::args().len() == 1,
    };
    if options.smoke {
        options.rtt = Duration::from_millis(10);
        options.rounds = 1;
        options.typing = Duration::from_millis(300);
    }
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        let ms = |v: String| v.parse::<u64>().map(Duration::from_millis).map_err(|e| format!("{v}: {e}"));
        match arg.as_str() {
            "--bench" => {}
            "--agentls" => options.agentls = PathBuf::from(value()?),
            "--rtt" => options.rtt = ms(value()?)?,
            "--typing" => options.typing = ms(value()?)?,
            "--rounds" => options.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--docs" => options.docs = Some(PathBuf::from(value()?)),
            "--command" => options.command = value()?,
            "--commit" => options.commit = value()?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(options)
}

/// The fake Anthropic endpoint: the tests' mock provider over TLS with its own CA (made at start),
/// HTTP/2 and HTTP/1.1 by ALPN (as the real APIs offer), keep-alive, `TCP_NODELAY`; it answers
/// every model request with a short streamed answer (three text deltas), stamps each request
/// when its head arrives, counts TLS handshakes and `HEAD` requests (warm-ups), and closes every
/// connection on demand (a provider dropping idle connections).
struct TlsProvider {
    mock: MockProvider,
    ca_file: PathBuf,
    _ca: TestCa,
}

impl TlsProvider {
    async fn start() -> Self {
        let ca = TestCa::new("agentls network bench CA");
        let serving = Serving {
            http2: true,
            nodelay: true,
            script: Some(std::sync::Arc::new(|_: &mock_provider::RecordedRequest| {
                Turn::new().text("Hello over TLS.").fragment_words().into()
            })),
            ..Serving::default()
        };
        let acceptor = ca.acceptor_for(&[b"h2", b"http/1.1"]);
        let mock = MockProvider::start_tls_with(Dialect::Anthropic, acceptor, serving).await;
        Self { mock, ca_file: ca.ca_file().to_path_buf(), _ca: ca }
    }

    /// `https://127.0.0.1:PORT` reached through `via` (the latency proxy).
    fn url_via(via: std::net::SocketAddr) -> String {
        format!("https://127.0.0.1:{}", via.port())
    }

    /// When each model request's head arrived.
    fn requests(&self) -> Vec<Instant> {
        self.mock.arrivals()
    }

    fn handshakes(&self) -> usize {
        self.mock.handshakes().0
    }

    fn warmups(&self) -> usize {
        self.mock.warmups()
    }

    /// Closes every open connection (those streaming finish first).
    fn close_connections(&self) {
        self.mock.close_idle_connections();
    }
}

/// Prompt → request at the provider, prompt → first text delta (ms).
#[derive(Debug, Clone, Copy)]
struct Sample {
    request: f64,
    delta: f64,
}

#[derive(Default)]
struct Results {
    first: Vec<Sample>,
    later: Vec<Sample>,
    after_close: Vec<Sample>,
    after_close_untold: Vec<Sample>,
    concurrent: Vec<Sample>,
    concurrent_handshakes: Vec<usize>,
    direct_new: Vec<Sample>,
    direct_kept: Vec<Sample>,
    /// TLS handshakes of the sequential cases per round (a fresh server each).
    sequential_handshakes: Vec<usize>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn since(later: Instant, earlier: Instant) -> f64 {
    ms(later.saturating_duration_since(earlier))
}

/// A fresh `agentls serve` reaching the provider at `url`, initialized in a folder of `home`.
fn start_server(options: &Options, url: &str, ca_file: &Path, home: &Path) -> Result<Server, String> {
    let root = home.join("ws");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let mut command = Command::new(&options.agentls);
    command
        .arg("serve")
        .current_dir(&root)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("AGENTLS_CONFIG", home.join("no-config.toml"))
        .env("AGENTLS_DATA_DIR", home.join("data"))
        .env("ANTHROPIC_API_KEY", "sk-ant-bench")
        .env("ANTHROPIC_BASE_URL", url)
        .env("SSL_CERT_FILE", ca_file);
    let mut server = Server::spawn_lsp(command, Stdio::null()).map_err(|e| format!("agentls: {e}"))?;
    let uri = format!("file://{}", root.display());
    server.request(
        "initialize",
        json!({"processId": null, "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": "ws"}],
            "capabilities": {"experimental": {"agentls": {"protocolVersion": 1}}},
            "initializationOptions": {"approval": "auto"}}),
        PATIENCE,
    )?;
    server.notify("initialized", json!({})).map_err(|e| e.to_string())?;
    Ok(server)
}

fn new_session(server: &mut Server) -> Result<String, String> {
    let created = server.command("agentls.newSession", json!({}), PATIENCE)?;
    created["sessionId"].as_str().map(str::to_string).ok_or_else(|| format!("no session id: {created}"))
}

fn is_event(message: &Incoming, session: &str, kind: &str, after: Instant) -> bool {
    message.at > after
        && message.method() == Some("agentls/event")
        && message.message.pointer("/params/sessionId").and_then(Value::as_str) == Some(session)
        && message.message.pointer("/params/kind").and_then(Value::as_str) == Some(kind)
}

/// Writes prompts for `sessions` back to back; returns when each was written.
fn prompt_all(server: &mut Server, sessions: &[String]) -> Result<Vec<Instant>, String> {
    let mut sent = Vec::new();
    for session in sessions {
        let params =
            json!({"command": "agentls.prompt", "arguments": [{"sessionId": session, "text": "Say hello."}]});
        sent.push(server.send_request("workspace/executeCommand", params).map_err(|e| e.to_string())?);
    }
    for (id, _) in &sent {
        server.response(*id, PATIENCE)?;
    }
    Ok(sent.into_iter().map(|(_, at)| at).collect())
}

/// Prompts `sessions` at once and waits for their turns: one sample each.
fn measure(server: &mut Server, provider: &TlsProvider, sessions: &[String]) -> Result<Vec<Sample>, String> {
    let before = provider.requests().len();
    let written = prompt_all(server, sessions)?;
    let mut deltas = Vec::new();
    for (session, at) in sessions.iter().zip(&written) {
        let delta = server.wait_for("the first text delta", PATIENCE, |m| {
            is_event(m, session, "assistant_text_delta", *at)
        })?;
        server.wait_for("the turn's end", PATIENCE, |m| is_event(m, session, "processing_end", *at))?;
        deltas.push(since(delta, *at));
    }
    let mut arrivals: Vec<Instant> = provider.requests()[before..].to_vec();
    arrivals.sort();
    if arrivals.len() != sessions.len() {
        return Err(format!("{} model requests for {} prompts", arrivals.len(), sessions.len()));
    }
    Ok(arrivals
        .iter()
        .zip(&written)
        .zip(deltas)
        .map(|((r, w), delta)| Sample { request: since(*r, *w), delta })
        .collect())
}

/// Waits until a condition on the provider holds (a background warm-up), at most `PATIENCE`.
fn eventually(what: &str, mut done: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        if Instant::now() > deadline {
            return Err(format!("waited in vain for {what}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// One round of the sequential cases (a), (b), (c) on a fresh server.
fn sequential(
    options: &Options,
    provider: &TlsProvider,
    url: &str,
    results: &mut Results,
) -> Result<(), String> {
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let handshakes = provider.handshakes();
    let mut server = start_server(options, url, &provider.ca_file, home.path())?;
    let session = vec![new_session(&mut server)?];
    std::thread::sleep(options.typing);
    results.first.extend(measure(&mut server, provider, &session)?);
    std::thread::sleep(Duration::from_millis(300));
    results.later.extend(measure(&mut server, provider, &session)?);

    // The provider drops the idle connection; the user starts typing, the plugin says so.
    let idle = agentls::llm::http::FRESH + Duration::from_millis(200);
    std::thread::sleep(idle);
    provider.close_connections();
    std::thread::sleep(Duration::from_millis(100));
    let warmups = provider.warmups();
    server.notify("agentls/userTyping", json!({"sessionId": session[0]})).map_err(|e| e.to_string())?;
    eventually("the warm-up userTyping asks for", || provider.warmups() > warmups)?;
    std::thread::sleep(options.typing);
    results.after_close.extend(measure(&mut server, provider, &session)?);

    // The same without the notification, for contrast.
    std::thread::sleep(idle);
    provider.close_connections();
    std::thread::sleep(Duration::from_millis(100) + options.typing);
    results.after_close_untold.extend(measure(&mut server, provider, &session)?);
    results.sequential_handshakes.push(provider.handshakes() - handshakes);
    server.stop();
    Ok(())
}

/// One round of (d): a fresh server, eight sessions started, then prompted at once.
fn concurrent(
    options: &Options,
    provider: &TlsProvider,
    url: &str,
    results: &mut Results,
) -> Result<(), String> {
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    provider.close_connections();
    std::thread::sleep(Duration::from_millis(100));
    let handshakes = provider.handshakes();
    let mut server = start_server(options, url, &provider.ca_file, home.path())?;
    let mut sessions = Vec::new();
    for _ in 0..8 {
        sessions.push(new_session(&mut server)?);
    }
    std::thread::sleep(options.typing);
    results.concurrent.extend(measure(&mut server, provider, &sessions)?);
    results.concurrent_handshakes.push(provider.handshakes() - handshakes);
    server.stop();
    Ok(())
}

/// The direct client: a new connection, then the same request on the kept-alive one.
async fn direct(provider: &TlsProvider, url: &str, results: &mut Results) -> Result<(), String> {
    let ca = std::fs::read(&provider.ca_file).map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .no_proxy()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).map_err(|e| e.to_string())?)
        .build()
        .map_err(|e| e.to_string())?;
    let body = json!({"model": "claude-bench", "max_tokens": 64, "stream": true,
        "messages": [{"role": "user", "content": "Say hello."}]})
    .to_string();
    for kept in [false, true] {
        let before = provider.requests().len();
        let started = Instant::now();
        let mut response = client
            .post(format!("{url}/v1/messages"))
            .header("x-api-key", "sk-ant-bench")
            .header("anthropic-version", "2023-06-01")
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .map_err(|e| format!("direct client: {e}"))?;
        let mut received = Vec::new();
        let mut delta = None;
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            received.extend_from_slice(&chunk);
            if delta.is_none() && memchr::memmem::find(&received, b"text_delta").is_some() {
                delta = Some(Instant::now());
            }
        }
        let delta = delta.ok_or("the direct client got no text delta")?;
        let request = *provider.requests().get(before).ok_or("the direct request did not arrive")?;
        let sample = Sample { request: since(request, started), delta: since(delta, started) };
        if kept { results.direct_kept.push(sample) } else { results.direct_new.push(sample) }
    }
    Ok(())
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn medians(samples: &[Sample]) -> (f64, f64) {
    (
        median(&samples.iter().map(|s| s.request).collect::<Vec<_>>()),
        median(&samples.iter().map(|s| s.delta).collect::<Vec<_>>()),
    )
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// The generated section (markdown).
fn report(options: &Options, results: &Results, load_before: &str, took: Duration) -> String {
    let rtt = ms(options.rtt);
    let (kept_request, kept_delta) = medians(&results.direct_kept);
    let (new_request, new_delta) = medians(&results.direct_new);
    let bound = kept_delta + 0.2 * rtt;
    let mut out = String::new();
    out.push_str("## Results of `scripts/bench-network` (generated)\n\n");
    out.push_str(&format!(
        "- Command: `{}`; {}; {} rounds; the measurements took {:.0} s.\n",
        options.command,
        options.commit,
        options.rounds,
        took.as_secs_f64()
    ));
    out.push_str(&format!(
        "- Round trip added by the latency proxy: {rtt:.0} ms (each direction held {:.0} ms; a new connection's first bytes one round trip more, as a TCP handshake); \"the user types\" for {:.0} ms between a session's start or `agentls/userTyping` and the prompt.\n",
        rtt / 2.0,
        ms(options.typing)
    ));
    out.push_str(&format!(
        "- Load average {load_before} before the run, {} after (2 cores shared with other builds: every figure moves with it; compare with the direct client of the same run).\n\n",
        load_average()
    ));
    out.push_str("| case | target | agentls: prompt → request at the provider | agentls: prompt → first text delta | direct client (same run) | met? |\n|---|---|---|---|---|---|\n");
    let direct = format!(
        "kept-alive {kept_request:.1} / {kept_delta:.1} ms; new connection {new_request:.1} / {new_delta:.1} ms"
    );
    let mut row = |case: &str, samples: &[Sample], target: Option<f64>| {
        let (request, delta) = medians(samples);
        let (target_text, met) = match target {
            Some(bound) => (
                format!("first delta ≤ kept-alive + 0.2 RTT ({bound:.1} ms)"),
                if delta <= bound { "**met**" } else { "**not met**" },
            ),
            None => ("(contrast)".to_string(), "—"),
        };
        out.push_str(&format!(
            "| {case} | {target_text} | {request:.1} ms | {delta:.1} ms | {direct} | {met} |\n"
        ));
    };
    row("(a) first prompt of a fresh session", &results.first, Some(bound));
    row("(b) a later prompt", &results.later, Some(bound));
    row(
        "(c) after the provider closed the idle connection, `agentls/userTyping` sent",
        &results.after_close,
        Some(bound),
    );
    row("(c) the same without `agentls/userTyping`", &results.after_close_untold, None);
    row("(d) eight sessions prompted at once (each)", &results.concurrent, Some(bound));
    let handshakes = results.concurrent_handshakes.iter().max().copied().unwrap_or(0);
    out.push_str(&format!(
        "| (d) TLS handshakes for the eight sessions | ≤ 1 (one per provider) | {} per round (most {handshakes}) | — | HTTP/2: one connection carries all | {} |\n",
        results.concurrent_handshakes.iter().map(usize::to_string).collect::<Vec<_>>().join(", "),
        if handshakes <= 1 { "**met**" } else { "**not met**" }
    ));
    out.push('\n');
    let spread = |samples: &[Sample]| {
        let deltas: Vec<String> = samples.iter().map(|s| format!("{:.1}", s.delta)).collect();
        deltas.join(", ")
    };
    out.push_str(&format!("- Medians over the rounds. First text deltas (ms): (a) {}; (b) {}; (c) {}; (c) without userTyping {}.\n", spread(&results.first), spread(&results.later), spread(&results.after_close), spread(&results.after_close_untold)));
    out.push_str(&format!(
        "- (d) the slowest of the eight per round: {} ms; the sequential cases cost {} TLS handshakes per round (one at the session's start, one for userTyping, one for the prompt without it).\n",
        results.concurrent.chunks(8).map(|c| format!("{:.1}", c.iter().map(|s| s.delta).fold(0.0, f64::max))).collect::<Vec<_>>().join(", "),
        results.sequential_handshakes.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
    ));
    out
}

fn write_docs(path: &Path, section: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        return Err(format!("{} has no {BEGIN} … {END} block", path.display()));
    };
    let updated = format!("{}{BEGIN}\n\n{section}\n{}", &text[..begin], &text[end..]);
    std::fs::write(path, updated).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(options: &Options) -> Result<String, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let provider = runtime.block_on(TlsProvider::start());
    let proxy = runtime
        .block_on(latency::LatencyProxy::start(provider.mock.addr(), options.rtt))
        .map_err(|e| format!("latency proxy: {e}"))?;
    let url = TlsProvider::url_via(proxy.addr);
    let load_before = load_average();
    let started = Instant::now();
    let mut results = Results::default();
    for round in 0..options.rounds {
        eprintln!("network bench: round {} of {}", round + 1, options.rounds);
        sequential(options, &provider, &url, &mut results)?;
        concurrent(options, &provider, &url, &mut results)?;
        provider.close_connections();
        runtime.block_on(direct(&provider, &url, &mut results))?;
    }
    eprintln!("network bench: {} connections through the latency proxy", proxy.connections());
    Ok(report(options, &results, &load_before, started.elapsed()))
}

fn main() {
    let options = match options() {
        Ok(options) => options,
        Err(e) => {
            eprintln!("benches/network: {e}");
            std::process::exit(2);
        }
    };
    match run(&options) {
        Ok(section) if options.smoke => {
            eprintln!("{section}");
            println!("benches/network smoke test: 1 passed, 0 failed");
        }
        Ok(section) => {
            println!("{section}");
            if let Some(docs) = &options.docs
                && let Err(e) = write_docs(docs, &section)
            {
                eprintln!("benches/network: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("benches/network: {e}");
            if options.smoke {
                println!("benches/network smoke test: 0 passed, 1 failed");
            }
            std::process::exit(1);
        }
    }
}
