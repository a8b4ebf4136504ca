//! Streaming latency: the fake provider streams text deltas at a fixed rate and timestamps each
//! one as it sends it; the client timestamps each `agentls/event` `assistant_text_delta` as it
//! arrives. The server may merge deltas that queued up (protocol.md, "Events"), so a provider
//! delta counts as delivered by the first notification that brings the text up to its end: its
//! latency is that notification's arrival minus the delta's send time. The floor is the same
//! client reading the same SSE stream from the provider itself.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::PATIENCE;
use crate::client::{Incoming, events};
use crate::delivery::{StreamRun, match_deltas};
use crate::procfs;
use crate::provider::{Provider, RecordedRequest, Turn, streaming_request, words};
use crate::subjects::{Scratch, Subject, start};

fn text_deltas(seen: &[Incoming], session: &str) -> Vec<(Instant, String)> {
    events(seen, session, "assistant_text_delta")
        .into_iter()
        .map(|(at, data)| (at, data.get("delta").and_then(Value::as_str).unwrap_or_default().to_string()))
        .collect()
}

pub fn is_event(message: &Incoming, session: &str, kind: &str) -> bool {
    message.method() == Some("agentls/event")
        && message.message.pointer("/params/sessionId").and_then(Value::as_str) == Some(session)
        && message.message.pointer("/params/kind").and_then(Value::as_str) == Some(kind)
}

const WARM_UP: &str = "bench: warm up";
const MEASURE: &str = "bench: measure";

fn script(rate: f64, count: usize) -> impl Fn(&RecordedRequest) -> Turn + Send + Sync + 'static {
    // A later request carries the earlier prompts too: the measured prompt is looked for first.
    move |request: &RecordedRequest| {
        if request.body_text().contains(MEASURE) { words("w", count, rate) } else { words("u", 200, 2000.0) }
    }
}

/// What `arrived` delivered of the measured stream, once the provider recorded `responses`.
fn measured(
    provider: &Provider,
    responses: usize,
    arrived: &[(Instant, String)],
) -> Result<StreamRun, String> {
    let record = provider
        .wait_records(responses, PATIENCE)
        .into_iter()
        .find(|r| r.request.body_text().contains(MEASURE))
        .ok_or("the provider recorded no measured stream")?;
    let mut run = match_deltas(&record.deltas, arrived);
    run.provider_behind_ms = crate::stats::ms(record.behind);
    Ok(run)
}

/// `count` deltas at `rate` per second through agentls, after a short warm-up turn in the same
/// session (so the first request's one-time costs are not in the numbers).
pub fn through_agentls(agentls: &Subject, rate: f64, count: usize) -> Result<StreamRun, String> {
    let scratch = Scratch::new().map_err(|e| e.to_string())?;
    let provider = Provider::start(script(rate, count)).map_err(|e| e.to_string())?;
    let (mut server, _) = start(agentls, &scratch, &provider.base_url())?;
    let session = server.command("agentls.newSession", json!({}), PATIENCE)?;
    let session =
        session["sessionId"].as_str().ok_or("agentls.newSession returned no sessionId")?.to_string();
    server.command("agentls.prompt", json!({"sessionId": session, "text": WARM_UP}), PATIENCE)?;
    server.wait_for("the warm-up turn's end", PATIENCE, |m| is_event(m, &session, "processing_end"))?;
    server.seen.clear();
    provider.take();

    let pid = server.pid();
    let (cpu, switches) = (procfs::cpu(pid), procfs::context_switches(pid));
    server.command("agentls.prompt", json!({"sessionId": session, "text": MEASURE}), PATIENCE)?;
    let patience = PATIENCE + Duration::from_secs_f64(count as f64 / rate * 20.0);
    server.wait_for("the measured turn's end", patience, |m| is_event(m, &session, "processing_end"))?;
    let (cpu, switches) = (procfs::cpu(pid) - cpu, procfs::context_switches(pid) - switches);

    let seen: Vec<Incoming> = server.seen.drain(..).collect();
    let mut run = measured(&provider, 1, &text_deltas(&seen, &session))?;
    run.cpu_us_per_delta = Some(cpu.as_secs_f64() * 1e6 / count as f64);
    run.switches_per_delta = Some(switches as f64 / count as f64);
    server.stop();
    Ok(run)
}

