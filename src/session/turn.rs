//! Conversation turns (spec §2.4) and their conversion to model messages.
//!
//! Invariants: a turn is stored exactly as it happened (assistant turns keep the provider's
//! content parts, signatures included, so they can be echoed back); steering, system and
//! instructions turns reach the model as user-role messages. Turns serialize as tagged JSON
//! objects (transcripts).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::llm::{ContentPart, Image, Message, Response, Role, ToolCall, ToolResult, Usage};
use crate::profiles::ProjectDocs;
use crate::profiles::project_docs::ProjectDoc;

/// One entry of the conversation history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Turn {
    User(TextTurn),
    Assistant(AssistantTurn),
    ToolResults(ToolResultsTurn),
    System(TextTurn),
    Steering(TextTurn),
    /// Instruction files of a subdirectory that started to apply (see
    /// [`NestedDocs`](crate::profiles::project_docs::NestedDocs)).
    Instructions(InstructionsTurn),
    /// Earlier turns condensed by compaction; the model reads it as a user message that starts
    /// with [`SUMMARY_SENTINEL`].
    Summary(SummaryTurn),
}

/// The first line of the message that carries a summary (seed 004's exact words).
pub const SUMMARY_SENTINEL: &str = "[Earlier conversation summary — treat as background context]";

/// The message a summary becomes: the sentinel line, a blank line, the summary.
pub fn summary_message(summary: &str) -> String {
    format!("{SUMMARY_SENTINEL}\n\n{summary}")
}

/// A summary that replaced the turns before it (seed 004 §1.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryTurn {
    /// What the model wrote, without the sentinel line.
    pub summary: String,
    /// How many turns it replaced.
    pub turns_summarized: usize,
    /// Model turns among them: they still count toward the session's `max_turns`.
    #[serde(default)]
    pub model_turns: usize,
    pub timestamp: DateTime<Utc>,
}

/// Instruction files handed to the model in the middle of a session, with the text it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionsTurn {
    pub docs: Vec<ProjectDoc>,
    /// True when the budget cut the text.
    #[serde(default)]
    pub truncated: bool,
    pub timestamp: DateTime<Utc>,
}

/// A user, system or steering message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextTurn {
    pub content: String,
    /// Images the user attached (a user turn only), stored with it so a resumed session sends
    /// them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    pub timestamp: DateTime<Utc>,
}

/// What the model answered in one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantTurn {
    /// The answer text.
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    pub usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The model's content parts exactly as received (thinking signatures included).
    #[serde(default)]
    pub parts: Vec<ContentPart>,
    pub timestamp: DateTime<Utc>,
}

/// The results of one round of tool calls, in call order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultsTurn {
    pub results: Vec<ToolResult>,
    pub timestamp: DateTime<Utc>,
}

impl Turn {
    pub fn user(content: impl Into<String>) -> Self {
        Self::user_with_images(content, Vec::new())
    }

    pub fn user_with_images(content: impl Into<String>, images: Vec<Image>) -> Self {
        Self::User(TextTurn { content: content.into(), images, timestamp: Utc::now() })
    }

    pub fn steering(content: impl Into<String>) -> Self {
        Self::Steering(TextTurn { content: content.into(), images: Vec::new(), timestamp: Utc::now() })
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::System(TextTurn { content: content.into(), images: Vec::new(), timestamp: Utc::now() })
    }

    pub fn instructions(docs: ProjectDocs) -> Self {
        Self::Instructions(InstructionsTurn {
            docs: docs.docs,
            truncated: docs.truncated,
            timestamp: Utc::now(),
        })
    }

    pub fn tool_results(results: Vec<ToolResult>) -> Self {
        Self::ToolResults(ToolResultsTurn { results, timestamp: Utc::now() })
    }

    pub fn assistant(response: &Response) -> Self {
        Self::Assistant(AssistantTurn {
            content: response.text(),
            tool_calls: response.tool_calls().into_iter().cloned().collect(),
            reasoning: response.reasoning(),
            usage: response.usage,
            response_id: (!response.id.is_empty()).then(|| response.id.clone()),
            parts: response.content.clone(),
            timestamp: Utc::now(),
        })
    }

    /// True for turns that start a new exchange from the user's side.
    pub fn is_user_boundary(&self) -> bool {
        matches!(self, Self::User(_) | Self::Steering(_))
    }

