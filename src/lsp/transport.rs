//! The wire: frames from the editor's byte stream decoded into JSON-RPC messages, and the
//! server's messages framed and written to the editor.
//!
//! Invariants:
//! - Only well-formed JSON-RPC messages reach the service, each decoded once. Every malformed
//!   frame (bad header, bad UTF-8, bad JSON, not a JSON-RPC message, oversized body, a
//!   Content-Length that does not match the body) is answered with a JSON-RPC error and dropped,
//!   the reader finds the next frame header, and the server keeps serving. A frame header inside
//!   a body (oversized or not) ends it: JSON cannot hold a raw `Content-Length` line.
//! - Messages are read, and frames written, in order; a frame is always written whole.

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Request, Response};

/// The largest message body accepted (bigger ones are skipped and answered with an error).
pub const MAX_BODY: usize = 64 << 20;
/// The longest header line accepted; longer ones are garbage.
const MAX_HEADER_LINE: usize = 8 << 10;
const READ_CHUNK: usize = 64 << 10;
const CONTENT_LENGTH: &[u8] = b"content-length:";

/// One unit read from the wire.
#[derive(Debug, PartialEq)]
pub enum Frame {
    Body(Vec<u8>),
    /// Something that is not a frame; the text says what, for the error reply.
    Malformed(String),
    /// A complete JSON message after which the input went quiet before the declared
    /// Content-Length was reached (the length was too large and nothing followed).
    Short {
        body: Vec<u8>,
        declared: usize,
    },
}

/// How long a body that already is complete JSON may wait for the rest of its declared length.
const SHORT_BODY_IDLE: std::time::Duration = std::time::Duration::from_millis(500);

enum State {
    Headers,
    /// Reading a body of `length` bytes; `scanned` bytes of it were searched for a frame header.
    Body {
        length: usize,
        problem: Option<String>,
        scanned: usize,
    },
    /// Discarding an oversized body; `skipped` bytes of it so far.
    Skip {
        remaining: usize,
        length: usize,
        skipped: usize,
    },
}

enum Parsed {
    Frame(Frame),
    /// Nothing complete yet: read more input.
    NeedMore,
    /// Input was consumed without producing a frame (blank lines, an unreported garbage run).
    Again,
}

/// Where a `Content-Length:` header starts inside `data` at or after `from` (case-insensitive,
/// followed by digits and a line end), for resynchronising after garbage. `Err(at)` when the
/// data ends inside a possible header starting at `at`.
fn header_start(data: &[u8], from: usize) -> Result<Option<usize>, usize> {
    let mut at = from;
    while let Some(offset) =
        data.get(at..).and_then(|rest| rest.iter().position(|b| b.eq_ignore_ascii_case(&b'c')))
    {
        let start = at + offset;
        let rest = &data[start..];
        let name = rest.len().min(CONTENT_LENGTH.len());
        if !rest[..name].eq_ignore_ascii_case(&CONTENT_LENGTH[..name]) {
            at = start + 1;
            continue;
        }
        if rest.len() < CONTENT_LENGTH.len() {
            return Err(start);
        }
        let value = &rest[CONTENT_LENGTH.len()..];
        let spaces = value.iter().take_while(|b| **b == b' ' || **b == b'\t').count();
        let digits = value[spaces..].iter().take_while(|b| b.is_ascii_digit()).count();
        match value.get(spaces + digits) {
            None => return Err(start),
            Some(b'\r' | b'\n') if digits > 0 => return Ok(Some(start)),
            Some(_) => at = start + 1,
        }
    }
    Ok(None)
}

fn is_header_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
}

