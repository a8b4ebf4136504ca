//! `agentls exec`'s editor port: edits go to the disk, permission questions to the terminal.
//!
//! The permission policy (`crate::policy`) has already decided everything it can; what reaches
//! this port needs a person. With a terminal on both stdin and stderr the question is asked
//! there; without one the command is refused with a message that says how to allow it, since
//! nobody could answer.
//!
//! Invariant: the question and its answer use stderr and stdin only (stdout carries the answer
//! text or the JSON events), and the status spinner is hidden while it waits.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use indicatif::ProgressBar;

use crate::policy::rule_for;
use crate::workspace::{
    ChangeOutcome, ChangeSet, DiskPort, EditorPort, PermissionDecision, PermissionRequest, PortError,
};

pub struct TerminalPort {
    disk: DiskPort,
    /// The run's spinner, hidden while a question waits.
    status: Option<ProgressBar>,
    /// Whether stdin and stderr are a terminal (decided once, at the start).
    interactive: bool,
}

impl TerminalPort {
    pub fn new(disk: DiskPort, status: Option<ProgressBar>) -> Self {
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        Self { disk, status, interactive }
    }
}

#[async_trait]
impl EditorPort for TerminalPort {
    async fn propose(&self, change: ChangeSet) -> Result<ChangeOutcome, PortError> {
        self.disk.propose(change).await
    }

    async fn ask_permission(&self, request: PermissionRequest) -> PermissionDecision {
        if !self.interactive {
            return refuse(&request);
        }
        let status = self.status.clone();
        let asked = tokio::task::spawn_blocking(move || match status {
            Some(bar) => bar.suspend(|| ask(&request)),
            None => ask(&request),
        })
        .await;
        asked.unwrap_or_else(|_| PermissionDecision::Deny {
            feedback: Some("the question could not be asked".into()),
        })
    }

    async fn save(&self, paths: &[PathBuf]) -> Result<(), PortError> {
        self.disk.save(paths).await
    }
}

/// Asks on the terminal; an empty answer, end of input or `n` denies, other text denies with
/// that text as the reason the model reads.
fn ask(request: &PermissionRequest) -> PermissionDecision {
    let mut stderr = std::io::stderr().lock();
    if let Some(call) = &request.mcp {
        let arguments = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
        let _ = write!(
            stderr,
            "\nagentls wants to call the tool `{}` of the MCP server `{}` with:\n{arguments}\n\
             Allow? [y] once, [a] always (this tool of this server), [N] no, or type a reason to refuse: ",
            call.tool, call.server
        );
        let _ = stderr.flush();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).is_err() {
            line.clear();
        }
        return decision_from_answer(&line);
    }
    let _ = write!(
        stderr,
        "\nagentls wants to run: {}\n  in {}\nAllow? [y] once, [a] always (`{}`), [N] no, or type a reason to refuse: ",
        request.command,
        request.cwd.display(),
        rule_for(&request.command)
    );
    let _ = stderr.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        line.clear();
    }
    decision_from_answer(&line)
}

fn decision_from_answer(answer: &str) -> PermissionDecision {
    match answer.trim() {
        "y" | "Y" | "yes" => PermissionDecision::AllowOnce,
        "a" | "A" | "always" => PermissionDecision::AllowAlways,
        "" | "n" | "N" | "no" => {
            PermissionDecision::Deny { feedback: Some("the user denied the command".into()) }
        }
        reason => PermissionDecision::Deny { feedback: Some(reason.to_string()) },
    }
}

/// Nobody can answer: the command is refused, and both the model and the user learn how to
/// allow it.
fn refuse(request: &PermissionRequest) -> PermissionDecision {
    if let Some(call) = &request.mcp {
        let how = format!(
            "allow it with `tool_permissions = {{ {tool} = \"allow\" }}` (this tool) or `permission = \"allow\"` \
             (every tool) under `[mcp_servers.{server}]` in the user config",
            tool = toml_key(&call.tool),
            server = call.server
        );
        eprintln!("agentls: not called (no terminal to ask on): {}; {how}", request.command);
        return PermissionDecision::Deny {
            feedback: Some(format!(
                "MCP tool calls need the user's permission (mcp.permission = \"ask\") and this run has no \
                 terminal to ask on, so nothing was called. The user can {how}."
            )),
        };
    }
    let rule = rule_for(&request.command);
    let how = format!(
        "allow it with `--allow-command '{rule}'` or `[shell] allow = [\"{rule}\"]` in the user config, \
         or every command with `--shell allow`"
    );
    eprintln!("agentls: not run (no terminal to ask on): {}; {how}", request.command);
    PermissionDecision::Deny {
        feedback: Some(format!(
            "commands need the user's permission (shell.permission = \"ask\") and this run has no terminal \
             to ask on, so nothing was run. The user can {how}."
        )),
    }
}

/// `name` as a TOML key: bare when it can be, quoted otherwise.
fn toml_key(name: &str) -> String {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

/// `agentls exec`'s port over the session's files.
pub fn port(disk: DiskPort, status: Option<ProgressBar>) -> Arc<dyn EditorPort> {
    Arc::new(TerminalPort::new(disk, status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_decisions() {
        assert_eq!(decision_from_answer("y\n"), PermissionDecision::AllowOnce);
        assert_eq!(decision_from_answer("always\n"), PermissionDecision::AllowAlways);
        assert!(matches!(decision_from_answer("\n"), PermissionDecision::Deny { .. }));
        assert_eq!(
            decision_from_answer("use the test script\n"),
            PermissionDecision::Deny { feedback: Some("use the test script".into()) }
        );
    }
}
