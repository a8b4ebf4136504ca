//! Commands in the client's terminal (`terminal/*`): an execution environment in front of the
//! local one that runs each command through `terminal/create`, shows the terminal in the
//! command's tool call (`{type: "terminal", terminalId}`), waits for it (`terminal/wait_for_exit`)
//! within the command's timeout, stops it on a timeout or a cancelled turn (`terminal/kill`),
//! hands the model the terminal's output (`terminal/output`) and releases it (`terminal/release`).
//!
//! Invariants:
//! - Used only when the client advertised `terminal` in `initialize`; otherwise commands run
//!   locally (the layer is not there). Files, search and listing always go to the inner layer.
//! - The permission policy decided before a command reaches this layer, as for a local command.
//! - The client's terminal inherits the editor's environment, which the agent does not know: the
//!   command runs under `sh -c` after a prelude that applies the local shell's variable rule
//!   ([`crate::exec::shell_prelude`]: secret names always removed, the `env_policy` applied).
//! - The timeout is the local shell's; the output is capped at [`OUTPUT_LIMIT`] bytes (the
//!   client keeps the end), then truncated for the model as any shell output.
//! - Every terminal created is released, whatever happened to the command.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_client_protocol_schema::v1::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, SessionId, TerminalExitStatus, TerminalId,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
};
use tokio::sync::mpsc::UnboundedSender;

use super::port::ToPump;
use super::wire::Wire;
use crate::config::EnvPolicy;
use crate::exec::{ExecError, ExecRequest, ExecResult, ExecutionEnvironment, ShellLimits};

/// The most output a terminal keeps for the agent (its end).
pub const OUTPUT_LIMIT: u64 = 1024 * 1024;

pub struct ClientTerminal {
    inner: Arc<dyn ExecutionEnvironment>,
    wire: Arc<Wire>,
    session: SessionId,
    /// The session's pump: it shows a terminal in its call's updates.
    pump: UnboundedSender<ToPump>,
    env_policy: EnvPolicy,
    limits: ShellLimits,
}

impl ClientTerminal {
    pub fn new(
        inner: Arc<dyn ExecutionEnvironment>,
        wire: Arc<Wire>,
        session: &str,
        pump: UnboundedSender<ToPump>,
        env_policy: EnvPolicy,
        limits: ShellLimits,
    ) -> Self {
        Self { inner, wire, session: SessionId::new(session), pump, env_policy, limits }
    }

    /// `sh -c` with the prelude, then the command under the local shell's program.
    fn create_request(&self, request: &ExecRequest, cwd: &Path) -> CreateTerminalRequest {
        let script = format!(
            "{} if [ -x /bin/bash ]; then exec /bin/bash -c \"$1\"; else exec /bin/sh -c \"$1\"; fi",
            crate::exec::shell_prelude(self.env_policy)
        );
        let env = request
            .env_vars
            .iter()
            .map(|(k, v)| agent_client_protocol_schema::v1::EnvVariable::new(k.clone(), v.clone()))
            .collect();
        CreateTerminalRequest::new(self.session.clone(), "/bin/sh")
            .args(vec!["-c".into(), script, "agentls".into(), request.command.clone()])
            .env(env)
            .cwd(cwd.to_path_buf())
            .output_byte_limit(OUTPUT_LIMIT)
    }

