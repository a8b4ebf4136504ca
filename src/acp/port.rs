//! The ACP editor port: every change set and every command the policy could not decide becomes
//! a `session/request_permission`, sent through the session's update pump so that it follows
//! its call's `tool_call`; an allowed change set is written by the committer through the
//! session's environment (the client's `fs/write_text_file` when it has one, else the disk).
//!
//! Invariants:
//! - Nothing is written before the user allowed it (mode "ask"): the question carries a `diff`
//!   per file, and a rejection reaches the model as an error result naming what was refused.
//! - Every call returns: a question is answered by the client, or by the turn's cancellation
//!   (`session/cancel`), which answers it as cancelled.
//! - For a client that opted in (`review.rs`), the question carries each file's hunks and the
//!   answer may accept some hunks, an edited text or a reason; any client may give a reason.
//! - The four option kinds map onto the one policy: allow once / always, reject once / always
//!   (`PermissionDecision`); the policy stores "always" (`crate::policy`).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use agent_client_protocol_schema::v1::{
    Diff, Meta, PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionResponse,
    ToolCallContent, ToolCallLocation, ToolCallUpdateFields, ToolKind,
};
use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use super::review::{self, Review};
use crate::config::Approval;
use crate::exec::ExecutionEnvironment;
use crate::session::{ConfigChange, SessionHandle};
use crate::workspace::{
    ChangeOutcome, ChangeSet, Committer, DiskCommitter, EditorPort, FileDecision, FileOp, FileOutcome,
    PermissionDecision, PermissionRequest, PortError,
};

/// A question for the client, asked by the pump once the events before it are sent.
pub struct Ask {
    /// The call the question is about; `None`: the call the pump saw start last (a review).
    pub call_id: Option<String>,
    pub fields: ToolCallUpdateFields,
    pub options: Vec<PermissionOption>,
    /// The question's `_meta` (the per-hunk review extension).
    pub meta: Option<Meta>,
    /// The client's answer; `None` when there is none (the client failed, or left).
    pub reply: oneshot::Sender<Option<RequestPermissionResponse>>,
}

/// What the session's pump is handed besides the session's events, in order with them.
pub enum ToPump {
    /// A permission question.
    Ask(Box<Ask>),
    /// A command runs in the client's terminal `terminal_id` (`terminal.rs`): the call shows it.
    Terminal { call_id: String, terminal_id: String },
}

pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const REJECT_ONCE: &str = "reject_once";
pub const REJECT_ALWAYS: &str = "reject_always";

pub struct AcpPort {
    asks: mpsc::UnboundedSender<ToPump>,
    pub handle: OnceLock<SessionHandle>,
    env: Arc<dyn ExecutionEnvironment>,
    /// The client opted in to the per-hunk review extension (`review.rs`).
    hunks: bool,
}

fn rejected(change: ChangeSet, feedback: Option<String>, error: Option<String>) -> ChangeOutcome {
    let resolved = change.reject_all();
    ChangeOutcome { files: resolved.files.iter().map(FileOutcome::rejected).collect(), feedback, error }
}

impl AcpPort {
    pub fn new(asks: mpsc::UnboundedSender<ToPump>, env: Arc<dyn ExecutionEnvironment>, hunks: bool) -> Self {
        Self { asks, handle: OnceLock::new(), env, hunks }
    }

    fn approval(&self) -> Approval {
        self.handle.get().map(|h| h.config().approval).unwrap_or(Approval::Review)
    }

    /// Asks the client; `None` when the turn was cancelled or there is no answer.
    async fn ask(
        &self,
        call_id: Option<String>,
        fields: ToolCallUpdateFields,
        options: Vec<PermissionOption>,
        meta: Option<Meta>,
    ) -> Option<RequestPermissionResponse> {
        let (reply, answer) = oneshot::channel();
        if self.asks.send(ToPump::Ask(Box::new(Ask { call_id, fields, options, meta, reply }))).is_err() {
            return None;
        }
        let cancelled = async {
            match self.handle.get() {
                Some(handle) => handle.cancellation().cancelled_owned().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            answer = answer => answer.ok().flatten(),
            () = cancelled => None,
        }
    }

    async fn commit(&self, change: ChangeSet) -> ChangeOutcome {
        self.commit_reviewed(change, Review::default()).await
    }

    /// Commits what the review accepted: each file as the answer decided, else accepted.
    async fn commit_reviewed(&self, change: ChangeSet, review: Review) -> ChangeOutcome {
        let feedback = review.feedback;
        let resolved = match change
            .resolve(|i, _| review.files.get(i).cloned().flatten().unwrap_or(FileDecision::Accept))
        {
            Ok(resolved) => resolved,
            Err(e) => return ChangeOutcome { files: Vec::new(), feedback, error: Some(e.to_string()) },
        };
        if resolved.files.iter().all(|f| !f.accepted) {
            let files = resolved.files.iter().map(FileOutcome::rejected).collect();
            return ChangeOutcome { files, feedback, error: None };
        }
        match DiskCommitter::new(Arc::clone(&self.env)).commit(resolved).await {
            Ok(files) => ChangeOutcome { files, feedback, error: None },
            Err(error) => ChangeOutcome { files: Vec::new(), feedback, error: Some(error.to_string()) },
        }
    }
}

/// The permission question's options for a command or an MCP call.
pub fn command_options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(ALLOW_ALWAYS, "Always allow", PermissionOptionKind::AllowAlways),
        PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        PermissionOption::new(
            REJECT_ALWAYS,
            "Always reject (this session)",
            PermissionOptionKind::RejectAlways,
        ),
    ]
}

