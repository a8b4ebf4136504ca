//! MCP tools through the real binary (`agentls exec`), with the loopback fake provider scripting
//! the model's calls: real servers nobody here wrote, installed from the registries by
//! `scripts/install-mcp-servers` (`@modelcontextprotocol/server-everything` over stdio and
//! Streamable HTTP, `mcp-server-time` from PyPI over stdio), and our own misbehaving server
//! (`tests/fixtures/mcp/misbehaving.py`) for the faults. Nothing is skipped: a failed install
//! fails these tests.

use crate::support;
use crate::support::session_harness;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use agentls::profiles::ProfileKind;
use serde_json::{Value, json};
use session_harness::calls::sent_result;
use support::exec_binary::{USER_CONFIG, exec_command, trust_folder};
use support::installed;
use support::mitmproxy::Mitmproxy;
use support::mock_provider::{Dialect, MockProvider, Turn as Reply};

const KEY: &str = "sk-test-secret-value-123";

fn everything() -> String {
    installed::everything().display().to_string()
}

fn time_server() -> String {
    installed::time_server().display().to_string()
}

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/misbehaving.py").display().to_string()
}

fn user_config(dir: &Path, text: &str) {
    std::fs::write(dir.join(USER_CONFIG), text).expect("write the user config");
}

async fn exec(mock: &MockProvider, dir: &Path, args: &[&str]) -> Output {
    let run = exec_command(mock, dir, KEY, args).output();
    tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("agentls exec ends")
        .expect("agentls runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The tool names of a recorded Anthropic request.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

fn tool<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["tools"].as_array().and_then(|t| t.iter().find(|t| t["name"] == name)).unwrap_or(&Value::Null)
}

#[tokio::test]
async fn server_everything_over_stdio_asks_then_runs_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let server = format!("[mcp_servers.everything]\ncommand = \"{}\"\n", everything());
    user_config(dir.path(), &server);
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().tool_call(
        "c1",
        "mcp__everything__echo",
        json!({"message": "hello from the model"}),
    ));
    mock.push(Reply::new().text("I could not call it."));
    // Without a terminal the question cannot be asked: refused, with how to allow it.
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "echo something"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let first = &mock.requests()[0].body;
    assert!(offered(first).contains(&"mcp__everything__echo".to_string()), "{:?}", offered(first));
    assert_eq!(
        tool(first, "mcp__everything__echo")["input_schema"]["properties"]["message"]["type"],
        "string"
    );
    let refused = sent_result(ProfileKind::Anthropic, &mock.requests()[1].body, "c1");
    assert_eq!(refused.is_error, Some(true));
    assert!(
        refused.content.contains("no terminal to ask on")
            && refused.content.contains("tool_permissions = { echo = \"allow\" }")
            && refused.content.contains("[mcp_servers.everything]"),
        "{refused:?}"
    );
    assert!(
        stderr(&out).contains("not called (no terminal to ask on): mcp everything echo"),
        "{}",
        stderr(&out)
    );

    // Allowed for this tool: it runs and the model reads the server's answer.
    user_config(dir.path(), &format!("{server}tool_permissions = {{ echo = \"allow\" }}\n"));
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().tool_call(
        "c1",
        "mcp__everything__echo",
        json!({"message": "hello from the model"}),
    ));
    mock.push(Reply::new().text("It echoed."));
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "echo something"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let result = sent_result(ProfileKind::Anthropic, &mock.requests()[1].body, "c1");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(result.content.contains("hello from the model"), "{result:?}");
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let (mut server, url) = installed::everything_http().await;
    let dir = tempfile::tempdir().unwrap();
    user_config(dir.path(), &format!("[mcp_servers.web]\nurl = \"{url}\"\npermission = \"allow\"\n"));
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().tool_call("c1", "mcp__web__get-sum", json!({"a": 2, "b": 40})));
    mock.push(Reply::new().text("The sum is 42."));
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "add"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let result = sent_result(ProfileKind::Anthropic, &mock.requests()[1].body, "c1");
    assert!(result.is_error != Some(true) && result.content.contains("42"), "{result:?}");
    let _ = server.kill().await;
}

