//! Builds a [`Response`] from streamed pieces while emitting the matching [`StreamEvent`]s, so
//! every adapter reports deltas the same way. Invariants: parts stay in the order the provider
//! produced them and `finish` is called once; the tool calls of a response have distinct,
//! non-empty ids (a history with an empty or repeated call id is refused by every provider).

use std::collections::HashMap;

use serde_json::Value;

use super::types::{ContentPart, FinishReason, Response, StreamEvent, ToolCall, Usage, parse_arguments};

/// Accumulates one response. Tool calls are addressed by a provider key (block index, item id).
#[derive(Debug, Default)]
pub struct Assembler {
    pub id: String,
    pub model: String,
    content: Vec<ContentPart>,
    /// Provider key → (position in `content`, joined argument text).
    open_tools: HashMap<String, (usize, String)>,
    /// Provider key → position of a thinking part still being streamed.
    open_thinking: HashMap<String, usize>,
    pub usage: Usage,
    pub finish_reason: Option<FinishReason>,
    events: Vec<StreamEvent>,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Events produced since the last call.
    pub fn drain(&mut self) -> Vec<StreamEvent> {
        std::mem::take(&mut self.events)
    }

    pub fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.content.last_mut() {
            Some(ContentPart::Text { text: last }) => last.push_str(text),
            _ => self.content.push(ContentPart::text(text)),
        }
        self.events.push(StreamEvent::TextDelta(text.to_string()));
    }

    /// Appends reasoning text to the thinking part `key` (opening it if needed). Text for a part
    /// that other content followed opens a new part, so the parts keep the order of the deltas.
    pub fn thinking(&mut self, key: &str, text: &str) {
        if self.open_thinking.get(key).is_some_and(|&at| at + 1 != self.content.len()) {
            self.open_thinking.remove(key);
        }
        let at = self.thinking_slot(key);
        if let ContentPart::Thinking { text: t, .. } = &mut self.content[at] {
            t.push_str(text);
        }
        if !text.is_empty() {
            self.events.push(StreamEvent::ThinkingDelta(text.to_string()));
        }
    }

    /// Sets the signature (and item id) of the thinking part `key`.
    pub fn thinking_signature(&mut self, key: &str, signature: Option<String>, id: Option<String>) {
        let at = self.thinking_slot(key);
        if let ContentPart::Thinking { signature: s, id: i, .. } = &mut self.content[at] {
            if signature.is_some() {
                *s = signature;
            }
            if id.is_some() {
                *i = id;
            }
        }
    }

    /// Closes thinking part `key`: later thinking with the same key starts a new part.
    pub fn end_thinking(&mut self, key: &str) {
        self.open_thinking.remove(key);
    }

    fn thinking_slot(&mut self, key: &str) -> usize {
        if let Some(&at) = self.open_thinking.get(key) {
            return at;
        }
        self.content.push(ContentPart::Thinking { text: String::new(), signature: None, id: None });
        let at = self.content.len() - 1;
        self.open_thinking.insert(key.to_string(), at);
        at
    }

    pub fn push_part(&mut self, part: ContentPart) {
        self.content.push(part);
    }

    pub fn has_tool(&self, key: &str) -> bool {
        self.open_tools.contains_key(key)
    }

    /// Opens tool call `key`; a call still open under the same key ends first.
    pub fn start_tool(&mut self, key: &str, id: &str, name: &str) {
        self.end_tool(key, None);
        let id = distinct_call_id(id, |candidate| {
            self.content.iter().any(|p| matches!(p, ContentPart::ToolCall(call) if call.id == candidate))
        });
        self.content.push(ContentPart::ToolCall(ToolCall {
            id: id.clone(),
            name: name.to_string(),
            arguments: Value::Null,
            signature: None,
        }));
        self.open_tools.insert(key.to_string(), (self.content.len() - 1, String::new()));
        self.events.push(StreamEvent::ToolCallStart { id, name: name.to_string() });
    }

    pub fn tool_args(&mut self, key: &str, fragment: &str) {
        if fragment.is_empty() {
            return;
        }
        let Some((at, args)) = self.open_tools.get_mut(key) else { return };
        args.push_str(fragment);
        if let ContentPart::ToolCall(call) = &self.content[*at] {
            self.events.push(StreamEvent::ToolCallDelta {
                id: call.id.clone(),
                arguments_fragment: fragment.to_string(),
            });
        }
    }

    pub fn tool_signature(&mut self, key: &str, signature: Option<String>) {
        if let Some((at, _)) = self.open_tools.get(key)
            && let ContentPart::ToolCall(call) = &mut self.content[*at]
        {
            call.signature = signature;
        }
    }

    /// Parses the joined arguments of tool `key` (or `complete` when the provider sent them
    /// whole) and emits `ToolCallEnd`.
    pub fn end_tool(&mut self, key: &str, complete: Option<&str>) {
        let Some((at, joined)) = self.open_tools.remove(key) else { return };
        let raw = complete.map(str::to_string).unwrap_or(joined);
        let arguments = parse_arguments(&raw);
        if let ContentPart::ToolCall(call) = &mut self.content[at] {
            call.arguments = arguments.clone();
            self.events.push(StreamEvent::ToolCallEnd {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments,
            });
        }
    }

    /// A tool call that arrived whole (Gemini, Ollama).
    pub fn whole_tool(
        &mut self,
        key: &str,
        id: &str,
        name: &str,
        arguments: &str,
        signature: Option<String>,
    ) {
        self.start_tool(key, id, name);
        self.tool_signature(key, signature);
        self.tool_args(key, arguments);
        self.end_tool(key, None);
    }

    /// Closes whatever is still open, emits `Finish` and returns the response.
    pub fn finish(&mut self) -> Response {
        let mut keys: Vec<String> = self.open_tools.keys().cloned().collect();
        keys.sort_by_key(|k| self.open_tools[k].0);
        for key in keys {
            self.end_tool(&key, None);
        }
        let has_calls = self.content.iter().any(|p| matches!(p, ContentPart::ToolCall(_)));
        let finish_reason = match self.finish_reason.clone() {
            Some(FinishReason::Stop) | None if has_calls => FinishReason::ToolCalls,
            Some(r) => r,
            None => FinishReason::Stop,
        };
        let response = Response {
            id: self.id.clone(),
            model: self.model.clone(),
            content: std::mem::take(&mut self.content),
            finish_reason,
            usage: self.usage,
        };
        self.events.push(StreamEvent::Finish(response.clone()));
        response
    }
}

