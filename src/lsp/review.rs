//! Review of proposed change sets: `agentls/review` out, `agentls.resolveReview` back (plugin
//! clients), or `window/showMessageRequest` [Apply] [Reject] [Show diff] (plain clients).
//!
//! Invariant: every announced review is answered exactly once: by the user, by cancelling the
//! session's turn (rejected), or by the editor failing to answer (rejected). A review that was
//! not announced cannot be resolved.

use std::collections::HashMap;
use std::path::Path;

use super::pending::PendingAnswers;

use tower_lsp_server::ls_types::request::ShowDocument;
use tower_lsp_server::ls_types::{MessageType, ShowDocumentParams};

use super::convert;
use super::outbound::{Outbound, OutboundError, spoken};
use super::protocol::{ReviewFile, ReviewHunk, ReviewOp, ReviewParams};
use crate::workspace::{ChangeSet, FileChange, FileDecision, FileOp};

/// What the reviewer decided about a whole change set.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewDecision {
    /// Files by position in the change set; files not listed are accepted as proposed.
    Accept {
        files: HashMap<usize, FileDecision>,
        feedback: Option<String>,
    },
    Reject {
        feedback: Option<String>,
    },
}

/// What a pending review remembers to validate `agentls.resolveReview`.
#[derive(Debug, Clone)]
pub struct ReviewedFile {
    pub uri: String,
    pub hunks: usize,
    pub op: FileOp,
}

/// Reviews waiting for the user.
#[derive(Default)]
pub struct ReviewBroker {
    pending: PendingAnswers<ReviewDecision, Vec<ReviewedFile>>,
}

pub(super) fn file_uri(path: &Path) -> String {
    convert::uri_of(path).map(|u| u.as_str().to_string()).unwrap_or_else(|| path.display().to_string())
}

pub(super) fn review_op(op: &FileOp) -> ReviewOp {
    match op {
        FileOp::Create => ReviewOp::Create,
        FileOp::Modify => ReviewOp::Modify,
        FileOp::Delete => ReviewOp::Delete,
        FileOp::Rename { .. } => ReviewOp::Rename,
    }
}

/// The `files` of an `agentls/review` notification.
pub fn review_files(change: &ChangeSet) -> Vec<ReviewFile> {
    change.files().iter().map(file_payload).collect()
}

fn file_payload(file: &FileChange) -> ReviewFile {
    let hunks = file
        .hunks
        .iter()
        .map(|h| ReviewHunk {
            index: h.index,
            old_start: h.old_start,
            old_lines: h.old_lines,
            new_start: h.new_start,
            new_lines: h.new_lines,
            old_text: file.base_text().get(h.old_range.clone()).unwrap_or_default().to_string(),
            new_text: h.new_text.clone(),
        })
        .collect();
    ReviewFile {
        uri: file_uri(&file.path),
        path: file.display_path.clone(),
        op: review_op(&file.op),
        diff: file.unified_diff(),
        hunks,
        new_uri: match &file.op {
            FileOp::Rename { to } => Some(file_uri(to)),
            _ => None,
        },
    }
}

impl ReviewBroker {
    /// Announces `change` to a plugin client through `announce` (which sends the
    /// `agentls/review` payload) and waits for the decision.
    pub async fn ask_plugin(
        &self,
        outbound: &Outbound,
        announce: impl FnOnce(ReviewParams),
        session_id: &str,
        change: &ChangeSet,
    ) -> ReviewDecision {
        let review_id = uuid::Uuid::new_v4().to_string();
        let files = change
            .files()
            .iter()
            .map(|f| ReviewedFile { uri: file_uri(&f.path), hunks: f.hunks.len(), op: f.op.clone() })
            .collect();
        let rx = self.pending.register(&review_id, session_id, files);
        announce(ReviewParams {
            review_id: review_id.clone(),
            session_id: session_id.to_string(),
            call_id: None,
            files: review_files(change),
            agent: None,
        });
        match self.pending.wait(&review_id, rx, outbound.deadlines.human).await {
            Some(decision) => decision,
            None => unanswered(outbound, change).await,
        }
    }