#[tokio::test]
async fn mcp_server_time_from_pypi_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    user_config(
        dir.path(),
        &format!(
            "[mcp]\nallow_read_only = true\n[mcp_servers.time]\ncommand = \"{}\"\nargs = [\"--local-timezone\", \"UTC\"]\n",
            time_server()
        ),
    );
    let mock = MockProvider::start(Dialect::Gemini).await;
    mock.push(Reply::new().tool_call(
        "c1",
        "mcp__time__convert_time",
        json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    ));
    mock.push(Reply::new().text("It is 21:00 in Tokyo."));
    let out = exec(&mock, dir.path(), &["--provider", "gemini", "what time"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The server declares readOnlyHint; `allow_read_only` lets it run without a question.
    let body = &mock.requests()[1].body;
    let response = body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .find_map(|p| p.get("functionResponse"))
        .cloned()
        .expect("a function response");
    let text = response.to_string();
    assert!(text.contains("21:00") && text.contains("Asia/Tokyo"), "{text}");
}

/// One run of `agentls exec --json` in which the model calls each misbehaving tool in turn:
/// every fault reaches the model as an error it can act on and the run goes on.
#[tokio::test]
async fn a_misbehaving_server_gives_the_model_errors_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fixture.log");
    user_config(
        dir.path(),
        &format!(
            "[mcp_servers.bad]\ncommand = \"python3\"\nargs = [\"{}\"]\nenv = {{ MCP_FIXTURE_LOG = \"{}\" }}\n\
             tool_timeout_ms = 1500\npermission = \"allow\"\n",
            fixture(),
            log.display()
        ),
    );
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let calls = ["garbage", "flood", "huge", "hang", "fails", "progress", "grow", "grown", "crash"];
    for (i, name) in calls.iter().enumerate() {
        mock.push(Reply::new().tool_call(&format!("c{i}"), &format!("mcp__bad__{name}"), json!({})));
    }
    // The server is restarted after its crash (backoff 1 s); a command waits it out.
    mock.push(Reply::new().tool_call("wait", "shell", json!({"command": "sleep 2"})));
    mock.push(Reply::new().tool_call("again", "mcp__bad__echo", json!({"text": "back"})));
    mock.push(Reply::new().text("done"));
    let out =
        exec(&mock, dir.path(), &["--provider", "anthropic", "--json", "--shell", "allow", "misbehave"])
            .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = mock.requests();
    let result_of = |i: usize, id: &str| sent_result(ProfileKind::Anthropic, &requests[i + 1].body, id);

    let garbage = result_of(0, "c0");
    assert_eq!((garbage.is_error, garbage.content.as_str()), (Some(false), "answered after garbage"));
    let flood = result_of(1, "c1");
    assert_eq!((flood.is_error, flood.content.as_str()), (Some(false), "answered after a flood of stderr"));
    let huge = result_of(2, "c2");
    assert!(
        huge.is_error == Some(false) && huge.content.len() < 100_000,
        "{} characters",
        huge.content.len()
    );
    assert!(
        huge.content.contains("truncated") || huge.content.contains("omitted"),
        "{}",
        &huge.content[..200]
    );
    let hang = result_of(3, "c3");
    assert_eq!(hang.is_error, Some(true));
    assert!(hang.content.contains("did not answer within 1500 ms"), "{hang:?}");
    let fails = result_of(4, "c4");
    assert_eq!(fails.is_error, Some(true));
    assert!(fails.content.contains("the fixture failed on purpose"), "{fails:?}");
    let progress = result_of(5, "c5");
    assert_eq!(progress.content, "done after progress");
    let events = events(&out);
    let deltas: String = events
        .iter()
        .filter(|e| e["kind"] == "tool_call_output_delta" && e["data"]["call_id"] == "c5")
        .map(|e| e["data"]["delta"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(deltas, "[1/3] step 1\n[2/3] step 2\n[3/3] step 3\n");
    // tools/list_changed: the next request offers the new tool, and it runs.
    assert!(!offered(&requests[6].body).contains(&"mcp__bad__grown".to_string()));
    assert!(offered(&requests[7].body).contains(&"mcp__bad__grown".to_string()));
    assert_eq!(result_of(7, "c7").content, "the grown tool ran");
    let crash = result_of(8, "c8");
    assert_eq!(crash.is_error, Some(true));
    assert!(crash.content.contains("stopped during the call"), "{crash:?}");
    let warnings: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "warning")
        .filter_map(|e| e["data"]["message"].as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("MCP server `bad` is not available") && w.contains("crashing on purpose")),
        "{warnings:?}"
    );
    assert!(
        !offered(&requests[9].body).contains(&"mcp__bad__echo".to_string()),
        "a failed server's tools are absent"
    );
    let again = sent_result(ProfileKind::Anthropic, &requests[11].body, "again");
    assert_eq!((again.is_error, again.content.as_str()), (Some(false), "echo: back"), "restarted");
    assert!(warnings.iter().any(|w| w.contains("MCP server `bad` is running again")), "{warnings:?}");

    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.lines().any(|l| l.starts_with("cancelled ")),
        "the timed-out call was cancelled at the server:\n{log}"
    );
    let pids: Vec<u32> = log.lines().filter_map(|l| l.strip_prefix("pid ")?.parse().ok()).collect();
    assert_eq!(pids.len(), 2, "started, then started again after the crash");
    for pid in pids {
        assert!(
            session_harness::wait_process_gone(pid, Duration::from_secs(10)).await,
            "{pid} outlived the run"
        );
    }
}

