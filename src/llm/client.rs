//! `llm::Client`: one entry point for every provider. Owns retries, the read timeout, SSE
//! decoding and cassette recording; adapters only translate. Invariants: all HTTP goes through the
//! pooled client of the provider's network setup (`llm::http`); a stream is retried only while nothing has been handed
//! to the caller; a provider that sends nothing for the read timeout (before its answer, or
//! between two reads of a stream) ends the call with an error; nothing follows a final response.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::stream::{BoxStream, StreamExt};
use serde_json::Value;

use super::adapter::{HttpCall, ProviderAdapter, StreamDecoder};
use super::anthropic::Anthropic;
use super::assemble::{distinct_call_ids, events_for};
use super::cassette::{Exchange, ExchangeMode, Player, Recorder};
use super::error::{LlmError, classify_http};
use super::gemini::Gemini;
use super::http::{self, Setup};
use super::openai::OpenAiResponses;
use super::openai_chat::OpenAiChat;
use super::retry::RetryPolicy;
use super::types::{Request, Response, StreamEvent};
use crate::config::{Config, ProviderKind, ProviderSettings};

pub type EventStream = BoxStream<'static, Result<StreamEvent, LlmError>>;

/// How long a provider may stay silent unless configured (`network.read_timeout_ms`): reasoning
/// models can think for minutes between two events.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(600);

enum Backend {
    Http(Arc<dyn ProviderAdapter>, Arc<Setup>),
    Replay(Arc<Player>),
}

/// A model client for one provider configuration. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    settings: ProviderSettings,
    backend: Arc<Backend>,
    retry: RetryPolicy,
    read_timeout: Duration,
    recorder: Option<Arc<Recorder>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("settings", &self.settings)
            .field("retry", &self.retry)
            .field("read_timeout", &self.read_timeout)
            .finish()
    }
}

impl Client {
    /// A client for `settings`. For the replay provider `base_url` is the cassette path.
    pub fn new(settings: ProviderSettings) -> Result<Self, LlmError> {
        let backend = match adapter_for(&settings) {
            Some(adapter) => Backend::Http(adapter, http::setup(&settings.network)),
            None => Backend::Replay(Arc::new(Player::open(Path::new(&settings.base_url))?)),
        };
        Ok(Self {
            settings,
            backend: Arc::new(backend),
            retry: RetryPolicy::default(),
            read_timeout: DEFAULT_READ_TIMEOUT,
            recorder: None,
        })
    }

    /// Builds ahead what the first request needs: the members every request of `request`'s
    /// kind repeats (tools, system prompt), the shared HTTP client and a connection to the
    /// provider (`warm`). A session calls it with its first request's contents when it starts,
    /// so its first prompt waits for none of them.
    pub fn prepare(&self, request: &Request) {
        if let Backend::Http(adapter, _) = self.backend.as_ref() {
            adapter.prepare(request);
            self.warm();
        }
    }

    /// Opens a connection to the provider in the background unless one is open or opening
    /// (`llm::http`); returns at once.
    pub fn warm(&self) {
        if let Backend::Http(_, setup) = self.backend.as_ref() {
            setup.warm(&self.settings.base_url);
        }
    }

    /// A client as the configuration asks: the replay cassette from `cassette`, recording to
    /// `record` when set, retries and the read timeout from `[network]`.
    pub fn from_config(config: &Config, mut settings: ProviderSettings) -> Result<Self, LlmError> {
        if settings.kind == ProviderKind::Replay
            && let Some(path) = &config.layer.cassette
        {
            settings.base_url = path.display().to_string();
        }
        let network = config.network();
        let mut retry = RetryPolicy::default();
        if let Some(retries) = network.max_retries {
            retry.max_retries = retries;
        }
        if let Some(ms) = network.retry_base_delay_ms {
            retry.base_delay = Duration::from_millis(ms);
        }
        let read_timeout =
            network.read_timeout_ms.map_or(DEFAULT_READ_TIMEOUT, |ms| Duration::from_millis(ms.max(1)));
        let client = Self::new(settings)?.with_retry(retry).with_read_timeout(read_timeout);
        match &config.layer.record {
            Some(path) => client.recording_to(path),
            None => Ok(client),
        }
    }

