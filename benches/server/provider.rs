//! A fake Anthropic Messages endpoint on 127.0.0.1 for the process benchmarks: it answers each
//! `POST /v1/messages` with the reply a [`Script`] picks, streams text deltas at a set pace and
//! records, per response, when the request's first byte arrived and when each delta was handed
//! to the socket.
//!
//! Invariants: a delta's timestamp is taken just before its `write` (so the send itself counts as
//! added latency, for agentls and for the direct-read floor alike); every delta is its own chunk
//! and its own `write` on a `TCP_NODELAY` socket, so nothing is batched by us; connections are
//! kept alive (chunked encoding), so a pooled client reuses them as it would with a real provider.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One content block of a scripted reply.
#[derive(Debug, Clone)]
pub enum Block {
    /// Text sent as `deltas`, one `content_block_delta` each, `rate` per second (0: at once).
    Text { deltas: Vec<String>, rate: f64 },
    /// A tool call; its input is sent as one `input_json_delta`.
    Tool { id: String, name: String, input: Value },
}

/// What to answer to one request. `key` names the response in the records.
#[derive(Debug, Clone)]
pub struct Reply {
    pub key: String,
    pub blocks: Vec<Block>,
}

/// A request as the provider saw it.
pub struct Seen<'a> {
    /// The whole body as text, for substring routing.
    pub text: &'a str,
}

pub type Script = dyn Fn(&Seen) -> Reply + Send + Sync;

/// What was sent for one response.
#[derive(Debug, Clone)]
pub struct Record {
    pub key: String,
    /// When the first byte of the request arrived.
    pub first_byte: Instant,
    /// Each text delta and when it was handed to the socket, in order.
    pub deltas: Vec<(String, Instant)>,
    /// The latest a delta left after its scheduled time (the provider's own lag).
    pub max_behind: Duration,
    pub body: String,
}

#[derive(Default)]
struct Shared {
    records: Vec<Record>,
}

pub struct Provider {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
}

impl Provider {
    pub fn start(script: Arc<Script>) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared: Arc<Mutex<Shared>> = Arc::default();
        let records = shared.clone();
        thread::Builder::new().name("fake-provider".into()).spawn(move || {
            for stream in listener.incoming().flatten() {
                let (script, records) = (script.clone(), records.clone());
                let _ = thread::Builder::new()
                    .name("fake-provider-conn".into())
                    .spawn(move || serve_connection(stream, &*script, &records));
            }
        })?;
        Ok(Self { addr, shared })
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Takes the records of the responses finished so far.
    pub fn take(&self) -> Vec<Record> {
        std::mem::take(&mut self.shared.lock().expect("provider records").records)
    }

    /// Waits until `count` responses are recorded (or `timeout` passes) and takes them.
    pub fn wait_records(&self, count: usize, timeout: Duration) -> Vec<Record> {
        let deadline = Instant::now() + timeout;
        while self.shared.lock().expect("provider records").records.len() < count && Instant::now() < deadline
        {
            thread::sleep(Duration::from_millis(2));
        }
        self.take()
    }
}

/// Delta `i` of a stream of `count`: a short word that says which it is, so lost, repeated or
/// reordered text is visible.
pub fn words(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i} ")).collect()
}

