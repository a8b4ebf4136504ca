//! `agentls.resolveReview {reviewId, decision, files?: [{uri, acceptedHunks?, finalText?}],
//! feedback?}` → `{reviewId, decision}`. Files not listed follow `decision`.

use std::collections::HashMap;
use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;

use super::Handler;
use super::args::invalid_field;
use crate::lsp::protocol::{ResolveReview, ResolveReviewParams, ReviewAnswer, ReviewResolved};
use crate::lsp::review::ReviewDecision;
use crate::lsp::state::ServerState;
use crate::workspace::{FileDecision, FileOp};

/// URIs compare after normalising through the URI type (editors differ in escaping).
fn same_uri(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.parse::<url::Url>().map(|u| u.to_string()).unwrap_or_else(|_| s.to_string());
    a == b || norm(a) == norm(b)
}

impl Handler for ResolveReview {
    async fn handle(state: &Arc<ServerState>, params: ResolveReviewParams) -> Result<ReviewResolved> {
        let review_id = params.review_id;
        let pending = state.reviews.files_of(&review_id).ok_or_else(|| {
            invalid_field("reviewId", "the id of a pending review (it may already be resolved or cancelled)")
        })?;
        let resolution = match params.decision {
            ReviewAnswer::Reject => ReviewDecision::Reject { feedback: params.feedback },
            ReviewAnswer::Accept => {
                let mut files = HashMap::new();
                for (i, file) in params.files.unwrap_or_default().into_iter().enumerate() {
                    let field = |name: &str| format!("files[{i}].{name}");
                    let position = pending
                        .iter()
                        .position(|f| same_uri(&f.uri, &file.uri))
                        .ok_or_else(|| invalid_field(&field("uri"), "the uri of a file in this review"))?;
                    let reviewed = &pending[position];
                    let choice = match (file.final_text, file.accepted_hunks) {
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
                ReviewDecision::Accept { files, feedback: params.feedback }
            }
        };
        if !state.reviews.resolve(&review_id, resolution) {
            return Err(invalid_field("reviewId", "the id of a pending review (it was resolved meanwhile)"));
        }
        Ok(ReviewResolved { review_id, decision: params.decision })
    }
}
