//! Providers over TLS and what a corporate network does to the connection, end to end: a TLS
//! fake provider with a CA made at test time, for every dialect, in-process and through
//! `agentls exec`; and the errors `agentls doctor --ping` and the editor (the real server's
//! `error` event) give for an unknown issuer, a proxy that refuses the connection or wants
//! credentials (407), a name that does not resolve, a provider that never answers (the read
//! timeout) and a connection never accepted (the connect timeout), each saying what to do.
//! (The journeys through a real TLS-intercepting proxy are in `proxy.rs`.)

use crate::support;
use crate::support::lsp_client;

use std::path::Path;
use std::process::Output;

use agentls::config::NetworkSettings;
use agentls::config::network::CaFile;
use agentls::llm::{Client, Message, Request};
use lsp_client::{LspClient, plugin_capabilities};
use serde_json::json;
use support::exec_binary::{USER_CONFIG, exec_command, model_of as model, output_text as text, ping_command};
use support::mock_provider::{Dialect, MockProvider, Turn};
use support::server_env::{LspServer, ServerEnv, ServerFolder, workspace};
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

/// The user configuration of the failure tests: no retries, a provider silent for 2 s fails.
const NO_RETRIES: &str = "[network]\nmax_retries = 0\nread_timeout_ms = 2000\n";

/// `agentls doctor --ping` in `dir` against `base_url` with only the variables given; no retries.
async fn ping(dialect: Dialect, base_url: &str, dir: &Path, extra: &[(&str, &str)]) -> Output {
    ping_configured(dialect, base_url, dir, NO_RETRIES, extra).await
}

/// `agentls doctor --ping` as [`ping`], with `config` as the user configuration.
async fn ping_configured(
    dialect: Dialect,
    base_url: &str,
    dir: &Path,
    config: &str,
    extra: &[(&str, &str)],
) -> Output {
    std::fs::write(dir.join(USER_CONFIG), config).unwrap();
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
    let (url, _held) = silent_provider().await;
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

/// A name under `.invalid`, which no resolver may answer (RFC 6761): its lookup fails at once,
/// with or without a network, and no packet leaves for a real host.
const UNRESOLVABLE: &str = "https://api.agentls-test.invalid";

#[tokio::test(flavor = "multi_thread")]
async fn a_name_that_does_not_resolve_says_dns_and_what_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[network]\nmax_retries = 0\n";
    let output = ping_configured(Dialect::Anthropic, UNRESOLVABLE, dir.path(), config, &[]).await;
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
    let proxy = [("HTTPS_PROXY", "http://proxy.agentls-test.invalid:3128")];
    let output = ping_configured(Dialect::Anthropic, UNRESOLVABLE, dir.path(), config, &proxy).await;
    let line = failure(&output);
    assert!(
        line.contains(
            "the name of the proxy http://proxy.agentls-test.invalid:3128 (HTTPS_PROXY) does not resolve (DNS)"
        ),
        "{line}"
    );
}

/// A TLS provider of `dialect` whose certificate a CA made for the test signs, and the language
/// server of a fresh folder that trusts that CA (SSL_CERT_FILE) and has `key` for the provider,
/// initialized by a plugin client. The CA is kept beside it.
async fn tls_server(dialect: Dialect, key: &str) -> LspServer<TestCa> {
    let ca = TestCa::new("agentls test CA");
    let mut folder = ServerFolder::with_mock(MockProvider::start_tls(dialect, ca.acceptor()).await, key, &[]);
    folder.env = folder.env.set("SSL_CERT_FILE", ca.ca_file().display());
    let server = folder.start(ca);
    server.client.initialize(&server.root, plugin_capabilities(), json!({})).await;
    server
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
    let LspServer { mock, client, .. } = &tls_server(Dialect::Anthropic, "sk-ant-test").await;
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
    let LspServer { mock, client, .. } = &tls_server(Dialect::OpenAiResponses, "sk-proj-test").await;
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

/// The real server in a fresh folder, its Anthropic endpoint at `base_url` with [`KEY`], `config`
/// as the user configuration and `vars` besides, initialized by a client with `capabilities`, a
/// session started: (the folder, the client, the session id).
async fn editor_session(
    base_url: &str,
    config: &str,
    vars: &[(&str, &str)],
    capabilities: serde_json::Value,
) -> (tempfile::TempDir, LspClient, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(USER_CONFIG), config).unwrap();
    let root = workspace(dir.path(), "ws", &[]);
    let env = ServerEnv::in_dir(dir.path())
        .with([("ANTHROPIC_BASE_URL", base_url), ("ANTHROPIC_API_KEY", KEY)])
        .with(vars.iter().copied());
    let client = env.spawn(&root);
    client.initialize(&root, capabilities, json!({})).await;
    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    let session = created["sessionId"].as_str().unwrap().to_string();
    (dir, client, session)
}