fn lossy(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// Reads frames from a byte stream and resynchronises after malformed input: garbage between
/// frames is skipped up to the next `Content-Length` header, and a body that runs into the next
/// frame's header (a Content-Length larger than the body) is cut there.
///
/// `next` is cancel-safe: all state lives in the reader.
pub struct FrameReader<R> {
    input: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes of `buf`.
    pos: usize,
    eof: bool,
    state: State,
    /// The next garbage run is the body of a frame whose header was already answered.
    quiet: bool,
    short_body_idle: std::time::Duration,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(input: R) -> Self {
        Self {
            input,
            buf: Vec::new(),
            pos: 0,
            eof: false,
            state: State::Headers,
            quiet: false,
            short_body_idle: SHORT_BODY_IDLE,
        }
    }

    /// The next frame; `None` at end of input (a partial frame at the end is dropped).
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            match self.parse() {
                Parsed::Frame(frame) => return Ok(Some(frame)),
                Parsed::Again => {}
                Parsed::NeedMore if matches!(self.state, State::Body { .. }) && self.pos < self.buf.len() => {
                    // A client that declared too long a body may wait for our answer: once the
                    // input is quiet and what arrived is a whole JSON message, answer it.
                    match tokio::time::timeout(self.short_body_idle, self.fill()).await {
                        Ok(more) => {
                            if !more? {
                                return Ok(None);
                            }
                        }
                        Err(_) => {
                            if let Some(frame) = self.short_body() {
                                return Ok(Some(frame));
                            }
                        }
                    }
                }
                Parsed::NeedMore => {
                    if !self.fill().await? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// The next frame already read, without waiting for input; `None` when what is buffered
    /// is not a whole frame.
    pub fn next_buffered(&mut self) -> Option<Frame> {
        loop {
            match self.parse() {
                Parsed::Frame(frame) => return Some(frame),
                Parsed::Again => {}
                Parsed::NeedMore => return None,
            }
        }
    }

    /// The partial body as a [`Frame::Short`] when it is a complete JSON value.
    fn short_body(&mut self) -> Option<Frame> {
        let State::Body { length, .. } = self.state else { return None };
        let body = &self.buf[self.pos..];
        serde_json::from_slice::<serde::de::IgnoredAny>(body).ok()?;
        let body = body.to_vec();
        self.consume(body.len());
        self.state = State::Headers;
        // Whatever the client still sends of the declared length is not a frame of its own.
        self.quiet = true;
        Some(Frame::Short { body, declared: length })
    }

    async fn fill(&mut self) -> std::io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > READ_CHUNK && self.pos >= self.buf.len() / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.reserve(READ_CHUNK);
        let n = self.input.read_buf(&mut self.buf).await?;
        self.eof = n == 0;
        Ok(n > 0)
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    fn parse(&mut self) -> Parsed {
        match self.state {
            State::Headers => self.parse_headers(),
            State::Body { length, ref mut problem, ref mut scanned } => {
                let data = &self.buf[self.pos..];
                // A body that contains the next frame's header was declared too long: cut it there
                // (a JSON body cannot contain a raw `Content-Length: N` line).
                let from = scanned.saturating_sub(CONTENT_LENGTH.len() + 24);
                let cut = match header_start(&data[..data.len().min(length + 64)], from) {
                    Ok(Some(at)) if at < length => Some(at),
                    Err(at) if at < length && !self.eof && data.len() < length + 64 => {
                        *scanned = at;
                        return Parsed::NeedMore;
                    }
                    _ => None,
                };
                let problem = problem.take();
                let (taken, frame) = match cut {
                    Some(at) => (
                        at,
                        Frame::Malformed(format!(
                            "the message is shorter than its Content-Length ({length}): the next frame starts after {at} bytes"
                        )),
                    ),
                    None if data.len() >= length => match problem {
                        Some(problem) => (length, Frame::Malformed(problem)),
                        None => (length, Frame::Body(data[..length].to_vec())),
                    },
                    None => {
                        self.state = State::Body { length, problem, scanned: data.len() };
                        return Parsed::NeedMore;
                    }
                };
                self.consume(taken);
                self.state = State::Headers;
                Parsed::Frame(frame)
            }
            State::Skip { remaining, length, skipped } => {
                let data = &self.buf[self.pos..];
                let available = data.len().min(remaining);
                // A client that declared a huge length and sent less: the next frame ends it.
                let (taken, cut) = match header_start(&data[..available], 0) {
                    Ok(Some(at)) => (at, true),
                    Err(at) if available < remaining && !self.eof => (at, false),
                    _ => (available, false),
                };
                self.consume(taken);
                if !cut && taken < remaining {
                    self.state =
                        State::Skip { remaining: remaining - taken, length, skipped: skipped + taken };
                    return Parsed::NeedMore;
                }
                self.state = State::Headers;
                let limit = format!("message of {length} bytes exceeds the {MAX_BODY}-byte limit");
                Parsed::Frame(Frame::Malformed(match cut {
                    true => format!("{limit}; the next frame starts after {} bytes", skipped + taken),
                    false => limit,
                }))
            }
        }
    }

    /// Parses a header section at `pos`, consuming it only when it is complete.
    fn parse_headers(&mut self) -> Parsed {
        let data = &self.buf[self.pos..];
        let mut at = 0;
        let mut length: Option<Result<usize, String>> = None;
        let mut problem: Option<String> = None;
        let mut saw_header = false;
        loop {
            let rest = &data[at..];
            let (line, next) = match rest.iter().position(|b| *b == b'\n') {
                Some(end) => (&rest[..end], at + end + 1),
                None if rest.len() > MAX_HEADER_LINE || (self.eof && !rest.is_empty()) => (rest, data.len()),
                None => return Parsed::NeedMore,
            };
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                if saw_header {
                    at = next;
                    break;
                }
                // Blank lines between frames are harmless.
                self.consume(next);
                return Parsed::Again;
            }
            // A `Content-Length` header inside the line: what precedes it is garbage.
            if let Ok(Some(start)) | Err(start) = header_start(line, 1) {
                let message = format!("not a frame header: `{}`", lossy(&line[..start], 80));
                self.consume(at + start);
                return self.garbage(message, saw_header);
            }
            let header = line
                .iter()
                .position(|b| *b == b':')
                .filter(|colon| is_header_name(&line[..*colon]))
                .map(|colon| (&line[..colon], &line[colon + 1..]));
            match header {
                // After a line that is no header, a `Content-Length` starts the next frame: what
                // came before it is garbage.
                Some((name, _)) if problem.is_some() && name.eq_ignore_ascii_case(b"content-length") => {
                    let message = problem.unwrap_or_default();
                    self.consume(at);
                    return self.garbage(message, true);
                }
                Some((name, value)) => {
                    saw_header = true;
                    if name.eq_ignore_ascii_case(b"content-length") {
                        let value = String::from_utf8_lossy(value);
                        length =
                            Some(value.trim().parse::<usize>().map_err(|_| {
                                format!("bad Content-Length `{}`", lossy(value.as_bytes(), 40))
                            }));
                    }
                }
                None if saw_header => {
                    problem.get_or_insert(format!("not a header line: `{}`", lossy(line, 80)));
                }
                None => {
                    let message = format!("not a frame header: `{}`", lossy(line, 80));
                    self.consume(next);
                    return self.garbage(message, false);
                }
            }
            at = next;
        }
        self.consume(at);
        self.quiet = false;
        match length {
            Some(Ok(length)) if length > MAX_BODY => {
                self.state = State::Skip { remaining: length, length, skipped: 0 };
                Parsed::Again
            }
            Some(Ok(length)) => {
                self.state = State::Body { length, problem, scanned: 0 };
                Parsed::Again
            }
            Some(Err(bad)) => {
                self.quiet = true;
                Parsed::Frame(Frame::Malformed(bad))
            }
            None => {
                self.quiet = true;
                Parsed::Frame(Frame::Malformed(
                    problem.unwrap_or_else(|| "missing Content-Length header".into()),
                ))
            }
        }
    }
}

impl<R> FrameReader<R> {
    /// Garbage was consumed: one error per run of garbage (a run ends at a good header
    /// section), none for the body of a frame whose header was already answered.
    fn garbage(&mut self, message: String, in_header: bool) -> Parsed {
        let message =
            if in_header { format!("an incomplete header section before {message}") } else { message };
        if std::mem::replace(&mut self.quiet, true) {
            tracing::debug!("skipping more garbage: {message}");
            return Parsed::Again;
        }
        Parsed::Frame(Frame::Malformed(message))
    }
}

pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 32);
    append_frame(&mut out, body);
    out
}

