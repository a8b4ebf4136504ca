//! Streaming over a slow link: the TLS fake provider behind the benchmark's loopback latency
//! proxy (`benches/network/latency.rs`, 40 ms round trip), for a stream that arrives a character
//! per event, one that stalls mid-answer, and one that is cut after text was handed on. Each is
//! handled as on loopback: everything arrives, a stall is retried while nothing was handed on,
//! and a cut after text is an error (never a silent, shortened answer).

#[allow(dead_code)]
#[path = "../../benches/network/latency.rs"]
mod latency;
use crate::support;

use std::time::Duration;

use agentls::config::NetworkSettings;
use agentls::config::network::CaFile;
use agentls::llm::{Client, LlmError, Message, Request, RetryPolicy, StreamEvent};
use latency::LatencyProxy;
use support::exec_binary::model_of;
use support::mock_provider::{Dialect, MockProvider, StreamFailure, Turn};
use support::tls::TestCa;
use support::{collect, fast_retry, settings_for, text_deltas};

const RTT: Duration = Duration::from_millis(40);

/// A client of `mock` through a latency proxy, trusting `ca`.
async fn slow_client(mock: &MockProvider, ca: &TestCa) -> (Client, LatencyProxy) {
    let proxy = LatencyProxy::start(mock.addr(), RTT).await.expect("latency proxy");
    let mut settings = settings_for(mock, model_of(mock.dialect()));
    settings.base_url = mock.url().replace(&mock.addr().to_string(), &proxy.addr.to_string());
    settings.network = NetworkSettings {
        ca_files: vec![CaFile { path: ca.ca_file().to_path_buf(), source: "[network] ca_file".into() }],
        ..Default::default()
    };
    (Client::new(settings).expect("client").with_retry(fast_retry()), proxy)
}

fn request(dialect: Dialect) -> Request {
    Request::new(model_of(dialect), vec![Message::user("hi")])
}

#[tokio::test(flavor = "multi_thread")]
async fn every_dialect_streams_a_character_per_event_through_a_slow_tls_link() {
    let ca = TestCa::new("agentls slow-link CA");
    for dialect in Dialect::ALL {
        let mock = MockProvider::start_tls(dialect, ca.acceptor()).await;
        let (client, proxy) = slow_client(&mock, &ca).await;
        mock.push(Turn::new().text("Slow and steady, every character.").fragment(1));
        let (events, error) = collect(&client, &request(dialect)).await;
        assert_eq!(error, None, "{dialect:?}");
        assert_eq!(text_deltas(&events), "Slow and steady, every character.", "{dialect:?}");
        let deltas = events.iter().filter(|e| matches!(e, StreamEvent::TextDelta(_))).count();
        assert!(deltas >= 30, "{dialect:?}: the answer came a character at a time ({deltas} deltas)");
        assert!(events.iter().any(|e| matches!(e, StreamEvent::Finish(_))), "{dialect:?}");
        assert_eq!(proxy.connections(), 1, "{dialect:?}: one connection through the link");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_that_stalls_before_any_text_is_retried_and_the_answer_arrives_whole() {
    let ca = TestCa::new("agentls slow-link CA");
    let mock = MockProvider::start_tls(Dialect::Anthropic, ca.acceptor()).await;
    let (client, _proxy) = slow_client(&mock, &ca).await;
    let client = client.with_read_timeout(Duration::from_millis(400));
    // `message_start`, then silence for a minute; the retry gets the whole answer.
    mock.push(Turn::new().text("never seen").delay(Duration::from_secs(60)));
    mock.push(Turn::new().text("The answer, whole.").fragment(2));
    let started = std::time::Instant::now();
    let (events, error) = collect(&client, &request(Dialect::Anthropic)).await;
    assert_eq!(error, None);
    assert_eq!(text_deltas(&events), "The answer, whole.");
    assert_eq!(mock.request_count(), 2, "the stall was retried");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "ended by the read timeout: {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_that_stalls_after_text_was_handed_on_is_an_error_naming_the_setting() {
    let ca = TestCa::new("agentls slow-link CA");
    let mock = MockProvider::start_tls(Dialect::OpenAiResponses, ca.acceptor()).await;
    let (client, _proxy) = slow_client(&mock, &ca).await;
    let client = client.with_read_timeout(Duration::from_millis(400));
    // Text is handed on, then the stream goes quiet (the connection open) for too long.
    mock.push(Turn::new().text("abcdefghijklmnopqrstuvwxyz").fragment(2).fail_after(8, StreamFailure::Stall));
    let (events, error) = collect(&client, &request(Dialect::OpenAiResponses)).await;
    let error = error.expect("an error, not a shortened answer");
    assert!(error.to_string().contains("nothing arrived for 400 ms (network.read_timeout_ms)"), "{error}");
    assert!(!text_deltas(&events).is_empty(), "text was handed on before the stall");
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Finish(_))), "no finish after a stall");
    assert_eq!(mock.request_count(), 1, "not retried once text was handed on");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_cut_mid_answer_on_the_slow_link_is_an_error_in_every_dialect() {
    let ca = TestCa::new("agentls slow-link CA");
    for dialect in Dialect::ALL {
        let mock = MockProvider::start_tls(dialect, ca.acceptor()).await;
        let (client, _proxy) = slow_client(&mock, &ca).await;
        let client = client.with_retry(RetryPolicy { max_retries: 2, ..fast_retry() });
        // Past each dialect's opening events, some text, then the connection closes.
        mock.push(
            Turn::new().text("abcdefghijklmnopqrstuvwxyz").fragment(2).fail_after(8, StreamFailure::Cut),
        );
        let (events, error) = collect(&client, &request(dialect)).await;
        assert!(matches!(error, Some(LlmError::StreamCut { .. })), "{dialect:?}: {error:?}");
        assert!(!text_deltas(&events).is_empty(), "{dialect:?}: text was handed on before the cut");
        assert!(!events.iter().any(|e| matches!(e, StreamEvent::Finish(_))), "{dialect:?}");
        assert_eq!(mock.request_count(), 1, "{dialect:?}: not retried once text was handed on");
    }
}
