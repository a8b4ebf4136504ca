//! `grep`: regex search over file contents with the ripgrep engine (gitignore respected; open
//! editor buffers are searched as the user sees them, unsaved text included), in
//! three output modes: matching lines (`path:line:text`, context lines as `path-line-text`),
//! files with matches (newest first), or match counts per file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::{display, parse_args, resolve_or_cwd};
use super::summary::CallArgs;
use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::exec::{GrepMode, GrepOptions, GrepResult};

/// Results returned when the call sets no `max_results`.
pub const DEFAULT_MAX_RESULTS: usize = 100;

pub struct GrepTool;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob_filter: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    output_mode: Option<String>,
    context_lines: Option<usize>,
    before_context: Option<usize>,
    after_context: Option<usize>,
    max_results: Option<usize>,
    #[serde(default)]
    multiline: bool,
}

/// What the editor shows under `root`: the text of each open buffer there, by path (nothing
/// outside an editor). Buffers elsewhere are not copied: the search cannot reach them.
pub(crate) fn open_buffers(ctx: &ToolContext, root: &Path) -> BTreeMap<PathBuf, Arc<str>> {
    let documents = ctx.workspace.documents();
    documents
        .open_paths()
        .into_iter()
        .filter(|path| path.starts_with(root))
        .filter_map(|path| Some((path.clone(), documents.get(&path)?.text)))
        .collect()
}

fn format_result(
    ctx: &ToolContext,
    pattern: &str,
    mode: GrepMode,
    result: &GrepResult,
    limit: usize,
) -> String {
    if result.files.is_empty() {
        return format!("No matches found for pattern `{pattern}`.");
    }
    let mut out = String::new();
    match mode {
        GrepMode::Content => {
            for file in &result.files {
                let shown = display(ctx, &file.path);
                let mut previous: Option<u64> = None;
                for line in &file.lines {
                    if previous.is_some_and(|p| line.line_number > p + 1) {
                        out.push_str("--\n");
                    }
                    let sep = if line.is_context { '-' } else { ':' };
                    out.push_str(&format!("{shown}{sep}{}{sep}{}\n", line.line_number, line.text));
                    previous = Some(line.line_number);
                }
            }
        }
        GrepMode::FilesWithMatches => {
            for file in &result.files {
                out.push_str(&display(ctx, &file.path));
                out.push('\n');
            }
        }
        GrepMode::Count => {
            for file in &result.files {
                out.push_str(&format!("{}:{}\n", display(ctx, &file.path), file.match_count));
            }
        }
    }
    if result.limit_reached {
        let unit = if mode == GrepMode::FilesWithMatches { "files" } else { "matching lines" };
        out.push_str(&format!(
            "[Results were limited to {limit} {unit}. Narrow the search with `path` or `glob_filter`, \
             or raise `max_results`.]\n"
        ));
    }
    out
}

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Searches file contents with a regular expression (ripgrep syntax), skipping files ignored by \
         .gitignore, hidden files and binary files. `output_mode` is `content` (matching lines as \
         `path:line:text`, the default), `files_with_matches` (file paths, most recently modified \
         first) or `count` (matches per file). Filter files with `glob_filter` (e.g. `*.rs` or \
         `*.{ts,tsx}`), search case-insensitively with `case_insensitive`, and show surrounding lines \
         with `context_lines`. Use this instead of running grep or rg in the shell."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression to search for."},
                "path": {"type": "string", "description": "File or directory to search (default: the working directory)."},
                "glob_filter": {"type": "string", "description": "Only search files matching this glob, e.g. \"*.py\" or \"src/**/*.{ts,tsx}\"."},
                "case_insensitive": {"type": "boolean", "description": "Match case-insensitively (default false)."},
                "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "default": "content", "description": "What to return (default \"content\")."},
                "context_lines": {"type": "integer", "minimum": 0, "description": "Lines of context before and after each match (content mode)."},
                "before_context": {"type": "integer", "minimum": 0, "description": "Lines of context before each match (content mode)."},
                "after_context": {"type": "integer", "minimum": 0, "description": "Lines of context after each match (content mode)."},
                "max_results": {"type": "integer", "minimum": 1, "description": "Maximum matching lines (or files in files_with_matches mode) to return (default 100)."},
                "multiline": {"type": "boolean", "description": "Let patterns span lines and `.` match newlines (default false)."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn summary(&self, call: &CallArgs<'_>) -> String {
        let mut text = format!("grep {}", call.str("pattern").unwrap_or_default());
        if let Some(path) = call.str("path") {
            text.push_str(&format!(" in {}", call.shown(path)));
        }
        text
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let root = resolve_or_cwd(ctx, args.path.as_deref())?;
        let mode = match args.output_mode.as_deref() {
            None | Some("content") => GrepMode::Content,
            Some("files_with_matches") => GrepMode::FilesWithMatches,
            Some("count") => GrepMode::Count,
            Some(other) => {
                return Err(ToolError::new(format!(
                    "unknown output_mode `{other}`; use content, files_with_matches or count"
                )));
            }
        };
        let context = args.context_lines.unwrap_or(0);
        let limit = args.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
        let options = GrepOptions {
            glob: args.glob_filter,
            case_insensitive: args.case_insensitive,
            mode,
            context_before: args.before_context.unwrap_or(context),
            context_after: args.after_context.unwrap_or(context),
            max_results: limit,
            multiline: args.multiline,
            buffers: Arc::new(open_buffers(ctx, &root)),
        };
        let result =
            ctx.env.grep(&args.pattern, &root, options).await.map_err(|e| ToolError::new(e.to_string()))?;
        Ok(ToolOutput::text(format_result(ctx, &args.pattern, mode, &result, limit)))
    }
}
