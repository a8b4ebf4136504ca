//! `agentls doctor --ping` run as a real process against the mock provider, per dialect.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::exec_binary::{model_of as model, output_text as text, ping_command, trust_folder};
use support::fixture_key;
use support::mock_provider::{Dialect, ErrorPreset, MockProvider, Reply, Turn};

const SECRET_SUFFIX: &str = "-s3cr3t-value-1234567890";

fn key(dialect: Dialect) -> String {
    format!("{}{SECRET_SUFFIX}", fixture_key(dialect))
}

/// Runs `agentls doctor --ping --provider P --model M` in `dir` (no user configuration there)
/// with only the variables given.
async fn ping(dialect: Dialect, base_url: &str, dir: &Path, extra: &[(&str, &str)]) -> Output {
    ping_command(dialect, base_url, dir, &key(dialect), extra).output().await.expect("run agentls")
}

fn assert_no_key(dialect: Dialect, output: &Output) {
    let (stdout, stderr) = text(output);
    assert!(!stdout.contains(SECRET_SUFFIX), "key in stdout: {stdout}");
    assert!(!stderr.contains(SECRET_SUFFIX), "key in stderr: {stderr}");
    assert!(!stdout.contains(&key(dialect)) && !stderr.contains(&key(dialect)));
}

#[tokio::test(flavor = "multi_thread")]
async fn ping_prints_the_reply_and_latency_for_every_provider() {
    for dialect in Dialect::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockProvider::start(dialect).await;
        mock.push(Turn::new().text("Pong, loud and clear.").fragment(4).usage(26, 5));
        let output = ping(dialect, &mock.url(), dir.path(), &[]).await;
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{dialect:?}: {stdout}\n{stderr}");
        // The ping prompt has 57 characters: 15 estimated tokens; the provider counts 26.
        assert!(
            stdout.contains("calibration: estimated 15 input tokens, the provider counted 26: factor 1.73"),
            "{dialect:?}: {stdout}"
        );
        assert!(stdout.contains("token estimate: characters / 4 (context.chars_per_token)"), "{stdout}");
        assert!(
            stdout.contains("compaction: automatic at 85% of the window, keeps the last 3 exchanges"),
            "{stdout}"
        );
        let window = if dialect == Dialect::Anthropic { "200000" } else { "" };
        assert!(stdout.contains(&format!("context window: {window}")), "{stdout}");
        assert!(stdout.contains("reply: Pong, loud and clear."), "{dialect:?}: {stdout}");
        assert!(stdout.contains("latency: "), "{dialect:?}: {stdout}");
        assert!(stdout.contains(&format!("provider: {}", dialect.provider())), "{stdout}");
        assert_no_key(dialect, &output);

        let requests = mock.requests();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        let (path, auth) = match dialect {
            Dialect::Anthropic => ("/v1/messages".to_string(), ("x-api-key", key(dialect))),
            Dialect::OpenAiResponses => {
                ("/v1/responses".into(), ("authorization", format!("Bearer {}", key(dialect))))
            }
            Dialect::OpenAiChat => {
                ("/v1/chat/completions".into(), ("authorization", format!("Bearer {}", key(dialect))))
            }
            Dialect::Gemini => (
                format!("/v1beta/models/{}:streamGenerateContent?alt=sse", model(dialect)),
                ("x-goog-api-key", key(dialect)),
            ),
        };
        assert_eq!(request.path, path, "{dialect:?}");
        assert_eq!(request.header(auth.0), Some(auth.1.as_str()), "{dialect:?}");
        if dialect != Dialect::Gemini {
            assert_eq!(request.body["model"], model(dialect));
            assert_eq!(request.body["stream"], true);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ping_retries_a_rate_limit_then_succeeds() {
    for dialect in Dialect::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockProvider::start(dialect).await;
        mock.push(ErrorPreset::RateLimit { retry_after_secs: 0.05 });
        mock.push(Turn::new().text("after the wait"));
        let output = ping(dialect, &mock.url(), dir.path(), &[]).await;
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{dialect:?}: {stdout}\n{stderr}");
        assert!(stdout.contains("after the wait"), "{dialect:?}: {stdout}");
        assert_eq!(mock.request_count(), 2, "{dialect:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ping_reports_an_authentication_failure_with_the_variable_to_check() {
    for dialect in Dialect::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockProvider::start(dialect).await;
        mock.push(ErrorPreset::Authentication);
        mock.push(Turn::new().text("never"));
        let output = ping(dialect, &mock.url(), dir.path(), &[]).await;
        let (stdout, stderr) = text(&output);
        assert!(!output.status.success(), "{dialect:?}: {stdout}");
        assert!(stderr.contains(dialect.key_var()), "{dialect:?}: {stderr}");
        assert!(stderr.contains("API key"), "{dialect:?}: {stderr}");
        assert_eq!(mock.request_count(), 1, "{dialect:?}: authentication errors are not retried");
        assert_no_key(dialect, &output);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ping_gives_up_on_a_persistent_rate_limit() {
    let dialect = Dialect::OpenAiChat;
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(dialect).await;
    for _ in 0..4 {
        mock.push(ErrorPreset::RateLimit { retry_after_secs: 0.01 });
    }
    let output = ping(dialect, &mock.url(), dir.path(), &[]).await;
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("rate limit"), "{stderr}");
    assert!(stderr.contains("retries"), "{stderr}");
    assert_eq!(mock.request_count(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn ping_names_the_url_it_cannot_reach() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let output = ping(Dialect::Anthropic, &url, dir.path(), &[]).await;
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stderr.contains(&format!("{url}/v1/messages")), "{stderr}");
}

/// A folder whose `.agentls.toml` sends the log to `rel` in it, trusted by its user (a project's
/// log file is written only in a folder its user trusts); the folder and the log file's path.
fn trusted_folder_logging_to(rel: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join(rel);
    std::fs::write(
        dir.path().join(".agentls.toml"),
        format!("[log]\nfile = {:?}\n", log.display().to_string()),
    )
    .unwrap();
    trust_folder(dir.path());
    (dir, log)
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_log_never_contains_the_key() {
    for dialect in Dialect::ALL {
        let (dir, log) = trusted_folder_logging_to("logs/agentls.log");
        let mock = MockProvider::start(dialect).await;
        mock.push(ErrorPreset::RateLimit { retry_after_secs: 0.01 });
        mock.push(Turn::new().text("logged"));
        let output = ping(dialect, &mock.url(), dir.path(), &[("AGENTLS_LOG", "trace")]).await;
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{dialect:?}: {stdout}\n{stderr}");
        assert_no_key(dialect, &output);
        let written = std::fs::read_to_string(&log).expect("log file written");
        assert!(written.contains("model request"), "{dialect:?}: trace log lacks request lines:\n{written}");
        assert!(!written.contains(SECRET_SUFFIX), "{dialect:?}: key in the log file");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_echoing_the_key_does_not_leak_it() {
    let dialect = Dialect::OpenAiChat;
    let (dir, log) = trusted_folder_logging_to("agentls.log");
    let mock = MockProvider::start(dialect).await;
    let echo = format!("Incorrect API key provided: {}", key(dialect));
    mock.push(Reply::json(401, serde_json::json!({"error": {"message": echo, "code": "invalid_api_key"}})));
    let output = ping(dialect, &mock.url(), dir.path(), &[("AGENTLS_LOG", "trace")]).await;
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("OPENAI_API_KEY") && stderr.contains("[redacted]"), "{stderr}");
    assert_no_key(dialect, &output);
    let written = std::fs::read_to_string(&log).expect("log file written");
    assert!(written.contains("model error response"), "{written}");
    assert!(!written.contains(SECRET_SUFFIX), "key in the log file:\n{written}");
}

/// `doctor` names the model `codebase_search` asks: the session's, or `[search]`'s.
#[tokio::test]
async fn doctor_names_the_search_model() {
    let dialect = Dialect::Anthropic;
    let doctor = |dir: &Path| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentls"));
        cmd.args(["doctor", "--provider", "anthropic"])
            .current_dir(dir)
            .env_clear()
            .env("HOME", dir)
            .env("AGENTLS_CONFIG", dir.join("no-user-config.toml"))
            .env(dialect.key_var(), key(dialect));
        let output = cmd.output().expect("run agentls");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let dir = tempfile::tempdir().unwrap();
    assert!(doctor(dir.path()).contains("search model (codebase_search): the session's\n"));
    // `[search] provider` and a base URL are the project's to choose once its user trusts it.
    trust_folder(dir.path());
    std::fs::write(
        dir.path().join(".agentls.toml"),
        "[search]\nprovider = \"openai-chat\"\nmodel = \"small\"\nnative_tools = false\n\
         [providers.openai-chat]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    assert!(doctor(dir.path()).contains(
        "search model (codebase_search): small (openai-chat, http://127.0.0.1:9/v1); tool calls in the XML form \
         only\n"
    ));
    std::fs::write(dir.path().join(".agentls.toml"), "[search]\nprovider = \"gemini\"\n").unwrap();
    assert!(
        doctor(dir.path())
            .contains("search model (codebase_search): unusable: provider gemini needs an API key")
    );
}
