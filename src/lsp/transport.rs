//! The wire guard between the editor's byte stream and `tower-lsp-server`.
//!
//! Invariant: only well-formed JSON-RPC messages reach the framework. The framework's reader
//! stops for good at the first undecodable message, so every malformed frame (bad header, bad
//! UTF-8, bad JSON, not a JSON-RPC message, oversized body, a Content-Length that does not match
//! the body) is answered here with a JSON-RPC error and dropped, the reader finds the next frame
//! header, and the server keeps serving. Frames are forwarded verbatim and in order. A body is
//! checked by decoding it exactly as the framework will (duplicate keys included), and a frame
//! header inside a body (oversized or not) ends it: JSON cannot hold a raw `Content-Length` line.

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

/// The framework's own message type (private to it), to decode a body exactly as it will.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Message {
    Response(#[allow(dead_code)] Response),
    Request(#[allow(dead_code)] Request),
}

/// Checks a body the way the framework will decode it; `Err(reply)` is the error to send back.
fn check_body(body: &[u8]) -> Result<(), Value> {
    let error = |id: Value, code: i64, message: String| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let text = std::str::from_utf8(body)
        .map_err(|e| error(Value::Null, -32700, format!("the message is not UTF-8: {e}")))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| error(Value::Null, -32700, format!("the message is not JSON: {e}")))?;
    // From the text, not the value: a repeated key (`"method"` twice) passes as a value but stops
    // the framework's reader for good.
    if serde_json::from_str::<Message>(text).is_ok() {
        return Ok(());
    }
    let id = value.get("id").filter(|id| id.is_number() || id.is_string()).cloned().unwrap_or(Value::Null);
    Err(error(id, -32600, "not a JSON-RPC 2.0 request, notification or response".into()))
}

/// Forwards well-formed frames from `input` to `to_server`; malformed ones become replies on
/// `replies`.
pub async fn guard_input<I, W>(input: I, mut to_server: W, replies: mpsc::UnboundedSender<Vec<u8>>)
where
    I: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = FrameReader::new(input);
    loop {
        match reader.next().await {
            Ok(None) => break,
            Err(e) => {
                tracing::info!("input closed: {e}");
                break;
            }
            Ok(Some(Frame::Body(body))) => match check_body(&body) {
                Ok(()) => {
                    if to_server.write_all(&frame(&body)).await.is_err() || to_server.flush().await.is_err() {
                        break;
                    }
                }
                Err(reply) => {
                    tracing::warn!("dropping a malformed message: {}", reply["error"]["message"]);
                    let _ = replies.send(frame(reply.to_string().as_bytes()));
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
                let reply =
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": problem}});
                let _ = replies.send(frame(reply.to_string().as_bytes()));
            }
            Ok(Some(Frame::Malformed(problem))) => {
                tracing::warn!("dropping a malformed frame: {problem}");
                let reply =
                    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": problem}});
                let _ = replies.send(frame(reply.to_string().as_bytes()));
            }
        }
    }
    let _ = to_server.shutdown().await;
}

/// How long the output pauses after a response, for clients that need it (see [`merge_output`]).
pub const PAUSE_AFTER_RESPONSE: std::time::Duration = std::time::Duration::from_millis(30);

