//! `llm::Client`: one entry point for every provider. Owns retries, SSE decoding and cassette
//! recording; adapters only translate. Invariant: all HTTP goes through one process-wide pooled
//! `reqwest::Client`, and a stream is retried only while nothing has been handed to the caller.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::stream::{BoxStream, StreamExt};
use serde_json::Value;

use super::adapter::{HttpCall, ProviderAdapter, StreamDecoder};
use super::anthropic::Anthropic;
use super::assemble::events_for;
use super::cassette::{Exchange, ExchangeMode, Player, Recorder};
use super::error::{LlmError, classify_http};
use super::gemini::Gemini;
use super::openai::OpenAiResponses;
use super::openai_chat::OpenAiChat;
use super::retry::RetryPolicy;
use super::types::{Request, Response, StreamEvent};
use crate::config::{Config, ProviderKind, ProviderSettings};

/// The shared HTTP client (connection pool, TLS sessions) for the whole process.
pub fn http_client() -> &'static reqwest::Client {
    static HTTP: OnceLock<reqwest::Client> = OnceLock::new();
    HTTP.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            // Reasoning models can think silently for minutes between events.
            .read_timeout(Duration::from_secs(600))
            .user_agent(concat!("agentls/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "falling back to a default HTTP client");
                reqwest::Client::new()
            })
    })
}

pub type EventStream = BoxStream<'static, Result<StreamEvent, LlmError>>;

enum Backend {
    Http(Arc<dyn ProviderAdapter>),
    Replay(Arc<Player>),
}

/// A model client for one provider configuration. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    settings: ProviderSettings,
    backend: Arc<Backend>,
    retry: RetryPolicy,
    recorder: Option<Arc<Recorder>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("settings", &self.settings).field("retry", &self.retry).finish()
    }
}

impl Client {
    /// A client for `settings`. For the replay provider `base_url` is the cassette path.
    pub fn new(settings: ProviderSettings) -> Result<Self, LlmError> {
        let backend = match settings.kind {
            ProviderKind::Anthropic => Backend::Http(Arc::new(Anthropic::new(settings.clone()))),
            ProviderKind::OpenAi => Backend::Http(Arc::new(OpenAiResponses::new(settings.clone()))),
            ProviderKind::OpenAiChat => Backend::Http(Arc::new(OpenAiChat::new(settings.clone()))),
            ProviderKind::Gemini => Backend::Http(Arc::new(Gemini::new(settings.clone()))),
            ProviderKind::Replay => Backend::Replay(Arc::new(Player::open(Path::new(&settings.base_url))?)),
        };
        Ok(Self { settings, backend: Arc::new(backend), retry: RetryPolicy::default(), recorder: None })
    }

    /// A client as the configuration asks: the replay cassette from `cassette`, recording to
    /// `record` when set.
    pub fn from_config(config: &Config, mut settings: ProviderSettings) -> Result<Self, LlmError> {
        if settings.kind == ProviderKind::Replay
            && let Some(path) = &config.layer.cassette
        {
            settings.base_url = path.display().to_string();
        }
        let client = Self::new(settings)?;
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
            Backend::Http(adapter) => self.complete_http(adapter.as_ref(), request).await,
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
        request: &Request,
    ) -> Result<Response, LlmError> {
        let mut retry = 0;
        loop {
            let attempt = async {
                let response = send(&self.settings, adapter.http_call(request, false)?).await?;
                let url = response.url().to_string();
                adapter.parse_response(&read_json(self.settings.kind, &url, response).await?)
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
            Backend::Http(adapter) => {
                let mut state = StreamState {
                    settings: self.settings.clone(),
                    adapter: adapter.clone(),
                    request: request.clone(),
                    retry_policy: self.retry,
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

/// Sends one HTTP call; non-success statuses become classified errors.
async fn send(settings: &ProviderSettings, call: HttpCall) -> Result<reqwest::Response, LlmError> {
    tracing::debug!(provider = %settings.kind, url = %call.url, "model request");
    tracing::trace!(body = %call.body, "model request body");
    let response = http_client()
        .post(&call.url)
        .headers(call.headers)
        .json(&call.body)
        .send()
        .await
        .map_err(|e| network_error(&call.url, &e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let mut body = response.text().await.unwrap_or_default();
    // Some servers echo what they were sent; the key must not reach the log.
    if let Some(key) = settings.api_key.as_ref().map(|k| k.expose()).filter(|k| !k.is_empty()) {
        body = body.replace(key, "[redacted]");
    }
    tracing::debug!(status = status.as_u16(), body = %body, "model error response");
    let error =
        classify_http(settings.kind, status.as_u16(), &headers, &body, settings.api_key_var.as_deref());
    Err(error.scrub(settings.api_key.as_ref().map(|k| k.expose())))
}

fn network_error(url: &str, e: &reqwest::Error) -> LlmError {
    use std::error::Error;
    // reqwest's own message repeats the URL; the innermost cause says what actually failed.
    let mut cause: &dyn Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    LlmError::Network { url: url.to_string(), message: format!("{kind}: {cause}") }
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
        body => Ok(events_for(&adapter.parse_response(&body)?)),
    }
}

async fn read_json(kind: ProviderKind, url: &str, response: reqwest::Response) -> Result<Value, LlmError> {
    response.json().await.map_err(|e| LlmError::Provider {
        provider: kind,
        status: None,
        message: format!("unreadable response body from {url}: {e}"),
    })
}

struct StreamState {
    settings: ProviderSettings,
    adapter: Arc<dyn ProviderAdapter>,
    request: Request,
    retry_policy: RetryPolicy,
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
                let response = send(&self.settings, call).await?;
                let kind = self.settings.kind;
                if is_json(&response) {
                    let body = read_json(kind, &url, response).await?;
                    return Ok(Opened::Answered(answered_events(self.adapter.as_ref(), body)?));
                }
                let source: Source = response
                    .bytes_stream()
                    .eventsource()
                    .map(move |item| {
                        item.map_err(|e| LlmError::StreamCut {
                            provider: kind,
                            message: format!("reading the stream from {url} failed: {e}"),
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
                    None => self.decoder.end(),
                    Some(Err(e)) => Err(e),
                    Some(Ok(event)) => {
                        tracing::trace!(event = %event.event, data = %event.data, "model stream event");
                        self.decoder.event(&event.event, &event.data)
                    }
                },
            };
            match step {
                Ok(()) => self.pending.extend(self.decoder.drain()),
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
