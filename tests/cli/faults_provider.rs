//! Provider faults through `agentls exec` against the loopback mock provider. A burst of rate
//! limits, overloads, server errors and a stream cut before any output is retried and the turn
//! completes, the same request sent each time; a burst longer than the retries ends the run with
//! the provider's error; a provider that stalls — no answer at all, or silence in the middle of a
//! stream — ends the call after `network.read_timeout_ms` with an error naming the setting.
//! Retries and timeouts are configured small (`[network]` in the project file): each test takes
//! about a second. A stream cut mid-tool-call, and the history after it, is in `tests/lsp/faults.rs`
//! (it needs a second prompt).

use crate::support;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use support::exec_binary::exec_command;
use support::mock_provider::{Dialect, ErrorPreset, MockProvider, Reply, StreamFailure, Turn};

const KEY: &str = "sk-test-faults-7777";

/// A folder whose project file sets `[network]` to `network`.
fn project(network: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(".agentls.toml"), format!("[network]\n{network}\n"))
        .expect("project file");
    dir
}

/// Runs `agentls exec` with `prompt`; the output and how long it took.
async fn exec(mock: &MockProvider, dir: &Path, prompt: &str) -> (Output, Duration) {
    let started = Instant::now();
    let out = exec_command(mock, dir, KEY, &["--provider", mock.dialect().provider(), prompt])
        .output()
        .await
        .expect("agentls runs");
    (out, started.elapsed())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn bursts_of_429_529_500_and_a_cut_before_any_output_are_retried_with_the_same_request() {
    for dialect in Dialect::ALL {
        let mock = MockProvider::start(dialect).await;
        mock.push(ErrorPreset::RateLimit { retry_after_secs: 0.01 });
        mock.push(ErrorPreset::Overloaded);
        mock.push(ErrorPreset::Server);
        mock.push(Turn::new().text("lost").fail_after(0, StreamFailure::Cut));
        mock.push(Turn::new().text("Recovered after the burst."));
        let dir = project("max_retries = 4\nretry_base_delay_ms = 5");
        let (out, _) = exec(&mock, dir.path(), "say something").await;
        assert_eq!(out.status.code(), Some(0), "{dialect:?}: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "Recovered after the burst.\n", "{dialect:?}");
        let requests = mock.requests();
        assert_eq!(requests.len(), 5, "{dialect:?}: four failures, then the answer");
        for request in &requests[1..] {
            assert_eq!(request.body, requests[0].body, "{dialect:?}: a retry sends the same conversation");
        }
        assert!(!stderr(&out).contains(KEY), "{dialect:?}: the key is in no message");
    }
}

#[tokio::test]
async fn a_burst_longer_than_the_retries_ends_the_run_with_the_providers_error() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    for _ in 0..3 {
        mock.push(ErrorPreset::Overloaded);
    }
    let dir = project("max_retries = 2\nretry_base_delay_ms = 5");
    let (out, _) = exec(&mock, dir.path(), "say something").await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("anthropic is overloaded"), "{}", stderr(&out));
    assert_eq!(mock.request_count(), 3, "the first attempt and two retries");
    assert_eq!(mock.pending(), 0);
}

#[tokio::test]
async fn a_provider_that_never_answers_fails_after_the_read_timeout_naming_the_setting() {
    let mock = MockProvider::start(Dialect::OpenAiResponses).await;
    mock.push(Reply::Stall).push(Reply::Stall);
    let dir = project("read_timeout_ms = 300\nmax_retries = 1\nretry_base_delay_ms = 5");
    let (out, took) = exec(&mock, dir.path(), "say something").await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("nothing arrived for 300 ms") && err.contains("network.read_timeout_ms"), "{err}");
    assert_eq!(mock.request_count(), 2, "a stall is retried like a network error");
    assert!(took < Duration::from_secs(10), "ended by the read timeout, not the provider: {took:?}");
}

#[tokio::test]
async fn a_stream_that_goes_silent_fails_after_the_read_timeout_naming_the_setting() {
    let mock = MockProvider::start(Dialect::Anthropic).await;
    // `message_start`, then nothing for a minute.
    let silent = || Turn::new().text("never seen").delay(Duration::from_secs(60));
    mock.push(silent()).push(silent());
    let dir = project("read_timeout_ms = 300\nmax_retries = 1\nretry_base_delay_ms = 5");
    let (out, took) = exec(&mock, dir.path(), "say something").await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("response stream ended early: nothing arrived for 300 ms"), "{err}");
    assert!(err.contains("network.read_timeout_ms"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "nothing of the silent answer was printed");
    assert_eq!(mock.request_count(), 2, "retried while nothing was handed on");
    assert!(took < Duration::from_secs(10), "ended by the read timeout, not the provider: {took:?}");
}