/// Reads the body of a chunked HTTP response as SSE events (`data` payloads).
#[derive(Default)]
struct SseReader {
    raw: Vec<u8>,
    body: Vec<u8>,
    headers_done: bool,
}

impl SseReader {
    /// Feeds bytes; returns the `data` of every complete event.
    fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        self.raw.extend_from_slice(bytes);
        if !self.headers_done {
            let Some(end) = memchr::memmem::find(&self.raw, b"\r\n\r\n") else { return Vec::new() };
            self.raw.drain(..end + 4);
            self.headers_done = true;
        }
        // De-chunk what is complete.
        while let Some(line_end) = memchr::memmem::find(&self.raw, b"\r\n") {
            let size =
                usize::from_str_radix(String::from_utf8_lossy(&self.raw[..line_end]).trim(), 16).unwrap_or(0);
            if self.raw.len() < line_end + 2 + size + 2 {
                break;
            }
            self.body.extend_from_slice(&self.raw[line_end + 2..line_end + 2 + size]);
            self.raw.drain(..line_end + 2 + size + 2);
        }
        let mut data = Vec::new();
        while let Some(end) = memchr::memmem::find(&self.body, b"\n\n") {
            let event = String::from_utf8_lossy(&self.body[..end]).into_owned();
            self.body.drain(..end + 2);
            data.extend(event.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_string));
        }
        data
    }
}

/// Sends one streaming request on `stream` and reads its text deltas, timestamped per read.
fn read_direct(stream: &mut TcpStream, prompt: &str) -> Result<Vec<(Instant, String)>, String> {
    stream.write_all(streaming_request(prompt).as_bytes()).map_err(|e| e.to_string())?;
    let mut reader = SseReader::default();
    let mut chunk = vec![0u8; 1 << 16];
    let mut out = Vec::new();
    loop {
        let n = stream.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the provider closed the stream early".into());
        }
        let at = Instant::now();
        for data in reader.feed(&chunk[..n]) {
            let Ok(event) = serde_json::from_str::<Value>(&data) else { continue };
            match event.get("type").and_then(Value::as_str) {
                Some("content_block_delta") => {
                    if let Some(text) = event.pointer("/delta/text").and_then(Value::as_str) {
                        out.push((at, text.to_string()));
                    }
                }
                Some("message_stop") => return Ok(out),
                _ => {}
            }
        }
    }
}

/// The floor: the client reads the provider's stream itself (warm-up request first, same
/// connection).
pub fn direct(rate: f64, count: usize) -> Result<StreamRun, String> {
    let provider = Provider::start(script(rate, count)).map_err(|e| e.to_string())?;
    let mut stream = TcpStream::connect(provider.addr()).map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    read_direct(&mut stream, WARM_UP)?;
    provider.wait_records(1, PATIENCE);
    let arrived = read_direct(&mut stream, MEASURE)?;
    measured(&provider, 1, &arrived)
}

/// A middle level: agentls's own model client (`agentls::llm::Client`, the server's SSE reading
/// and decoding) in this process on a current-thread runtime, without the session, the event
/// pump or the LSP wire. Its deltas are timestamped as the client yields them.
pub fn in_process_client(rate: f64, count: usize) -> Result<StreamRun, String> {
    use agentls::config::{ProviderKind, ProviderSettings, Secret};
    use agentls::llm::{Client, Message, Request, StreamEvent};
    use futures::StreamExt;

    let provider = Provider::start(script(rate, count)).map_err(|e| e.to_string())?;
    let client = Client::new(ProviderSettings {
        kind: ProviderKind::Anthropic,
        model: "claude-bench".into(),
        base_url: provider.base_url(),
        api_key: Some(Secret::new("sk-ant-bench-not-a-key")),
        api_key_var: None,
        chosen_by: "bench".into(),
        network: Default::default(),
    })
    .map_err(|e| e.to_string())?;
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let arrived = runtime.block_on(async {
        let mut out = Vec::new();
        for prompt in [WARM_UP, MEASURE] {
            out.clear();
            let request = Request::new("claude-bench", vec![Message::user(prompt)]);
            let mut events = client.stream(&request).await.map_err(|e| e.to_string())?;
            while let Some(event) = events.next().await {
                if let StreamEvent::TextDelta(text) = event.map_err(|e| e.to_string())? {
                    out.push((Instant::now(), text));
                }
            }
        }
        Ok::<_, String>(out)
    })?;
    measured(&provider, 2, &arrived)
}
