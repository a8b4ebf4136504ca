//! Asking the user whether a command may run, for the one permission policy
//! ([`crate::policy`]), which decides everything it can without asking first.
//!
//! Invariants:
//! - A plugin client gets `agentls/permission` and answers with `agentls.resolvePermission`; a
//!   plain client gets `window/showMessageRequest`.
//! - Every question is answered: resolving, cancelling the session's turn, or the editor not
//!   answering in time all produce a decision. Anything but an explicit allow is a denial.

use super::pending::PendingAnswers;

use tower_lsp_server::ls_types::MessageType;

use super::capabilities::ClientProfile;
use super::outbound::{Outbound, OutboundError, spoken};
use super::protocol::{McpCallParams, PermissionAnswer, PermissionParams};
use crate::workspace::{PermissionDecision, PermissionRequest};

const ALLOW_ONCE: &str = "Allow once";
const ALLOW_ALWAYS: &str = "Always allow";
const DENY: &str = "Deny";

/// Open permission questions.
#[derive(Default)]
pub struct PermissionBroker {
    pending: PendingAnswers<PermissionDecision>,
}

impl PermissionBroker {
    /// Asks the user whether `request` may run; a plugin client is asked through `announce`
    /// (which sends the `agentls/permission` payload).
    pub async fn decide(
        &self,
        outbound: &Outbound,
        announce: impl FnOnce(PermissionParams),
        profile: &ClientProfile,
        session_id: &str,
        request: PermissionRequest,
    ) -> PermissionDecision {
        if profile.plugin {
            self.ask_plugin(outbound, announce, session_id, &request).await
        } else {
            ask_plain(outbound, &request).await
        }
    }

    async fn ask_plugin(
        &self,
        outbound: &Outbound,
        announce: impl FnOnce(PermissionParams),
        session_id: &str,
        request: &PermissionRequest,
    ) -> PermissionDecision {
        let request_id = uuid::Uuid::new_v4().to_string();
        let rx = self.pending.register(&request_id, session_id, ());
        announce(PermissionParams {
            request_id: request_id.clone(),
            session_id: session_id.to_string(),
            call_id: request.call_id.clone(),
            tool_name: request.tool_name.clone(),
            command: request.command.clone(),
            cwd: request.cwd.display().to_string(),
            options: PermissionAnswer::ALL.to_vec(),
            agent: None,
            mcp: request.mcp.as_ref().map(|call| McpCallParams {
                server: call.server.clone(),
                tool: call.tool.clone(),
                arguments: call.arguments.clone(),
                read_only_hint: call.read_only_hint,
            }),
        });
        match self.pending.wait(&request_id, rx, outbound.deadlines.human).await {
            Some(decision) => decision,
            None => unanswered(outbound, request).await,
        }
    }

    /// Answers a pending question; `false` when `request_id` is not pending.
    pub fn resolve(&self, request_id: &str, decision: PermissionDecision) -> bool {
        self.pending.resolve(request_id, decision)
    }

    /// Denies every question of a session whose turn was cancelled.
    pub fn cancel_session(&self, session_id: &str) {
        self.pending.cancel_session(session_id, || PermissionDecision::Deny {
            feedback: Some("the turn was cancelled".into()),
        });
    }
}

async fn ask_plain(outbound: &Outbound, request: &PermissionRequest) -> PermissionDecision {
    let message = match &request.mcp {
        Some(call) => format!(
            "agentls wants to call the tool `{}` of the MCP server `{}` with {}",
            call.tool, call.server, call.arguments
        ),
        None => format!("agentls wants to run: {}\n(in {})", request.command, request.cwd.display()),
    };
    match outbound.ask(MessageType::WARNING, message, &[ALLOW_ONCE, ALLOW_ALWAYS, DENY]).await {
        Ok(Some(title)) if title == ALLOW_ONCE => PermissionDecision::AllowOnce,
        Ok(Some(title)) if title == ALLOW_ALWAYS => PermissionDecision::AllowAlways,
        Ok(_) => PermissionDecision::Deny { feedback: Some("the user denied the command".into()) },
        Err(OutboundError::Timeout { .. }) => unanswered(outbound, request).await,
        Err(e) => PermissionDecision::Deny { feedback: Some(format!("no permission: {e}")) },
    }
}

/// A question nobody answered in time: the user is told, the command is denied.
async fn unanswered(outbound: &Outbound, request: &PermissionRequest) -> PermissionDecision {
    let within = spoken(outbound.deadlines.human);
    let message = format!(
        "agentls: the request to run `{}` got no answer within {within}; it was denied and the agent was told",
        request.command
    );
    outbound.tell(MessageType::WARNING, message).await;
    PermissionDecision::Deny { feedback: Some(format!("the user did not answer within {within}")) }
}

/// The decision an `agentls.resolvePermission` answer stands for.
pub fn decision_of(answer: PermissionAnswer, feedback: Option<String>) -> PermissionDecision {
    match answer {
        PermissionAnswer::AllowOnce => PermissionDecision::AllowOnce,
        PermissionAnswer::AllowAlways => PermissionDecision::AllowAlways,
        PermissionAnswer::Deny => PermissionDecision::Deny { feedback },
    }
}