    /// Records every exchange of this client (and its clones) to the cassette at `path`.
    pub fn recording_to(mut self, path: &Path) -> Result<Self, LlmError> {
        self.recorder = Some(Arc::new(Recorder::create(path)?));
        Ok(self)
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// How long the provider may send nothing before the call fails.
    pub fn with_read_timeout(mut self, read_timeout: Duration) -> Self {
        self.read_timeout = read_timeout;
        self
    }

    pub fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    /// One non-streaming call, retried on transient errors.
    pub async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        let result = match self.backend.as_ref() {
            Backend::Replay(player) => {
                let exchange = player.next(request)?;
                match (exchange.error.clone(), exchange.final_response()) {
                    (Some(error), _) => Err(error),
                    (None, Some(response)) => Ok(response),
                    (None, None) => Err(LlmError::Cassette {
                        path: self.settings.base_url.clone(),
                        message: "a recorded exchange has neither a response nor an error".into(),
                    }),
                }
            }
            Backend::Http(adapter, setup) => self.complete_http(adapter.as_ref(), setup, request).await,
        };
        if let Some(recorder) = &self.recorder {
            recorder.record(&Exchange {
                mode: ExchangeMode::Complete,
                provider: self.settings.kind.as_str().into(),
                request: request.clone(),
                events: Vec::new(),
                response: result.as_ref().ok().cloned(),
                error: result.as_ref().err().cloned(),
            });
        }
        result
    }

    async fn complete_http(
        &self,
        adapter: &dyn ProviderAdapter,
        setup: &Setup,
        request: &Request,
    ) -> Result<Response, LlmError> {
        let mut retry = 0;
        loop {
            let attempt = async {
                let response =
                    send(&self.settings, setup, adapter.http_call(request, false)?, self.read_timeout)
                        .await?;
                let url = response.url().to_string();
                let body = read_json(self.settings.kind, &url, response, self.read_timeout).await?;
                let mut response = adapter.parse_response(&body)?;
                distinct_call_ids(&mut response);
                Ok(response)
            };
            match attempt.await {
                Ok(response) => return Ok(response),
                Err(e) => match self.retry.delay(retry, &e) {
                    Some(delay) => {
                        tracing::warn!(error = %e, retry = retry + 1, delay_ms = delay.as_millis() as u64, "retrying model call");
                        tokio::time::sleep(delay).await;
                        retry += 1;
                    }
                    None => return Err(e),
                },
            }
        }
    }

    /// One streamed call. HTTP-level failures (after retries) are returned here; failures after
    /// the stream started arrive as its last item. The last successful item is always `Finish`.
    pub async fn stream(&self, request: &Request) -> Result<EventStream, LlmError> {
        let inner: EventStream = match self.backend.as_ref() {
            Backend::Replay(player) => {
                let exchange = player.next(request)?;
                let mut items: Vec<Result<StreamEvent, LlmError>> =
                    exchange.playback_events().into_iter().map(Ok).collect();
                if let Some(error) = exchange.error {
                    if items.is_empty() {
                        return Err(error);
                    }
                    items.push(Err(error));
                }
                futures::stream::iter(items).boxed()
            }
            Backend::Http(adapter, setup) => {
                let mut state = StreamState {
                    settings: self.settings.clone(),
                    adapter: adapter.clone(),
                    setup: setup.clone(),
                    request: request.clone(),
                    retry_policy: self.retry,
                    read_timeout: self.read_timeout,
                    retries: 0,
                    source: None,
                    decoder: adapter.decoder(),
                    pending: VecDeque::new(),
                    handed_on: false,
                    finished: false,
                };
                state.connect().await?;
                futures::stream::unfold(state, StreamState::next).boxed()
            }
        };
        Ok(match &self.recorder {
            Some(recorder) => record_stream(inner, recorder.clone(), self.settings.kind, request.clone()),
            None => inner,
        })
    }
}

/// The adapter of an HTTP provider (`None` for replay).
fn adapter_for(settings: &ProviderSettings) -> Option<Arc<dyn ProviderAdapter>> {
    Some(match settings.kind {
        ProviderKind::Anthropic => Arc::new(Anthropic::new(settings.clone())),
        ProviderKind::OpenAi => Arc::new(OpenAiResponses::new(settings.clone())),
        ProviderKind::OpenAiChat => Arc::new(OpenAiChat::new(settings.clone())),
        ProviderKind::Gemini => Arc::new(Gemini::new(settings.clone())),
        ProviderKind::Replay => return None,
    })
}