/// Appends `body` framed with its `Content-Length` header to `out`.
fn append_frame(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(b"Content-Length: ");
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
}

/// A well-formed JSON-RPC message from the editor, decoded once.
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
pub enum Incoming {
    Response(Response),
    Request(Request),
}

/// Decodes a body; `Err(reply)` is the JSON-RPC error to send back. A repeated key (`"method"`
/// twice) is an error too: which one was meant is anybody's guess.
pub fn decode(body: &[u8]) -> Result<Incoming, Value> {
    if let Ok(message) = serde_json::from_slice::<Incoming>(body) {
        return Ok(match message {
            Incoming::Request(request) => Incoming::Request(without_empty_params(request)),
            response => response,
        });
    }
    let error = |id: Value, code: i64, message: String| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let text = std::str::from_utf8(body)
        .map_err(|e| error(Value::Null, -32700, format!("the message is not UTF-8: {e}")))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| error(Value::Null, -32700, format!("the message is not JSON: {e}")))?;
    let id = value.get("id").filter(|id| id.is_number() || id.is_string()).cloned().unwrap_or(Value::Null);
    Err(error(id, -32600, "not a JSON-RPC 2.0 request, notification or response".into()))
}

/// The methods that take no parameters (`shutdown`, `exit`): the framework accepts only a
/// missing or `null` `params` for them, but clients send `{}` or `[]` too (Emacs's lsp-mode
/// sends `"params": {}` with `shutdown`), and that means the same.
const PARAMETERLESS: &[&str] = &["shutdown", "exit"];

