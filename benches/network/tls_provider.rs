//! A TLS fake Anthropic endpoint for the network benchmark: its own CA and certificate (the tests'
//! `TestCa`, tests/support/tls.rs, made when it starts), HTTP/2 and HTTP/1.1 (ALPN, as the real
//! APIs offer), keep-alive. It timestamps each model request when its head arrives, counts TLS
//! handshakes and `HEAD` requests (warm-ups), streams a short answer, and closes every connection
//! on demand (a provider dropping idle connections).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};

use crate::tls::TestCa;

/// What the provider saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// When each model request's head arrived.
    pub requests: Vec<Instant>,
    pub handshakes: usize,
    pub warmups: usize,
}

pub struct TlsProvider {
    pub addr: SocketAddr,
    pub ca_file: PathBuf,
    seen: Arc<Mutex<Seen>>,
    closing: tokio::sync::watch::Sender<u64>,
    _ca: TestCa,
}

impl TlsProvider {
    pub async fn start() -> Self {
        let ca = TestCa::new("agentls network bench CA");
        let (acceptor, ca_file) = (ca.acceptor_for(&[b"h2", b"http/1.1"]), ca.ca_file().to_path_buf());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (closing, _) = tokio::sync::watch::channel(0u64);
        let (shared, close) = (seen.clone(), closing.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (acceptor, seen, mut closing) = (acceptor.clone(), shared.clone(), close.subscribe());
                tokio::spawn(async move {
                    let _ = socket.set_nodelay(true);
                    let Ok(tls) = acceptor.accept(socket).await else { return };
                    seen.lock().unwrap().handshakes += 1;
                    let service = hyper::service::service_fn(move |request| answer(request, seen.clone()));
                    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let connection = builder.serve_connection(TokioIo::new(tls), service);
                    tokio::pin!(connection);
                    tokio::select! {
                        _ = connection.as_mut() => {}
                        _ = closing.changed() => {
                            connection.as_mut().graceful_shutdown();
                            let _ = connection.await;
                        }
                    }
                });
            }
        });
        Self { addr, ca_file, seen, closing, _ca: ca }
    }

    /// `https://127.0.0.1:PORT` reached through `via` (the latency proxy).
    pub fn url_via(via: SocketAddr) -> String {
        format!("https://127.0.0.1:{}", via.port())
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }

    /// Closes every open connection (those streaming finish first).
    pub fn close_connections(&self) {
        self.closing.send_modify(|g| *g += 1);
    }
}

type Body = BoxBody<Bytes, Infallible>;

async fn answer(
    request: Request<hyper::body::Incoming>,
    seen: Arc<Mutex<Seen>>,
) -> Result<Response<Body>, Infallible> {
    if request.method() == hyper::Method::HEAD {
        seen.lock().unwrap().warmups += 1;
        return Ok(Response::new(Full::new(Bytes::new()).boxed()));
    }
    seen.lock().unwrap().requests.push(Instant::now());
    let _ = request.into_body().collect().await;
    let frames: Vec<Result<Frame<Bytes>, Infallible>> =
        stream_events().into_iter().map(|e| Ok(Frame::data(Bytes::from(e)))).collect();
    let body = StreamBody::new(futures::stream::iter(frames)).boxed();
    Ok(Response::builder().header("content-type", "text/event-stream").body(body).expect("response"))
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The Messages stream of a short answer: three text deltas.
fn stream_events() -> Vec<String> {
    let usage = |n: u64| json!({"input_tokens": 10, "output_tokens": n});
    let mut events = vec![event(
        "message_start",
        &json!({"type": "message_start", "message": {"id": "msg_net", "type": "message", "role": "assistant",
            "model": "claude-bench", "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage(1)}}),
    )];
    events.push(event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ));
    for text in ["Hello", " over", " TLS."] {
        events.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ));
    }
    events.push(event("content_block_stop", &json!({"type": "content_block_stop", "index": 0})));
    events.push(event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": usage(3)}),
    ));
    events.push(event("message_stop", &json!({"type": "message_stop"})));
    events
}