/// Sends one HTTP call; non-success statuses become classified errors. A provider that does not
/// answer within `read_timeout` (counted from before waiting for a warm-up in flight) is a
/// network error.
async fn send(
    settings: &ProviderSettings,
    setup: &Setup,
    call: HttpCall,
    read_timeout: Duration,
) -> Result<reqwest::Response, LlmError> {
    let client = setup.client().await.map_err(|e| match e {
        LlmError::Connection { message, .. } => LlmError::Connection { url: call.url.clone(), message },
        other => other,
    })?;
    tracing::debug!(provider = %settings.kind, url = %call.url, "model request");
    tracing::trace!(body = %call.body, "model request body");
    let url = &call.url;
    let request = client.post(url).headers(call.headers).body(call.body.to_bytes());
    // Waiting for the origin's warm-up counts as waiting for the provider: a warm-up stuck on a
    // silent provider holds the request no longer than the read timeout.
    let sent = async move {
        setup.before_request(url).await;
        request.send().await
    };
    let response = tokio::time::timeout(read_timeout, sent)
        .await
        .map_err(|_| LlmError::Network { url: call.url.clone(), message: silent(read_timeout) })?
        .map_err(|e| http::describe(&call.url, setup.network(), &e))?;
    setup.answered(&call.url);
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    // A proxy on the way to a plain `http://` provider asks for credentials in its answer.
    if status == reqwest::StatusCode::PROXY_AUTHENTICATION_REQUIRED
        && let Some(proxy) =
            url::Url::parse(&call.url).ok().and_then(|u| setup.network().proxy_for(&u).cloned())
    {
        return Err(http::proxy_wants_credentials(&call.url, &proxy));
    }
    let headers = response.headers().clone();
    let mut body = tokio::time::timeout(read_timeout, response.text())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    // Some servers echo what they were sent; the key must not reach the log.
    if let Some(key) = settings.api_key.as_ref().map(|k| k.expose()).filter(|k| !k.is_empty()) {
        body = body.replace(key, "[redacted]");
    }
    tracing::debug!(status = status.as_u16(), body = %body, "model error response");
    let error =
        classify_http(settings.kind, status.as_u16(), &headers, &body, settings.api_key_var.as_deref());
    Err(error.scrub(settings.api_key.as_ref().map(|k| k.expose())))
}

/// What a call that timed out waiting for the provider says.
fn silent(read_timeout: Duration) -> String {
    format!(
        "nothing arrived for {} ms (network.read_timeout_ms); the provider may be overloaded: try again, \
         or raise network.read_timeout_ms for a model that thinks longer before it answers",
        read_timeout.as_millis()
    )
}

/// A response body that fails when no bytes arrive for the read timeout.
fn with_read_timeout(
    body: impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static,
    read_timeout: Duration,
) -> impl futures::Stream<Item = Result<bytes::Bytes, BodyError>> + Send {
    futures::stream::unfold(Some(body.boxed()), move |body| async move {
        let mut body = body?;
        match tokio::time::timeout(read_timeout, body.next()).await {
            Ok(Some(read)) => Some((read.map_err(BodyError::Read), Some(body))),
            Ok(None) => None,
            Err(_) => Some((Err(BodyError::Silent(read_timeout)), None)),
        }
    })
}

#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("{0}")]
    Read(reqwest::Error),
    #[error("{}", silent(*.0))]
    Silent(Duration),
}

type Source = BoxStream<'static, Result<eventsource_stream::Event, LlmError>>;

/// What a streaming request got back.
enum Opened {
    Stream(Source),
    /// A server that ignores `stream: true` and answers with JSON; already decoded.
    Answered(Vec<StreamEvent>),
}

fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// The events of a server that answered a streaming request with plain JSON: one whole
/// response, or (Gemini without `alt=sse`) an array of stream chunks.
fn answered_events(adapter: &dyn ProviderAdapter, body: Value) -> Result<Vec<StreamEvent>, LlmError> {
    match body {
        Value::Array(chunks) => {
            let mut decoder = adapter.decoder();
            for chunk in &chunks {
                decoder.event("", &chunk.to_string())?;
            }
            decoder.end()?;
            Ok(decoder.drain())
        }
        body => {
            let mut response = adapter.parse_response(&body)?;
            distinct_call_ids(&mut response);
            Ok(events_for(&response))
        }
    }
}