/// `request` with an empty `params` object or array dropped, for a parameterless method.
fn without_empty_params(request: Request) -> Request {
    let empty = |params: &Value| match params {
        Value::Object(map) => map.is_empty(),
        Value::Array(list) => list.is_empty(),
        _ => false,
    };
    if !PARAMETERLESS.contains(&request.method()) || !request.params().is_some_and(empty) {
        return request;
    }
    let (method, id, _) = request.into_parts();
    let builder = Request::build(method);
    match id {
        Some(id) => builder.id(id).finish(),
        None => builder.finish(),
    }
}

/// One frame for the editor, whole.
#[derive(Debug)]
pub struct Outgoing {
    frame: Vec<u8>,
    /// A response to one of the editor's requests (see [`write_output`]'s pause).
    response: bool,
}

impl Outgoing {
    /// A response to one of the editor's requests.
    pub fn response(response: &Response) -> Self {
        Self { frame: encode(response), response: true }
    }

    /// A request or notification of the server's.
    pub fn request(request: &Request) -> Self {
        Self { frame: encode(request), response: false }
    }

    /// The answer to a malformed message.
    fn reply(reply: &Value) -> Self {
        Self { frame: encode(reply), response: false }
    }

    /// The framed bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.frame
    }
}

fn encode(message: &impl serde::Serialize) -> Vec<u8> {
    // Serialising a JSON-RPC message (string keys, JSON values) into memory cannot fail.
    frame(&serde_json::to_vec(message).unwrap_or_default())
}

/// Reads the editor's messages: each frame is decoded once, and every malformed one (see the
/// module doc) is answered on `replies` and skipped.
pub struct MessageReader<R> {
    frames: FrameReader<R>,
    replies: mpsc::Sender<Outgoing>,
}

impl<R: AsyncRead + Unpin> MessageReader<R> {
    pub fn new(input: R, replies: mpsc::Sender<Outgoing>) -> Self {
        Self { frames: FrameReader::new(input), replies }
    }

    /// The next well-formed message; `None` when the input ends (or nobody takes the replies).
    pub async fn next(&mut self) -> Option<Incoming> {
        loop {
            let reply = match self.frames.next().await {
                Ok(None) => return None,
                Err(e) => {
                    tracing::info!("input closed: {e}");
                    return None;
                }
                Ok(Some(Frame::Body(body))) => match decode(&body) {
                    Ok(message) => return Some(message),
                    Err(reply) => {
                        tracing::warn!("dropping a malformed message: {}", reply["error"]["message"]);
                        reply
                    }
                },
                Ok(Some(Frame::Short { body, declared })) => {
                    let id = serde_json::from_slice::<Value>(&body)
                        .ok()
                        .and_then(|v| v.get("id").filter(|id| id.is_number() || id.is_string()).cloned())
                        .unwrap_or(Value::Null);
                    let problem = format!(
                        "the Content-Length header said {declared} bytes but the message ended after {}; it was not processed",
                        body.len()
                    );
                    tracing::warn!("dropping a message: {problem}");
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": problem}})
                }
                Ok(Some(Frame::Malformed(problem))) => {
                    tracing::warn!("dropping a malformed frame: {problem}");
                    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": problem}})
                }
            };
            if self.replies.send(Outgoing::reply(&reply)).await.is_err() {
                return None;
            }
        }
    }
}

/// How long the output pauses after a response, for clients that need it (see [`write_output`]).
pub const PAUSE_AFTER_RESPONSE: std::time::Duration = std::time::Duration::from_millis(30);

