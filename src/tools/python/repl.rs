//! One persistent Python REPL: a `python3` child running `driver.py` (shipped in the binary),
//! spoken to with one JSON line per request and per reply.
//!
//! Invariants:
//! - One request at a time; a reply always answers the latest request.
//! - A call that outlives its timeout is interrupted (SIGINT → KeyboardInterrupt) and the REPL
//!   keeps its state; one that ignores the interrupt gets the REPL killed (state lost, said so).
//! - The child lives in its own process group, spawned through the execution environment:
//!   dropping the REPL or the environment's `cleanup()` kills the group, so nothing is orphaned.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use crate::exec::{ChildProcess, ExecutionEnvironment, ProcessRequest};

/// The driver script, passed to the interpreter with `-c`.
const DRIVER: &str = include_str!("driver.py");
/// How long the interpreter has to start and import the preloaded modules.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long interrupted code has to stop before the REPL is killed.
const INTERRUPT_GRACE: Duration = Duration::from_secs(3);

#[derive(Serialize)]
struct Request<'a> {
    code: &'a str,
    output_limit: usize,
}

/// The driver's answer to one request.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct Reply {
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    /// The traceback (or syntax error) of an exception the code raised.
    #[serde(default)]
    pub error: Option<String>,
    /// The code raised `AgentError`: the reason and its cause.
    #[serde(default)]
    pub agent_error: Option<String>,
    /// A top-level `return` ran: `value` is the value (a `str` as is, others as `repr`).
    #[serde(default)]
    pub returned: bool,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub interrupted: bool,
}

/// Why a request got no reply.
#[derive(Debug, thiserror::Error)]
pub enum ReplError {
    #[error("cannot start the Python REPL: {0}")]
    Start(String),
    #[error("the code did not stop after an interrupt; the REPL was restarted and its state is lost")]
    Killed,
    #[error("the Python REPL exited unexpectedly ({0}); it restarts with an empty state on the next call")]
    Died(String),
}

/// A running REPL.
pub struct Repl {
    process: ChildProcess,
    stdin: ChildStdin,
    replies: Lines<BufReader<ChildStdout>>,
}

impl Repl {
    /// Starts `python` with the driver through `env` (in its working directory).
    pub async fn start(env: &dyn ExecutionEnvironment, python: &str) -> Result<Self, ReplError> {
        let request = ProcessRequest {
            program: python.to_string(),
            args: vec!["-u".into(), "-c".into(), DRIVER.into()],
            working_dir: None,
            env_vars: BTreeMap::from([("PYTHONIOENCODING".into(), "utf-8".into())]),
        };
        let mut process = env.spawn_process(request).await.map_err(|e| ReplError::Start(e.to_string()))?;
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (process.stdin.take(), process.stdout.take(), process.stderr.take())
        else {
            return Err(ReplError::Start("the interpreter's standard streams are not available".into()));
        };
        // Output written straight to the process's file descriptors (child processes) is
        // drained so the REPL never blocks on a full pipe.
        tokio::spawn(async move {
            let mut sink = vec![0u8; 16 * 1024];
            while matches!(stderr.read(&mut sink).await, Ok(n) if n > 0) {}
        });
        let mut replies = BufReader::new(stdout).lines();
        match tokio::time::timeout(START_TIMEOUT, replies.next_line()).await {
            Ok(Ok(Some(line))) if line.contains("\"ready\"") => {}
            Ok(Ok(Some(line))) => return Err(ReplError::Start(format!("unexpected first line: {line}"))),
            Ok(Ok(None)) | Ok(Err(_)) => {
                return Err(ReplError::Start(format!(
                    "{python} exited at once; is Python 3.8 or later installed?"
                )));
            }
            Err(_) => {
                return Err(ReplError::Start(format!("{python} did not start within {START_TIMEOUT:?}")));
            }
        }
        Ok(Self { process, stdin, replies })
    }

    /// The REPL's process id (its process group).
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Runs `code`; after `timeout` the code is interrupted. `cancel` interrupts it too.
    pub async fn run(
        &mut self,
        code: &str,
        output_limit: usize,
        timeout: Duration,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Reply, ReplError> {
        let mut line = serde_json::to_string(&Request { code, output_limit }).unwrap_or_default();
        line.push('\n');
        if let Err(e) = self.stdin.write_all(line.as_bytes()).await {
            return Err(ReplError::Died(e.to_string()));
        }
        let _ = self.stdin.flush().await;
        let first = tokio::select! {
            reply = self.replies.next_line() => Some(reply),
            _ = tokio::time::sleep(timeout) => None,
            _ = cancel.cancelled() => None,
        };
        let reply = match first {
            Some(reply) => reply,
            None => {
                self.process.interrupt();
                match tokio::time::timeout(INTERRUPT_GRACE, self.replies.next_line()).await {
                    Ok(reply) => reply,
                    Err(_) => return Err(ReplError::Killed),
                }
            }
        };
        match reply {
            Ok(Some(line)) => {
                serde_json::from_str(&line).map_err(|e| ReplError::Died(format!("bad reply: {e}")))
            }
            Ok(None) => Err(ReplError::Died(self.exit_note())),
            Err(e) => Err(ReplError::Died(e.to_string())),
        }
    }

    fn exit_note(&mut self) -> String {
        if self.process.has_exited() { "it exited".into() } else { "its output ended".into() }
    }

    /// Ends the REPL (SIGTERM, then SIGKILL).
    pub async fn shutdown(self) {
        self.process.terminate().await;
    }
}