async fn read_json(
    kind: ProviderKind,
    url: &str,
    response: reqwest::Response,
    read_timeout: Duration,
) -> Result<Value, LlmError> {
    let unreadable = |e: &dyn std::fmt::Display| LlmError::Provider {
        provider: kind,
        status: None,
        message: format!("unreadable response body from {url}: {e}"),
    };
    let body = tokio::time::timeout(read_timeout, response.bytes())
        .await
        .map_err(|_| LlmError::StreamCut { provider: kind, message: silent(read_timeout) })?
        .map_err(|e| unreadable(&e))?;
    serde_json::from_slice(&body).map_err(|e| unreadable(&e))
}

struct StreamState {
    settings: ProviderSettings,
    adapter: Arc<dyn ProviderAdapter>,
    setup: Arc<Setup>,
    request: Request,
    retry_policy: RetryPolicy,
    read_timeout: Duration,
    retries: u32,
    source: Option<Source>,
    decoder: Box<dyn StreamDecoder>,
    pending: VecDeque<StreamEvent>,
    handed_on: bool,
    finished: bool,
}

impl StreamState {
    /// Opens the SSE stream, retrying transient HTTP failures.
    async fn connect(&mut self) -> Result<(), LlmError> {
        loop {
            let attempt = async {
                let call = self.adapter.http_call(&self.request, true)?;
                let url = call.url.clone();
                let response = send(&self.settings, &self.setup, call, self.read_timeout).await?;
                let kind = self.settings.kind;
                if is_json(&response) {
                    let body = read_json(kind, &url, response, self.read_timeout).await?;
                    return Ok(Opened::Answered(answered_events(self.adapter.as_ref(), body)?));
                }
                let source: Source = with_read_timeout(response.bytes_stream(), self.read_timeout)
                    .eventsource()
                    .map(move |item| {
                        item.map_err(|e| LlmError::StreamCut {
                            provider: kind,
                            message: match e {
                                EventStreamError::Transport(BodyError::Silent(waited)) => silent(waited),
                                e => format!("reading the stream from {url} failed: {e}"),
                            },
                        })
                    })
                    .boxed();
                Ok::<_, LlmError>(Opened::Stream(source))
            };
            match attempt.await {
                Ok(Opened::Stream(source)) => {
                    self.source = Some(source);
                    self.decoder = self.adapter.decoder();
                    return Ok(());
                }
                Ok(Opened::Answered(events)) => {
                    self.source = Some(futures::stream::empty().boxed());
                    self.pending.extend(events);
                    return Ok(());
                }
                Err(e) => self.wait_for_retry(e).await?,
            }
        }
    }

    /// Sleeps before the next retry, or gives the error back when it is final.
    async fn wait_for_retry(&mut self, error: LlmError) -> Result<(), LlmError> {
        let delay = self.retry_policy.delay(self.retries, &error).ok_or(error.clone())?;
        tracing::warn!(error = %error, retry = self.retries + 1, delay_ms = delay.as_millis() as u64, "retrying model stream");
        tokio::time::sleep(delay).await;
        self.retries += 1;
        Ok(())
    }

    async fn next(mut self) -> Option<(Result<StreamEvent, LlmError>, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.handed_on = true;
                if matches!(event, StreamEvent::Finish(_)) {
                    self.finished = true;
                    self.source = None;
                }
                return Some((Ok(event), self));
            }
            if self.finished {
                return None;
            }
            let step = match self.source.as_mut() {
                None => {
                    Err(LlmError::StreamCut { provider: self.settings.kind, message: "no stream".into() })
                }
                Some(source) => match source.next().await {
                    Some(Err(e)) => Err(e),
                    event => decode_step(self.decoder.as_mut(), event.as_ref().and_then(|e| e.as_ref().ok())),
                },
            };
            match step {
                Ok(()) => {
                    hand_on(&mut self.pending, self.decoder.drain());
                }
                Err(error) => {
                    let error = error.scrub(self.settings.api_key.as_ref().map(|k| k.expose()));
                    self.source = None;
                    let can_retry = !self.handed_on && self.decoder.drain().is_empty();
                    if can_retry && self.wait_for_retry(error.clone()).await.is_ok() {
                        match self.connect().await {
                            Ok(()) => continue,
                            Err(e) => {
                                self.finished = true;
                                return Some((Err(e), self));
                            }
                        }
                    }
                    self.finished = true;
                    return Some((Err(error), self));
                }
            }
        }
    }
}

