//! The LSP base protocol as a client sees it: `Content-Length` framing (one decoder, strict about
//! what it accepts) and the answers an editor gives to the requests a server sends it. One codec
//! and one policy for both drivers: the tests' async client (`lsp_client.rs`) and the
//! benchmarks' blocking one (`benches/server/client.rs`, which stamps each message with the
//! arrival of the read that completed it, so it feeds this decoder straight from its reads).
//! It is not the server's own transport (`agentls::lsp::transport`, which `agentls demo`'s client
//! uses too) on purpose: the tests check what that transport writes with a decoder it does not
//! share.
//!
//! Invariants: the decoder never drops bytes it cannot use yet (an incomplete frame waits for the
//! next `feed`); a frame is well formed only with CRLF header lines, a `Content-Length` and no
//! header but `Content-Length` and `Content-Type` — anything else is kept in `problems` (a frame
//! without a length yields an empty body, so the caller sees a body that is not JSON).

#![allow(dead_code)]

use serde_json::{Value, json};

/// One message framed for the wire.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// A JSON message framed for the wire.
pub fn frame_json(message: &Value) -> Vec<u8> {
    frame(message.to_string().as_bytes())
}

/// Cuts frames out of the bytes read so far.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already returned as frames (dropped at the next `feed`).
    consumed: usize,
    /// What was not a well-formed frame, in order.
    pub problems: Vec<String>,
}

impl FrameDecoder {
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buffer.drain(..self.consumed);
        self.consumed = 0;
        self.buffer.extend_from_slice(bytes);
    }

    /// The body of the next complete frame, or `None` until more bytes come.
    pub fn next_frame(&mut self) -> Option<Vec<u8>> {
        let mut at = self.consumed;
        let mut length = None;
        let mut problems = Vec::new();
        loop {
            let end = at + memchr::memchr(b'\n', &self.buffer[at..])?;
            let line = String::from_utf8_lossy(&self.buffer[at..=end]);
            at = end + 1;
            if !line.ends_with("\r\n") {
                problems.push(format!("header line without CRLF: {line:?}"));
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length:") {
                length = v.trim().parse::<usize>().ok();
            } else if !line.starts_with("Content-Type:") {
                problems.push(format!("not an LSP header: {line:?}"));
            }
        }
        let body = match length {
            None => {
                problems.push("a frame without Content-Length".into());
                Vec::new()
            }
            Some(length) if self.buffer.len() < at + length => return None,
            Some(length) => {
                let body = self.buffer[at..at + length].to_vec();
                at += length;
                body
            }
        };
        self.consumed = at;
        self.problems.append(&mut problems);
        Some(body)
    }
}

/// What an editor answers to a server request it handles itself: `workspace/applyEdit` is
/// applied, `workspace/configuration` finds no settings (`null` per item), anything else gets
/// `null` (progress tokens, capability registrations).
pub fn editor_answer(method: &str, params: &Value) -> Value {
    match method {
        "workspace/applyEdit" => json!({"applied": true}),
        "workspace/configuration" => {
            let items = params.get("items").and_then(Value::as_array).map_or(1, Vec::len);
            Value::Array(vec![Value::Null; items])
        }
        _ => Value::Null,
    }
}

/// The response to a server request: `result` for `id`.
pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}
