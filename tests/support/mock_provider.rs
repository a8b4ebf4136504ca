//! A mock LLM provider: a real HTTP/1.1 server on 127.0.0.1 that records every request and serves
//! a queue of replies — wire transcripts byte for byte, scripted turns rendered into any of the
//! four dialects, error presets, mid-stream failures and cut streams.
//!
//! ```ignore
//! let mock = MockProvider::start(Dialect::Anthropic).await;
//! mock.push(Turn::new().text("hi").tool_call("c1", "read_file", json!({"path": "a"})));
//! let base_url = mock.url();            // what the client's base URL should be
//! let seen = mock.requests();           // method, path, headers, body of every request
//! ```
//! For a binary under test in another process, pass `mock.env()` (the base-URL variable).
//! When the queue is empty the server answers 500 with a message naming the request.
//! `MockProvider::start_tls` serves the same over TLS (see `tls.rs` for a CA made at test time);
//! it does not record the `HEAD` requests that warm a connection.
//!
//! The benchmarks use the same mock through `start_with`/`start_tls_with` and a [`Serving`] that
//! opts in to what they need and the tests do not: streams kept alive (chunked, one chunk and one
//! write per event, so a pooled client reuses the connection), `TCP_NODELAY`, a script that picks
//! each reply from the request, and HTTP/2 by ALPN (a hyper connection; TLS only). Every request
//! records when its first byte arrived ([`RecordedRequest::arrived`]); every answered request
//! records when each streamed text delta was handed to the socket ([`Answered`]). A turn with
//! [`Turn::pace`] streams its text deltas on a schedule: on a multi-thread runtime the stream is
//! written inside `block_in_place` with `std::thread::sleep` at 1 µs timer slack (tokio's timer
//! has 1 ms steps; 10,000 deltas/s needs 100 µs), each delta's time taken just before its write.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// The four wire dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Anthropic,
    OpenAiResponses,
    OpenAiChat,
    Gemini,
}

impl Dialect {
    pub const ALL: [Dialect; 4] = [Self::Anthropic, Self::OpenAiResponses, Self::OpenAiChat, Self::Gemini];

    /// The agentls provider name.
    pub fn provider(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAiResponses => "openai",
            Self::OpenAiChat => "openai-chat",
            Self::Gemini => "gemini",
        }
    }

    pub fn base_url_var(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_BASE_URL",
            Self::OpenAiResponses | Self::OpenAiChat => "OPENAI_BASE_URL",
            Self::Gemini => "GOOGLE_GEMINI_BASE_URL",
        }
    }

    pub fn key_var(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::OpenAiResponses | Self::OpenAiChat => "OPENAI_API_KEY",
            Self::Gemini => "GEMINI_API_KEY",
        }
    }

    /// The folder of this dialect's transcripts under `tests/fixtures/wire`.
    pub fn wire_dir(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAiResponses => "openai_responses",
            Self::OpenAiChat => "openai_chat",
            Self::Gemini => "gemini",
        }
    }

    /// SSE event separator.
    fn sep(self) -> &'static str {
        if self == Self::Gemini { "\r\n\r\n" } else { "\n\n" }
    }
}

/// Path of a transcript file, e.g. `wire_path("anthropic/stream_text.sse")`.
pub fn wire_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wire").join(relative)
}

/// The bytes of a transcript file.
pub fn wire_bytes(relative: &str) -> Vec<u8> {
    std::fs::read(wire_path(relative)).unwrap_or_else(|e| panic!("cannot read wire file {relative}: {e}"))
}

/// The parsed JSON of a transcript file (`request_*.json`, `response_*.json`).
pub fn wire_json(relative: &str) -> Value {
    serde_json::from_slice(&wire_bytes(relative)).unwrap_or_else(|e| panic!("{relative} is not JSON: {e}"))
}

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query, e.g. `/v1beta/models/m:streamGenerateContent?alt=sse`.
    pub path: String,
    /// Lower-cased header names.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
    pub raw_body: Vec<u8>,
    /// When the request's first byte arrived (HTTP/2: when its head did).
    pub arrived: Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    /// The body as text (lossy), for substring routing and checks.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.raw_body).into_owned()
    }
}

/// A request the mock answered and what it sent, recorded once the answer was written.
#[derive(Debug, Clone)]
pub struct Answered {
    pub request: RecordedRequest,
    /// Each streamed text delta and when it was handed to the socket (just before its write), in
    /// order. Empty for answers that are not streamed, and over HTTP/2 (hyper writes the frames).
    pub deltas: Vec<(String, Instant)>,
    /// The latest a paced delta left after its due time (the mock's own lag).
    pub behind: Duration,
}

/// Picks the reply to a request (see [`Serving::script`]).
pub type Script = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

/// How the mock serves beyond the tests' defaults; everything is opt-in.
#[derive(Clone, Default)]
pub struct Serving {
    /// Streamed answers keep the connection open: chunked transfer encoding, each SSE event its
    /// own chunk and its own write (by default a stream closes its connection).
    pub keep_alive_streams: bool,
    /// `TCP_NODELAY` on every accepted connection.
    pub nodelay: bool,
    /// HTTP/2 and HTTP/1.1 by ALPN through hyper (with `start_tls_with`; the acceptor offers the
    /// protocols). Serves turns, JSON and error replies; raw, hang-up and stall replies need the
    /// default HTTP/1.1 connection. A request's `body` is parsed when `requests()` reads it (the
    /// script and `answered()` see `Null`; `raw_body` is there) unless `push_for` routes exist.
    pub http2: bool,
    /// Picks the reply to every request that no `push_for` marker routes, instead of the queue.
    /// Called without the mock's lock held.
    pub script: Option<Script>,
}

/// What a scripted mid-stream failure looks like.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamFailure {
    /// The provider's overload error event.
    Overloaded,
    /// The provider's rate-limit error event.
    RateLimit,
    /// The connection just closes (no terminal event).
    Cut,
    /// Nothing more is sent, and the connection stays open (a stream that stalls mid-answer).
    Stall,
}

/// Error responses rendered in the dialect's own envelope.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorPreset {
    /// 429 with `retry-after` seconds (Gemini: `RetryInfo.retryDelay`).
    RateLimit {
        retry_after_secs: f64,
    },
    Overloaded,
    Server,
    Authentication,
    ContextLength,
    Quota,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    /// `arguments`: the JSON object, or a string that is sent as the arguments' text itself
    /// ([`Turn::raw_tool_call`]).
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
        signature: Option<String>,
    },
}