    /// The files of a pending review (for validating a resolution).
    pub fn files_of(&self, review_id: &str) -> Option<Vec<ReviewedFile>> {
        self.pending.meta(review_id)
    }

    /// Resolves a pending review; `false` when it is not pending.
    pub fn resolve(&self, review_id: &str, decision: ReviewDecision) -> bool {
        self.pending.resolve(review_id, decision)
    }

    /// Rejects every pending review of a session (its turn was cancelled).
    pub fn cancel_session(&self, session_id: &str) {
        self.pending.cancel_session(session_id, || ReviewDecision::Reject {
            feedback: Some("the turn was cancelled before the review was answered".into()),
        });
    }
}

/// A review nobody answered in time: the user is told, the model gets a rejection.
async fn unanswered(outbound: &Outbound, change: &ChangeSet) -> ReviewDecision {
    let within = spoken(outbound.deadlines.human);
    outbound
        .tell(
            MessageType::WARNING,
            format!(
                "agentls: the proposed change to {} got no answer within {within}; it was rejected and the agent was told",
                change.files().iter().map(|f| f.display_path.as_str()).collect::<Vec<_>>().join(", ")
            ),
        )
        .await;
    ReviewDecision::Reject { feedback: Some(format!("the user did not answer the review within {within}")) }
}

const APPLY: &str = "Apply";
const REJECT: &str = "Reject";
const SHOW_DIFF: &str = "Show diff";

/// Asks a plain client with `window/showMessageRequest`; "Show diff" writes the diff to
/// `diff_dir` and opens it with `window/showDocument`, then asks again.
pub async fn ask_plain(
    outbound: &Outbound,
    change: &ChangeSet,
    diff_dir: &Path,
    show_document: bool,
) -> ReviewDecision {
    let summary: Vec<String> = change
        .files()
        .iter()
        .map(|f| {
            let target = match &f.op {
                FileOp::Rename { to } => format!(" → {}", f.shown_target(to)),
                _ => String::new(),
            };
            format!(
                "{} {}{target} ({} hunk{})",
                f.op.letter(),
                f.display_path,
                f.hunks.len(),
                if f.hunks.len() == 1 { "" } else { "s" }
            )
        })
        .collect();
    let mut actions = vec![APPLY, REJECT];
    if show_document {
        actions.push(SHOW_DIFF);
    }
    loop {
        let message = format!("agentls proposes changes:\n{}", summary.join("\n"));
        match outbound.ask(MessageType::INFO, message, &actions).await {
            Ok(Some(title)) if title == APPLY => {
                return ReviewDecision::Accept { files: HashMap::new(), feedback: None };
            }
            Ok(Some(title)) if title == SHOW_DIFF => {
                let diff: String = change.files().iter().map(|f| f.unified_diff()).collect();
                let path = diff_dir.join(format!("agentls-review-{}.diff", uuid::Uuid::new_v4()));
                let opened =
                    match std::fs::create_dir_all(diff_dir).and_then(|()| std::fs::write(&path, diff)) {
                        Ok(()) => match convert::uri_of(&path) {
                            Some(uri) => outbound
                                .request::<ShowDocument>(ShowDocumentParams {
                                    uri,
                                    external: Some(false),
                                    take_focus: Some(true),
                                    selection: None,
                                })
                                .await
                                .is_ok(),
                            None => false,
                        },
                        Err(e) => {
                            tracing::warn!("cannot write the review diff {}: {e}", path.display());
                            false
                        }
                    };
                if !opened {
                    actions.retain(|a| *a != SHOW_DIFF);
                }
            }
            Ok(Some(_)) | Ok(None) => {
                return ReviewDecision::Reject {
                    feedback: Some("the user rejected the change in the editor".into()),
                };
            }
            Err(OutboundError::Timeout { .. }) => return unanswered(outbound, change).await,
            Err(e) => return ReviewDecision::Reject { feedback: Some(format!("no review decision: {e}")) },
        }
    }
}
