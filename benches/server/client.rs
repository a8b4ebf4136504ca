//! An independent LSP client over the server's real stdio: Content-Length framing, JSON-RPC,
//! and an arrival timestamp on every message (taken when the `read` that completed it returned,
//! before any parsing). Requests from the server are answered at once from the reader thread, the
//! way an editor would: `workspace/applyEdit` is applied (`applied: true`), `workspace/configuration`
//! gets `null` per item, anything else `null`.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::provider::content_length;

/// A message from the server and when it arrived.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub at: Instant,
    pub message: Value,
}

impl Incoming {
    pub fn method(&self) -> Option<&str> {
        self.message.get("method").and_then(Value::as_str)
    }
}

pub struct Server {
    child: Child,
    /// `None` once closed (the server then sees the end of its input).
    writer: Arc<Mutex<Option<ChildStdin>>>,
    inbox: Receiver<Incoming>,
    /// Messages read while waiting for something else, oldest first.
    pub seen: VecDeque<Incoming>,
    next_id: i64,
    /// When the process was spawned.
    pub spawned: Instant,
}

pub fn frame(body: &Value) -> Vec<u8> {
    let body = body.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn answer(message: &Value) -> Option<Value> {
    let id = message.get("id")?;
    let method = message.get("method")?.as_str()?;
    let result = match method {
        "workspace/applyEdit" => json!({"applied": true}),
        "workspace/configuration" => {
            let items = message.pointer("/params/items").and_then(Value::as_array).map_or(1, Vec::len);
            Value::Array(vec![Value::Null; items])
        }
        _ => Value::Null,
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// Cuts the complete frames off the front of `buffer`.
fn frames(buffer: &mut Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(end) = memchr::memmem::find(&buffer[start..], b"\r\n\r\n") {
        let length = content_length(&String::from_utf8_lossy(&buffer[start..start + end]));
        let body = start + end + 4;
        if buffer.len() < body + length {
            break;
        }
        out.push(buffer[body..body + length].to_vec());
        start = body + length;
    }
    buffer.drain(..start);
    out
}

fn read_loop(mut stdout: impl Read, writer: Arc<Mutex<Option<ChildStdin>>>, inbox: Sender<Incoming>) {
    let mut buffer = Vec::with_capacity(1 << 20);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match stdout.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let at = Instant::now();
        buffer.extend_from_slice(&chunk[..n]);
        for body in frames(&mut buffer) {
            let Ok(message) = serde_json::from_slice::<Value>(&body) else { continue };
            if let Some(reply) = answer(&message)
                && let Some(stdin) = writer.lock().expect("server stdin").as_mut()
            {
                let _ = stdin.write_all(&frame(&reply));
            }
            if inbox.send(Incoming { at, message }).is_err() {
                return;
            }
        }
    }
}

impl Server {
    /// Spawns `command` with piped stdio (stderr to `stderr`) and starts reading its output.
    pub fn spawn(mut command: Command, stderr: Stdio) -> io::Result<Self> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr);
        let spawned = Instant::now();
        let mut child = command.spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let writer = Arc::new(Mutex::new(Some(stdin)));
        let (tx, inbox) = channel();
        let reader_writer = writer.clone();
        thread::Builder::new()
            .name("lsp-reader".into())
            .spawn(move || read_loop(stdout, reader_writer, tx))?;
        Ok(Self { child, writer, inbox, seen: VecDeque::new(), next_id: 1, spawned })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes raw bytes (already framed) in one call; returns when they were handed over.
    pub fn write(&self, bytes: &[u8]) -> io::Result<Instant> {
        let mut writer = self.writer.lock().expect("server stdin");
        let stdin = writer
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "the server's input is closed"))?;
        let at = Instant::now();
        stdin.write_all(bytes)?;
        Ok(at)
    }

    pub fn notify(&self, method: &str, params: Value) -> io::Result<()> {
        self.write(&frame(&json!({"jsonrpc": "2.0", "method": method, "params": params}))).map(|_| ())
    }

    /// Sends a request; returns its id and when it was written.
    pub fn send_request(&mut self, method: &str, params: Value) -> io::Result<(i64, Instant)> {
        let id = self.next_id;
        self.next_id += 1;
        let at =
            self.write(&frame(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})))?;
        Ok((id, at))
    }

    /// The next message from the server, waiting at most `timeout`.
    fn next(&mut self, timeout: Duration) -> Result<Incoming, String> {
        match self.inbox.recv_timeout(timeout) {
            Ok(incoming) => Ok(incoming),
            Err(RecvTimeoutError::Timeout) => Err(format!("the server sent nothing for {timeout:?}")),
            Err(RecvTimeoutError::Disconnected) => Err("the server closed its output".into()),
        }
    }

    /// Waits for the response to request `id`; other messages go to `seen`.
    pub fn response(&mut self, id: i64, timeout: Duration) -> Result<Incoming, String> {
        let deadline = Instant::now() + timeout;
        if let Some(at) =
            self.seen.iter().position(|m| m.message.get("id") == Some(&json!(id)) && m.method().is_none())
        {
            return Ok(self.seen.remove(at).expect("found"));
        }
        loop {
            let incoming = self.next(deadline.saturating_duration_since(Instant::now()))?;
            if incoming.message.get("id") == Some(&json!(id)) && incoming.method().is_none() {
                return Ok(incoming);
            }
            self.seen.push_back(incoming);
        }
    }

    /// A request and its result (an error response is an error).
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<(Value, Instant), String> {
        let (id, _) = self.send_request(method, params).map_err(|e| format!("{method}: {e}"))?;
        let reply = self.response(id, timeout)?;
        match reply.message.get("error") {
            Some(error) => Err(format!("{method} failed: {error}")),
            None => Ok((reply.message.get("result").cloned().unwrap_or(Value::Null), reply.at)),
        }
    }

    /// `workspace/executeCommand` with one object argument.
    pub fn command(&mut self, command: &str, argument: Value, timeout: Duration) -> Result<Value, String> {
        self.request(
            "workspace/executeCommand",
            json!({"command": command, "arguments": [argument]}),
            timeout,
        )
        .map(|(result, _)| result)
    }

    /// Reads messages into `seen` until one satisfies `done` (it is kept too).
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Incoming) -> bool,
    ) -> Result<Instant, String> {
        if let Some(found) = self.seen.iter().find(|m| done(m)) {
            return Ok(found.at);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let incoming = self
                .next(deadline.saturating_duration_since(Instant::now()))
                .map_err(|e| format!("waiting for {what}: {e}"))?;
            let hit = done(&incoming);
            let at = incoming.at;
            self.seen.push_back(incoming);
            if hit {
                return Ok(at);
            }
        }
    }

    /// Polite end: `shutdown`, `exit`, then a kill if it lingers.
    pub fn stop(mut self) {
        let _ = self.request("shutdown", Value::Null, Duration::from_secs(5));
        let _ = self.notify("exit", Value::Null);
        self.writer.lock().expect("server stdin").take();
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Events of one kind for one session: `(arrival, data)`.
pub fn events<'a>(
    seen: impl IntoIterator<Item = &'a Incoming>,
    session: &str,
    kind: &str,
) -> Vec<(Instant, Value)> {
    seen.into_iter()
        .filter(|m| m.method() == Some("agentls/event"))
        .filter_map(|m| {
            let params = m.message.get("params")?;
            (params.get("sessionId")?.as_str()? == session && params.get("kind")?.as_str()? == kind)
                .then(|| (m.at, params.get("data").cloned().unwrap_or(Value::Null)))
        })
        .collect()
}
