//! The `diagnostics` tool: the errors and warnings the editor shows, fetched from a plugin
//! client with the custom request `agentls/diagnostics`.
//!
//! Invariant: the request has a deadline; an editor that cannot answer gives the model an
//! error result saying so, never a hang.

use std::sync::Weak;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::outbound::DiagnosticsRequest;
use super::server::ServerState;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

pub struct DiagnosticsTool {
    state: Weak<ServerState>,
}

impl DiagnosticsTool {
    pub fn new(state: Weak<ServerState>) -> Self {
        Self { state }
    }
}

fn severity(value: &Value) -> &'static str {
    match value.as_u64() {
        Some(1) => "error",
        Some(2) => "warning",
        Some(3) => "info",
        Some(4) => "hint",
        _ => "diagnostic",
    }
}

/// One line per diagnostic: `path:line:col: severity: message (source)`.
fn render(result: &Value) -> String {
    let mut lines = Vec::new();
    let files = result.get("files").and_then(Value::as_array).cloned().unwrap_or_default();
    for file in files {
        let uri = file.get("uri").and_then(Value::as_str).unwrap_or_default();
        let path = uri
            .parse::<url::Url>()
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| uri.to_string());
        for d in file.get("diagnostics").and_then(Value::as_array).into_iter().flatten() {
            let line = d.pointer("/range/start/line").and_then(Value::as_u64).unwrap_or(0) + 1;
            let col = d.pointer("/range/start/character").and_then(Value::as_u64).unwrap_or(0) + 1;
            let message = d.get("message").and_then(Value::as_str).unwrap_or_default();
            let source =
                d.get("source").and_then(Value::as_str).map(|s| format!(" ({s})")).unwrap_or_default();
            lines.push(format!("{path}:{line}:{col}: {}: {message}{source}", severity(&d["severity"])));
        }
    }
    if lines.is_empty() { "No diagnostics.".to_string() } else { lines.join("\n") }
}

#[async_trait]
impl Tool for DiagnosticsTool {
    fn name(&self) -> &str {
        "diagnostics"
    }

    fn description(&self) -> &str {
        "Get the errors and warnings the editor currently shows (from its language servers and linters), \
         for one file or, without `path`, for the whole workspace."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A file path; omit for the whole workspace"}},
            "additionalProperties": false,
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let state = self.state.upgrade().ok_or_else(|| ToolError::new("the editor connection is closed"))?;
        let uri = match args.get("path").and_then(Value::as_str) {
            Some(path) => {
                let resolved =
                    ctx.workspace.resolve(&ctx.cwd, path).map_err(|e| ToolError::new(e.to_string()))?;
                let uri = super::convert::uri_of(&resolved)
                    .ok_or_else(|| ToolError::new(format!("{path} is not a file path")))?;
                Some(uri.as_str().to_string())
            }
            None => None,
        };
        let result = state
            .outbound
            .request::<DiagnosticsRequest>(json!({"uri": uri}))
            .await
            .map_err(|e| ToolError::new(format!("{e}; the diagnostics are not available")))?;
        Ok(ToolOutput::text(render(&result)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_one_line_per_diagnostic() {
        let result = json!({"files": [{"uri": "file:///w/src/a.rs", "diagnostics": [
            {"range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 5}},
             "severity": 1, "message": "mismatched types", "source": "rustc"}
        ]}]});
        assert_eq!(render(&result), "/w/src/a.rs:3:5: error: mismatched types (rustc)");
        assert_eq!(render(&json!({"files": []})), "No diagnostics.");
    }
}
