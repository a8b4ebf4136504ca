//! The `diagnostics` tool: the errors and warnings the editor shows, fetched from a plugin
//! client with the custom request `agentls/diagnostics`.
//!
//! Invariant: the request has a deadline; an editor that cannot answer gives the model an
//! error result saying so, never a hang.

use std::sync::Weak;

use async_trait::async_trait;
use serde_json::{Value, json};
use tower_lsp_server::ls_types::DiagnosticSeverity;

use super::protocol::{DiagnosticsParams, DiagnosticsRequest, DiagnosticsResult};
use super::state::ServerState;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

pub struct DiagnosticsTool {
    state: Weak<ServerState>,
}

impl DiagnosticsTool {
    pub fn new(state: Weak<ServerState>) -> Self {
        Self { state }
    }
}

fn severity(value: Option<DiagnosticSeverity>) -> &'static str {
    match value {
        Some(DiagnosticSeverity::ERROR) => "error",
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "diagnostic",
    }
}

/// One line per diagnostic: `path:line:col: severity: message (source)`.
fn render(result: &DiagnosticsResult) -> String {
    let mut lines = Vec::new();
    for file in &result.files {
        let path = file
            .uri
            .parse::<url::Url>()
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| file.uri.clone());
        for d in &file.diagnostics {
            let (line, col) = (d.range.start.line + 1, d.range.start.character + 1);
            let source = d.source.as_ref().map(|s| format!(" ({s})")).unwrap_or_default();
            lines.push(format!("{path}:{line}:{col}: {}: {}{source}", severity(d.severity), d.message));
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
                let resolved = ctx.resolve(path)?;
                let uri = super::convert::uri_of(&resolved)
                    .ok_or_else(|| ToolError::new(format!("{path} is not a file path")))?;
                Some(uri.as_str().to_string())
            }
            None => None,
        };
        let result = state
            .outbound
            .request::<DiagnosticsRequest>(DiagnosticsParams { uri })
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
        let result: DiagnosticsResult = serde_json::from_value(result).expect("a diagnostics result");
        assert_eq!(render(&result), "/w/src/a.rs:3:5: error: mismatched types (rustc)");
        assert_eq!(render(&DiagnosticsResult::default()), "No diagnostics.");
    }
}