/// Writes the frames of `from` to `output`, whole frames at a time, until every sender is gone.
///
/// Frames that are already queued when one is written go out with it in one write: a server that
/// produces faster than the client reads makes fewer, larger writes, never more latency. The
/// queue is bounded, so a client that reads slowly slows the producers (and the event pump
/// merges text deltas meanwhile).
///
/// When `pause_after_response()` says so, nothing is written for [`PAUSE_AFTER_RESPONSE`] after a
/// response, so that the response ends the chunk the client reads: Emacs 28's jsonrpc.el (eglot
/// 1.9) stops parsing a chunk at the response it was waiting for, and whatever followed in the
/// same chunk waits, unparsed, until more output arrives — the user's answer could sit there
/// for good.
pub async fn write_output<O>(
    mut from: mpsc::Receiver<Outgoing>,
    mut output: O,
    pause_after_response: impl Fn() -> bool,
) where
    O: AsyncWrite + Unpin,
{
    let mut paused_until: Option<tokio::time::Instant> = None;
    let mut batch: Vec<u8> = Vec::new();
    while let Some(mut next) = from.recv().await {
        if let Some(until) = paused_until.take() {
            tokio::time::sleep_until(until).await;
        }
        loop {
            batch.extend_from_slice(&next.frame);
            if next.response && pause_after_response() {
                paused_until = Some(tokio::time::Instant::now() + PAUSE_AFTER_RESPONSE);
                break;
            }
            match from.try_recv() {
                Ok(queued) => next = queued,
                Err(_) => break,
            }
        }
        if output.write_all(&batch).await.is_err() || output.flush().await.is_err() {
            break;
        }
        batch.clear();
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = FrameReader::new(input);
        let mut out = Vec::new();
        while let Some(frame) = reader.next().await.expect("in-memory read") {
            out.push(frame);
        }
        out
    }

    /// Hands out one byte per read, to exercise every partial state.
    struct Trickle<'a>(&'a [u8]);

    impl tokio::io::AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if let Some((first, rest)) = self.0.split_first() {
                buf.put_slice(&[*first]);
                self.0 = rest;
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    async fn both_ways(input: &[u8]) -> Vec<Frame> {
        let whole = frames(input).await;
        let mut reader = FrameReader::new(Trickle(input));
        let mut trickled = Vec::new();
        while let Some(frame) = reader.next().await.expect("in-memory read") {
            trickled.push(frame);
        }
        assert_eq!(whole, trickled, "byte-by-byte input gives the same frames");
        whole
    }

    fn body(text: &str) -> Frame {
        Frame::Body(text.as_bytes().to_vec())
    }

    fn is_malformed(frame: &Frame) -> bool {
        matches!(frame, Frame::Malformed(_))
    }

    #[tokio::test]
    async fn frames_survive_garbage() {
        let input = b"Content-Length: 2\r\n\r\n{}garbage line\r\nmore garbage\r\n\r\nContent-Length: x\r\n\r\nContent-Length: 3\r\nContent-Type: a\r\n\r\n[1]";
        assert_eq!(
            both_ways(input).await,
            vec![
                body("{}"),
                Frame::Malformed("not a frame header: `garbage line`".into()),
                Frame::Malformed("bad Content-Length `x`".into()),
                body("[1]"),
            ]
        );
    }

    #[tokio::test]
    async fn a_wrong_content_length_costs_only_its_own_message() {
        let next = r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#;
        let msg = r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;
        // Too short: the rest of the body runs into the next header.
        let short = format!("Content-Length: 10\r\n\r\n{msg}Content-Length: {}\r\n\r\n{next}", next.len());
        let frames = both_ways(short.as_bytes()).await;
        assert_eq!(frames.len(), 3, "{frames:?}");
        assert_eq!(frames[0], body(&msg[..10]));
        assert!(is_malformed(&frames[1]));
        assert_eq!(frames[2], body(next));
        // Too long: the body would swallow the next frame.
        let long = format!("Content-Length: 500\r\n\r\n{msg}Content-Length: {}\r\n\r\n{next}", next.len());
        let frames = both_ways(long.as_bytes()).await;
        assert!(
            matches!(&frames[..], [Frame::Malformed(m), b] if m.contains("shorter") && *b == body(next)),
            "{frames:?}"
        );
        // Unusable length: its body is skipped without a second error.
        let bad = format!("Content-Length: -4\r\n\r\n{msg}\r\nContent-Length: {}\r\n\r\n{next}", next.len());
        let frames = both_ways(bad.as_bytes()).await;
        assert!(matches!(&frames[..], [Frame::Malformed(_), b] if *b == body(next)), "{frames:?}");
        // A JSON string mentioning Content-Length is not a frame boundary.
        let quoted = r#"{"text":"Content-Length: 12\r\n"}"#;
        let frames = both_ways(format!("Content-Length: {}\r\n\r\n{quoted}", quoted.len()).as_bytes()).await;
        assert_eq!(frames, vec![body(quoted)]);
    }

    #[tokio::test]
    async fn a_too_long_content_length_followed_by_silence_is_answered() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let mut reader = FrameReader::new(server);
        reader.short_body_idle = std::time::Duration::from_millis(20);
        let msg = r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#;
        client.write_all(format!("Content-Length: 90\r\n\r\n{msg}").as_bytes()).await.expect("write");
        let frame = reader.next().await.expect("read").expect("a frame");
        assert_eq!(frame, Frame::Short { body: msg.as_bytes().to_vec(), declared: 90 });
        // An incomplete body keeps waiting for the rest.
        client.write_all(b"Content-Length: 9\r\n\r\n{\"a\"").await.expect("write");
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(100), reader.next()).await;
        assert!(waiting.is_err(), "{waiting:?}");
        client.write_all(b":1}  ").await.expect("write");
        assert_eq!(reader.next().await.expect("read"), Some(body("{\"a\":1}  ")));
    }

    #[test]
    fn bodies_decode_into_messages_or_the_error_to_send_back() {
        assert!(matches!(decode(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#), Ok(Incoming::Request(_))));
        assert!(matches!(decode(br#"{"jsonrpc":"2.0","method":"x"}"#), Ok(Incoming::Request(_))));
        assert!(matches!(decode(br#"{"jsonrpc":"2.0","id":1,"result":null}"#), Ok(Incoming::Response(_))));
        assert_eq!(decode(b"{").unwrap_err()["error"]["code"], -32700);
        assert_eq!(decode(b"\xff").unwrap_err()["error"]["code"], -32700);
        let wrong = decode(br#"{"jsonrpc":"1.0","id":4,"method":"x"}"#).unwrap_err();
        assert_eq!((wrong["id"].clone(), wrong["error"]["code"].clone()), (json!(4), json!(-32600)));
        assert!(decode(b"[1,2]").is_err());
        // Found by fuzzing (lsp_dispatch): a repeated key stopped the server for good.
        let twice =
            decode(br#"{"jsonrpc":"2.0","method":"a","id":105,"method":"b","params":{}}"#).unwrap_err();
        assert_eq!((twice["id"].clone(), twice["error"]["code"].clone()), (json!(105), json!(-32600)));
    }

    #[test]
    fn parameterless_methods_take_empty_params_as_none() {
        let params = |body: &[u8]| match decode(body) {
            Ok(Incoming::Request(request)) => request.params().cloned(),
            other => panic!("{other:?}"),
        };
        assert_eq!(params(br#"{"jsonrpc":"2.0","method":"shutdown","params":{},"id":10}"#), None);
        assert_eq!(params(br#"{"jsonrpc":"2.0","method":"exit","params":[]}"#), None);
        assert_eq!(
            params(br#"{"jsonrpc":"2.0","method":"shutdown","params":{"x":1},"id":1}"#),
            Some(json!({"x": 1}))
        );
        assert_eq!(params(br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#), Some(json!({})));
        let Ok(Incoming::Request(request)) =
            decode(br#"{"jsonrpc":"2.0","method":"shutdown","params":{},"id":"s"}"#)
        else {
            panic!("a request")
        };
        assert_eq!(request.id().map(ToString::to_string).as_deref(), Some("\"s\""));
    }

    #[tokio::test]
    async fn malformed_messages_are_answered_and_the_next_one_is_read() {
        let mut input = b"Content-Length: 3\r\n\r\n{x}".to_vec();
        input.extend(frame(br#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#));
        let (replies, mut answered) = mpsc::channel(4);
        let mut reader = MessageReader::new(&input[..], replies);
        let Some(Incoming::Request(request)) = reader.next().await else { panic!("the request is read") };
        assert_eq!(request.method(), "shutdown");
        assert!(reader.next().await.is_none(), "then the input ends");
        let reply = answered.try_recv().expect("the malformed message is answered");
        let body = &reply.bytes()[reply.bytes().iter().position(|&b| b == b'{').unwrap()..];
        let reply: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(reply["error"]["code"], -32700, "{reply}");
    }

    #[tokio::test]
    async fn a_frame_header_after_a_broken_header_section_starts_a_new_frame() {
        // Found by fuzzing (lsp_frames): the next frame's header joined the broken section, and
        // its body was dropped with it.
        let next = r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#;
        let input = format!("Content-Length: 6 2\r\n{{\"js\r\nContent-Length: {}\r\n\r\n{next}", next.len());
        let frames = both_ways(input.as_bytes()).await;
        assert!(
            matches!(&frames[..], [Frame::Malformed(m), b] if m.contains("not a header line") && *b == body(next)),
            "{frames:?}"
        );
    }

    #[tokio::test]
    async fn an_oversized_length_followed_by_a_shorter_body_costs_only_its_own_message() {
        // Found by fuzzing (lsp_frames): every later frame was swallowed as part of the body.
        let next = r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#;
        let input = format!(
            "Content-Length: 99999999999\r\n\r\n{{\"a\":1}}Content-Length: {}\r\n\r\n{next}",
            next.len()
        );
        let cut = both_ways(input.as_bytes()).await;
        assert!(
            matches!(&cut[..], [Frame::Malformed(m), b] if m.contains("exceeds") && m.contains("after 7 bytes") && *b == body(next)),
            "{cut:?}"
        );
        // A truly oversized message is still skipped whole, with one error.
        let big = format!("Content-Length: {}\r\n\r\n{}", MAX_BODY + 1, "x".repeat(MAX_BODY + 1));
        let skipped = frames(format!("{big}Content-Length: {}\r\n\r\n{next}", next.len()).as_bytes()).await;
        assert!(
            matches!(&skipped[..], [Frame::Malformed(m), b] if m.contains("exceeds") && *b == body(next)),
            "{skipped:?}"
        );
    }

    /// What was written, and when (tokio's clock).
    type WriteLog = std::sync::Arc<std::sync::Mutex<Vec<(tokio::time::Instant, Vec<u8>)>>>;

    /// Records when each frame was written.
    struct Timed(WriteLog);

    impl tokio::io::AsyncWrite for Timed {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.0.lock().unwrap().push((tokio::time::Instant::now(), buf.to_vec()));
            std::task::Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// The frames of `write_output`'s writes (each write a list of frames) and when each
    /// write happened.
    async fn writes(pause: bool) -> Vec<(std::time::Duration, usize)> {
        let response: Response =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":5,"result":{"sessionId":"s"}}"#).unwrap();
        let notification = |message: &str| -> Request {
            serde_json::from_value(json!({"jsonrpc": "2.0", "method": "window/showMessage", "params": {"type": 3, "message": message}}))
                .unwrap()
        };
        let queued = [
            Outgoing::response(&response),
            Outgoing::request(&notification("a")),
            Outgoing::request(&notification("b")),
        ];
        let input: Vec<u8> = queued.iter().flat_map(|o| o.bytes().to_vec()).collect();
        let (tx, rx) = mpsc::channel(8);
        for outgoing in queued {
            tx.send(outgoing).await.unwrap();
        }
        drop(tx);
        let writes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let start = tokio::time::Instant::now();
        write_output(rx, Timed(writes.clone()), move || pause).await;
        let writes = writes.lock().unwrap();
        let all: Vec<u8> = writes.iter().flat_map(|(_, bytes)| bytes.clone()).collect();
        assert_eq!(all, input, "every frame is written whole, in order");
        writes
            .iter()
            .map(|(at, bytes)| {
                (at.duration_since(start), bytes.windows(15).filter(|w| w == b"Content-Length:").count())
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_ends_its_chunk_for_clients_that_need_it() {
        let paused = writes(true).await;
        assert_eq!(paused.iter().map(|w| w.1).collect::<Vec<_>>(), [1, 2], "the response is written alone");
        assert!(paused[1].0 >= paused[0].0 + PAUSE_AFTER_RESPONSE, "{paused:?}");
        let unpaused = writes(false).await;
        assert_eq!(
            unpaused,
            [(unpaused[0].0, 3)],
            "no pause for other clients: what is queued goes out in one write"
        );
    }
}
