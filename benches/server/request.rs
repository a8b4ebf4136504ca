//! Time added before a model request leaves: from the client's write of the prompt
//! (`agentls.prompt`; for lsp-ai a `textDocument/completion`) to the first byte of the model
//! request at the fake provider. Both clocks are this process's monotonic clock. Measured for the
//! first prompt of a fresh server (what lazy construction costs) and for later prompts. The
//! floor is this client itself: a new connection and a request, and a request on a kept-alive one.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use serde_json::json;

use crate::PATIENCE;
use crate::provider::{Provider, RecordedRequest, Turn, streaming_request};
use crate::stats::ms;
use crate::stream::is_event;
use crate::subjects::{Kind, Scratch, Subject, start};

#[derive(Debug, Clone, Default)]
pub struct RequestStats {
    pub first_ms: Vec<f64>,
    pub later_ms: Vec<f64>,
}

impl RequestStats {
    /// Records the `n`-th request of a server (0: its first), sent at `sent`.
    fn record(&mut self, n: usize, sent: Instant, first_byte: Instant) {
        let took = ms(first_byte.saturating_duration_since(sent));
        if n == 0 { self.first_ms.push(took) } else { self.later_ms.push(took) }
    }
}

/// A reply of one word, at once.
pub fn short_reply() -> impl Fn(&RecordedRequest) -> Turn + Send + Sync + 'static {
    |_: &RecordedRequest| Turn::new().text("ok")
}

/// `servers` fresh agentls processes, each: a session, then `prompts` prompts one after another.
pub fn agentls(subject: &Subject, servers: usize, prompts: usize) -> Result<RequestStats, String> {
    let mut stats = RequestStats::default();
    for _ in 0..servers {
        let scratch = Scratch::new().map_err(|e| e.to_string())?;
        let provider = Provider::start(short_reply()).map_err(|e| e.to_string())?;
        let (mut server, _) = start(subject, &scratch, &provider.base_url())?;
        let session = server.command("agentls.newSession", json!({}), PATIENCE)?;
        let session = session["sessionId"].as_str().ok_or("no sessionId")?.to_string();
        for n in 0..prompts {
            let (id, sent) = server
                .send_request(
                    "workspace/executeCommand",
                    json!({"command": "agentls.prompt", "arguments": [{"sessionId": session, "text": format!("prompt {n}")}]}),
                )
                .map_err(|e| e.to_string())?;
            server.response(id, PATIENCE)?;
            let record = provider.wait_records(1, PATIENCE).pop().ok_or("the provider saw no request")?;
            stats.record(n, sent, record.request.arrived);
            server.wait_for("the turn's end", PATIENCE, |m| is_event(m, &session, "processing_end"))?;
            server.seen.clear();
        }
        server.stop();
    }
    Ok(stats)
}

/// lsp-ai: a document, then `prompts` completion requests (each answered before the next).
pub fn lsp_ai(subject: &Subject, servers: usize, prompts: usize) -> Result<RequestStats, String> {
    debug_assert_eq!(subject.kind, Kind::LspAi);
    let mut stats = RequestStats::default();
    for _ in 0..servers {
        let scratch = Scratch::new().map_err(|e| e.to_string())?;
        let provider = Provider::start(short_reply()).map_err(|e| e.to_string())?;
        let (mut server, _) = start(subject, &scratch, &provider.base_url())?;
        let uri = scratch.file_uri("main.py");
        server
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                "text": "def add(a, b):\n    return a + b\n\n"}}),
            )
            .map_err(|e| e.to_string())?;
        for n in 0..prompts {
            let (id, sent) = server
                .send_request(
                    "textDocument/completion",
                    json!({"textDocument": {"uri": uri}, "position": {"line": 2, "character": 0}}),
                )
                .map_err(|e| e.to_string())?;
            let record = provider.wait_records(1, PATIENCE).pop().ok_or("lsp-ai sent no model request")?;
            stats.record(n, sent, record.request.arrived);
            server.response(id, PATIENCE)?;
        }
        server.stop();
    }
    Ok(stats)
}

/// The floor: this client sending the same kind of request itself.
pub fn direct(requests: usize) -> Result<RequestStats, String> {
    let provider = Provider::start(short_reply()).map_err(|e| e.to_string())?;
    let request = streaming_request("hi");
    let mut stats = RequestStats::default();
    let mut kept: Option<TcpStream> = None;
    for n in 0..requests {
        let sent = Instant::now();
        let stream = match kept.as_mut() {
            Some(stream) => stream,
            None => kept.insert(TcpStream::connect(provider.addr()).map_err(|e| e.to_string())?),
        };
        stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
        let record = provider.wait_records(1, PATIENCE).pop().ok_or("no request recorded")?;
        stats.record(n, sent, record.request.arrived);
        // Read the whole response (it ends with the last chunk) before the next request.
        let mut seen = Vec::new();
        let mut chunk = [0u8; 4096];
        while !seen.ends_with(b"0\r\n\r\n") {
            let read = stream.read(&mut chunk).map_err(|e| e.to_string())?;
            if read == 0 {
                return Err("the provider closed the connection".into());
            }
            seen.extend_from_slice(&chunk[..read]);
        }
    }
    Ok(stats)
}
