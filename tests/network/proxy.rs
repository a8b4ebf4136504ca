//! Journeys through a real TLS-intercepting proxy (mitmproxy from PyPI, installed by
//! `scripts/install-mitmproxy` on first use) in front of the TLS fake provider: every dialect
//! through `agentls doctor --ping` and `agentls exec`, the language server's error when the
//! proxy's CA is not trusted and its answer once it is, a proxy that wants credentials, and a
//! project file that names a proxy and a CA without the folder being trusted.

use crate::support;
use crate::support::lsp_client;

use std::path::Path;
use std::process::Output;

use lsp_client::plugin_capabilities;
use serde_json::json;
use support::exec_binary::{USER_CONFIG, exec_command, output_text as text, ping_command, trust_folder};
use support::fixture_key;
use support::mitmproxy::Mitmproxy;
use support::mock_provider::{Dialect, MockProvider, Turn};
use support::server_env::{ServerEnv, workspace};
use support::tls::TestCa;

/// `agentls doctor --ping` in `dir` (its user config in `dir`) with only the variables given.
async fn ping(dialect: Dialect, base_url: &str, dir: &Path, extra: &[(&str, &str)]) -> Output {
    ping_command(dialect, base_url, dir, fixture_key(dialect), extra).output().await.expect("run agentls")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_dialect_goes_through_an_intercepting_proxy_whose_ca_is_the_ca_file() {
    let upstream = TestCa::new("agentls test provider CA");
    let proxy = Mitmproxy::start(upstream.ca_file(), &[]).await;
    for dialect in Dialect::ALL {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(USER_CONFIG),
            format!("[network]\nca_file = \"{}\"\nmax_retries = 0\n", proxy.ca_file().display()),
        )
        .unwrap();
        let mock = MockProvider::start_tls(dialect, upstream.acceptor()).await;
        mock.push(Turn::new().text("Pong through the proxy.").fragment(3));
        let output = ping(dialect, &mock.url(), dir.path(), &[("HTTPS_PROXY", &proxy.url())]).await;
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{dialect:?}: {stdout}\n{stderr}\n{:#?}", proxy.log());
        assert!(stdout.contains("reply: Pong through the proxy."), "{dialect:?}: {stdout}");
        assert!(
            stdout.contains(&format!("network: through the proxy {} (HTTPS_PROXY)", proxy.url())),
            "{stdout}"
        );
        assert!(stdout.contains("[network] ca_file"), "{stdout}");
        let request = &mock.requests()[0];
        assert_eq!(request.method, "POST", "{dialect:?}");
        assert!(
            proxy
                .flows()
                .iter()
                .any(|f| f.starts_with("POST ") && f.contains(&mock.addr().port().to_string())),
            "{dialect:?}: the proxy passed the request on: {:#?}",
            proxy.log()
        );

        // And a whole task through `agentls exec`, the CA given by SSL_CERT_FILE this time.
        std::fs::remove_file(dir.path().join(USER_CONFIG)).unwrap();
        mock.push(Turn::new().text("Exec through the proxy."));
        let mut cmd =
            exec_command(&mock, dir.path(), fixture_key(dialect), &["--provider", dialect.provider(), "hi"]);
        cmd.env("HTTPS_PROXY", proxy.url()).env("SSL_CERT_FILE", proxy.ca_file());
        let output = cmd.output().await.unwrap();
        let (stdout, stderr) = text(&output);
        assert!(
            output.status.success() && stdout.contains("Exec through the proxy."),
            "{dialect:?}: {stdout}\n{stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_is_told_that_the_proxy_re_signs_tls_until_its_ca_is_trusted() {
    let upstream = TestCa::new("agentls test provider CA");
    let proxy = Mitmproxy::start(upstream.ca_file(), &[]).await;
    let mock = MockProvider::start_tls(Dialect::Anthropic, upstream.acceptor()).await;
    let dir = tempfile::tempdir().unwrap();
    let root = workspace(dir.path(), "ws", &[]);
    std::fs::write(dir.path().join(USER_CONFIG), "[network]\nmax_retries = 0\n").unwrap();
    let env = ServerEnv::for_mock(dir.path(), &mock, "sk-ant-test").set("HTTPS_PROXY", proxy.url());

    let client = env.spawn(&root);
    client.initialize(&root, plugin_capabilities(), json!({})).await;
    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    let session = created["sessionId"].as_str().unwrap().to_string();
    client.command("agentls.prompt", json!({"sessionId": session, "text": "hello"})).await.expect("prompt");
    let error = client.next_event(&session, "error").await;
    let message = error["data"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("unknown issuer")
            && message.contains("a proxy or company CA re-signs TLS: set SSL_CERT_FILE or [network] ca_file"),
        "{error:#}"
    );
    assert_eq!(error["data"]["error"]["kind"], "connection", "{error:#}");
    assert!(mock.requests().is_empty());
    client.shutdown().await;

    // The user adds the proxy's CA: the same prompt gets its answer.
    let env = env.set("SSL_CERT_FILE", proxy.ca_file().display());
    mock.push(Turn::new().text("Hello through the company proxy."));
    let client = env.spawn(&root);
    client.initialize(&root, plugin_capabilities(), json!({})).await;
    let created = client.command("agentls.newSession", json!({})).await.expect("newSession");
    let session = created["sessionId"].as_str().unwrap().to_string();
    client.command("agentls.prompt", json!({"sessionId": session, "text": "hello"})).await.expect("prompt");
    let end = client.next_event(&session, "processing_end").await;
    assert_eq!(end["data"]["reason"], "completed", "{end:#}\n{}", client.stderr_text());
    assert_eq!(end["data"]["text"], "Hello through the company proxy.", "{end:#}");
    assert_eq!(mock.requests().len(), 1);
    assert_eq!(mock.warmups(), 1, "the session's start opened the connection through the proxy");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_wants_credentials_gets_them_from_the_proxy_url() {
    let upstream = TestCa::new("agentls test provider CA");
    let proxy = Mitmproxy::start(upstream.ca_file(), &["--proxyauth", "alice:corp-pass-42"]).await;
    let mock = MockProvider::start_tls(Dialect::OpenAiResponses, upstream.acceptor()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(USER_CONFIG),
        format!("[network]\nca_file = \"{}\"\nmax_retries = 0\n", proxy.ca_file().display()),
    )
    .unwrap();
    let output =
        ping(Dialect::OpenAiResponses, &mock.url(), dir.path(), &[("HTTPS_PROXY", &proxy.url())]).await;
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}");
    assert!(
        stderr.contains(&format!("the proxy {} (HTTPS_PROXY) asks for credentials (HTTP 407", proxy.url())),
        "{stderr}"
    );

    mock.push(Turn::new().text("Authenticated."));
    let with_credentials = proxy.url().replace("http://", "http://alice:corp-pass-42@");
    let output =
        ping(Dialect::OpenAiResponses, &mock.url(), dir.path(), &[("https_proxy", &with_credentials)]).await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success() && stdout.contains("reply: Authenticated."), "{stdout}\n{stderr}");
    assert!(stdout.contains("(with credentials) (https_proxy)"), "{stdout}");
    assert!(!stdout.contains("corp-pass-42") && !stderr.contains("corp-pass-42"), "{stdout}\n{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_project_file_routes_through_its_proxy_only_in_a_trusted_folder() {
    let upstream = TestCa::new("agentls test provider CA");
    let proxy = Mitmproxy::start(upstream.ca_file(), &[]).await;
    let mock = MockProvider::start_tls(Dialect::Anthropic, upstream.acceptor()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".agentls.toml"),
        format!("[network]\nproxy = \"{}\"\nca_file = \"{}\"\n", proxy.url(), proxy.ca_file().display()),
    )
    .unwrap();
    let upstream_ca = upstream.ca_file().display().to_string();

    // Untrusted: the project's proxy and CA are ignored and said so; the request goes directly.
    mock.push(Turn::new().text("Direct."));
    let mut cmd = exec_command(&mock, dir.path(), "sk-ant-test", &["--provider", "anthropic", "hi"]);
    cmd.env("SSL_CERT_FILE", &upstream_ca);
    let output = cmd.output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success() && stdout.contains("Direct."), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("`network.proxy` (would send your requests, and your API keys, through the proxy"),
        "{stderr}"
    );
    assert!(stderr.contains("`network.ca_file` (would trust the certificate authorities in"), "{stderr}");
    assert!(proxy.flows().is_empty(), "nothing went through the project's proxy: {:#?}", proxy.log());

    // Trusted: the project's proxy carries the request, trusting the project's CA.
    trust_folder(dir.path());
    mock.push(Turn::new().text("Through the project's proxy."));
    let mut cmd = exec_command(&mock, dir.path(), "sk-ant-test", &["--provider", "anthropic", "hi"]);
    cmd.env("SSL_CERT_FILE", &upstream_ca);
    let output = cmd.output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success() && stdout.contains("Through the project's proxy."), "{stdout}\n{stderr}");
    assert!(proxy.flows().iter().any(|f| f.starts_with("POST ")), "{:#?}", proxy.log());
}