fn serve_connection(mut stream: TcpStream, script: &Script, records: &Mutex<Shared>) {
    let _ = stream.set_nodelay(true);
    // Pacing sleeps wake within microseconds instead of the default 50 µs slack.
    let _ = nix::sys::prctl::set_timerslack(1_000);
    let mut pending = Vec::new();
    loop {
        let Ok(Some((first_byte, head, body))) = read_request(&mut stream, &mut pending) else { return };
        if !head.starts_with("POST") {
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
            continue;
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let reply = script(&Seen { text: &text });
        let streamed = value.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let model = value.get("model").and_then(Value::as_str).unwrap_or("claude-bench").to_string();
        let result = if streamed {
            send_stream(&mut stream, &reply, &model)
        } else {
            send_whole(&mut stream, &reply, &model).map(|()| (Vec::new(), Duration::ZERO))
        };
        let Ok((deltas, max_behind)) = result else { return };
        records.lock().expect("provider records").records.push(Record {
            key: reply.key,
            first_byte,
            deltas,
            max_behind,
            body: text,
        });
    }
}

/// Reads one request: the time its first byte arrived, the head and the body. `pending` keeps
/// bytes read past the body (a pipelined next request).
fn read_request(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
) -> io::Result<Option<(Instant, String, Vec<u8>)>> {
    let mut first_byte = (!pending.is_empty()).then(Instant::now);
    let mut chunk = [0u8; 64 * 1024];
    let head_end = loop {
        if let Some(at) = find(pending, b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        first_byte.get_or_insert_with(Instant::now);
        pending.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&pending[..head_end]).into_owned();
    let length = content_length(&head);
    while pending.len() < head_end + length {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        pending.extend_from_slice(&chunk[..n]);
    }
    let body = pending[head_end..head_end + length].to_vec();
    pending.drain(..head_end + length);
    Ok(Some((first_byte.unwrap_or_else(Instant::now), head, body)))
}

/// The `Content-Length` of a header section (HTTP's or LSP's framing), 0 when absent.
pub fn content_length(head: &str) -> usize {
    head.lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0)
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

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn chunk(stream: &mut TcpStream, payload: &str) -> io::Result<()> {
    stream.write_all(format!("{:x}\r\n{payload}\r\n", payload.len()).as_bytes())
}

fn usage(output_tokens: u64) -> Value {
    json!({"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": output_tokens})
}

/// Streams `reply` as the Messages SSE stream; returns each text delta with its send time.
fn send_stream(
    stream: &mut TcpStream,
    reply: &Reply,
    model: &str,
) -> io::Result<(Vec<(String, Instant)>, Duration)> {
    stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    )?;
    let start = json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage(1)}});
    chunk(stream, &(event("message_start", &start) + &event("ping", &json!({"type": "ping"}))))?;
    let mut sent = Vec::new();
    let mut max_behind = Duration::ZERO;
    let mut tool_use = false;
    for (index, block) in reply.blocks.iter().enumerate() {
        match block {
            Block::Text { deltas, rate } => {
                let open = json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}});
                chunk(stream, &event("content_block_start", &open))?;
                let began = Instant::now();
                for (i, delta) in deltas.iter().enumerate() {
                    let payload = event(
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": delta}}),
                    );
                    let mut now = Instant::now();
                    if *rate > 0.0 {
                        let due = began + Duration::from_secs_f64(i as f64 / rate);
                        if due > now {
                            thread::sleep(due - now);
                            now = Instant::now();
                        } else {
                            max_behind = max_behind.max(now - due);
                        }
                    }
                    sent.push((delta.clone(), now));
                    chunk(stream, &payload)?;
                }
            }
            Block::Tool { id, name, input } => {
                tool_use = true;
                let open = json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}});
                let delta = json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": input.to_string()}});
                chunk(
                    stream,
                    &(event("content_block_start", &open) + &event("content_block_delta", &delta)),
                )?;
            }
        }
        chunk(stream, &event("content_block_stop", &json!({"type": "content_block_stop", "index": index})))?;
    }
    let stop = if tool_use { "tool_use" } else { "end_turn" };
    let end = json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": usage(20)});
    chunk(
        stream,
        &(event("message_delta", &end) + &event("message_stop", &json!({"type": "message_stop"}))),
    )?;
    stream.write_all(b"0\r\n\r\n")?;
    Ok((sent, max_behind))
}

/// Answers a non-streaming request (lsp-ai's) with the whole message.
fn send_whole(stream: &mut TcpStream, reply: &Reply, model: &str) -> io::Result<()> {
    let text: String = reply
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { deltas, .. } => Some(deltas.concat()),
            Block::Tool { .. } => None,
        })
        .collect();
    let body = json!({"id": "msg_bench", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null, "usage": usage(20)})
    .to_string();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all((head + &body).as_bytes())
}