#[tokio::test]
async fn a_server_that_fails_or_never_answers_holds_up_no_prompt() {
    let dir = tempfile::tempdir().unwrap();
    user_config(
        dir.path(),
        &format!(
            "[mcp_servers.broken]\ncommand = \"python3\"\nargs = [\"{}\", \"--fail-start\"]\n\
             [mcp_servers.silent]\ncommand = \"sleep\"\nargs = [\"60\"]\nstartup_timeout_ms = 800\n\
             [mcp_servers.off]\ncommand = \"python3\"\nargs = [\"{}\"]\nenabled = false\n",
            fixture(),
            fixture()
        ),
    );
    let mock = MockProvider::start(Dialect::Anthropic).await;
    mock.push(Reply::new().text("Working without them."));
    let started = Instant::now();
    let out = exec(&mock, dir.path(), &["--provider", "anthropic", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(15), "held up for {:?}", started.elapsed());
    let tools = offered(&mock.requests()[0].body);
    assert!(!tools.iter().any(|t| t.starts_with("mcp__")), "{tools:?}");
    let warnings: Vec<String> = events(&out)
        .iter()
        .filter(|e| e["kind"] == "warning")
        .filter_map(|e| e["data"]["message"].as_str().map(str::to_string))
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains("`broken`") && w.contains("cannot start (asked to fail)")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("`silent`") && w.contains("did not start within 800 ms")),
        "{warnings:?}"
    );
    assert!(!warnings.iter().any(|w| w.contains("`off`")), "{warnings:?}");
}

