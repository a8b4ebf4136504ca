//! The agentls per-hunk review, an ACP extension carried in `_meta` under [`KEY`] for clients
//! that opt in (`clientCapabilities._meta["dev.agentls/review"] = {"hunks": true}`).
//!
//! The question (`session/request_permission`) then carries each file's hunks; the client's
//! answer may carry, per file, the hunks it accepts, a text it edited, or a rejection, and a
//! reason for the model. Every client (opted in or not) may send the reason.
//!
//! Invariants:
//! - Without the opt-in, no question carries the extension; an answer is read the same way
//!   whatever the client (an answer without it accepts or rejects the whole change set).
//! - A file the answer does not name follows the option chosen (allow: accepted).

use agent_client_protocol_schema::v1::{ClientCapabilities, Meta};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::workspace::{ChangeSet, FileDecision};

/// The `_meta` key of the extension.
pub const KEY: &str = "dev.agentls/review";

/// Whether the client asked for per-hunk reviews.
pub fn opted_in(client: &ClientCapabilities) -> bool {
    client.meta.as_ref().and_then(|meta| meta.get(KEY)).and_then(|v| v.get("hunks")).and_then(Value::as_bool)
        == Some(true)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct QuestionHunk {
    index: usize,
    /// 0-based first line and line count in the file as it is, and in the proposal.
    old_start: usize,
    old_lines: usize,
    new_start: usize,
    new_lines: usize,
    new_text: String,
}

#[derive(Debug, Serialize)]
struct QuestionFile {
    path: String,
    hunks: Vec<QuestionHunk>,
}

/// The question's `_meta`: every file's hunks.
pub fn question(change: &ChangeSet) -> Meta {
    let files: Vec<QuestionFile> = change
        .files()
        .iter()
        .map(|file| QuestionFile {
            path: file.target_path().display().to_string(),
            hunks: file
                .hunks
                .iter()
                .map(|h| QuestionHunk {
                    index: h.index,
                    old_start: h.old_start,
                    old_lines: h.old_lines,
                    new_start: h.new_start,
                    new_lines: h.new_lines,
                    new_text: h.new_text.clone(),
                })
                .collect(),
        })
        .collect();
    let mut meta = Meta::new();
    meta.insert(KEY.into(), serde_json::json!({ "files": files }));
    meta
}

/// One file of the answer: the hunks accepted, an edited text, or a rejection.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerFile {
    path: String,
    #[serde(default)]
    hunks: Option<Vec<usize>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    reject: bool,
}

#[derive(Debug, Default, Deserialize)]
struct Answer {
    #[serde(default)]
    files: Vec<AnswerFile>,
    #[serde(default)]
    feedback: Option<String>,
}

/// What the client's answer says beyond the option: per-file decisions (by position in the
/// change set) and a reason.
#[derive(Debug, Default)]
pub struct Review {
    pub files: Vec<Option<FileDecision>>,
    pub feedback: Option<String>,
}

/// Reads the answer's `_meta`; a malformed extension is ignored (logged).
pub fn answer(change: &ChangeSet, meta: Option<&Meta>) -> Review {
    let Some(value) = meta.and_then(|m| m.get(KEY)) else { return Review::default() };
    let answer: Answer = match serde_json::from_value(value.clone()) {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!("the client's review answer is malformed ({e}); it is ignored");
            return Review::default();
        }
    };
    let files = change
        .files()
        .iter()
        .map(|file| {
            let path = file.target_path().display().to_string();
            let named =
                answer.files.iter().find(|f| f.path == path || f.path == file.path.display().to_string())?;
            Some(if named.reject {
                FileDecision::Reject
            } else if let Some(text) = &named.text {
                FileDecision::FinalText(text.clone())
            } else if let Some(hunks) = &named.hunks {
                FileDecision::AcceptHunks(hunks.clone())
            } else {
                FileDecision::Accept
            })
        })
        .collect();
    Review { files, feedback: answer.feedback.filter(|f| !f.trim().is_empty()) }
}
