//! Concurrent sessions streaming and editing: `sessions` sessions of one server are prompted at
//! once; each model reply streams `count` text deltas at `rate` per second and then reads a file,
//! the next reply edits it (`edit_file`, approval `auto`, so the server sends
//! `workspace/applyEdit`, which the client applies), the last one answers. Measured: the added
//! latency of every delta (matched per session as in `stream`), lost deltas, edits applied, the
//! time until every turn ended, peak and final resident memory, server CPU.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::PATIENCE;
use crate::client::Incoming;
use crate::delivery::{StreamRun, match_deltas};
use crate::procfs;
use crate::provider::{Provider, RecordedRequest, Turn, words};
use crate::stream::is_event;
use crate::subjects::{Scratch, Subject, start};

#[derive(Debug, Clone, Default)]
pub struct SessionsRun {
    pub stream: StreamRun,
    pub edits_applied: usize,
    pub edits_ok: usize,
    pub wall: Duration,
    pub peak_rss_kib: Option<u64>,
    pub rss_after_kib: Option<u64>,
    pub cpu: Duration,
}

fn session_index(text: &str) -> usize {
    text.split("bench session ").nth(1).and_then(|rest| rest.split(':').next()?.parse().ok()).unwrap_or(0)
}

/// The first word of session `i`'s streamed text.
fn stream_prefix(i: usize) -> String {
    format!("s{i}w")
}

fn script(rate: f64, count: usize) -> impl Fn(&RecordedRequest) -> Turn + Send + Sync + 'static {
    move |request: &RecordedRequest| {
        let text = request.body_text();
        let i = session_index(&text);
        if text.contains(&format!("toolu_edit_{i}\"")) {
            Turn::new().text(&format!("edited s{i}.txt"))
        } else if text.contains(&format!("toolu_read_{i}\"")) {
            let input =
                json!({"file_path": format!("s{i}.txt"), "old_string": "original", "new_string": "edited"});
            Turn::new().tool_call(&format!("toolu_edit_{i}"), "edit_file", input)
        } else {
            let input = json!({"file_path": format!("s{i}.txt")});
            words(&stream_prefix(i), count, rate).tool_call(&format!("toolu_read_{i}"), "read_file", input)
        }
    }
}

pub fn measure(agentls: &Subject, sessions: usize, rate: f64, count: usize) -> Result<SessionsRun, String> {
    let scratch = Scratch::new().map_err(|e| e.to_string())?;
    for i in 0..sessions {
        std::fs::write(
            scratch.workspace().join(format!("s{i}.txt")),
            format!("session {i}: original line\n"),
        )
        .map_err(|e| e.to_string())?;
    }
    let provider = Provider::start(script(rate, count)).map_err(|e| e.to_string())?;
    let (mut server, _) = start(agentls, &scratch, &provider.base_url())?;
    let mut ids = Vec::new();
    for _ in 0..sessions {
        let session = server.command("agentls.newSession", json!({}), PATIENCE)?;
        ids.push(session["sessionId"].as_str().ok_or("no sessionId")?.to_string());
    }
    let pid = server.pid();
    let cpu = procfs::cpu(pid);
    let began = Instant::now();
    let mut pending = Vec::new();
    for (i, session) in ids.iter().enumerate() {
        let params = json!({"command": "agentls.prompt",
            "arguments": [{"sessionId": session, "text": format!("bench session {i}: stream, then edit s{i}.txt")}]});
        pending.push(server.send_request("workspace/executeCommand", params).map_err(|e| e.to_string())?.0);
    }
    for id in pending {
        server.response(id, PATIENCE)?;
    }
    let patience = PATIENCE + Duration::from_secs_f64(count as f64 / rate * 20.0);
    for session in &ids {
        server.wait_for("every turn's end", patience, |m| is_event(m, session, "processing_end"))?;
    }
    let wall = began.elapsed();
    let cpu = procfs::cpu(pid) - cpu;
    let (peak_rss_kib, rss_after_kib) = (procfs::peak_rss_kib(pid), procfs::rss_kib(pid));

    let records = provider.wait_records(sessions * 3, PATIENCE);
    let seen: Vec<Incoming> = server.seen.drain(..).collect();
    let mut run = SessionsRun { wall, peak_rss_kib, rss_after_kib, cpu, ..SessionsRun::default() };
    run.edits_applied = seen.iter().filter(|m| m.method() == Some("workspace/applyEdit")).count();
    let mut combined = StreamRun { identical: true, ..StreamRun::default() };
    for (i, session) in ids.iter().enumerate() {
        let sent = records
            .iter()
            .find(|r| r.deltas.first().is_some_and(|(text, _)| text.starts_with(&stream_prefix(i))))
            .ok_or_else(|| format!("the provider recorded no stream for session {i}"))?;
        let arrived: Vec<(Instant, String)> = crate::client::events(&seen, session, "assistant_text_delta")
            .into_iter()
            .map(|(at, data)| (at, data.get("delta").and_then(Value::as_str).unwrap_or_default().to_string()))
            .collect();
        // The session's answer also holds the last reply's text; only the streamed part counts.
        let streamed: String = sent.deltas.iter().map(|d| d.0.as_str()).collect();
        let mut kept = Vec::new();
        let mut length = 0;
        for (at, text) in arrived {
            if length >= streamed.len() {
                break;
            }
            length += text.len();
            kept.push((at, text));
        }
        let one = match_deltas(&sent.deltas, &kept);
        combined.sent += one.sent;
        combined.lost += one.lost;
        combined.identical &= one.identical;
        combined.notifications += one.notifications;
        combined.latencies_ms.extend(one.latencies_ms);
        combined.provider_behind_ms = combined.provider_behind_ms.max(crate::stats::ms(sent.behind));
        run.edits_ok += crate::client::events(&seen, session, "tool_call_end")
            .iter()
            .filter(|(_, data)| data["tool_name"] == "edit_file" && data["status"] == "ok")
            .count();
    }
    combined.cpu_us_per_delta = Some(cpu.as_secs_f64() * 1e6 / combined.sent.max(1) as f64);
    run.stream = combined;
    server.stop();
    Ok(run)
}
