//! The fake Anthropic endpoint of the process benchmarks: the tests' mock provider
//! (`tests/support/mock_provider.rs`) on a runtime of its own, behind a blocking face for the
//! synchronous bench code. Every `POST /v1/messages` is answered with the [`Turn`] the bench's
//! script picks from the request; the mock records when each request's first byte arrived and,
//! per answer, when each text delta was handed to the socket ([`Answered`]).
//!
//! Invariants (the mock's opt-ins this face turns on): a delta's time is taken just before its
//! `write` (so the send itself counts as added latency, for agentls and for the direct-read floor
//! alike); every delta is its own chunk and its own `write` on a `TCP_NODELAY` socket, so nothing
//! is batched by us; connections are kept alive (chunked encoding), so a pooled client reuses
//! them as it would with a real provider; a paced turn sleeps the worker thread (in
//! `block_in_place`, at 1 µs timer slack), which is why the runtime has several threads.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

pub use crate::mock_provider::{Answered, RecordedRequest, Turn};
use crate::mock_provider::{Dialect, MockProvider, Serving};

pub struct Provider {
    mock: MockProvider,
    /// Taken on drop (after the mock stopped accepting), without waiting for its threads.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Provider {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Provider {
    /// Starts the endpoint; `script` picks the turn answering each request.
    pub fn start(script: impl Fn(&RecordedRequest) -> Turn + Send + Sync + 'static) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("fake-provider")
            .enable_all()
            .build()?;
        let serving = Serving {
            keep_alive_streams: true,
            nodelay: true,
            script: Some(Arc::new(move |request: &RecordedRequest| script(request).into())),
            ..Serving::default()
        };
        let mock = runtime.block_on(MockProvider::start_with(Dialect::Anthropic, serving));
        Ok(Self { mock, runtime: Some(runtime) })
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.mock.url()
    }

    pub fn addr(&self) -> SocketAddr {
        self.mock.addr()
    }

    /// Takes the records of the answers finished so far.
    pub fn take(&self) -> Vec<Answered> {
        self.mock.take_answered()
    }

    /// Waits until `count` answers are recorded (or `timeout` passes) and takes them.
    pub fn wait_records(&self, count: usize, timeout: Duration) -> Vec<Answered> {
        let deadline = Instant::now() + timeout;
        let mut records = Vec::new();
        loop {
            records.extend(self.take());
            if records.len() >= count || Instant::now() >= deadline {
                return records;
            }
            thread::sleep(Duration::from_millis(2));
        }
    }
}

/// `count` text deltas, each a short word that says which it is (so lost, repeated or reordered
/// text is visible), streamed one word a delta at `rate` per second (0: at once).
pub fn words(prefix: &str, count: usize, rate: f64) -> Turn {
    let text: String = (0..count).map(|i| format!("{prefix}{i} ")).collect();
    Turn::new().text(&text).fragment_words().pace(rate)
}

/// The streaming Messages request a client of this provider sends for `prompt`, whole.
pub fn streaming_request(prompt: &str) -> String {
    let body = json!({"model": "claude-bench", "max_tokens": 64, "stream": true,
        "messages": [{"role": "user", "content": prompt}]})
    .to_string();
    format!(
        "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-api-key: k\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
}