/// Writes the server's frames and the guard's replies to `output`, whole frames at a time.
///
/// Frames that are already read when one is written go out with it in one write: a server that
/// produces faster than the client reads makes fewer, larger writes, never more latency.
///
/// When `pause_after_response()` says so, nothing is written for [`PAUSE_AFTER_RESPONSE`] after a
/// response, so that the response ends the chunk the client reads: Emacs 28's jsonrpc.el (eglot
/// 1.9) stops parsing a chunk at the response it was waiting for, and whatever followed in the
/// same chunk waits, unparsed, until more output arrives — the user's answer could sit there
/// for good.
pub async fn merge_output<S, O>(
    from_server: S,
    mut replies: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: O,
    pause_after_response: impl Fn() -> bool,
) where
    S: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
{
    let mut reader = FrameReader::new(from_server);
    let mut replies_open = true;
    let mut paused_until: Option<tokio::time::Instant> = None;
    let mut batch: Vec<u8> = Vec::new();
    loop {
        // Appends a frame of the server to the batch; `true` when the batch must end with it.
        let add = |batch: &mut Vec<u8>, body: Vec<u8>| {
            let pause = pause_after_response() && is_response(&body);
            append_frame(batch, &body);
            pause
        };
        let mut ends_batch = tokio::select! {
            biased;
            frame = reader.next() => match frame {
                Ok(Some(Frame::Body(body) | Frame::Short { body, .. })) => {
                    if let Some(until) = paused_until.take() {
                        tokio::time::sleep_until(until).await;
                    }
                    add(&mut batch, body)
                }
                Ok(Some(Frame::Malformed(problem))) => {
                    tracing::error!("the framework wrote a malformed frame: {problem}");
                    continue;
                }
                Ok(None) | Err(_) => break,
            },
            reply = replies.recv(), if replies_open => match reply {
                Some(bytes) => {
                    batch.extend_from_slice(&bytes);
                    false
                }
                None => {
                    replies_open = false;
                    continue;
                }
            },
        };
        while !ends_batch {
            match reader.next_buffered() {
                Some(Frame::Body(body) | Frame::Short { body, .. }) => ends_batch = add(&mut batch, body),
                Some(Frame::Malformed(problem)) => {
                    tracing::error!("the framework wrote a malformed frame: {problem}")
                }
                None => break,
            }
        }
        if ends_batch {
            paused_until = Some(tokio::time::Instant::now() + PAUSE_AFTER_RESPONSE);
        }
        if output.write_all(&batch).await.is_err() || output.flush().await.is_err() {
            break;
        }
        batch.clear();
    }
    while let Ok(bytes) = replies.try_recv() {
        let _ = output.write_all(&bytes).await;
    }
    let _ = output.flush().await;
}

/// Whether `body` is a JSON-RPC response (it has an `id` and no `method`).
fn is_response(body: &[u8]) -> bool {
    use serde::de::IgnoredAny;
    #[derive(serde::Deserialize)]
    struct Shape {
        #[serde(default)]
        method: Option<IgnoredAny>,
        #[serde(default)]
        id: Option<IgnoredAny>,
    }
    serde_json::from_slice::<Shape>(body).is_ok_and(|m| m.method.is_none() && m.id.is_some())
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
    fn bodies_are_checked_like_the_framework_decodes_them() {
        assert!(check_body(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#).is_ok());
        assert!(check_body(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).is_ok());
        assert_eq!(check_body(b"{").unwrap_err()["error"]["code"], -32700);
        assert_eq!(check_body(b"\xff").unwrap_err()["error"]["code"], -32700);
        let wrong = check_body(br#"{"jsonrpc":"1.0","id":4,"method":"x"}"#).unwrap_err();
        assert_eq!((wrong["id"].clone(), wrong["error"]["code"].clone()), (json!(4), json!(-32600)));
        assert!(check_body(b"[1,2]").is_err());
        // Found by fuzzing (lsp_dispatch): a repeated key stopped the server for good.
        let twice =
            check_body(br#"{"jsonrpc":"2.0","method":"a","id":105,"method":"b","params":{}}"#).unwrap_err();
        assert_eq!((twice["id"].clone(), twice["error"]["code"].clone()), (json!(105), json!(-32600)));
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

    /// The frames of `merge_output`'s writes (each write a list of frames) and when each
    /// write happened.
    async fn writes(pause: bool) -> Vec<(std::time::Duration, usize)> {
        let mut input = Vec::new();
        input.extend(frame(br#"{"jsonrpc":"2.0","id":5,"result":{"sessionId":"s"}}"#));
        input.extend(frame(
            br#"{"jsonrpc":"2.0","method":"window/showMessage","params":{"type":3,"message":"a"}}"#,
        ));
        input.extend(frame(
            br#"{"jsonrpc":"2.0","method":"window/logMessage","params":{"type":3,"message":"b"}}"#,
        ));
        let writes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (_tx, rx) = mpsc::unbounded_channel();
        let start = tokio::time::Instant::now();
        merge_output(&input[..], rx, Timed(writes.clone()), move || pause).await;
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
            "no pause for other clients: what is read goes out in one write"
        );
    }
}