/// The text a tool call's arguments are sent as (see [`Part::ToolCall`]).
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        object => object.to_string(),
    }
}

/// A scripted model turn, rendered as the request asks (streaming or not) in the mock's dialect.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    parts: Vec<Part>,
    input_tokens: u64,
    output_tokens: u64,
    finish: Option<String>,
    fragment: Fragment,
    delay: Duration,
    /// Text deltas per second (see [`Turn::pace`]).
    pace: Option<f64>,
    failure: Option<(usize, StreamFailure)>,
}

/// How text and tool arguments are cut into streamed fragments.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fragment {
    Chars(usize),
    /// After each space: one word (with its space) a fragment.
    Words,
}

impl Default for Turn {
    fn default() -> Self {
        Self::new()
    }
}

impl Turn {
    pub fn new() -> Self {
        Self {
            parts: Vec::new(),
            input_tokens: 10,
            output_tokens: 5,
            finish: None,
            fragment: Fragment::Chars(8),
            delay: Duration::ZERO,
            pace: None,
            failure: None,
        }
    }

    pub fn text(mut self, text: &str) -> Self {
        self.parts.push(Part::Text(text.into()));
        self
    }

    pub fn thinking(mut self, text: &str, signature: &str) -> Self {
        self.parts.push(Part::Thinking { text: text.into(), signature: Some(signature.into()) });
        self
    }

    pub fn tool_call(mut self, id: &str, name: &str, arguments: Value) -> Self {
        self.parts.push(Part::ToolCall { id: id.into(), name: name.into(), arguments, signature: None });
        self
    }

    /// A tool call whose arguments are `text` as it is, JSON or not (a model that wrote broken
    /// JSON). Dialects that send arguments as text only (not Gemini's objects).
    pub fn raw_tool_call(mut self, id: &str, name: &str, text: &str) -> Self {
        self.parts.push(Part::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: Value::String(text.into()),
            signature: None,
        });
        self
    }

    /// A tool call with a Gemini thought signature.
    pub fn signed_tool_call(mut self, id: &str, name: &str, arguments: Value, signature: &str) -> Self {
        self.parts.push(Part::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            signature: Some(signature.into()),
        });
        self
    }

    pub fn usage(mut self, input: u64, output: u64) -> Self {
        self.input_tokens = input;
        self.output_tokens = output;
        self
    }

    /// Overrides the dialect's finish/stop reason string (e.g. `max_tokens`, `length`).
    pub fn finish_reason(mut self, reason: &str) -> Self {
        self.finish = Some(reason.into());
        self
    }

    /// Splits text and tool arguments into fragments of this many characters (default 8).
    pub fn fragment(mut self, chars: usize) -> Self {
        self.fragment = Fragment::Chars(chars.max(1));
        self
    }

    /// Cuts after each space instead: `"w0 w1 "` streams as `"w0 "`, `"w1 "`.
    pub fn fragment_words(mut self) -> Self {
        self.fragment = Fragment::Words;
        self
    }

    /// Streams text deltas at `per_second` (≤ 0: at once), each run of consecutive text deltas on
    /// its own schedule from its first (see the module docs for how the wait is done).
    pub fn pace(mut self, per_second: f64) -> Self {
        self.pace = (per_second > 0.0).then_some(per_second);
        self
    }

    /// Waits this long between streamed events.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// After `events` streamed events, fails as `failure` says instead of finishing.
    pub fn fail_after(mut self, events: usize, failure: StreamFailure) -> Self {
        self.failure = Some((events, failure));
        self
    }

    fn has_calls(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::ToolCall { .. }))
    }
}

/// One queued answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete raw HTTP response (an `.http` transcript), written verbatim.
    Raw(Vec<u8>),
    /// An SSE body, written as-is after 200 headers, event by event.
    Sse {
        events: Vec<Vec<u8>>,
        delay: Duration,
    },
    /// A JSON response.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: Value,
    },
    Turn(Turn),
    Error(ErrorPreset),
    /// Accept the request, then close the connection without answering.
    Hangup,
    /// Accept the request, then say nothing and keep the connection open (a stalled provider).
    Stall,
}

impl From<Turn> for Reply {
    fn from(t: Turn) -> Self {
        Reply::Turn(t)
    }
}

impl From<ErrorPreset> for Reply {
    fn from(e: ErrorPreset) -> Self {
        Reply::Error(e)
    }
}

impl Reply {
    /// A transcript file: `.sse` streamed, `.http` raw, `.json` as a 200 body.
    pub fn wire(relative: &str) -> Self {
        let bytes = wire_bytes(relative);
        if relative.ends_with(".http") {
            Reply::Raw(bytes)
        } else if relative.ends_with(".sse") {
            Reply::Sse { events: split_sse(&bytes), delay: Duration::ZERO }
        } else {
            Reply::Json { status: 200, headers: vec![], body: wire_json(relative) }
        }
    }

    /// A transcript `.sse` file cut after `events` events (the connection then closes).
    pub fn wire_cut(relative: &str, events: usize) -> Self {
        let mut all = split_sse(&wire_bytes(relative));
        all.truncate(events);
        Reply::Sse { events: all, delay: Duration::ZERO }
    }

    pub fn json(status: u16, body: Value) -> Self {
        Reply::Json { status, headers: vec![], body }
    }

    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Reply::Json { status, mut headers, body } => {
                headers.push((name.into(), value.into()));
                Reply::Json { status, headers, body }
            }
            other => other,
        }
    }
}

/// Splits an SSE body after each blank line, keeping separators (so bytes are unchanged).
pub fn split_sse(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut events = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let sep = if rest.starts_with(b"\r\n\r\n") {
            4
        } else if rest.starts_with(b"\n\n") {
            2
        } else {
            0
        };
        if sep > 0 {
            events.push(bytes[start..i + sep].to_vec());
            i += sep;
            start = i;
        } else {
            i += 1;
        }
    }
    if start < bytes.len() {
        events.push(bytes[start..].to_vec());
    }
    events
}

#[derive(Default)]
struct State {
    queue: VecDeque<Reply>,
    /// Replies for the conversations whose first user message contains the marker (a subagent's
    /// task), so concurrent sessions each get their own script.
    routed: Vec<(String, VecDeque<Reply>)>,
    requests: Vec<RecordedRequest>,
    answered: Vec<Answered>,
    handshakes: usize,
    failed_handshakes: usize,
    warmups: usize,
    /// Bumped to make every connection waiting for its next request close (a provider that
    /// drops idle connections).
    closing: Option<tokio::sync::watch::Sender<u64>>,
}