    /// The message this turn becomes in a request.
    pub fn to_message(&self) -> Message {
        match self {
            Self::User(t) | Self::Steering(t) | Self::System(t) if t.images.is_empty() => {
                Message::user(t.content.clone())
            }
            Self::User(t) | Self::Steering(t) | Self::System(t) => {
                let mut parts = vec![ContentPart::text(t.content.clone())];
                parts.extend(t.images.iter().cloned().map(ContentPart::Image));
                Message::new(Role::User, parts)
            }
            Self::Instructions(i) => Message::user(i.message()),
            Self::Summary(s) => Message::user(summary_message(&s.summary)),
            Self::Assistant(a) if !a.parts.is_empty() => Message::assistant(a.parts.clone()),
            Self::Assistant(a) => {
                let mut parts = Vec::new();
                if !a.content.is_empty() {
                    parts.push(ContentPart::text(a.content.clone()));
                }
                parts.extend(a.tool_calls.iter().cloned().map(ContentPart::ToolCall));
                Message::assistant(parts)
            }
            Self::ToolResults(r) => Message::tool_results(r.results.clone()),
        }
    }

    /// Size in characters (Unicode scalar values, not bytes: the spec's 4-characters-per-token
    /// estimate counts characters, and text in other scripts is several bytes per character).
    pub fn char_len(&self) -> usize {
        let chars = |s: &str| s.chars().count();
        match self {
            Self::User(t) | Self::Steering(t) | Self::System(t) => chars(&t.content),
            Self::Assistant(a) => {
                chars(&a.content)
                    + a.reasoning.as_deref().map_or(0, chars)
                    + a.tool_calls
                        .iter()
                        .map(|c| chars(&c.name) + chars(&c.arguments.to_string()))
                        .sum::<usize>()
            }
            Self::ToolResults(r) => r.results.iter().map(|r| chars(&r.content)).sum(),
            Self::Instructions(i) => chars(&i.message()),
            Self::Summary(s) => chars(&summary_message(&s.summary)),
        }
    }
}

impl InstructionsTurn {
    /// The text the model reads.
    pub fn message(&self) -> String {
        ProjectDocs { docs: self.docs.clone(), truncated: self.truncated }.nested_message()
    }
}

/// The messages of a history, in order.
pub fn to_messages(history: &[Turn]) -> Vec<Message> {
    history.iter().map(Turn::to_message).collect()
}

/// A model turn calling `read_file` on `id` (saying `reading <id>`) and its result `output`.
#[cfg(test)]
pub(crate) fn read_round(id: &str, output: String) -> [Turn; 2] {
    let response = Response {
        content: vec![
            ContentPart::text(format!("reading {id}")),
            ContentPart::ToolCall(ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: serde_json::json!({"file_path": id}),
                signature: None,
            }),
        ],
        ..Default::default()
    };
    [
        Turn::assistant(&response),
        Turn::tool_results(vec![ToolResult {
            call_id: id.into(),
            name: "read_file".into(),
            content: output,
            is_error: false,
            images: vec![],
        }]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn turns_round_trip_as_tagged_json() {
        let response = Response {
            id: "r1".into(),
            content: vec![
                ContentPart::thinking("plan", Some("sig".into())),
                ContentPart::text("hi"),
                ContentPart::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: json!({"file_path": "a"}),
                    signature: None,
                }),
            ],
            ..Default::default()
        };
        let history = vec![Turn::user("do it"), Turn::assistant(&response), Turn::steering("faster")];
        let line = serde_json::to_string(&history[1]).unwrap();
        assert!(line.starts_with(r#"{"type":"assistant""#), "{line}");
        let back: Vec<Turn> = serde_json::from_value(serde_json::to_value(&history).unwrap()).unwrap();
        assert_eq!(back, history);
        let messages = to_messages(&history);
        assert_eq!(messages[1].content, response.content, "assistant parts echoed unchanged");
        assert_eq!(messages[2].role, crate::llm::Role::User, "steering becomes a user message");
    }

    #[test]
    fn size_counts_characters_not_bytes() {
        // Four characters of four, three, two and one bytes.
        assert_eq!(Turn::user("😀€éa").char_len(), 4);
        let results = Turn::tool_results(vec![ToolResult {
            call_id: "c1".into(),
            name: "read_file".into(),
            content: "日本語".into(),
            is_error: false,
            images: Vec::new(),
        }]);
        assert_eq!(results.char_len(), 3);
    }
}
