//! One tool of an MCP server as a tool of the session: `mcp__server__tool`, the server's schema,
//! a permission question through the one policy before every call, the result converted.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::server::{CallError, Server};
use crate::tools::summary::CallArgs;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use crate::workspace::{McpCall, PermissionRequest};

/// Characters of the arguments shown in a permission question's one-line form.
const SHOWN_ARGUMENTS: usize = 2000;

pub struct McpTool {
    /// What the model calls it (`mcp__server__tool`).
    name: String,
    server: Arc<Server>,
    /// The server's own name for it.
    tool: String,
    description: String,
    parameters: Value,
    read_only_hint: bool,
}

impl McpTool {
    pub fn new(name: String, server: Arc<Server>, info: &rmcp::model::Tool) -> Self {
        let mut description = info.description.as_deref().unwrap_or_default().trim().to_string();
        if description.is_empty() {
            description = info.title.clone().unwrap_or_else(|| info.name.to_string());
        }
        let mut parameters = Value::Object(info.input_schema.as_ref().clone());
        // MCP requires an object schema; a server that leaves `type` out still means one.
        if let Some(object) = parameters.as_object_mut() {
            object.entry("type").or_insert_with(|| Value::String("object".into()));
        }
        Self {
            name,
            tool: info.name.to_string(),
            description: format!(
                "{description}\n\n(Tool `{}` of the MCP server `{}`.)",
                info.name,
                server.name()
            ),
            server,
            parameters,
            read_only_hint: info.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false),
        }
    }

    /// The one-line form of a call shown where a question has only text (a terminal, a plain
    /// editor): `mcp SERVER TOOL {"arg": …}`.
    pub fn command_line(server: &str, tool: &str, arguments: &Value) -> String {
        let mut args = arguments.to_string();
        if args.len() > SHOWN_ARGUMENTS {
            let cut = (0..=SHOWN_ARGUMENTS).rev().find(|&i| args.is_char_boundary(i)).unwrap_or(0);
            args.truncate(cut);
            args.push('…');
        }
        format!("mcp {server} {tool} {args}")
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    /// `server: tool {arguments}`: the server's name wherever a client shows only the summary.
    fn summary(&self, call: &CallArgs<'_>) -> String {
        match call.args().as_object() {
            Some(args) if !args.is_empty() => {
                format!("{}: {} {}", self.server.name(), self.tool, call.args())
            }
            _ => format!("{}: {}", self.server.name(), self.tool),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let shown = Value::Object(arguments.clone());
        let request = PermissionRequest {
            call_id: ctx.call_id.clone(),
            tool_name: self.name.clone(),
            command: Self::command_line(self.server.name(), &self.tool, &shown),
            cwd: ctx.cwd.clone(),
            mcp: Some(McpCall {
                server: self.server.name().to_string(),
                tool: self.tool.clone(),
                arguments: shown,
                read_only_hint: self.read_only_hint,
            }),
        };
        if let Some(feedback) = ctx.editor.ask_permission(request).await.denied() {
            let mut message = format!("The user denied this call of `{}`.", self.tool);
            if let Some(feedback) = feedback.filter(|f| !f.trim().is_empty()) {
                message.push_str(&format!(" Feedback: {feedback}"));
            }
            return Err(ToolError::new(message));
        }
        let progress = ctx.output.as_ref().and_then(|output| output(&ctx.call_id));
        match self.server.call(&self.tool, arguments, &ctx.cancel, progress).await {
            Ok(result) => super::result::convert(result).map_err(ToolError::new),
            Err(CallError::Cancelled) => Err(ToolError::new(format!(
                "The call of `{}` was cancelled with the turn; the server was told to stop it.",
                self.tool
            ))),
            Err(error) => Err(ToolError::new(error.to_string())),
        }
    }
}
