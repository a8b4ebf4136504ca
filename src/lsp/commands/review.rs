//! `agentls.resolveReview {reviewId, decision, files?: [{uri, acceptedHunks?, finalText?}],
//! feedback?}` → `{reviewId, decision}`. Files not listed follow `decision`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;

use super::args::{CommandArgs, invalid_field};
use crate::lsp::review::ReviewDecision;
use crate::lsp::state::ServerState;
use crate::workspace::{FileDecision, FileOp};

/// URIs compare after normalising through the URI type (editors differ in escaping).
fn same_uri(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.parse::<url::Url>().map(|u| u.to_string()).unwrap_or_else(|_| s.to_string());
    a == b || norm(a) == norm(b)
}

pub fn resolve(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let review_id = args.required_str("reviewId")?;
    let decision = args.required_choice("decision", &["accept", "reject"])?;
    let feedback = args.optional_str("feedback")?;
    let pending = state.reviews.files_of(&review_id).ok_or_else(|| {
        invalid_field("reviewId", "the id of a pending review (it may already be resolved or cancelled)")
    })?;
    let resolution = if decision == "reject" {
        ReviewDecision::Reject { feedback }
    } else {
        let mut files = HashMap::new();
        for (i, item) in args.optional_array("files")?.unwrap_or_default().into_iter().enumerate() {
            let field = |name: &str| format!("files[{i}].{name}");
            let Value::Object(map) = item else {
                return Err(invalid_field(&format!("files[{i}]"), "an object"));
            };
            let file = CommandArgs::from_object(map);
            let uri = file.required_str("uri").map_err(|_| invalid_field(&field("uri"), "a file: URI"))?;
            let position = pending
                .iter()
                .position(|f| same_uri(&f.uri, &uri))
                .ok_or_else(|| invalid_field(&field("uri"), "the uri of a file in this review"))?;
            let reviewed = &pending[position];
            let final_text =
                file.optional_str("finalText").map_err(|_| invalid_field(&field("finalText"), "a string"))?;
            let hunks: Option<Vec<usize>> = file
                .optional_typed("acceptedHunks", "an array of hunk indices")
                .map_err(|_| invalid_field(&field("acceptedHunks"), "an array of hunk indices"))?;
            let choice = match (final_text, hunks) {
                (Some(_), Some(_)) => {
                    return Err(invalid_field(
                        &field("finalText"),
                        "either finalText or acceptedHunks, not both",
                    ));
                }
                (Some(_), None) if reviewed.op == FileOp::Delete => {
                    return Err(invalid_field(
                        &field("finalText"),
                        "no finalText: a deleted file has no text",
                    ));
                }
                (Some(text), None) => FileDecision::FinalText(text),
                (None, Some(hunks)) => {
                    if let Some(bad) = hunks.iter().find(|&&h| h >= reviewed.hunks) {
                        return Err(invalid_field(
                            &field("acceptedHunks"),
                            &format!("hunk indices below {} (got {bad})", reviewed.hunks),
                        ));
                    }
                    FileDecision::AcceptHunks(hunks)
                }
                (None, None) => FileDecision::Accept,
            };
            files.insert(position, choice);
        }
        ReviewDecision::Accept { files, feedback }
    };
    if !state.reviews.resolve(&review_id, resolution) {
        return Err(invalid_field("reviewId", "the id of a pending review (it was resolved meanwhile)"));
    }
    Ok(json!({"reviewId": review_id, "decision": decision}))
}
