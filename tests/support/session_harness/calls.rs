//! Tool calls in each profile's own shape (gemini-cli reads absolute paths; each edits in its own
//! format), and readers for what the model received in each wire dialect.

use std::path::Path;

use agentls::profiles::ProfileKind;
use serde_json::{Value, json};

/// `read_file` arguments in the profile's shape (gemini-cli takes an absolute path).
pub fn read_call(profile: ProfileKind, root: &Path, rel: &str) -> Value {
    match profile {
        ProfileKind::Gemini => json!({"absolute_path": root.join(rel).display().to_string()}),
        _ => json!({"file_path": rel}),
    }
}

/// A patch body updating `rel`: every line of `old` replaced by the lines of `new`.
pub fn update_hunk(rel: &str, old: &str, new: &str) -> String {
    let mut patch = format!("*** Update File: {rel}\n@@\n");
    old.lines().for_each(|l| patch.push_str(&format!("-{l}\n")));
    new.lines().for_each(|l| patch.push_str(&format!("+{l}\n")));
    patch
}

/// One edit of `rel` replacing `old` with `new`, in the profile's editing format.
pub fn edit_call(
    profile: ProfileKind,
    root: &Path,
    rel: &str,
    old: &str,
    new: &str,
) -> (&'static str, Value) {
    match profile {
        ProfileKind::OpenAi => (
            "apply_patch",
            json!({"patch": format!("*** Begin Patch\n{}*** End Patch\n", update_hunk(rel, old, new))}),
        ),
        ProfileKind::Anthropic | ProfileKind::Code => {
            ("edit_file", json!({"file_path": rel, "old_string": old, "new_string": new}))
        }
        ProfileKind::Gemini => (
            "replace",
            json!({"file_path": root.join(rel).display().to_string(), "old_string": old, "new_string": new}),
        ),
    }
}

/// A tool result as it appears in a request body.
#[derive(Debug)]
pub struct SentResult {
    pub call_id: String,
    pub content: String,
    /// `None` where the dialect has no error flag (OpenAI function outputs are plain text).
    pub is_error: Option<bool>,
}

pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().filter_map(|i| i["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

/// Every tool result in a request body, in the order the model sees them.
pub fn sent_results(profile: ProfileKind, body: &Value) -> Vec<SentResult> {
    let empty = Vec::new();
    match profile {
        ProfileKind::Anthropic | ProfileKind::Code => body["messages"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| SentResult {
                call_id: b["tool_use_id"].as_str().unwrap_or_default().into(),
                content: text_of(&b["content"]),
                is_error: b["is_error"].as_bool(),
            })
            .collect(),
        ProfileKind::OpenAi => body["input"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .map(|i| SentResult {
                call_id: i["call_id"].as_str().unwrap_or_default().into(),
                content: i["output"].as_str().unwrap_or_default().into(),
                is_error: None,
            })
            .collect(),
        ProfileKind::Gemini => body["contents"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter_map(|c| c["parts"].as_array())
            .flatten()
            .filter_map(|p| p.get("functionResponse"))
            .map(|f| {
                let error = f["response"].get("error");
                SentResult {
                    call_id: f["id"].as_str().unwrap_or_default().into(),
                    content: text_of(error.unwrap_or(&f["response"]["result"])),
                    is_error: Some(error.is_some()),
                }
            })
            .collect(),
    }
}

/// The result of `call_id` in a request body.
pub fn sent_result(profile: ProfileKind, body: &Value, call_id: &str) -> SentResult {
    let mut results = sent_results(profile, body);
    let at = results
        .iter()
        .position(|r| r.call_id == call_id)
        .unwrap_or_else(|| panic!("the request has no result for {call_id}: {results:?}"));
    results.swap_remove(at)
}

/// Asserts the model was told `call_id` failed, with `needle` in the message.
pub fn assert_error_result(profile: ProfileKind, body: &Value, call_id: &str, needle: &str) {
    let result = sent_result(profile, body, call_id);
    assert!(result.content.contains(needle), "{call_id}: {needle:?} not in {:?}", result.content);
    assert_ne!(result.is_error, Some(false), "{call_id} is flagged as a success");
}

/// Role and text of the last message of a request body.
pub fn last_message(profile: ProfileKind, body: &Value) -> (String, String) {
    let (list, content) = match profile {
        ProfileKind::Anthropic | ProfileKind::Code => ("messages", "content"),
        ProfileKind::OpenAi => ("input", "content"),
        ProfileKind::Gemini => ("contents", "parts"),
    };
    let last = body[list].as_array().and_then(|l| l.last()).cloned().unwrap_or_default();
    (last["role"].as_str().unwrap_or_default().to_string(), text_of(&last[content]))
}

/// Names of the tools offered in a request body.
pub fn offered_tools(profile: ProfileKind, body: &Value) -> Vec<String> {
    let tools = match profile {
        ProfileKind::Gemini => &body["tools"][0]["functionDeclarations"],
        _ => &body["tools"],
    };
    tools.as_array().into_iter().flatten().filter_map(|t| t["name"].as_str().map(String::from)).collect()
}

/// The reasoning setting of a request body in the dialect's own field (`Null` when absent).
pub fn sent_effort(profile: ProfileKind, body: &Value) -> Value {
    match profile {
        ProfileKind::OpenAi => body["reasoning"]["effort"].clone(),
        ProfileKind::Anthropic | ProfileKind::Code => body["thinking"]["budget_tokens"].clone(),
        ProfileKind::Gemini => body["generationConfig"]["thinkingConfig"]["thinkingBudget"].clone(),
    }
}

/// The system prompt of a request body, wherever the dialect puts it.
pub fn system_prompt(profile: ProfileKind, body: &Value) -> String {
    match profile {
        ProfileKind::OpenAi => text_of(&body["instructions"]),
        ProfileKind::Anthropic | ProfileKind::Code => text_of(&body["system"]),
        ProfileKind::Gemini => text_of(&body["systemInstruction"]["parts"]),
    }
}
