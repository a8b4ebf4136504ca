//! The unified LLM client: provider-neutral types, one adapter per provider dialect, retries,
//! and cassette record/replay. Callers use [`Client`]; adapters stay private to this module.

mod adapter;
pub mod anthropic;
mod assemble;
pub mod capabilities;
pub mod cassette;
pub mod client;
pub mod error;
pub mod gemini;
pub mod http;
pub mod image;
pub mod openai;
pub mod openai_chat;
pub mod retry;
pub mod schema;
pub mod types;

pub use capabilities::{ModelCapabilities, capabilities};
pub use client::{Client, EventStream};
pub use error::LlmError;
pub use retry::RetryPolicy;
pub use types::{
    ContentPart, FinishReason, Image, Message, ReasoningEffort, Request, Response, Role, StreamEvent,
    ToolCall, ToolChoice, ToolDefinition, ToolResult, Usage,
};