/// Hands one SSE event to `decoder`, or tells it that the stream ended (`None`).
fn decode_step(
    decoder: &mut dyn StreamDecoder,
    event: Option<&eventsource_stream::Event>,
) -> Result<(), LlmError> {
    match event {
        None => decoder.end(),
        Some(event) => {
            tracing::trace!(event = %event.event, data = %event.data, "model stream event");
            decoder.event(&event.event, &event.data)
        }
    }
}

/// Queues what the decoder produced for the caller; true once the final response is queued
/// (nothing more is read after it).
fn hand_on(pending: &mut VecDeque<StreamEvent>, events: Vec<StreamEvent>) -> bool {
    pending.extend(events);
    pending.iter().any(|event| matches!(event, StreamEvent::Finish(_)))
}

/// What a streamed response body decodes to, exactly as [`Client::stream`] decodes it: server-sent
/// events, or plain JSON when `json` (a server that ignores `stream: true`). `chunks` are the
/// body as it arrived, read by read. Returns the events the caller would get, then the error that
/// ended the stream, if any. No network and no retries: for fuzzing and tests.
pub fn decode_streamed_body(
    settings: &ProviderSettings,
    json: bool,
    chunks: Vec<bytes::Bytes>,
) -> (Vec<StreamEvent>, Option<LlmError>) {
    let Some(adapter) = adapter_for(settings) else {
        return (
            Vec::new(),
            Some(LlmError::Cassette {
                path: settings.base_url.clone(),
                message: "replay has no wire format".into(),
            }),
        );
    };
    let kind = settings.kind;
    if json {
        let decoded = serde_json::from_slice(&chunks.concat())
            .map_err(|e| LlmError::Provider {
                provider: kind,
                status: None,
                message: format!("unreadable response body: {e}"),
            })
            .and_then(|body| answered_events(adapter.as_ref(), body));
        return match decoded {
            Ok(events) => (events, None),
            Err(e) => (Vec::new(), Some(e)),
        };
    }
    let mut source =
        futures::stream::iter(chunks.into_iter().map(Ok::<_, std::convert::Infallible>)).eventsource();
    let mut decoder = adapter.decoder();
    let mut pending = VecDeque::new();
    futures::executor::block_on(async {
        loop {
            let event = match source.next().await {
                Some(Err(e)) => {
                    let error = LlmError::StreamCut {
                        provider: kind,
                        message: format!("reading the stream failed: {e}"),
                    };
                    return (pending.into(), Some(error));
                }
                Some(Ok(event)) => Some(event),
                None => None,
            };
            match decode_step(decoder.as_mut(), event.as_ref()) {
                Ok(()) if hand_on(&mut pending, decoder.drain()) || event.is_none() => {
                    return (pending.into(), None);
                }
                Ok(()) => {}
                Err(e) => return (pending.into(), Some(e)),
            }
        }
    })
}

/// Passes events through and writes the exchange to the cassette when the stream ends.
fn record_stream(
    inner: EventStream,
    recorder: Arc<Recorder>,
    kind: ProviderKind,
    request: Request,
) -> EventStream {
    struct Rec {
        inner: EventStream,
        recorder: Arc<Recorder>,
        exchange: Option<Exchange>,
    }
    let exchange = Exchange {
        mode: ExchangeMode::Stream,
        provider: kind.as_str().into(),
        request,
        events: Vec::new(),
        response: None,
        error: None,
    };
    let state = Rec { inner, recorder, exchange: Some(exchange) };
    futures::stream::unfold(state, |mut st| async move {
        let item = st.inner.next().await;
        if let Some(exchange) = st.exchange.as_mut() {
            match &item {
                Some(Ok(event)) => exchange.events.push(event.clone()),
                Some(Err(e)) => exchange.error = Some(e.clone()),
                None => {}
            }
            let ended = matches!(item, None | Some(Err(_)) | Some(Ok(StreamEvent::Finish(_))));
            if ended && let Some(exchange) = st.exchange.take() {
                st.recorder.record(&exchange);
            }
        }
        item.map(|i| (i, st))
    })
    .boxed()
}
