//! Incremental `didChange` on a large buffer: a `lines`-line document is opened, then `changes`
//! one-character insertions (each its own notification and its own write, spread over the file
//! like edits in several places) are sent as fast as the pipe takes them, then one request
//! whose answer the server can only give after applying them all (agentls applies document
//! changes in arrival order before anything else; lsp-server floor and lsp-ai: `shutdown`,
//! which lsp-ai answers after its document worker drained). Time per change is the span from
//! the first write to that answer, divided by `changes`. For agentls the buffer is then checked:
//! a prompt with a range as context must carry exactly the lines this client holds.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::PATIENCE;
use crate::lsp_wire::frame_json;
use crate::procfs;
use crate::provider::Provider;
use crate::request::short_reply;
use crate::stats::ms;
use crate::subjects::{Kind, Scratch, Subject, start};

#[derive(Debug, Clone, Default)]
pub struct ChangeRun {
    pub changes: usize,
    pub per_change_ms: f64,
    pub total_ms: f64,
    pub rss_open_kib: Option<u64>,
    pub rss_after_kib: Option<u64>,
    pub peak_rss_kib: Option<u64>,
    /// For agentls: whether the server's buffer matched this client's after the changes.
    pub verified: Option<Result<(), String>>,
}

fn change_line(k: usize, lines: usize) -> usize {
    (k * 7919) % lines
}

pub fn measure(subject: &Subject, lines: usize, changes: usize) -> Result<ChangeRun, String> {
    let scratch = Scratch::new().map_err(|e| e.to_string())?;
    let provider = Provider::start(short_reply()).map_err(|e| e.to_string())?;
    let (mut server, _) = start(subject, &scratch, &provider.base_url())?;
    let uri = scratch.file_uri("big.txt");
    let mut model: Vec<String> = (0..lines).map(|i| format!("line {i:05} of the large buffer")).collect();
    let text = model.join("\n") + "\n";
    server
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "plaintext", "version": 1, "text": text}}),
        )
        .map_err(|e| e.to_string())?;
    // Memory is read once the open is applied: after a request answered in order (lsp-ai
    // answers no request but `shutdown` and its own, so it gets time instead).
    if subject.kind == Kind::LspAi {
        std::thread::sleep(Duration::from_millis(300));
    } else {
        let (id, _) = server
            .send_request(
                "workspace/executeCommand",
                json!({"command": "agentls.listSessions", "arguments": [{}]}),
            )
            .map_err(|e| e.to_string())?;
        server.response(id, PATIENCE)?;
    }
    let pid = server.pid();
    let rss_open_kib = procfs::rss_kib(pid);

    let frames: Vec<Vec<u8>> = (0..changes)
        .map(|k| {
            let line = change_line(k, lines);
            model[line].insert(5, 'x');
            frame_json(&json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": k + 2},
                "contentChanges": [{"range": {"start": {"line": line, "character": 5}, "end": {"line": line, "character": 5}},
                    "text": "x"}]}}))
        })
        .collect();
    let began = Instant::now();
    for bytes in &frames {
        server.write(bytes).map_err(|e| e.to_string())?;
    }
    let sync = if subject.kind == Kind::Agentls {
        server.send_request(
            "workspace/executeCommand",
            json!({"command": "agentls.listSessions", "arguments": [{}]}),
        )
    } else {
        server.send_request("shutdown", Value::Null)
    };
    let (id, _) = sync.map_err(|e| e.to_string())?;
    let answered = server.response(id, PATIENCE + Duration::from_secs(60))?.at;
    let total = answered - began;
    let mut run = ChangeRun {
        changes,
        per_change_ms: ms(total) / changes as f64,
        total_ms: ms(total),
        rss_open_kib,
        rss_after_kib: procfs::rss_kib(pid),
        peak_rss_kib: procfs::peak_rss_kib(pid),
        verified: None,
    };
    if subject.kind == Kind::Agentls {
        run.verified = Some(verify(&mut server, &provider, &uri, &model, change_line(changes - 1, lines)));
        server.stop();
    } else {
        let _ = server.notify("exit", Value::Null);
        server.kill();
    }
    Ok(run)
}

/// Asks for a prompt with lines `line..line+3` as context and checks the model request carries
/// exactly those lines as this client holds them.
fn verify(
    server: &mut crate::client::Server,
    provider: &Provider,
    uri: &str,
    model: &[String],
    line: usize,
) -> Result<(), String> {
    let line = line.min(model.len() - 3);
    let range = json!({"start": {"line": line, "character": 0}, "end": {"line": line + 3, "character": 0}});
    server.command(
        "agentls.prompt",
        json!({"text": "check", "context": {"uri": uri, "range": range}}),
        PATIENCE,
    )?;
    let record = provider.wait_records(1, PATIENCE).pop().ok_or("no model request for the check")?;
    let expected = model[line..line + 3].join("\n");
    let escaped = serde_json::to_string(&expected).map_err(|e| e.to_string())?;
    if record.request.body_text().contains(&escaped[1..escaped.len() - 1]) {
        Ok(())
    } else {
        Err(format!(
            "the model request does not carry lines {}-{} as the client holds them",
            line + 1,
            line + 3
        ))
    }
}