/// A project's `.mcp.json` starts nothing until its folder is trusted; then its servers run,
/// and no secret of the environment reaches them unless the file names it.
#[tokio::test]
async fn a_project_mcp_json_needs_trust_and_passes_only_named_secrets() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".mcp.json"),
        json!({"mcpServers": {"everything": {"command": everything(), "env": {"PASSED": "${OPENAI_API_KEY}"}}}}).to_string(),
    )
    .unwrap();
    user_config(dir.path(), "[mcp_servers.everything]\npermission = \"allow\"\n");
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    mock.push(Reply::new().text("nothing to call"));
    let out = exec(&mock, dir.path(), &["--provider", "openai", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`mcp_servers.everything` (would start the MCP server"),
        "{}",
        stderr(&out)
    );
    let tools = mock.requests()[0].body["tools"].to_string();
    assert!(!tools.contains("mcp__everything"), "{tools}");

    trust_folder(dir.path());
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    mock.push(Reply::new().tool_call("c1", "mcp__everything__get-env", json!({})));
    mock.push(Reply::new().text("seen"));
    let out = exec(&mock, dir.path(), &["--provider", "openai", "show env"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let result = sent_result(ProfileKind::OpenAi, &mock.requests()[1].body, "c1");
    assert!(
        result.content.contains("PASSED") && result.content.contains(KEY),
        "the named secret is passed: {result:?}"
    );
    assert!(!result.content.contains("other-secret-456"), "an unnamed secret is not: {result:?}");
    assert!(!result.content.contains("OPENAI_API_KEY"), "nor the variable itself: {result:?}");
}

/// `agentls mcp list` in `dir` with only the variables given.
async fn mcp_list(dir: &Path, vars: &[(&str, &str)]) -> String {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentls"));
    cmd.args(["mcp", "list"])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("AGENTLS_CONFIG", dir.join(USER_CONFIG))
        .env("AGENTLS_LOG", "off");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().await.expect("agentls runs");
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Streamable HTTP server is reached like the provider: through the proxy of HTTP_PROXY
/// (mitmproxy from PyPI) unless NO_PROXY names it, and over TLS re-signed by a company CA only
/// once SSL_CERT_FILE or `[network] ca_file` trusts it.
#[tokio::test(flavor = "multi_thread")]
async fn a_streamable_http_server_is_reached_through_the_proxy_and_the_cas_of_the_provider() {
    let (_server, mcp_url) = installed::everything_http().await;
    let origin = mcp_url.trim_end_matches("/mcp");
    let dir = tempfile::tempdir().unwrap();
    user_config(dir.path(), &format!("[mcp_servers.web]\nurl = \"{mcp_url}\"\n"));
    let unused_ca = support::tls::TestCa::new("agentls unused upstream CA");
    let proxy = Mitmproxy::start(unused_ca.ca_file(), &[]).await;
    let listed = mcp_list(dir.path(), &[("HTTP_PROXY", &proxy.url())]).await;
    assert!(listed.contains("web: running (13 tools)"), "{listed}\n{:#?}", proxy.log());
    // mitmdump logs a flow once it has passed the answer on: wait for the lines.
    let deadline = Instant::now() + Duration::from_secs(10);
    while proxy.flows().iter().filter(|f| f.ends_with(&mcp_url)).count() < 2 {
        assert!(
            Instant::now() < deadline,
            "the handshake and the tool list went through the proxy: {:#?}",
            proxy.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The same server under another URL (the query tells its requests apart), its host in NO_PROXY.
    user_config(dir.path(), &format!("[mcp_servers.web]\nurl = \"{mcp_url}?direct=1\"\n"));
    let listed =
        mcp_list(dir.path(), &[("HTTP_PROXY", &proxy.url()), ("NO_PROXY", "localhost,127.0.0.1")]).await;
    assert!(listed.contains("web: running (13 tools)"), "{listed}");

    // A TLS endpoint signed by a CA of the test's (mitmproxy in reverse mode, in front of it).
    let front = Mitmproxy::start(unused_ca.ca_file(), &["--mode", &format!("reverse:{origin}")]).await;
    let tls_url = front.url().replace("http://", "https://");
    user_config(
        dir.path(),
        &format!("[mcp_servers.web]\nurl = \"{tls_url}/mcp\"\nstartup_timeout_ms = 5000\n"),
    );
    let listed = mcp_list(dir.path(), &[]).await;
    assert!(
        listed.contains("web: failed")
            && listed.contains("unknown issuer")
            && listed.contains("set SSL_CERT_FILE or [network] ca_file"),
        "{listed}"
    );
    let ca = front.ca_file().display().to_string();
    let listed = mcp_list(dir.path(), &[("SSL_CERT_FILE", &ca)]).await;
    assert!(listed.contains("web: running (13 tools)"), "{listed}\n{:#?}", front.log());
    user_config(
        dir.path(),
        &format!("[mcp_servers.web]\nurl = \"{tls_url}/mcp\"\n[network]\nca_file = \"{ca}\"\n"),
    );
    let listed = mcp_list(dir.path(), &[]).await;
    assert!(listed.contains("web: running (13 tools)"), "{listed}");
    // Seconds later, nothing of the NO_PROXY run has shown at the proxy.
    let direct: Vec<String> = proxy.flows().into_iter().filter(|f| f.contains("?direct=1")).collect();
    assert!(direct.is_empty(), "NO_PROXY names the host, yet the proxy passed on {direct:?}");
}

/// `agentls mcp list`, `agentls mcp tools NAME` and `agentls doctor` start the servers as a
/// session would and show each one's state, tools and last error.
#[tokio::test]
async fn the_cli_lists_servers_their_state_tools_and_last_error() {
    let dir = tempfile::tempdir().unwrap();
    user_config(
        dir.path(),
        &format!(
            "[mcp_servers.everything]\ncommand = \"{}\"\n[mcp_servers.broken]\ncommand = \"python3\"\nargs = [\"{}\", \"--fail-start\"]\n\
             [mcp_servers.off]\ncommand = \"x\"\nenabled = false\n[mcp_servers.unset]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env_var = \"NOT_SET_TOKEN\"\n",
            everything(),
            fixture()
        ),
    );
    std::fs::write(
        dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"project": {"command": "project-server"}}}"#,
    )
    .unwrap();
    let agentls = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentls"))
            .args(args)
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("AGENTLS_CONFIG", dir.path().join(USER_CONFIG))
            .env("AGENTLS_LOG", "off")
            .env("OPENAI_API_KEY", "sk-cli-test")
            .output()
            .expect("agentls runs")
    };
    let out = agentls(&["mcp", "list"]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", stderr(&out));
    let line = |name: &str| {
        listed.lines().find(|l| l.starts_with(&format!("{name}: "))).unwrap_or_default().to_string()
    };
    assert!(line("everything").starts_with("everything: running (13 tools) "), "{listed}");
    assert!(line("broken").starts_with("broken: failed (no tools) python3 "), "{listed}");
    assert!(
        listed.contains("last error: the MCP handshake failed")
            && listed.contains("cannot start (asked to fail)"),
        "{listed}"
    );
    assert!(line("off").starts_with("off: disabled"), "{listed}");
    assert!(line("unset").starts_with("unset: invalid"), "{listed}");
    assert!(
        listed.contains("`mcp_servers.unset.bearer_token_env_var` names $NOT_SET_TOKEN, which is not set"),
        "{listed}"
    );
    assert!(line("project").starts_with("project: needs trust (no tools) project-server ["), "{listed}");

    let out = agentls(&["mcp", "tools", "everything"]);
    let tools = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && tools.lines().any(|l| l == "mcp__everything__echo (read-only)"),
        "{tools}"
    );
    let out = agentls(&["mcp", "tools", "broken"]);
    assert!(
        !out.status.success() && stderr(&out).contains("MCP server `broken` is not running (failed)"),
        "{}",
        stderr(&out)
    );

    let out = agentls(&["doctor", "--provider", "openai"]);
    let doctor = String::from_utf8_lossy(&out.stdout);
    assert!(
        doctor.contains("mcp servers:\n") && doctor.contains("  everything: running (13 tools)"),
        "{doctor}"
    );
    assert!(doctor.contains("  everything tools: ") && doctor.contains("echo"), "{doctor}");
}

/// A subagent gets the session's MCP tools, and its calls go through the same permission policy:
/// the allowed tool runs at the real server, the one that would be asked is refused (no terminal).
#[tokio::test]
async fn a_subagent_calls_mcp_tools_through_the_same_policy() {
    let dir = tempfile::tempdir().unwrap();
    user_config(
        dir.path(),
        &format!(
            "[mcp_servers.everything]\ncommand = \"{}\"\ntool_permissions = {{ echo = \"allow\" }}\n",
            everything()
        ),
    );
    let mock = MockProvider::start(Dialect::Anthropic).await;
    let child = "CHILD-MCP: echo through the server";
    mock.push_for(
        child,
        Reply::new().tool_call("k1", "mcp__everything__echo", json!({"message": "from the child"})),
    );
    mock.push_for(child, Reply::new().tool_call("k2", "mcp__everything__get-sum", json!({"a": 1, "b": 2})));
    mock.push_for(child, Reply::new().text("child done"));
    mock.push_for("PARENT", Reply::new().tool_call("s1", "spawn_agent", json!({"task": child})));
    mock.push_for("PARENT", Reply::new().tool_call("w1", "wait", json!({"agent_id": "agent-1"})));
    mock.push_for("PARENT", Reply::new().text("parent done"));
    let out =
        exec(&mock, dir.path(), &["--provider", "anthropic", "--json", "PARENT: delegate the echo"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let of_child: Vec<Value> = mock
        .requests()
        .into_iter()
        .filter(|r| {
            support::mock_provider::first_user_message(Dialect::Anthropic, &r.body).contains("CHILD-MCP")
        })
        .map(|r| r.body)
        .collect();
    assert_eq!(of_child.len(), 3, "the child made three requests");
    assert!(
        offered(&of_child[0]).contains(&"mcp__everything__echo".to_string()),
        "{:?}",
        offered(&of_child[0])
    );
    let echoed = sent_result(ProfileKind::Anthropic, &of_child[1], "k1");
    assert_ne!(echoed.is_error, Some(true), "{echoed:?}");
    assert!(echoed.content.contains("from the child"), "{echoed:?}");
    let refused = sent_result(ProfileKind::Anthropic, &of_child[2], "k2");
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(refused.content.contains("no terminal to ask on"), "{refused:?}");
    let child_end = events(&out)
        .into_iter()
        .find(|e| e["kind"] == "tool_call_end" && e["data"]["call_id"] == "k1")
        .expect("the child's call is in the event stream");
    assert_eq!(child_end["agent"]["agent_id"], "agent-1", "{child_end}");
}
