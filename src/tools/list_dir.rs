//! `list_dir`: the entries of a directory down to a depth, directories marked, gitignored entries
//! and `.git` skipped, sorted by path.

use async_trait::async_trait;
use globset::{Glob, GlobSetBuilder};
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::{display, parse_args, resolve_or_cwd};
use super::{Tool, ToolContext, ToolError, ToolOutput};

/// Deepest listing a call may ask for.
pub const MAX_DEPTH: usize = 5;

pub struct ListDirTool;

#[derive(Deserialize)]
struct Args {
    path: Option<String>,
    depth: Option<usize>,
    #[serde(default)]
    ignore: Vec<String>,
}

#[async_trait]
impl Tool for ListDirTool {
    fn name(&self) -> &str {
        "list_dir"
    }

    fn description(&self) -> &str {
        "Lists the files and subdirectories of a directory. `depth` (1-5, default 1) sets how many \
         levels are listed; directories are marked `[DIR]`. Entries ignored by .gitignore and the \
         .git directory are skipped; `ignore` adds glob patterns to skip."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The directory to list (default: the working directory)."},
                "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "How many levels to list (default 1)."},
                "ignore": {"type": "array", "items": {"type": "string"}, "description": "Glob patterns of entries to leave out, e.g. [\"*.log\", \"target\"]."}
            },
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let dir = resolve_or_cwd(ctx, args.path.as_deref())?;
        let depth = args.depth.unwrap_or(1).clamp(1, MAX_DEPTH);
        let mut ignore = GlobSetBuilder::new();
        for pattern in &args.ignore {
            let glob = Glob::new(pattern)
                .map_err(|e| ToolError::new(format!("invalid ignore pattern `{pattern}`: {e}")))?;
            ignore.add(glob);
        }
        let ignore = ignore.build().map_err(|e| ToolError::new(format!("invalid ignore patterns: {e}")))?;
        let entries = ctx.env.list_directory(&dir, depth).await.map_err(|e| ToolError::new(e.to_string()))?;
        let shown = display(ctx, &dir);
        let mut skipped_prefixes: Vec<String> = Vec::new();
        let mut out = format!("Directory listing for {shown}:\n");
        let mut count = 0;
        for entry in &entries {
            if skipped_prefixes.iter().any(|p| entry.name.starts_with(p.as_str())) {
                continue;
            }
            let base = entry.name.rsplit('/').next().unwrap_or(&entry.name);
            if ignore.is_match(base) || ignore.is_match(&entry.name) {
                if entry.is_dir {
                    skipped_prefixes.push(format!("{}/", entry.name));
                }
                continue;
            }
            count += 1;
            if entry.is_dir {
                out.push_str(&format!("[DIR] {}/\n", entry.name));
            } else {
                out.push_str(&format!("{}\n", entry.name));
            }
        }
        if count == 0 {
            out.push_str("(empty)\n");
        }
        Ok(ToolOutput::text(out))
    }
}