/// The first user message of a request body, as JSON text ("" when there is none).
pub fn first_user_message(dialect: Dialect, body: &Value) -> String {
    let list = match dialect {
        Dialect::Gemini => &body["contents"],
        Dialect::OpenAiResponses => &body["input"],
        _ => &body["messages"],
    };
    list.as_array()
        .into_iter()
        .flatten()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(Value::to_string)
        .unwrap_or_default()
}

/// The running mock server. Dropping it stops accepting connections.
pub struct MockProvider {
    dialect: Dialect,
    addr: SocketAddr,
    tls: bool,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockProvider {
    pub async fn start(dialect: Dialect) -> Self {
        Self::start_with(dialect, Serving::default()).await
    }

    /// The same over TLS with `acceptor`'s certificate (`https://127.0.0.1:PORT`). Handshakes
    /// that fail (a client that does not trust the certificate) are counted, not served.
    pub async fn start_tls(dialect: Dialect, acceptor: tokio_rustls::TlsAcceptor) -> Self {
        Self::start_tls_with(dialect, acceptor, Serving::default()).await
    }

    /// Plain HTTP served as `serving` says.
    pub async fn start_with(dialect: Dialect, serving: Serving) -> Self {
        Self::listen(dialect, None, serving).await
    }

    /// TLS served as `serving` says (with `serving.http2`, offer `h2` in the acceptor's ALPN).
    pub async fn start_tls_with(
        dialect: Dialect,
        acceptor: tokio_rustls::TlsAcceptor,
        serving: Serving,
    ) -> Self {
        Self::listen(dialect, Some(acceptor), serving).await
    }

    async fn listen(dialect: Dialect, acceptor: Option<tokio_rustls::TlsAcceptor>, serving: Serving) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(Mutex::new(State::default()));
        let (shared, tls, serving) = (state.clone(), acceptor.is_some(), Arc::new(serving));
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                if serving.nodelay {
                    let _ = socket.set_nodelay(true);
                }
                let (state, acceptor, serving) = (shared.clone(), acceptor.clone(), serving.clone());
                tokio::spawn(async move {
                    let Some(acceptor) = acceptor else {
                        let _ = serve_connection(socket, dialect, state, &serving).await;
                        return;
                    };
                    match acceptor.accept(socket).await {
                        Ok(stream) => {
                            state.lock().unwrap().handshakes += 1;
                            if serving.http2 {
                                serve_hyper(stream, dialect, state, serving).await;
                            } else {
                                let _ = serve_connection(stream, dialect, state, &serving).await;
                            }
                        }
                        Err(_) => state.lock().unwrap().failed_handshakes += 1,
                    }
                });
            }
        });
        Self { dialect, addr, tls, state, task }
    }

    /// TLS handshakes completed (connections opened) and refused so far.
    pub fn handshakes(&self) -> (usize, usize) {
        let state = self.state.lock().unwrap();
        (state.handshakes, state.failed_handshakes)
    }

    /// `HEAD` requests received (connections warmed), which are answered but not recorded.
    pub fn warmups(&self) -> usize {
        self.state.lock().unwrap().warmups
    }

    /// Closes every connection that waits for its next request, as a provider closes idle ones.
    pub fn close_idle_connections(&self) {
        let mut state = self.state.lock().unwrap();
        state.closing.get_or_insert_with(|| tokio::sync::watch::channel(0).0).send_modify(|g| *g += 1);
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL as the provider's config expects it (`/v1` only for OpenAI dialects).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        match self.dialect {
            Dialect::OpenAiResponses | Dialect::OpenAiChat => format!("{scheme}://{}/v1", self.addr),
            _ => format!("{scheme}://{}", self.addr),
        }
    }

    /// Environment for a child process: the base-URL variable pointing here.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![(self.dialect.base_url_var().to_string(), self.url())]
    }

    pub fn push(&self, reply: impl Into<Reply>) -> &Self {
        self.state.lock().unwrap().queue.push_back(reply.into());
        self
    }

    /// Queues a reply for the conversation whose first user message contains `marker` (a
    /// subagent's task); other requests never take it.
    pub fn push_for(&self, marker: &str, reply: impl Into<Reply>) -> &Self {
        let mut state = self.state.lock().unwrap();
        match state.routed.iter_mut().find(|(m, _)| m == marker) {
            Some((_, queue)) => queue.push_back(reply.into()),
            None => state.routed.push((marker.to_string(), VecDeque::from([reply.into()]))),
        }
        drop(state);
        self
    }

    pub fn push_wire(&self, relative: &str) -> &Self {
        self.push(Reply::wire(relative))
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        let mut state = self.state.lock().unwrap();
        // Over HTTP/2 a body's tree is built here, once (see `answer_hyper`).
        for request in state.requests.iter_mut().filter(|r| r.body.is_null() && !r.raw_body.is_empty()) {
            request.body = serde_json::from_slice(&request.raw_body).unwrap_or(Value::Null);
        }
        state.requests.clone()
    }

    /// When each request's first byte arrived (HTTP/2: its head), in order, without copying them.
    pub fn arrivals(&self) -> Vec<Instant> {
        self.state.lock().unwrap().requests.iter().map(|r| r.arrived).collect()
    }

    pub fn request_count(&self) -> usize {
        self.state.lock().unwrap().requests.len()
    }

    /// The requests answered so far, in the order their answers were written.
    pub fn answered(&self) -> Vec<Answered> {
        self.state.lock().unwrap().answered.clone()
    }

    /// Takes the records of the requests answered so far (the next call returns only newer ones).
    pub fn take_answered(&self) -> Vec<Answered> {
        std::mem::take(&mut self.state.lock().unwrap().answered)
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        self.state.lock().unwrap().queue.len()
    }
}

/// Whether `request` asks for a streamed answer.
fn is_streaming(dialect: Dialect, request: &RecordedRequest) -> bool {
    match dialect {
        Dialect::Gemini => request.path.contains(":streamGenerateContent"),
        _ => request.body.get("stream").and_then(Value::as_bool) == Some(true),
    }
}

