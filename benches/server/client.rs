//! The benchmarks' client of a server over its real stdio: a blocking driver (a reader thread per
//! process) that stamps every message with its arrival, taken when the `read` that completed it
//! returned, before any parsing. The LSP framing and the answers to server requests are the
//! tests' (`tests/support/lsp_wire.rs`: one codec, one editor policy — `workspace/applyEdit`
//! applied, `workspace/configuration` `null` per item, anything else `null`), answered at once
//! from the reader thread. [`Peer`] is the driver for any JSON-RPC framing: `Server` speaks LSP,
//! `acp.rs` newline-delimited ACP over the same driver.
//!
//! Why not the tests' async `LspClient` behind a blocking face: it was tried (arrival stamps at
//! the read, writes stamped by its writer task, on a runtime of its own) and measured against this
//! driver on the idle 2-core machine, bench code in the test profile, the same release agentls:
//! the eight-session streaming row's p99 went from 0.20–0.31 ms (4 of 5 runs) to 0.80–25 ms (all
//! 5 runs) and its p50 up by about 10–30 µs; the 10,000 deltas/s p99 from 0.21–0.37 ms to
//! 0.23–2.4 ms. Its reader task does more per message (every message kept twice for the tests'
//! waits) and waits for a runtime worker before its read returns, and that is what is measured.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::lsp_wire::{FrameDecoder, editor_answer, frame_json, response};

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

/// The child's input, shared with the reader thread that answers its requests; `None` once
/// closed (the child then sees the end of its input).
pub type Writer = Arc<Mutex<Option<ChildStdin>>>;

/// Writes `bytes` in one call; returns when they were handed over.
pub fn write_to(writer: &Writer, bytes: &[u8]) -> io::Result<Instant> {
    let mut writer = writer.lock().expect("child stdin");
    let stdin = writer
        .as_mut()
        .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "the child's input is closed"))?;
    let at = Instant::now();
    stdin.write_all(bytes)?;
    Ok(at)
}

/// A child process over piped stdio: `encode` frames what this side sends, a reader thread
/// (started by `spawn`) turns the output into [`Incoming`] messages.
pub struct Peer {
    pub child: Child,
    pub writer: Writer,
    inbox: Receiver<Incoming>,
    /// Messages read while waiting for something else, oldest first.
    pub seen: VecDeque<Incoming>,
    next_id: i64,
    encode: fn(&Value) -> Vec<u8>,
    /// When the process was spawned.
    pub spawned: Instant,
}

impl Peer {
    /// Spawns `command` with piped stdio (stderr to `stderr`) and runs `read` on its output in a
    /// thread named `name`.
    pub fn spawn(
        mut command: Command,
        stderr: Stdio,
        name: &str,
        encode: fn(&Value) -> Vec<u8>,
        read: impl FnOnce(ChildStdout, Writer, Sender<Incoming>) + Send + 'static,
    ) -> io::Result<Self> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr);
        let spawned = Instant::now();
        let mut child = command.spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let writer = Arc::new(Mutex::new(Some(stdin)));
        let (tx, inbox) = channel();
        let reader_writer = writer.clone();
        thread::Builder::new().name(name.into()).spawn(move || read(stdout, reader_writer, tx))?;
        Ok(Self { child, writer, inbox, seen: VecDeque::new(), next_id: 1, encode, spawned })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes raw bytes (already framed) in one call; returns when they were handed over.
    pub fn write(&self, bytes: &[u8]) -> io::Result<Instant> {
        write_to(&self.writer, bytes)
    }

    pub fn notify(&self, method: &str, params: Value) -> io::Result<()> {
        self.write(&(self.encode)(&json!({"jsonrpc": "2.0", "method": method, "params": params}))).map(|_| ())
    }

    /// Sends a request; returns its id and when it was written.
    pub fn send_request(&mut self, method: &str, params: Value) -> io::Result<(i64, Instant)> {
        let id = self.next_id;
        self.next_id += 1;
        let at = self.write(&(self.encode)(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        ))?;
        Ok((id, at))
    }

    /// The next message from the child, waiting at most `timeout`.
    fn next(&mut self, timeout: Duration) -> Result<Incoming, String> {
        match self.inbox.recv_timeout(timeout) {
            Ok(incoming) => Ok(incoming),
            Err(RecvTimeoutError::Timeout) => Err(format!("the child sent nothing for {timeout:?}")),
            Err(RecvTimeoutError::Disconnected) => Err("the child closed its output".into()),
        }
    }

    /// Waits for the response to request `id`; other messages go to `seen`.
    pub fn response(&mut self, id: i64, timeout: Duration) -> Result<Incoming, String> {
        let is_reply = |m: &Incoming| m.message.get("id") == Some(&json!(id)) && m.method().is_none();
        if let Some(at) = self.seen.iter().position(is_reply) {
            return Ok(self.seen.remove(at).expect("found"));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let incoming = self.next(deadline.saturating_duration_since(Instant::now()))?;
            if is_reply(&incoming) {
                return Ok(incoming);
            }
            self.seen.push_back(incoming);
        }
    }

    /// A request and its result with the times it was written and answered (an error response
    /// is an error).
    pub fn exchange(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<(Value, Instant, Instant), String> {
        let (id, sent) = self.send_request(method, params).map_err(|e| format!("{method}: {e}"))?;
        let reply = self.response(id, timeout).map_err(|e| format!("{method}: {e}"))?;
        match reply.message.get("error") {
            Some(error) => Err(format!("{method} failed: {error}")),
            None => Ok((reply.message.get("result").cloned().unwrap_or(Value::Null), sent, reply.at)),
        }
    }

    /// A request and its result (an error response is an error).
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<(Value, Instant), String> {
        self.exchange(method, params, timeout).map(|(result, _, at)| (result, at))
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

    /// Closes the child's input and waits up to `grace` for it to exit; whether it did.
    pub fn close(&mut self, grace: Duration) -> bool {
        self.writer.lock().expect("child stdin").take();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Polite end: `shutdown`, `exit`, then a kill if it lingers.
    pub fn stop(mut self) {
        let _ = self.request("shutdown", Value::Null, Duration::from_secs(5));
        let _ = self.notify("exit", Value::Null);
        if !self.close(Duration::from_secs(2)) {
            self.kill();
        }
    }

    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An LSP server over its stdio.
pub type Server = Peer;

/// The reader of an LSP server's output: frames decoded as they complete, each stamped with the
/// read that completed it, the server's requests answered at once by the editor policy.
fn read_lsp(mut stdout: ChildStdout, writer: Writer, inbox: Sender<Incoming>) {
    let mut decoder = FrameDecoder::default();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match stdout.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let at = Instant::now();
        decoder.feed(&chunk[..n]);
        while let Some(body) = decoder.next_frame() {
            let Ok(message) = serde_json::from_slice::<Value>(&body) else { continue };
            if let (Some(id), Some(method)) =
                (message.get("id"), message.get("method").and_then(Value::as_str))
            {
                let params = message.get("params").unwrap_or(&Value::Null);
                let _ = write_to(&writer, &frame_json(&response(id, editor_answer(method, params))));
            }
            if inbox.send(Incoming { at, message }).is_err() {
                return;
            }
        }
    }
}

impl Server {
    /// Spawns an LSP server (`command`) with piped stdio and starts reading its output.
    pub fn spawn_lsp(command: Command, stderr: Stdio) -> io::Result<Self> {
        Self::spawn(command, stderr, "lsp-reader", frame_json, read_lsp)
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