/// `id`, or when it is empty or `taken`, an id made from it that is not: `call_1`, `toolu_x_2`.
pub fn distinct_call_id(id: &str, taken: impl Fn(&str) -> bool) -> String {
    if !id.is_empty() && !taken(id) {
        return id.to_string();
    }
    let base = if id.is_empty() { "call" } else { id };
    (1..).map(|n| format!("{base}_{n}")).find(|candidate| !taken(candidate)).unwrap_or_default()
}

/// Gives the tool calls of a whole (not streamed) response distinct, non-empty ids.
pub fn distinct_call_ids(response: &mut Response) {
    let mut seen: Vec<String> = Vec::new();
    for part in &mut response.content {
        if let ContentPart::ToolCall(call) = part {
            call.id = distinct_call_id(&call.id, |candidate| seen.iter().any(|s| s == candidate));
            seen.push(call.id.clone());
        }
    }
}

/// The events a caller would have seen had `response` been streamed (replay, non-streaming).
pub fn events_for(response: &Response) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    for part in &response.content {
        match part {
            ContentPart::Text { text } if !text.is_empty() => {
                events.push(StreamEvent::TextDelta(text.clone()))
            }
            ContentPart::Thinking { text, .. } if !text.is_empty() => {
                events.push(StreamEvent::ThinkingDelta(text.clone()))
            }
            ContentPart::ToolCall(call) => {
                events.push(StreamEvent::ToolCallStart { id: call.id.clone(), name: call.name.clone() });
                events.push(StreamEvent::ToolCallDelta {
                    id: call.id.clone(),
                    arguments_fragment: call.arguments.to_string(),
                });
                events.push(StreamEvent::ToolCallEnd {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
            }
            _ => {}
        }
    }
    events.push(StreamEvent::Finish(response.clone()));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reasoning(response: &Response) -> String {
        response
            .content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Thinking { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Found by fuzzing (llm_stream): reasoning deltas that alternate between two keys were stored
    /// in another order than they were streamed.
    #[test]
    fn interleaved_thinking_keeps_the_streamed_order() {
        let mut out = Assembler::new();
        out.thinking("0", "first ");
        out.thinking("", "second ");
        out.thinking("0", "third");
        out.thinking_signature("0", Some("sig".into()), None);
        let response = out.finish();
        let streamed: String = out
            .drain()
            .iter()
            .filter_map(|e| if let StreamEvent::ThinkingDelta(d) = e { Some(d.as_str()) } else { None })
            .collect();
        assert_eq!(streamed, "first second third");
        assert_eq!(reasoning(&response), streamed);
        assert!(
            matches!(&response.content[2], ContentPart::Thinking { signature: Some(s), .. } if s == "sig")
        );
    }

    fn call_ids(response: &Response) -> Vec<&str> {
        response.tool_calls().iter().map(|c| c.id.as_str()).collect()
    }

    /// Found by fuzzing (llm_stream): a stream that repeated its tool-call blocks (or sent one
    /// without an id) gave two calls the same id, which the next request could not answer.
    #[test]
    fn tool_calls_get_distinct_non_empty_ids() {
        let mut out = Assembler::new();
        for (key, id) in [("1", "toolu_a"), ("2", ""), ("1", "toolu_a"), ("3", "call_1")] {
            out.start_tool(key, id, "read_file");
            out.end_tool(key, None);
        }
        let response = out.finish();
        assert_eq!(call_ids(&response), ["toolu_a", "call_1", "toolu_a_1", "call_1_1"]);
        let ended: Vec<String> = out
            .drain()
            .into_iter()
            .filter_map(|e| if let StreamEvent::ToolCallEnd { id, .. } = e { Some(id) } else { None })
            .collect();
        assert_eq!(ended, call_ids(&response), "the events name the ids the response holds");

        let mut whole = response.clone();
        for part in &mut whole.content {
            if let ContentPart::ToolCall(call) = part {
                call.id = if call.id == "call_1" { String::new() } else { "same".into() };
            }
        }
        distinct_call_ids(&mut whole);
        assert_eq!(call_ids(&whole), ["same", "call_1", "same_1", "same_2"]);
    }

    /// Found by fuzzing (llm_stream): a call opened under the key of a call still open replaced
    /// it, and the first call kept no arguments and never ended.
    #[test]
    fn a_call_opened_under_an_open_key_ends_the_open_one() {
        let mut out = Assembler::new();
        out.start_tool("1", "a", "read_file");
        out.tool_args("1", r#"{"path":"x"}"#);
        out.start_tool("1", "b", "grep");
        out.tool_args("1", r#"{"pattern":"y"}"#);
        let response = out.finish();
        let arguments: Vec<String> = response.tool_calls().iter().map(|c| c.arguments.to_string()).collect();
        assert_eq!(arguments, [r#"{"path":"x"}"#, r#"{"pattern":"y"}"#]);
        let ended = out.drain().iter().filter(|e| matches!(e, StreamEvent::ToolCallEnd { .. })).count();
        assert_eq!(ended, 2);
    }
}