/// Picks the reply to `request` (recording it first when `record`): the queue of a `push_for`
/// marker its conversation carries, else the script, else the common queue.
fn next_reply(
    dialect: Dialect,
    state: &Mutex<State>,
    serving: &Serving,
    request: &RecordedRequest,
    record: bool,
) -> Option<Reply> {
    {
        let mut st = state.lock().unwrap();
        if record {
            st.requests.push(request.clone());
        }
        if !st.routed.is_empty() {
            let first = first_user_message(dialect, &request.body);
            if let Some((_, queue)) = st.routed.iter_mut().find(|(marker, _)| first.contains(marker.as_str()))
            {
                return queue.pop_front();
            }
        }
        if serving.script.is_none() {
            return st.queue.pop_front();
        }
    }
    serving.script.as_ref().map(|script| script(request))
}

fn record_answer(state: &Mutex<State>, request: RecordedRequest, sent: Sent) {
    let (deltas, behind) = sent;
    state.lock().unwrap().answered.push(Answered { request, deltas, behind });
}

fn no_reply_body(method: &str, path: &str) -> Value {
    json!({"error": {"message": format!("mock provider: no reply queued for {method} {path}")}})
}

async fn serve_connection(
    mut socket: impl AsyncRead + AsyncWrite + Unpin,
    dialect: Dialect,
    state: Arc<Mutex<State>>,
    serving: &Serving,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut closing =
        state.lock().unwrap().closing.get_or_insert_with(|| tokio::sync::watch::channel(0).0).subscribe();
    closing.mark_unchanged();
    loop {
        let request = tokio::select! {
            request = read_request(&mut socket, &mut buf) => request?,
            _ = closing.changed() => {
                socket.shutdown().await.ok();
                return Ok(());
            }
        };
        let Some(request) = request else { return Ok(()) };
        if request.method == "HEAD" {
            state.lock().unwrap().warmups += 1;
            socket.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n").await?;
            continue;
        }
        let streaming = is_streaming(dialect, &request);
        let reply = next_reply(dialect, &state, serving, &request, true);
        let mut sent: Sent = (Vec::new(), Duration::ZERO);
        let keep_alive = match reply {
            None => {
                write_json(&mut socket, 500, &[], &no_reply_body(&request.method, &request.path)).await?;
                true
            }
            Some(Reply::Hangup) => return Ok(()),
            Some(Reply::Stall) => {
                let mut rest = [0u8; 1024];
                // Until the client gives up and closes the connection.
                while socket.read(&mut rest).await? > 0 {}
                return Ok(());
            }
            Some(Reply::Raw(bytes)) => {
                socket.write_all(&bytes).await?;
                true
            }
            Some(Reply::Json { status, headers, body }) => {
                write_json(&mut socket, status, &headers, &body).await?;
                true
            }
            Some(Reply::Error(preset)) => {
                let (status, headers, body) = render_error(dialect, &preset);
                write_json(&mut socket, status, &headers, &body).await?;
                true
            }
            Some(Reply::Sse { events, delay }) => {
                let pacing = Pacing { delay, per_second: None };
                sent = write_sse(&mut socket, dialect, &events, pacing, serving.keep_alive_streams).await?;
                serving.keep_alive_streams
            }
            Some(Reply::Turn(turn)) if streaming => {
                let events = render_stream(dialect, &turn);
                let pacing = Pacing { delay: turn.delay, per_second: turn.pace };
                // A failing stream ends without the last chunk and closes.
                let chunked = serving.keep_alive_streams && turn.failure.is_none();
                sent = write_sse(&mut socket, dialect, &events, pacing, chunked).await?;
                if turn.failure.as_ref().is_some_and(|(_, f)| *f == StreamFailure::Stall) {
                    socket.flush().await?;
                    // Silent until the client gives up and closes the connection.
                    let mut rest = [0u8; 1024];
                    while matches!(socket.read(&mut rest).await, Ok(n) if n > 0) {}
                    return Ok(());
                }
                chunked
            }
            Some(Reply::Turn(turn)) => {
                write_json(&mut socket, 200, &[], &render_json(dialect, &turn)).await?;
                true
            }
        };
        socket.flush().await?;
        record_answer(&state, request, sent);
        if !keep_alive {
            socket.shutdown().await.ok();
            return Ok(());
        }
    }
}

/// A request body's `"stream": true`, read without building its JSON tree.
fn stream_flag(raw_body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Flag {
        #[serde(default)]
        stream: bool,
    }
    serde_json::from_slice::<Flag>(raw_body).is_ok_and(|flag| flag.stream)
}

type HyperBody = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;

