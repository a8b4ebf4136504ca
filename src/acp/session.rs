//! One session this agent hosts: its handle, the prompt it is running and what that prompt waits
//! for, and what its commands need (its files, its MCP servers' prompts). Shared by the method
//! families (`sessions.rs`, `prompt.rs`, `commands.rs`) and the pump (`updates.rs`).
//!
//! Invariant: a prompt's waiter is answered once, by the pump or by `Turns::cancelled`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{SessionConfigOption, SessionModeState, StopReason};
use rmcp::model::Prompt;
use tokio::sync::oneshot;

use super::modes;
use crate::config::ProviderKind;
use crate::mcp::Server;
use crate::session::{ConfigChange, SessionHandle};

/// What a prompt waits for.
pub enum Waiter {
    /// The end of input number `input` (`processing_end`).
    Input { input: u64, reply: oneshot::Sender<Result<StopReason, String>> },
    /// A `/compact`: its `compaction` (or the warning that there was nothing to summarise).
    Compact { reply: oneshot::Sender<Result<StopReason, String>> },
}

/// Inputs submitted and started, and what the running prompt waits for.
#[derive(Default)]
pub struct Turns {
    pub submitted: u64,
    pub started: u64,
    pub waiter: Option<Waiter>,
    /// A `session/cancel` waits for its marker (a `config_changed` the handle emitted after it):
    /// every input that started before the cancel has announced itself by then.
    pub cancel_marker: bool,
}

impl Turns {
    /// At the cancel's marker: a prompt whose input never started (a cancel drops the inputs
    /// queued before it) or whose compaction was dropped ends now, as cancelled.
    pub fn cancelled(&mut self) {
        let unstarted = match &self.waiter {
            Some(Waiter::Input { input, .. }) => *input > self.started,
            Some(Waiter::Compact { .. }) => true,
            None => false,
        };
        self.submitted = self.started;
        if unstarted && let Some(Waiter::Input { reply, .. } | Waiter::Compact { reply }) = self.waiter.take()
        {
            let _ = reply.send(Ok(StopReason::Cancelled));
        }
    }
}

/// A session this agent hosts.
pub struct AcpSession {
    pub id: String,
    pub cwd: PathBuf,
    pub handle: SessionHandle,
    /// Who serves the session's model: what the model takes depends on it.
    pub provider: ProviderKind,
    pub turns: Mutex<Turns>,
    /// Whether `session_info_update` gave the session its title.
    pub titled: AtomicBool,
    /// Fires when the pump has seen the session end.
    pub ended: Mutex<Option<oneshot::Receiver<()>>>,
    /// Where its tools run and its files are written (the client's layers over the disk), as
    /// `/undo` writes.
    pub env: Arc<dyn crate::exec::ExecutionEnvironment>,
    /// Its MCP servers (their prompts are commands).
    pub mcp: Option<Arc<crate::mcp::McpTools>>,
    /// Its MCP servers' prompts as commands, once listed (`commands.rs`).
    pub prompts: tokio::sync::OnceCell<Vec<PromptCommand>>,
}

impl AcpSession {
    pub fn turns(&self) -> std::sync::MutexGuard<'_, Turns> {
        self.turns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `session/cancel`: the turn stops. Whether the prompt's input had started is known once
    /// the events emitted before the cancel are seen: the pump settles it at the marker.
    pub fn cancel(&self) {
        self.handle.cancel();
        self.turns().cancel_marker = true;
        self.handle.configure(ConfigChange::default());
    }

    pub fn close(&self) {
        self.cancel();
        self.handle.close();
    }

    /// Waits until the session's pump saw it end.
    pub async fn ended(&self) {
        let ended = self.ended.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(ended) = ended {
            let _ = ended.await;
        }
    }

    /// The mode, model and effort as they are now.
    pub fn current(&self) -> modes::Current {
        let config = self.handle.config();
        modes::Current {
            approval: config.approval,
            model: config.model,
            effort: config.reasoning_effort,
            provider: self.provider,
        }
    }

    pub fn config_options(&self) -> Vec<SessionConfigOption> {
        modes::config_options(&self.current())
    }

    pub fn mode_state(&self) -> SessionModeState {
        modes::mode_state(self.handle.config().approval)
    }
}

/// An MCP prompt offered as a command.
pub struct PromptCommand {
    pub name: String,
    pub server: Arc<Server>,
    pub prompt: Prompt,
}
