//! Small custom tools for session tests (registered through `SessionOptions::tools`).

use std::sync::Arc;

use agentls::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify};

/// `echo {text}` → `echo: <text>`; `tag` distinguishes two tools of the same name.
pub struct Echo {
    pub tag: &'static str,
}

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes its text argument."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let text = args["text"].as_str().unwrap_or_default();
        Ok(ToolOutput::text(format!("{}: {text}", self.tag)))
    }
}

/// Always fails with "disk on fire".
pub struct Fail;

#[async_trait]
impl Tool for Fail {
    fn name(&self) -> &str {
        "fail"
    }
    fn description(&self) -> &str {
        "Always fails."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new("disk on fire"))
    }
}

/// Returns `size` characters: `size/2` of 'a' then the rest 'b'.
pub struct Big;

#[async_trait]
impl Tool for Big {
    fn name(&self) -> &str {
        "big"
    }
    fn description(&self) -> &str {
        "Returns a lot of output."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let size = args["size"].as_u64().unwrap_or(0) as usize;
        Ok(ToolOutput::text(format!("{}{}", "a".repeat(size / 2), "b".repeat(size - size / 2))))
    }
}

/// Waits until the test releases it (or the turn is cancelled).
pub struct Gate {
    pub release: Arc<Notify>,
}

#[async_trait]
impl Tool for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> &str {
        "Waits for the test."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::select! {
            _ = self.release.notified() => Ok(ToolOutput::text("released")),
            _ = ctx.cancel.cancelled() => Err(ToolError::new("cancelled")),
        }
    }
}

/// Two calls only finish when both run at the same time.
pub struct Rendezvous {
    pub barrier: Arc<Barrier>,
}

#[async_trait]
impl Tool for Rendezvous {
    fn name(&self) -> &str {
        "meet"
    }
    fn description(&self) -> &str {
        "Finishes once another call meets it."
    }
    fn read_only(&self) -> bool {
        true
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.barrier.wait().await;
        Ok(ToolOutput::text(format!("met {}", args["who"].as_str().unwrap_or_default())))
    }
}

/// A tool of any name answering `stub <name>`, to stand in for (or replace) a profile tool.
pub struct Stub {
    pub name: &'static str,
}

#[async_trait]
impl Tool for Stub {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "A stand-in registered by the test."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": true})
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("stub {}", self.name)))
    }
}