/// The API key of the editor journeys: nothing the server says may show it.
const KEY: &str = "sk-ant-api03-editor-secret";

/// The error the editor gets for a prompt: the real server with a plugin's capabilities, its
/// Anthropic endpoint at `base_url`, `config` as the user configuration and `vars` besides; a
/// session prompted once. Returns the session's `error` event and how long the prompt took to
/// fail, after checking that nothing the server said shows the key or anything of `secrets`.
async fn editor_error(
    base_url: &str,
    config: &str,
    vars: &[(&str, &str)],
    secrets: &[&str],
) -> (serde_json::Value, std::time::Duration) {
    let (_dir, client, session) = editor_session(base_url, config, vars, plugin_capabilities()).await;
    let started = std::time::Instant::now();
    client.command("agentls.prompt", json!({"sessionId": session, "text": "hello"})).await.expect("prompt");
    let error = client.next_event(&session, "error").await;
    let took = started.elapsed();
    let said = serde_json::to_string(&client.all_messages()).unwrap();
    for secret in secrets.iter().chain([&KEY]) {
        assert!(!said.contains(secret), "the server showed {secret}: {said}");
    }
    client.shutdown().await;
    (error, took)
}

/// The message of an `error` event, and its error's kind (`connection`: the user must change
/// something; `network`: retried).
fn said(error: &serde_json::Value) -> (&str, &str) {
    let message = error["data"]["message"].as_str().unwrap_or_default();
    (message, error["data"]["error"]["kind"].as_str().unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_is_told_what_to_do_when_the_proxy_refuses_or_the_provider_is_unreachable() {
    let proxy = format!("http://127.0.0.1:{}", closed_port().await);
    let unreachable = format!("https://127.0.0.1:{}", closed_port().await);

    // A plugin client: the error event, its message saying which proxy and what to check.
    let (error, _) =
        editor_error(&unreachable, "[network]\nmax_retries = 0\n", &[("HTTPS_PROXY", &proxy)], &[]).await;
    assert_eq!(
        said(&error),
        (
            format!(
                "cannot reach {unreachable}/v1/messages: the proxy {proxy} (HTTPS_PROXY) refused the connection: \
                 check that it runs and that HTTPS_PROXY names it"
            )
            .as_str(),
            "network"
        ),
        "{error:#}"
    );

    // A plain LSP client: the same as window/showMessage, here for the provider itself.
    let (_dir, client, session) =
        editor_session(&unreachable, "[network]\nmax_retries = 0\n", &[], lsp_client::plain_capabilities())
            .await;
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

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_is_told_to_trust_the_ca_that_signed_a_provider_of_an_unknown_issuer() {
    let ca = TestCa::new("agentls test CA");
    let mock = MockProvider::start_tls(Dialect::Anthropic, ca.acceptor()).await;
    let (error, _) = editor_error(&mock.url(), "[network]\nmax_retries = 0\n", &[], &[]).await;
    let (message, kind) = said(&error);
    assert!(
        message.starts_with(&format!(
            "cannot reach {}/v1/messages: the certificate 127.0.0.1 presented is signed by an authority agentls \
             does not trust (unknown issuer). If a proxy or company CA re-signs TLS: set SSL_CERT_FILE or \
             [network] ca_file to that CA's certificate (a PEM file)",
            mock.url()
        )),
        "{error:#}"
    );
    assert_eq!(kind, "connection", "never retried: {error:#}");
    assert_eq!((mock.requests().len(), mock.handshakes().0), (0, 0), "no connection was trusted");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_is_told_where_a_proxy_that_wants_credentials_takes_them() {
    let (proxy, _task) = proxy_wanting_credentials().await;
    let with_credentials = proxy.replace("http://", "http://alice:wrong-pass-123@");
    let (error, _) = editor_error(
        "https://api.provider.test",
        "[network]\nmax_retries = 0\n",
        &[("HTTPS_PROXY", &with_credentials)],
        &["wrong-pass-123", "alice"],
    )
    .await;
    assert_eq!(
        said(&error),
        (
            format!(
                "cannot reach https://api.provider.test/v1/messages: the proxy {proxy} (with credentials) \
                 (HTTPS_PROXY) asks for credentials (HTTP 407 Proxy Authentication Required): give them in \
                 HTTPS_PROXY's URL, as http://user:password@host:port"
            )
            .as_str(),
            "connection"
        ),
        "{error:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_is_told_that_a_name_does_not_resolve_and_what_to_check() {
    let (error, _) = editor_error(UNRESOLVABLE, "[network]\nmax_retries = 0\n", &[], &[]).await;
    let (message, kind) = said(&error);
    assert!(
        message.starts_with(
            "cannot reach https://api.agentls-test.invalid/v1/messages: the name api.agentls-test.invalid does \
             not resolve (DNS): check the base URL and your network (where only a proxy reaches the internet, \
             set HTTPS_PROXY)"
        ),
        "{error:#}"
    );
    assert_eq!(kind, "network", "retried where retries are configured: {error:#}");
}

/// A TLS endpoint that accepts connections and then says nothing, not even its handshake.
async fn silent_provider() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let task = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    (url, task)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_is_told_that_a_silent_provider_timed_out_and_which_setting_to_raise() {
    let (url, _held) = silent_provider().await;
    let config = "[network]\nmax_retries = 0\nread_timeout_ms = 500\n";
    let (error, took) = editor_error(&url, config, &[], &[]).await;
    let (message, kind) = said(&error);
    assert!(
        message.starts_with(&format!(
            "cannot reach {url}/v1/messages: nothing arrived for 500 ms (network.read_timeout_ms); the provider \
             may be overloaded: try again, or raise network.read_timeout_ms"
        )),
        "{error:#}"
    );
    assert_eq!(kind, "network", "{error:#}");
    // The session's warm-up holds the connection the prompt would take; the prompt's wait for
    // it counts toward the read timeout, not the 30 s connect timeout.
    assert!(took < std::time::Duration::from_secs(10), "the read timeout ended it: {took:?}");
}

/// An `https://` endpoint that never accepts a connection: a listener whose queue of
/// connections is full (backlog 0, filled by this test), so the kernel drops every new
/// connection's SYN and the client waits for its connect timeout. Returns its URL and what
/// keeps the queue full.
async fn unaccepting_endpoint() -> (String, (tokio::net::TcpListener, Vec<tokio::net::TcpStream>)) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut queued = Vec::new();
    loop {
        let attempt = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(std::time::Duration::from_millis(250), attempt).await {
            Ok(connected) => queued.push(connected.expect("a queued connection")),
            Err(_) => break,
        }
        assert!(queued.len() < 64, "the listener's queue never filled");
    }
    (format!("https://{addr}"), (listener, queued))
}

/// The user configuration of the connect timeout's tests: 300 ms to connect, no retries.
const SHORT_CONNECT: &str = "[network]\nmax_retries = 0\nconnect_timeout_ms = 300\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_never_accepted_fails_after_the_connect_timeout_naming_the_setting() {
    let (url, _queue) = unaccepting_endpoint().await;
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let output = ping_configured(Dialect::Anthropic, &url, dir.path(), SHORT_CONNECT, &[]).await;
    let line = failure(&output);
    assert!(
        line.contains(
            "no connection to 127.0.0.1 within 300 ms (network.connect_timeout_ms): check your network (behind \
             a proxy, set HTTPS_PROXY), or raise network.connect_timeout_ms on a slow link"
        ),
        "{line}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the configured 300 ms, not the default 30 s: {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_is_told_that_no_connection_was_made_within_the_connect_timeout() {
    let (url, _queue) = unaccepting_endpoint().await;
    let (error, took) = editor_error(&url, SHORT_CONNECT, &[], &[]).await;
    let (message, kind) = said(&error);
    assert_eq!(
        (message, kind),
        (
            format!(
                "cannot reach {url}/v1/messages: no connection to 127.0.0.1 within 300 ms \
                 (network.connect_timeout_ms): check your network (behind a proxy, set HTTPS_PROXY), or raise \
                 network.connect_timeout_ms on a slow link"
            )
            .as_str(),
            "network"
        ),
        "{error:#}"
    );
    // The session's warm-up and the prompt's request each wait 300 ms at most.
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
}
