//! The unified LLM client: provider-neutral types, one adapter per provider dialect.

pub mod types;

pub use types::{
    ContentPart, FinishReason, Image, Message, ReasoningEffort, Request, Response, Role, StreamEvent,
    ToolCall, ToolChoice, ToolDefinition, ToolResult, Usage,
};
