//! The conversions of a session's events into ACP's types that the live pump (`updates.rs`),
//! the replay of a stored history (`replay.rs`) and the subagents (`subagents.rs`) share: a
//! call's kind, title, locations and content, and which optional updates a client shows.
//!
//! Invariant: pure functions of their arguments; nothing here sends or keeps state.

use std::path::Path;

use agent_client_protocol_schema::v1::{
    ClientCapabilities, ContentBlock, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::{Value, json};

use crate::session::{CallOutcome, CallStatus, ToolCallEnd, ToolCallStart};

/// At most this much of a call's output travels in one update (the end of it).
const SHOWN_OUTPUT: usize = 64 * 1024;

/// A title for a session from its first prompt: its first line, at most 80 characters.
pub fn title_of(prompt: &str) -> String {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let mut title: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        title.push('…');
    }
    title
}

/// The ACP kind of one of our tools.
pub fn kind_of(tool: &str) -> ToolKind {
    match tool {
        "read_file" | "read_many_files" => ToolKind::Read,
        "grep" | "glob" | "list_dir" | "codebase_search" => ToolKind::Search,
        "edit_file" | "replace" | "write_file" | "apply_patch" => ToolKind::Edit,
        "shell" | "python" => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

/// The files a call names (`path`, `file_path`, `absolute_path`, `paths`), made absolute.
pub fn locations_of(arguments: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    let mut paths: Vec<&str> = ["path", "file_path", "absolute_path"]
        .iter()
        .filter_map(|key| arguments.get(key).and_then(Value::as_str))
        .collect();
    if let Some(list) = arguments.get("paths").and_then(Value::as_array) {
        paths.extend(list.iter().filter_map(Value::as_str));
    }
    paths.into_iter().map(|p| ToolCallLocation::new(cwd.join(p))).collect()
}

/// The end of `text` that fits in one update.
fn shown(text: &str) -> String {
    if text.len() <= SHOWN_OUTPUT {
        return text.to_string();
    }
    let mut start = text.len() - SHOWN_OUTPUT;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

pub fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::from(text.into())
}

/// The `tool_call` of a call that started.
pub fn started(call: ToolCallStart, cwd: &Path) -> ToolCall {
    let locations = locations_of(&call.arguments, cwd);
    ToolCall::new(call.call_id, call.summary)
        .kind(kind_of(&call.tool_name))
        .status(ToolCallStatus::InProgress)
        .locations(locations)
        .raw_input(call.arguments)
}

/// The `tool_call_update` showing a running command's output so far.
pub fn output_so_far(call_id: String, output: &str) -> ToolCallUpdate {
    let content = vec![ToolCallContent::from(text(format!("```\n{}\n```", shown(output))))];
    ToolCallUpdate::new(call_id, ToolCallUpdateFields::new().content(content))
}

/// The `tool_call_update` of a call that ended: its status, what it showed before (the diffs its
/// review showed, the client terminal its command ran in), its
/// output (fenced for commands) or error, and `rawOutput`.
pub fn ended(end: ToolCallEnd, shown_before: Vec<ToolCallContent>) -> ToolCallUpdate {
    let (body, raw) = match &end.outcome {
        CallOutcome::Output { output, .. } => (output.clone(), json!({"output": output})),
        CallOutcome::Error { error } => (error.clone(), json!({"error": error})),
    };
    // A terminal shows the command's output itself.
    let in_terminal = shown_before.iter().any(|c| matches!(c, ToolCallContent::Terminal(_)));
    let mut content = shown_before;
    if !body.is_empty() && !in_terminal {
        let fenced = kind_of(&end.tool_name) == ToolKind::Execute;
        let body = shown(&body);
        content.push(ToolCallContent::from(text(if fenced { format!("```\n{body}\n```") } else { body })));
    }
    let status = match end.status {
        CallStatus::Ok => ToolCallStatus::Completed,
        CallStatus::Error | CallStatus::Cancelled => ToolCallStatus::Failed,
    };
    let fields = ToolCallUpdateFields::new().status(status).content(content).raw_output(raw);
    ToolCallUpdate::new(end.call_id, fields)
}

/// The optional updates a client advertised it understands (`clientCapabilities`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Shows {
    /// `session.notices`: `notice` updates.
    pub notices: bool,
    /// `session.compaction`: `compaction_update`.
    pub compaction: bool,
    /// `subagents`: `subagent_update` and the children's own updates.
    pub subagents: bool,
}

impl Shows {
    pub fn of(client: &ClientCapabilities) -> Self {
        let session = client.session.as_ref();
        Self {
            notices: session.is_some_and(|s| s.notices.is_some()),
            compaction: session.is_some_and(|s| s.compaction.is_some()),
            subagents: client.subagents.is_some(),
        }
    }
}
