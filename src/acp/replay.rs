//! A stored history as the `session/update` notifications `session/load` replays: the user's
//! messages (with the images they carried), the answers and reasoning, and each tool call with
//! its result.
//!
//! Invariant: every update is one the live session sends for the same turn (the same kinds,
//! titles and raw input), so a loaded conversation looks like the one the user had.

use std::path::Path;

use agent_client_protocol_schema::v1::{
    CompactionStatus, CompactionUpdate, ContentBlock, ContentChunk, ImageContent, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};

use base64::Engine;

use super::convert::{Shows, kind_of, locations_of};
use crate::session::{Turn, summarize};

fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text.to_string()))
}

/// The updates of `history` for a client that shows what `shows` says.
pub fn updates(history: &[Turn], cwd: &Path, shows: Shows) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    for turn in history {
        match turn {
            Turn::User(t) | Turn::Steering(t) => {
                out.push(SessionUpdate::UserMessageChunk(chunk(&t.content)));
                for image in &t.images {
                    let data = base64::engine::general_purpose::STANDARD.encode(&image.data);
                    let block = ContentBlock::Image(ImageContent::new(data, image.media_type.clone()));
                    out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(block)));
                }
            }
            // As the live session tells a compaction: an update of its own where the client
            // shows them, else a thought.
            Turn::Summary(s) if shows.compaction => {
                let id = format!("compaction-summary-{}", s.timestamp.timestamp_millis());
                let update = CompactionUpdate::new(id, CompactionStatus::Completed)
                    .summary(vec![ContentBlock::from(s.summary.clone())]);
                out.push(SessionUpdate::CompactionUpdate(update));
            }
            Turn::Summary(s) => out.push(SessionUpdate::AgentThoughtChunk(chunk(&format!(
                "Summary of {} earlier messages:\n{}",
                s.turns_summarized, s.summary
            )))),
            Turn::Assistant(a) => {
                if let Some(reasoning) = a.reasoning.as_deref().filter(|r| !r.is_empty()) {
                    out.push(SessionUpdate::AgentThoughtChunk(chunk(reasoning)));
                }
                if !a.content.is_empty() {
                    out.push(SessionUpdate::AgentMessageChunk(chunk(&a.content)));
                }
                for call in &a.tool_calls {
                    out.push(SessionUpdate::ToolCall(
                        ToolCall::new(call.id.clone(), summarize(&call.name, &call.arguments, cwd))
                            .kind(kind_of(&call.name))
                            .status(ToolCallStatus::InProgress)
                            .locations(locations_of(&call.arguments, cwd))
                            .raw_input(call.arguments.clone()),
                    ));
                }
            }
            Turn::ToolResults(r) => {
                for result in &r.results {
                    let status =
                        if result.is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
                    let content = vec![ToolCallContent::from(ContentBlock::from(result.content.clone()))];
                    let fields = ToolCallUpdateFields::new().status(status).content(content);
                    out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        result.call_id.clone(),
                        fields,
                    )));
                }
            }
            Turn::System(_) | Turn::Instructions(_) => {}
        }
    }
    out
}