/// One TLS connection through hyper (HTTP/2 or HTTP/1.1, as ALPN chose), until the client
/// closes it or `close_idle_connections` asks (answers under way finish first).
async fn serve_hyper(
    stream: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    dialect: Dialect,
    state: Arc<Mutex<State>>,
    serving: Arc<Serving>,
) {
    let mut closing =
        state.lock().unwrap().closing.get_or_insert_with(|| tokio::sync::watch::channel(0).0).subscribe();
    closing.mark_unchanged();
    let service = hyper::service::service_fn(move |request| {
        let (state, serving) = (state.clone(), serving.clone());
        async move { Ok::<_, std::convert::Infallible>(answer_hyper(request, dialect, &state, &serving).await) }
    });
    let builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = closing.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

async fn answer_hyper(
    request: hyper::Request<hyper::body::Incoming>,
    dialect: Dialect,
    state: &Mutex<State>,
    serving: &Serving,
) -> hyper::Response<HyperBody> {
    use http_body_util::BodyExt;
    let arrived = Instant::now();
    let whole = |status: u16, headers: &[(String, String)], body: Vec<u8>| {
        let mut response =
            hyper::Response::builder().status(status).header("content-type", "application/json");
        for (name, value) in headers {
            response = response.header(name, value);
        }
        let body = http_body_util::Full::new(bytes::Bytes::from(body)).boxed();
        response.body(body).expect("a response")
    };
    if request.method() == hyper::Method::HEAD {
        state.lock().unwrap().warmups += 1;
        return whole(404, &[], Vec::new());
    }
    let method = request.method().to_string();
    let path = request.uri().path_and_query().map_or_else(String::new, ToString::to_string);
    let headers = request
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let raw_body = request.into_body().collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
    // The body's JSON tree is built when the records are read (`requests`), not here, unless a
    // `push_for` route needs it: building it is CPU the measured server would lose on a small
    // machine (in the test profile it put about 2 ms on the network bench's eight concurrent
    // prompts on 2 cores). The stream flag is read without building it; the script sees `body`
    // as `Null` (`raw_body` is there).
    let routes = !state.lock().unwrap().routed.is_empty();
    let body = if routes { serde_json::from_slice(&raw_body).unwrap_or(Value::Null) } else { Value::Null };
    let recorded = RecordedRequest { method, path, headers, body, raw_body, arrived };
    let streaming = match dialect {
        Dialect::Gemini => recorded.path.contains(":streamGenerateContent"),
        _ => stream_flag(&recorded.raw_body),
    };
    let json_bytes = |value: &Value| serde_json::to_vec(value).expect("json");
    let response = match next_reply(dialect, state, serving, &recorded, false) {
        Some(Reply::Turn(turn)) if streaming => {
            let frames: Vec<Result<hyper::body::Frame<bytes::Bytes>, std::convert::Infallible>> =
                render_stream(dialect, &turn)
                    .into_iter()
                    .map(|e| Ok(hyper::body::Frame::data(e.into())))
                    .collect();
            let body = http_body_util::StreamBody::new(futures::stream::iter(frames)).boxed();
            hyper::Response::builder()
                .header("content-type", "text/event-stream")
                .body(body)
                .expect("a response")
        }
        Some(Reply::Turn(turn)) => whole(200, &[], json_bytes(&render_json(dialect, &turn))),
        Some(Reply::Json { status, headers, body }) => whole(status, &headers, json_bytes(&body)),
        Some(Reply::Error(preset)) => {
            let (status, headers, body) = render_error(dialect, &preset);
            whole(status, &headers, json_bytes(&body))
        }
        None => whole(500, &[], json_bytes(&no_reply_body(&recorded.method, &recorded.path))),
        Some(other) => {
            let message = format!("mock provider: {other:?} needs the HTTP/1.1 connection, not hyper's");
            whole(500, &[], json_bytes(&json!({"error": {"message": message}})))
        }
    };
    state.lock().unwrap().requests.push(recorded.clone());
    record_answer(state, recorded, (Vec::new(), Duration::ZERO));
    response
}

async fn read_request(
    socket: &mut (impl AsyncRead + Unpin),
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<RecordedRequest>> {
    // Bytes already read (a pipelined request) arrived before this call.
    let mut arrived = (!buf.is_empty()).then(Instant::now);
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        arrived.get_or_insert_with(Instant::now);
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("").to_string();
    let mut headers = BTreeMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let length: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let body_start = head_end + 4;
    while buf.len() < body_start + length {
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let raw_body = buf[body_start..body_start + length].to_vec();
    buf.drain(..body_start + length);
    let body = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
    let arrived = arrived.unwrap_or_else(Instant::now);
    Ok(Some(RecordedRequest { method, path, headers, body, raw_body, arrived }))
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Site Overloaded",
        _ => "Status",
    }
}

async fn write_json(
    socket: &mut (impl AsyncWrite + Unpin),
    status: u16,
    headers: &[(String, String)],
    body: &Value,
) -> std::io::Result<()> {
    let body = serde_json::to_vec(body).expect("json");
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        reason_phrase(status),
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(&body).await
}

/// Each text delta sent and when; the most a paced delta ran late.
type Sent = (Vec<(String, Instant)>, Duration);

/// How a stream's events are spaced: `delay` after every event (tokio's timer), text deltas at
/// `per_second` (see [`Turn::pace`]).
#[derive(Clone, Copy)]
struct Pacing {
    delay: Duration,
    per_second: Option<f64>,
}

/// The text of an event that is a text delta in `dialect`'s stream (not thinking, not a tool).
fn text_delta(dialect: Dialect, event: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(event).ok()?;
    let data: Value = serde_json::from_str(text.lines().find_map(|l| l.strip_prefix("data: "))?).ok()?;
    let delta = match dialect {
        Dialect::Anthropic => data.pointer("/delta/text").filter(|_| data["delta"]["type"] == "text_delta"),
        Dialect::OpenAiResponses => {
            data.get("delta").filter(|_| data["type"] == "response.output_text.delta")
        }
        Dialect::OpenAiChat => data.pointer("/choices/0/delta/content"),
        Dialect::Gemini => data
            .pointer("/candidates/0/content/parts/0")
            .filter(|p| p.get("thought").is_none())
            .and_then(|p| p.get("text")),
    };
    delta?.as_str().filter(|t| !t.is_empty()).map(str::to_string)
}

/// Streams `events` after 200 headers: closing the connection after them, or `chunked` (each
/// event its own chunk and write, then the last chunk; the connection stays).
async fn write_sse(
    socket: &mut (impl AsyncWrite + Unpin),
    dialect: Dialect,
    events: &[Vec<u8>],
    pacing: Pacing,
    chunked: bool,
) -> std::io::Result<Sent> {
    let head = if chunked {
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
    } else {
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
    };
    socket.write_all(head.as_bytes()).await?;
    // Everything is framed before the first write, so a delta's time is its write's.
    let framed: Vec<(Vec<u8>, Option<String>)> = events
        .iter()
        .map(|event| {
            let bytes = if chunked {
                let mut bytes = format!("{:x}\r\n", event.len()).into_bytes();
                bytes.extend_from_slice(event);
                bytes.extend_from_slice(b"\r\n");
                bytes
            } else {
                event.clone()
            };
            (bytes, text_delta(dialect, event))
        })
        .collect();
    let multi_thread =
        tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread;
    let sent = match pacing.per_second {
        Some(_) if multi_thread => tokio::task::block_in_place(|| {
            // Sleeps wake within microseconds instead of the default 50 µs slack.
            let _ = nix::sys::prctl::set_timerslack(1_000);
            let runtime = tokio::runtime::Handle::current();
            runtime.block_on(write_events(socket, &framed, pacing, |due| {
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                std::future::ready(())
            }))
        })?,
        _ => {
            write_events(socket, &framed, pacing, |due| {
                tokio::time::sleep_until(tokio::time::Instant::from_std(due))
            })
            .await?
        }
    };
    if chunked {
        socket.write_all(b"0\r\n\r\n").await?;
    }
    Ok(sent)
}

/// Writes the framed events one by one, waiting with `wait_until` for a paced delta's due time;
/// stamps each text delta just before its write.
async fn write_events<F: std::future::Future<Output = ()>>(
    socket: &mut (impl AsyncWrite + Unpin),
    framed: &[(Vec<u8>, Option<String>)],
    pacing: Pacing,
    wait_until: impl Fn(Instant) -> F,
) -> std::io::Result<Sent> {
    let mut deltas = Vec::new();
    let mut behind = Duration::ZERO;
    // The start of the current run of text deltas and the index in it.
    let mut run: Option<(Instant, usize)> = None;
    for (bytes, text) in framed {
        match text {
            Some(text) => {
                let mut now = Instant::now();
                if let Some(rate) = pacing.per_second {
                    let (began, i) = *run.get_or_insert((now, 0));
                    let due = began + Duration::from_secs_f64(i as f64 / rate);
                    if due > now {
                        wait_until(due).await;
                        now = Instant::now();
                    } else {
                        behind = behind.max(now - due);
                    }
                    run = Some((began, i + 1));
                }
                deltas.push((text.clone(), now));
            }
            None => run = None,
        }
        socket.write_all(bytes).await?;
        socket.flush().await?;
        if !pacing.delay.is_zero() {
            tokio::time::sleep(pacing.delay).await;
        }
    }
    Ok((deltas, behind))
}

fn chunks(text: &str, fragment: Fragment) -> Vec<String> {
    match fragment {
        Fragment::Chars(size) => {
            let chars: Vec<char> = text.chars().collect();
            chars.chunks(size).map(|c| c.iter().collect()).collect()
        }
        Fragment::Words => text.split_inclusive(' ').map(str::to_string).collect(),
    }
}

fn frame(dialect: Dialect, event: Option<&str>, data: &Value) -> Vec<u8> {
    let mut s = String::new();
    if let Some(name) = event {
        s.push_str(&format!("event: {name}\n"));
    }
    s.push_str(&format!("data: {data}{}", dialect.sep()));
    s.into_bytes()
}

fn failure_frame(dialect: Dialect, failure: &StreamFailure) -> Option<Vec<u8>> {
    let rate = *failure == StreamFailure::RateLimit;
    match (dialect, failure) {
        (_, StreamFailure::Cut | StreamFailure::Stall) => None,
        (Dialect::Anthropic, _) => {
            let (t, m) =
                if rate { ("rate_limit_error", "Rate limited") } else { ("overloaded_error", "Overloaded") };
            Some(frame(dialect, Some("error"), &json!({"type": "error", "error": {"type": t, "message": m}})))
        }
        (Dialect::OpenAiResponses, _) => {
            let (code, m) = if rate {
                ("rate_limit_exceeded", "Rate limit reached. Please try again in 0.01s.")
            } else {
                ("server_is_overloaded", "The server is overloaded.")
            };
            Some(frame(
                dialect,
                Some("response.failed"),
                &json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": code, "message": m}}}),
            ))
        }
        (Dialect::OpenAiChat, _) => {
            let (code, m) = if rate {
                ("rate_limit_exceeded", "Rate limited")
            } else {
                ("server_is_overloaded", "Overloaded")
            };
            Some(frame(
                dialect,
                None,
                &json!({"error": {"code": code, "message": m, "type": "server_error"}}),
            ))
        }
        (Dialect::Gemini, _) => {
            let (code, status, m) = if rate {
                (429, "RESOURCE_EXHAUSTED", "Resource exhausted")
            } else {
                (503, "UNAVAILABLE", "The model is overloaded.")
            };
            Some(frame(dialect, None, &json!({"error": {"code": code, "message": m, "status": status}})))
        }
    }
}

/// Renders a turn as the dialect's SSE events (failure/cut applied).
pub fn render_stream(dialect: Dialect, turn: &Turn) -> Vec<Vec<u8>> {
    let mut events = match dialect {
        Dialect::Anthropic => anthropic_stream(turn),
        Dialect::OpenAiResponses => responses_stream(turn),
        Dialect::OpenAiChat => chat_stream(turn),
        Dialect::Gemini => gemini_stream(turn),
    };
    if let Some((after, failure)) = &turn.failure {
        events.truncate(*after);
        events.extend(failure_frame(dialect, failure));
    }
    events
}

fn anthropic_stream(turn: &Turn) -> Vec<Vec<u8>> {
    let d = Dialect::Anthropic;
    let mut out = vec![frame(
        d,
        Some("message_start"),
        &json!({"type": "message_start", "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": "mock-model", "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": turn.input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}
        }}),
    )];
    for (index, part) in turn.parts.iter().enumerate() {
        let (start, deltas): (Value, Vec<Value>) = match part {
            Part::Text(text) => (
                json!({"type": "text", "text": ""}),
                chunks(text, turn.fragment)
                    .into_iter()
                    .map(|c| json!({"type": "text_delta", "text": c}))
                    .collect(),
            ),
            Part::Thinking { text, signature } => {
                let mut ds: Vec<Value> = chunks(text, turn.fragment)
                    .into_iter()
                    .map(|c| json!({"type": "thinking_delta", "thinking": c}))
                    .collect();
                if let Some(sig) = signature {
                    ds.push(json!({"type": "signature_delta", "signature": sig}));
                }
                (json!({"type": "thinking", "thinking": "", "signature": ""}), ds)
            }
            Part::ToolCall { id, name, arguments, .. } => {
                let mut ds = vec![json!({"type": "input_json_delta", "partial_json": ""})];
                ds.extend(
                    chunks(&arguments_text(arguments), turn.fragment)
                        .into_iter()
                        .map(|c| json!({"type": "input_json_delta", "partial_json": c})),
                );
                (json!({"type": "tool_use", "id": id, "name": name, "input": {}}), ds)
            }
        };
        out.push(frame(
            d,
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            out.push(frame(
                d,
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        out.push(frame(
            d,
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    let stop = turn
        .finish
        .clone()
        .unwrap_or_else(|| if turn.has_calls() { "tool_use".into() } else { "end_turn".into() });
    out.push(frame(d, Some("message_delta"), &json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": turn.output_tokens}})));
    out.push(frame(d, Some("message_stop"), &json!({"type": "message_stop"})));
    out
}

fn responses_output(turn: &Turn) -> Vec<Value> {
    turn.parts
        .iter()
        .enumerate()
        .map(|(i, part)| match part {
            Part::Text(text) => json!({"type": "message", "id": format!("msg_{i}"), "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}),
            Part::Thinking { text, signature } => json!({"type": "reasoning", "id": format!("rs_{i}"),
                "summary": [{"type": "summary_text", "text": text}], "encrypted_content": signature}),
            Part::ToolCall { id, name, arguments, .. } => json!({"type": "function_call", "id": format!("fc_{i}"),
                "call_id": id, "name": name, "arguments": arguments_text(arguments), "status": "completed"}),
        })
        .collect()
}

fn responses_object(turn: &Turn, status: &str, with_output: bool) -> Value {
    let mut response = json!({"id": "resp_mock", "object": "response", "model": "mock-model", "status": status,
        "output": if with_output { Value::Array(responses_output(turn)) } else { json!([]) }, "usage": null});
    if with_output {
        response["usage"] = json!({"input_tokens": turn.input_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": turn.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.input_tokens + turn.output_tokens});
        if let Some(reason) = &turn.finish {
            response["status"] = json!("incomplete");
            response["incomplete_details"] = json!({"reason": reason});
        }
    }
    response
}

fn responses_stream(turn: &Turn) -> Vec<Vec<u8>> {
    let d = Dialect::OpenAiResponses;
    let mut seq = 0;
    let mut out = Vec::new();
    let mut emit = |mut v: Value| {
        v["sequence_number"] = json!(seq);
        seq += 1;
        let name = v["type"].as_str().unwrap_or("").to_string();
        out.push(frame(d, Some(&name), &v));
    };
    emit(json!({"type": "response.created", "response": responses_object(turn, "in_progress", false)}));
    emit(json!({"type": "response.in_progress", "response": responses_object(turn, "in_progress", false)}));
    let items = responses_output(turn);
    for (i, (part, item)) in turn.parts.iter().zip(&items).enumerate() {
        let mut added = item.clone();
        match part {
            Part::Text(text) => {
                added["content"] = json!([]);
                emit(json!({"type": "response.output_item.added", "output_index": i, "item": added}));
                for c in chunks(text, turn.fragment) {
                    emit(json!({"type": "response.output_text.delta", "output_index": i, "content_index": 0,
                        "item_id": item["id"], "delta": c}));
                }
                emit(
                    json!({"type": "response.output_text.done", "output_index": i, "content_index": 0, "text": text}),
                );
            }
            Part::Thinking { text, .. } => {
                added["summary"] = json!([]);
                emit(json!({"type": "response.output_item.added", "output_index": i, "item": added}));
                emit(
                    json!({"type": "response.reasoning_summary_part.added", "output_index": i, "summary_index": 0}),
                );
                for c in chunks(text, turn.fragment) {
                    emit(json!({"type": "response.reasoning_summary_text.delta", "output_index": i,
                        "summary_index": 0, "item_id": item["id"], "delta": c}));
                }
            }
            Part::ToolCall { arguments, .. } => {
                added["arguments"] = json!("");
                added["status"] = json!("in_progress");
                emit(json!({"type": "response.output_item.added", "output_index": i, "item": added}));
                for c in chunks(&arguments_text(arguments), turn.fragment) {
                    emit(json!({"type": "response.function_call_arguments.delta", "output_index": i,
                        "item_id": item["id"], "delta": c}));
                }
                emit(json!({"type": "response.function_call_arguments.done", "output_index": i,
                    "item_id": item["id"], "arguments": arguments_text(arguments)}));
            }
        }
        emit(json!({"type": "response.output_item.done", "output_index": i, "item": item}));
    }
    let terminal = if turn.finish.is_some() { "response.incomplete" } else { "response.completed" };
    emit(json!({"type": terminal, "response": responses_object(turn, "completed", true)}));
    out
}

fn chat_chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1, "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": null})
}

fn chat_stream(turn: &Turn) -> Vec<Vec<u8>> {
    let d = Dialect::OpenAiChat;
    let mut out = vec![frame(d, None, &chat_chunk(json!({"role": "assistant", "content": ""}), None))];
    let mut tool_index = 0;
    for part in &turn.parts {
        match part {
            Part::Text(text) => {
                for c in chunks(text, turn.fragment) {
                    out.push(frame(d, None, &chat_chunk(json!({"content": c}), None)));
                }
            }
            Part::Thinking { text, .. } => {
                for c in chunks(text, turn.fragment) {
                    out.push(frame(d, None, &chat_chunk(json!({"reasoning_content": c}), None)));
                }
            }
            Part::ToolCall { id, name, arguments, .. } => {
                out.push(frame(
                    d,
                    None,
                    &chat_chunk(
                        json!({"tool_calls": [{"index": tool_index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                        None,
                    ),
                ));
                for c in chunks(&arguments_text(arguments), turn.fragment) {
                    out.push(frame(
                        d,
                        None,
                        &chat_chunk(
                            json!({"tool_calls": [{"index": tool_index,
                        "function": {"arguments": c}}]}),
                            None,
                        ),
                    ));
                }
                tool_index += 1;
            }
        }
    }
    let finish = turn
        .finish
        .clone()
        .unwrap_or_else(|| if turn.has_calls() { "tool_calls".into() } else { "stop".into() });
    out.push(frame(d, None, &chat_chunk(json!({}), Some(&finish))));
    out.push(frame(
        d,
        None,
        &json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1,
        "model": "mock-model", "choices": [], "usage": {"prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens, "total_tokens": turn.input_tokens + turn.output_tokens}}),
    ));
    out.push(format!("data: [DONE]{}", d.sep()).into_bytes());
    out
}

fn gemini_part(part: &Part) -> Value {
    match part {
        Part::Text(text) => json!({"text": text}),
        Part::Thinking { text, signature } => {
            let mut p = json!({"text": text, "thought": true});
            if let Some(sig) = signature {
                p["thoughtSignature"] = json!(sig);
            }
            p
        }
        Part::ToolCall { id, name, arguments, signature } => {
            // Gemini usually sends no call id; an empty id scripts that.
            let mut p = json!({"functionCall": {"name": name, "args": arguments}});
            if !id.is_empty() {
                p["functionCall"]["id"] = json!(id);
            }
            if let Some(sig) = signature {
                p["thoughtSignature"] = json!(sig);
            }
            p
        }
    }
}

fn gemini_chunk(parts: Vec<Value>, finish: Option<&str>, turn: &Turn) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    json!({"candidates": [candidate], "usageMetadata": {"promptTokenCount": turn.input_tokens,
        "candidatesTokenCount": turn.output_tokens, "totalTokenCount": turn.input_tokens + turn.output_tokens},
        "modelVersion": "mock-model", "responseId": "gem-mock"})
}

fn gemini_stream(turn: &Turn) -> Vec<Vec<u8>> {
    let d = Dialect::Gemini;
    let mut out = Vec::new();
    for part in &turn.parts {
        match part {
            Part::Text(text) => {
                for c in chunks(text, turn.fragment) {
                    out.push(frame(d, None, &gemini_chunk(vec![json!({"text": c})], None, turn)));
                }
            }
            Part::Thinking { text, signature } => {
                let pieces = chunks(text, turn.fragment);
                let last = pieces.len().saturating_sub(1);
                for (i, c) in pieces.into_iter().enumerate() {
                    let mut p = json!({"text": c, "thought": true});
                    if i == last
                        && let Some(sig) = signature
                    {
                        p["thoughtSignature"] = json!(sig);
                    }
                    out.push(frame(d, None, &gemini_chunk(vec![p], None, turn)));
                }
            }
            Part::ToolCall { .. } => {
                out.push(frame(d, None, &gemini_chunk(vec![gemini_part(part)], None, turn)))
            }
        }
    }
    let finish = turn.finish.clone().unwrap_or_else(|| "STOP".into());
    out.push(frame(d, None, &gemini_chunk(vec![json!({"text": ""})], Some(&finish), turn)));
    out
}

/// Renders a turn as the dialect's non-streaming body.
pub fn render_json(dialect: Dialect, turn: &Turn) -> Value {
    match dialect {
        Dialect::Anthropic => {
            let content: Vec<Value> = turn
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"type": "text", "text": t}),
                    Part::Thinking { text, signature } => {
                        json!({"type": "thinking", "thinking": text, "signature": signature})
                    }
                    Part::ToolCall { id, name, arguments, .. } => {
                        json!({"type": "tool_use", "id": id, "name": name, "input": arguments})
                    }
                })
                .collect();
            let stop = turn
                .finish
                .clone()
                .unwrap_or_else(|| if turn.has_calls() { "tool_use".into() } else { "end_turn".into() });
            json!({"id": "msg_mock", "type": "message", "role": "assistant", "model": "mock-model", "content": content,
                "stop_reason": stop, "usage": {"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens}})
        }
        Dialect::OpenAiResponses => responses_object(turn, "completed", true),
        Dialect::OpenAiChat => {
            let text: String = turn
                .parts
                .iter()
                .filter_map(|p| if let Part::Text(t) = p { Some(t.as_str()) } else { None })
                .collect();
            let reasoning: String = turn
                .parts
                .iter()
                .filter_map(|p| if let Part::Thinking { text, .. } = p { Some(text.as_str()) } else { None })
                .collect();
            let calls: Vec<Value> = turn
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall { id, name, arguments, .. } => Some(json!({"id": id, "type": "function",
                        "function": {"name": name, "arguments": arguments_text(arguments)}})),
                    _ => None,
                })
                .collect();
            let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !reasoning.is_empty() {
                message["reasoning_content"] = json!(reasoning);
            }
            if !calls.is_empty() {
                message["tool_calls"] = Value::Array(calls);
            }
            let finish = turn
                .finish
                .clone()
                .unwrap_or_else(|| if turn.has_calls() { "tool_calls".into() } else { "stop".into() });
            json!({"id": "chatcmpl-mock", "object": "chat.completion", "model": "mock-model",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": turn.input_tokens, "completion_tokens": turn.output_tokens,
                    "total_tokens": turn.input_tokens + turn.output_tokens}})
        }
        Dialect::Gemini => {
            let parts = turn.parts.iter().map(gemini_part).collect();
            let finish = turn.finish.clone().unwrap_or_else(|| "STOP".into());
            gemini_chunk(parts, Some(&finish), turn)
        }
    }
}

/// Status, headers and body of an error preset in the dialect's envelope.
pub fn render_error(dialect: Dialect, preset: &ErrorPreset) -> (u16, Vec<(String, String)>, Value) {
    let mut headers = Vec::new();
    let (status, kind, code, message) = match preset {
        ErrorPreset::RateLimit { retry_after_secs } => {
            if dialect != Dialect::Gemini {
                headers.push(("retry-after".to_string(), retry_after_secs.to_string()));
            }
            (429, "rate_limit_error", "rate_limit_exceeded", "Rate limit reached, slow down")
        }
        ErrorPreset::Overloaded => match dialect {
            Dialect::Anthropic => (529, "overloaded_error", "", "Overloaded"),
            _ => (503, "server_error", "", "The model is overloaded. Please try again later."),
        },
        ErrorPreset::Server => (500, "api_error", "", "Internal server error"),
        ErrorPreset::Authentication => (401, "authentication_error", "invalid_api_key", "invalid x-api-key"),
        ErrorPreset::ContextLength => (
            400,
            "invalid_request_error",
            "context_length_exceeded",
            "prompt is too long: 300000 tokens > 200000 maximum",
        ),
        ErrorPreset::Quota => match dialect {
            Dialect::Anthropic => (402, "billing_error", "", "Your credit balance is too low"),
            _ => (429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota"),
        },
    };
    let body = match dialect {
        Dialect::Anthropic => {
            json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_mock"})
        }
        Dialect::OpenAiResponses | Dialect::OpenAiChat => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": if code.is_empty() { Value::Null } else { json!(code) }}})
        }
        Dialect::Gemini => {
            let (status, gstatus, details) = match preset {
                ErrorPreset::RateLimit { retry_after_secs } => (
                    429,
                    "RESOURCE_EXHAUSTED",
                    json!([{
                    "@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{retry_after_secs}s")}]),
                ),
                ErrorPreset::Authentication => (
                    400,
                    "INVALID_ARGUMENT",
                    json!([{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]),
                ),
                ErrorPreset::Overloaded => (503, "UNAVAILABLE", json!([])),
                ErrorPreset::Server => (500, "INTERNAL", json!([])),
                ErrorPreset::ContextLength => (400, "INVALID_ARGUMENT", json!([])),
                ErrorPreset::Quota => (
                    429,
                    "RESOURCE_EXHAUSTED",
                    json!([{
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]),
                ),
            };
            let message = match preset {
                ErrorPreset::ContextLength => {
                    "The input token count (1284517) exceeds the maximum number of tokens allowed (1048576)."
                }
                ErrorPreset::Authentication => "API key not valid. Please pass a valid API key.",
                _ => message,
            };
            return (
                status,
                headers,
                json!({"error": {"code": status, "message": message, "status": gstatus, "details": details}}),
            );
        }
    };
    (status, headers, body)
}
