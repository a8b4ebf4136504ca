//! Providers over TLS and what a corporate network does to the connection, end to end: a TLS
//! fake provider with a CA made at test time, for every dialect, in-process and through
//! `agentls exec`; and the errors `agentls doctor --ping` gives for an unknown issuer, a proxy
//! that refuses the connection or wants credentials, a name that does not resolve and a
//! provider that never answers, each saying what to do. (The journeys through a real
//! TLS-intercepting proxy are in `proxy.rs`.)

use crate::support;
use crate::support::lsp_client;

use std::path::{Path, PathBuf};
use std::process::Output;

use agentls::config::NetworkSettings;
use agentls::config::network::CaFile;
use agentls::llm::{Client, Message, Request};
use lsp_client::{LspClient, plugin_capabilities};
use serde_json::json;
use support::exec_binary::{USER_CONFIG, exec_command, model_of as model, output_text as text, ping_command};
use support::mock_provider::{Dialect, MockProvider, Turn};
use support::tls::TestCa;
use support::{collect, fast_retry, fixture_key, settings_for, text_deltas};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn trusting(ca: &TestCa) -> NetworkSettings {
    NetworkSettings {
        ca_files: vec![CaFile { path: ca.ca_file().to_path_buf(), source: "[network] ca_file".into() }],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_dialect_streams_over_tls_from_a_provider_signed_by_an_extra_ca() {
    let ca = TestCa::new("agentls test CA");
    for dialect in Dialect::ALL {
        let mock = MockProvider::start_tls(dialect, ca.acceptor()).await;
        assert!(mock.url().starts_with("https://127.0.0.1:"), "{}", mock.url());
        mock.push(Turn::new().text("Hello over TLS.").fragment(5));
        let mut settings = settings_for(&mock, model(dialect));
        settings.network = trusting(&ca);
        let client = Client::new(settings).unwrap().with_retry(fast_retry());
        let (events, error) =
            collect(&client, &Request::new(model(dialect), vec![Message::user("hi")])).await;
        assert_eq!((text_deltas(&events), error), ("Hello over TLS.".to_string(), None), "{dialect:?}");
        assert_eq!(mock.handshakes(), (1, 0), "{dialect:?}: one connection");
        assert_eq!(mock.requests()[0].header("x-api-key").is_some(), dialect == Dialect::Anthropic);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn agentls_exec_trusts_the_ca_of_ssl_cert_file_for_every_dialect() {
    let ca = TestCa::new("agentls test CA");
    for dialect in Dialect::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockProvider::start_tls(dialect, ca.acceptor()).await;
        mock.push(Turn::new().text("Done over TLS."));
        let mut cmd =
            exec_command(&mock, dir.path(), fixture_key(dialect), &["--provider", dialect.provider(), "hi"]);
        cmd.env("SSL_CERT_FILE", ca.ca_file());
        let output = cmd.output().await.unwrap();
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{dialect:?}: {stdout}\n{stderr}");
        assert!(stdout.contains("Done over TLS."), "{dialect:?}: {stdout}");
        assert_eq!(mock.requests().len(), 1, "{dialect:?}: the warm-up HEAD is not a model request");
    }
}

/// `agentls doctor --ping` in `dir` against `base_url` with only the variables given; no retries.
async fn ping(dialect: Dialect, base_url: &str, dir: &Path, extra: &[(&str, &str)]) -> Output {
    std::fs::write(dir.join(USER_CONFIG), "[network]\nmax_retries = 0\nread_timeout_ms = 2000\n").unwrap();
    ping_command(dialect, base_url, dir, fixture_key(dialect), extra).output().await.expect("run agentls")
}

/// The line of `doctor --ping`'s stderr that says why the ping failed.
fn failure(output: &Output) -> String {
    let (stdout, stderr) = text(output);
    assert!(!output.status.success(), "the ping should fail: {stdout}\n{stderr}");
    stderr
        .lines()
        .find(|l| l.contains("ping failed"))
        .unwrap_or_else(|| panic!("no failure line: {stderr}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_issuer_says_that_a_proxy_or_company_ca_re_signs_tls_and_what_to_set() {
    let ca = TestCa::new("agentls test CA");
    let mock = MockProvider::start_tls(Dialect::Anthropic, ca.acceptor()).await;
    let dir = tempfile::tempdir().unwrap();
    let output = ping(Dialect::Anthropic, &mock.url(), dir.path(), &[]).await;
    let line = failure(&output);
    assert!(line.contains("unknown issuer"), "{line}");
    assert!(
        line.contains("a proxy or company CA re-signs TLS: set SSL_CERT_FILE or [network] ca_file"),
        "{line}"
    );
    assert_eq!(mock.requests().len(), 0);
    assert_eq!(mock.handshakes().0, 0, "no connection was trusted");

    // The same CA named by SSL_CERT_FILE: the ping goes through, and doctor says what it trusts.
    mock.push(Turn::new().text("Pong."));
    let ca_file = ca.ca_file().display().to_string();
    let output = ping(Dialect::Anthropic, &mock.url(), dir.path(), &[("SSL_CERT_FILE", &ca_file)]).await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("reply: Pong."), "{stdout}");
    assert!(stdout.contains("network: direct (no proxy set)"), "{stdout}");
    assert!(stdout.contains(&format!("SSL_CERT_FILE {ca_file} (1 certificates)")), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_ca_file_is_named_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing-ca.pem");
    std::fs::write(dir.path().join("not-pem.pem"), "hello").unwrap();
    for (path, why) in
        [(missing.clone(), "No such file"), (dir.path().join("not-pem.pem"), "holds no PEM certificate")]
    {
        let ca = path.display().to_string();
        let output =
            ping(Dialect::Anthropic, "https://127.0.0.1:9", dir.path(), &[("SSL_CERT_FILE", &ca)]).await;
        let line = failure(&output);
        assert!(
            line.contains(&format!("SSL_CERT_FILE = {ca} cannot be used")) && line.contains(why),
            "{line}"
        );
    }
}

/// A port nothing listens on.
async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_refuses_the_connection_is_named_and_no_proxy_bypasses_it() {
    let ca = TestCa::new("agentls test CA");
    let mock = MockProvider::start_tls(Dialect::OpenAiChat, ca.acceptor()).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = format!("http://127.0.0.1:{}", closed_port().await);
    let ca_file = ca.ca_file().display().to_string();
    let output = ping(
        Dialect::OpenAiChat,
        &mock.url(),
        dir.path(),
        &[("HTTPS_PROXY", &proxy), ("SSL_CERT_FILE", &ca_file)],
    )
    .await;
    let line = failure(&output);
    assert!(
        line.contains(&format!(
            "the proxy {proxy} (HTTPS_PROXY) refused the connection: check that it runs and that HTTPS_PROXY names it"
        )),
        "{line}"
    );

    mock.push(Turn::new().text("Direct."));
    let output = ping(
        Dialect::OpenAiChat,
        &mock.url(),
        dir.path(),
        &[("HTTPS_PROXY", &proxy), ("NO_PROXY", "localhost,127.0.0.1"), ("SSL_CERT_FILE", &ca_file)],
    )
    .await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success() && stdout.contains("reply: Direct."), "{stdout}\n{stderr}");
    assert!(stdout.contains("network: direct (NO_PROXY names the host)"), "{stdout}");
}

/// A proxy that answers every request with 407 and counts them.
async fn proxy_wanting_credentials() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = socket
                    .write_all(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic realm=\"corp\"\r\ncontent-length: 0\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    (url, task)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_wants_credentials_says_where_to_put_them_without_showing_any() {
    let (proxy, _task) = proxy_wanting_credentials().await;
    let dir = tempfile::tempdir().unwrap();
    let with_credentials = proxy.replace("http://", "http://alice:wrong-pass-123@");
    for (var, base_url) in
        [("HTTPS_PROXY", "https://api.provider.test"), ("HTTP_PROXY", "http://api.provider.test/v1")]
    {
        let output = ping(Dialect::OpenAiChat, base_url, dir.path(), &[(var, &with_credentials)]).await;
        let line = failure(&output);
        assert!(
            line.contains(&format!(
                "the proxy {proxy} (with credentials) ({var}) asks for credentials (HTTP 407 Proxy Authentication Required): \
                 give them in {var}'s URL, as http://user:password@host:port"
            )),
            "{var}: {line}"
        );
        let (stdout, stderr) = text(&output);
        assert!(
            !stdout.contains("wrong-pass-123") && !stderr.contains("wrong-pass-123"),
            "{stdout}\n{stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_that_never_answers_times_out_naming_the_setting() {
    // Accepts the connection, then says nothing: not even the TLS handshake.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let _held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let output = ping(Dialect::Gemini, &url, dir.path(), &[]).await;
    let line = failure(&output);
    assert!(
        line.contains("nothing arrived for 2000 ms (network.read_timeout_ms)")
            && line.contains("raise network.read_timeout_ms"),
        "{line}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the read timeout, not the connect timeout"
    );
}

/// Whether `unshare -n` can run a command in a network namespace of its own (root, or user
/// namespaces allowed): a lookup there fails at once, with no packet leaving the machine.
fn isolated_network() -> Vec<PathBuf> {
    let works =
        std::process::Command::new("unshare").args(["-n", "true"]).status().is_ok_and(|s| s.success());
    assert!(works, "this test needs `unshare -n` (util-linux; root or unprivileged user namespaces)");
    vec![PathBuf::from("unshare"), PathBuf::from("-n")]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_that_does_not_resolve_says_dns_and_what_to_check() {
    let prefix = isolated_network();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(USER_CONFIG), "[network]\nmax_retries = 0\n").unwrap();
    let inner = ping_command(
        Dialect::Anthropic,
        "https://api.agentls-test.invalid",
        dir.path(),
        fixture_key(Dialect::Anthropic),
        &[],
    );
    let std_inner = inner.as_std();
    let mut cmd = tokio::process::Command::new(&prefix[0]);
    cmd.args(&prefix[1..]).arg(std_inner.get_program()).args(std_inner.get_args());
    cmd.current_dir(dir.path()).env_clear();
    for (k, v) in std_inner.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    let output = cmd.output().await.unwrap();
    let line = failure(&output);
    assert!(
        line.contains(
            "the name api.agentls-test.invalid does not resolve (DNS): check the base URL and your network"
        ),
        "{line}"
    );
    assert!(
        line.contains("(no retries: network.max_retries = 0)"),
        "a lookup failure is worth a retry: {line}"
    );

    // Through a proxy, it is the proxy's name that does not resolve.
    let output = {
        let mut cmd = tokio::process::Command::new(&prefix[0]);
        cmd.args(&prefix[1..]).arg(std_inner.get_program()).args(std_inner.get_args());
        cmd.current_dir(dir.path()).env_clear();
        for (k, v) in std_inner.get_envs() {
            if let Some(v) = v {
                cmd.env(k, v);
            }
        }
        cmd.env("HTTPS_PROXY", "http://proxy.agentls-test.invalid:3128");
        cmd.output().await.unwrap()
    };
    let line = failure(&output);
    assert!(
        line.contains(
            "the name of the proxy http://proxy.agentls-test.invalid:3128 (HTTPS_PROXY) does not resolve (DNS)"
        ),
        "{line}"
    );
}

/// A workspace folder in `dir` and the variables of a language server there (its data, user
/// configuration and HOME in `dir`), with `vars` besides.
fn server_env(dir: &Path, vars: Vec<(String, String)>) -> (PathBuf, Vec<(String, String)>) {
    let root = dir.join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let mut env: Vec<(String, String)> = vec![
        ("AGENTLS_DATA_DIR".into(), dir.join("data").display().to_string()),
        ("AGENTLS_CONFIG".into(), dir.join(USER_CONFIG).display().to_string()),
        ("HOME".into(), dir.display().to_string()),
    ];
    env.extend(vars);
    (root, env)
}

/// `env` as `LspClient::spawn_binary` takes it.
fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// Waits until `done` holds (a background connection shows at the provider), at most 10 s.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "waited in vain for {what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_opens_its_connection_and_user_typing_opens_the_one_the_provider_closed() {
    let ca = TestCa::new("agentls test CA");
    let mock = MockProvider::start_tls(Dialect::Anthropic, ca.acceptor()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut vars = mock.env();
    vars.push(("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()));
    vars.push(("SSL_CERT_FILE".into(), ca.ca_file().display().to_string()));
    let (root, env) = server_env(dir.path(), vars);
    let client = LspClient::spawn_binary(&pairs(&env), &root);
    client.initialize(&root, plugin_capabilities(), json!({})).await;
    assert_eq!((mock.warmups(), mock.handshakes()), (0, (0, 0)), "no connection before a session");

    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    let session = created["sessionId"].as_str().unwrap().to_string();
    eventually("the session's warm-up", || mock.warmups() == 1).await;
    assert_eq!(mock.handshakes(), (1, 0));
    mock.push(Turn::new().text("First."));
    client.command("agentls.prompt", json!({"sessionId": session, "text": "one"})).await.expect("prompt");
    let end = client.next_event(&session, "processing_end").await;
    assert_eq!(end["data"]["text"], "First.", "{end:#}");
    assert_eq!(mock.handshakes(), (1, 0), "the prompt took the connection the session opened");
    let key = mock.requests()[0].header("x-api-key").map(str::to_string);
    assert_eq!(key.as_deref(), Some("sk-ant-test"), "the model request carries the key; the warm-up did not");

    // The provider drops the connection while the session idles; the user starts typing.
    mock.close_idle_connections();
    tokio::time::sleep(agentls::llm::http::FRESH + std::time::Duration::from_millis(200)).await;
    client.notify("agentls/userTyping", json!({"sessionId": session}));
    eventually("the warm-up of userTyping", || mock.warmups() == 2).await;
    assert_eq!(mock.handshakes(), (2, 0));
    mock.push(Turn::new().text("Second."));
    client.command("agentls.prompt", json!({"sessionId": session, "text": "two"})).await.expect("prompt");
    let end = client.next_event(&session, "processing_end").await;
    assert_eq!(end["data"]["text"], "Second.", "{end:#}");
    assert_eq!(mock.handshakes(), (2, 0), "the prompt took the connection opened while the user typed");

    // Typing again at once opens nothing: the connection just answered.
    client.notify("agentls/userTyping", json!({}));
    client.command("agentls.listSessions", json!({})).await.expect("the notification was handled");
    assert_eq!(mock.warmups(), 2);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn user_typing_before_any_session_opens_the_connection_of_the_provider_a_session_would_use() {
    let ca = TestCa::new("agentls test CA");
    let mock = MockProvider::start_tls(Dialect::OpenAiResponses, ca.acceptor()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut vars = mock.env();
    vars.push(("OPENAI_API_KEY".into(), "sk-proj-test".into()));
    vars.push(("SSL_CERT_FILE".into(), ca.ca_file().display().to_string()));
    let (root, env) = server_env(dir.path(), vars);
    let client = LspClient::spawn_binary(&pairs(&env), &root);
    client.initialize(&root, plugin_capabilities(), json!({})).await;
    client.notify("agentls/userTyping", json!({}));
    eventually("the warm-up of userTyping", || mock.warmups() == 1).await;
    assert_eq!(mock.handshakes(), (1, 0));
    assert!(mock.requests().is_empty(), "the warm-up is no model request");

    // The first prompt (its session started after the warm-up) takes that connection.
    mock.push(Turn::new().text("First."));
    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    let session = created["sessionId"].as_str().unwrap().to_string();
    client.command("agentls.prompt", json!({"sessionId": session, "text": "one"})).await.expect("prompt");
    let end = client.next_event(&session, "processing_end").await;
    assert_eq!(end["data"]["text"], "First.", "{end:#}");
    assert_eq!(mock.handshakes(), (1, 0), "no handshake on the prompt's path");
    client.shutdown().await;
}

/// The server of `env` in a fresh folder, a session started: (client, session id).
async fn editor_session(
    env: &[(&str, &str)],
    root: &Path,
    capabilities: serde_json::Value,
) -> (LspClient, String) {
    let client = LspClient::spawn_binary(env, root);
    client.initialize(root, capabilities, json!({})).await;
    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    let session = created["sessionId"].as_str().unwrap().to_string();
    (client, session)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_is_told_what_to_do_when_the_proxy_refuses_or_the_provider_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(dir.path().join(USER_CONFIG), "[network]\nmax_retries = 0\n").unwrap();
    let (data, config, home) = (
        dir.path().join("data").display().to_string(),
        dir.path().join(USER_CONFIG).display().to_string(),
        dir.path().display().to_string(),
    );
    let proxy = format!("http://127.0.0.1:{}", closed_port().await);
    let unreachable = format!("https://127.0.0.1:{}", closed_port().await);
    let base = [
        ("ANTHROPIC_BASE_URL", unreachable.as_str()),
        ("ANTHROPIC_API_KEY", "sk-ant-test"),
        ("AGENTLS_DATA_DIR", data.as_str()),
        ("AGENTLS_CONFIG", config.as_str()),
        ("HOME", home.as_str()),
    ];

    // A plugin client: the error event, its message saying which proxy and what to check.
    let mut env = base.to_vec();
    env.push(("HTTPS_PROXY", proxy.as_str()));
    let (client, session) = editor_session(&env, &root, plugin_capabilities()).await;
    client.command("agentls.prompt", json!({"sessionId": session, "text": "hello"})).await.expect("prompt");
    let error = client.next_event(&session, "error").await;
    let message = error["data"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "the proxy {proxy} (HTTPS_PROXY) refused the connection: check that it runs and that HTTPS_PROXY names it"
        )),
        "{error:#}"
    );
    client.shutdown().await;

    // A plain LSP client: the same as window/showMessage, here for the provider itself.
    let (client, session) = editor_session(&base, &root, lsp_client::plain_capabilities()).await;
    client.command("agentls.prompt", json!({"sessionId": session, "text": "hello"})).await.expect("prompt");
    let shown = client
        .next_notification_where("window/showMessage", |p| {
            p["message"].as_str().is_some_and(|m| m.contains("refused the connection"))
        })
        .await;
    let host = unreachable.trim_start_matches("https://").split(':').next().unwrap();
    assert!(
        shown["message"].as_str().unwrap().contains(&format!(
            "{host} refused the connection: check the base URL and that the server runs (behind a proxy, set HTTPS_PROXY)"
        )),
        "{shown:#}"
    );
    assert_eq!(shown["type"], 1, "an error: {shown:#}");
    client.shutdown().await;
}