    async fn call<R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: impl serde::Serialize,
    ) -> Result<R, ExecError> {
        self.wire
            .request::<R>(method, params)
            .await
            .map_err(|e| ExecError::Spawn(format!("the editor's terminal failed ({method}): {}", e.message)))
    }

    /// Runs the command in a terminal created for it; the terminal is released in the end.
    async fn run(&self, request: ExecRequest, cwd: &Path) -> Result<ExecResult, ExecError> {
        let timeout_ms = match request.timeout_ms {
            0 => self.limits.default_timeout_ms,
            requested => requested,
        }
        .min(self.limits.max_timeout_ms)
        .max(1);
        let started = Instant::now();
        let created: CreateTerminalResponse =
            self.call("terminal/create", self.create_request(&request, cwd)).await?;
        let id = created.terminal_id;
        if !request.call_id.is_empty() {
            let _ = self
                .pump
                .send(ToPump::Terminal { call_id: request.call_id.clone(), terminal_id: id.0.to_string() });
        }
        let result = self.follow(&id, &request, timeout_ms, started).await;
        let release = ReleaseTerminalRequest::new(self.session.clone(), id.clone());
        if let Err(e) = self.call::<ReleaseTerminalResponse>("terminal/release", release).await {
            tracing::warn!("{e}");
        }
        result
    }

    async fn follow(
        &self,
        id: &TerminalId,
        request: &ExecRequest,
        timeout_ms: u64,
        started: Instant,
    ) -> Result<ExecResult, ExecError> {
        let wait = WaitForTerminalExitRequest::new(self.session.clone(), id.clone());
        let (timed_out, cancelled, waited) = tokio::select! {
            exited = self.call::<WaitForTerminalExitResponse>("terminal/wait_for_exit", wait) => {
                (false, false, Some(exited?.exit_status))
            }
            () = tokio::time::sleep(Duration::from_millis(timeout_ms)) => (true, false, None),
            () = request.cancel.cancelled() => (false, true, None),
        };
        if waited.is_none() {
            let kill = KillTerminalRequest::new(self.session.clone(), id.clone());
            if let Err(e) = self.call::<KillTerminalResponse>("terminal/kill", kill).await {
                tracing::warn!("{e}");
            }
        }
        let output: TerminalOutputResponse = self
            .call("terminal/output", TerminalOutputRequest::new(self.session.clone(), id.clone()))
            .await?;
        let status = waited.or(output.exit_status);
        let mut stdout = String::new();
        if output.truncated {
            stdout.push_str(&format!("[only the last {OUTPUT_LIMIT} bytes of the output were kept]\n"));
        }
        stdout.push_str(&output.output);
        Ok(ExecResult {
            stdout,
            stderr: String::new(),
            exit_code: status.as_ref().map(exit_code).unwrap_or(-1),
            timed_out,
            cancelled,
            duration_ms: started.elapsed().as_millis() as u64,
            timeout_ms,
        })
    }
}

/// The exit code as the local shell reports it: `128 + signal` when a signal ended it.
fn exit_code(status: &TerminalExitStatus) -> i32 {
    if let Some(code) = status.exit_code {
        return i32::try_from(code).unwrap_or(-1);
    }
    status
        .signal
        .as_deref()
        .and_then(|name| {
            let name = if name.starts_with("SIG") { name.to_string() } else { format!("SIG{name}") };
            name.parse::<nix::sys::signal::Signal>().ok()
        })
        .map(|signal| 128 + signal as i32)
        .unwrap_or(-1)
}

crate::exec::wrapper_impl!(ClientTerminal, inner, {
    async fn exec_command(&self, request: ExecRequest) -> Result<ExecResult, ExecError> {
        let cwd = match &request.working_dir {
            Some(dir) => self.inner.resolve_path(dir)?,
            None => self.inner.working_directory().to_path_buf(),
        };
        if !cwd.is_dir() {
            return Err(ExecError::NotFound { path: cwd.display().to_string() });
        }
        self.run(request, &cwd).await
    }

    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        self.inner.write_file(path, content).await
    }

    async fn create_file(&self, path: &Path, content: &str, mode: Option<u32>) -> Result<(), ExecError> {
        self.inner.create_file(path, content, mode).await
    }

    async fn remove_file(&self, path: &Path) -> Result<(), ExecError> {
        self.inner.remove_file(path).await
    }
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_is_128_plus_its_number() {
        let mut status = TerminalExitStatus::new();
        status.signal = Some("SIGKILL".into());
        assert_eq!(exit_code(&status), 137);
        status.signal = Some("TERM".into());
        assert_eq!(exit_code(&status), 143);
        status.exit_code = Some(3);
        assert_eq!(exit_code(&status), 3);
    }
}
