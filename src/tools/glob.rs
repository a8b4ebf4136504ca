//! `glob`: files whose path matches a glob pattern, most recently modified first, gitignored and
//! hidden files skipped.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::{display, parse_args, resolve_or_cwd};
use super::summary::CallArgs;
use super::{Tool, ToolContext, ToolError, ToolOutput};

pub struct GlobTool;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
}

#[async_trait]
impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        "Finds files by name with a glob pattern such as `**/*.rs` or `src/**/*.{ts,tsx}` and returns \
         their paths, most recently modified first. A pattern without `/` (e.g. `*.md`) matches file \
         names at any depth. Files ignored by .gitignore and hidden files are skipped."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob pattern to match files against."},
                "path": {"type": "string", "description": "Directory to search in (default: the working directory)."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn summary(&self, call: &CallArgs<'_>) -> String {
        format!("glob {}", call.str("pattern").unwrap_or_default())
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let root = resolve_or_cwd(ctx, args.path.as_deref())?;
        let files = ctx.env.glob(&args.pattern, &root).await.map_err(|e| ToolError::new(e.to_string()))?;
        if files.is_empty() {
            return Ok(ToolOutput::text(format!("No files found matching `{}`.", args.pattern)));
        }
        let mut out = String::new();
        for file in &files {
            out.push_str(&display(ctx, file));
            out.push('\n');
        }
        Ok(ToolOutput::text(out))
    }
}