/// The review question's options for a change set: "always" switches the session to accept edits.
pub fn edit_options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(ALLOW_ONCE, "Apply", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_ALWAYS,
            "Apply, and accept edits for this session",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
    ]
}

/// A `diff` per file of a change set, and where the files are.
pub fn diff_content(change: &ChangeSet) -> (Vec<ToolCallContent>, Vec<ToolCallLocation>) {
    let mut content = Vec::new();
    let mut locations = Vec::new();
    for file in change.files() {
        let target = file.target_path().to_path_buf();
        let old = match file.op {
            FileOp::Create => None,
            _ => Some(file.base_text().to_string()),
        };
        let new = match file.op {
            FileOp::Delete => String::new(),
            _ => file.new_text().to_string(),
        };
        content.push(ToolCallContent::from(Diff::new(target.clone(), new).old_text(old)));
        locations.push(ToolCallLocation::new(target));
    }
    (content, locations)
}

#[async_trait]
impl EditorPort for AcpPort {
    async fn propose(&self, change: ChangeSet) -> Result<ChangeOutcome, PortError> {
        let shown: Vec<&str> = change.files().iter().map(|f| f.display_path.as_str()).collect();
        let shown = shown.join(", ");
        match self.approval() {
            Approval::Deny => {
                return Ok(rejected(
                    change,
                    None,
                    Some(format!(
                        "Edits are not allowed in this session's mode (read-only planning); nothing was changed \
                         ({shown}). Describe the change instead."
                    )),
                ));
            }
            Approval::Auto => return Ok(self.commit(change).await),
            Approval::Review => {}
        }
        let (content, locations) = diff_content(&change);
        let fields = ToolCallUpdateFields::new()
            .kind(ToolKind::Edit)
            .title(format!("Edit {shown}"))
            .content(content)
            .locations(locations);
        let meta = self.hunks.then(|| review::question(&change));
        let answer = self.ask(None, fields, edit_options(), meta).await;
        let review = review::answer(&change, answer.as_ref().and_then(|a| a.meta.as_ref()));
        match answer.and_then(selected).as_deref() {
            Some(ALLOW_ONCE) => Ok(self.commit_reviewed(change, review).await),
            Some(ALLOW_ALWAYS) => {
                if let Some(handle) = self.handle.get() {
                    handle.configure(ConfigChange { approval: Some(Approval::Auto), ..Default::default() });
                }
                Ok(self.commit_reviewed(change, review).await)
            }
            Some(_) => {
                let reason =
                    review.feedback.unwrap_or_else(|| format!("The user rejected the edit of {shown}."));
                Ok(rejected(change, Some(reason), None))
            }
            None => Ok(rejected(
                change,
                Some(format!(
                    "The edit of {shown} was not applied: the turn was cancelled before the user answered."
                )),
                None,
            )),
        }
    }

    async fn ask_permission(&self, request: PermissionRequest) -> PermissionDecision {
        if self.approval() == Approval::Deny {
            return PermissionDecision::Deny {
                feedback: Some(
                    "Commands and tool calls are not run in this session's mode (read-only planning).".into(),
                ),
            };
        }
        let (kind, title, raw) = match &request.mcp {
            Some(call) => (
                ToolKind::Other,
                format!("{} · {}", call.server, call.tool),
                serde_json::json!({"server": call.server, "tool": call.tool, "arguments": call.arguments}),
            ),
            None => (
                ToolKind::Execute,
                request.command.clone(),
                serde_json::json!({"command": request.command, "cwd": request.cwd}),
            ),
        };
        let fields = ToolCallUpdateFields::new().kind(kind).title(title).raw_input(raw);
        let answer = self.ask(Some(request.call_id.clone()), fields, command_options(), None).await;
        match answer.and_then(selected).as_deref() {
            Some(ALLOW_ONCE) => PermissionDecision::AllowOnce,
            Some(ALLOW_ALWAYS) => PermissionDecision::AllowAlways,
            Some(REJECT_ALWAYS) => PermissionDecision::DenyAlways { feedback: None },
            Some(_) => PermissionDecision::Deny { feedback: None },
            None => PermissionDecision::Deny { feedback: Some("the turn was cancelled".into()) },
        }
    }

    async fn save(&self, _paths: &[PathBuf]) -> Result<(), PortError> {
        // The client writes its buffers itself; the files the agent wrote are in place.
        Ok(())
    }
}

/// The option a client selected, or `None` for `cancelled`.
pub fn selected(response: RequestPermissionResponse) -> Option<String> {
    match response.outcome {
        RequestPermissionOutcome::Selected(selected) => Some(selected.option_id.0.to_string()),
        _ => None,
    }
}
