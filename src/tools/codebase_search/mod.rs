//! `codebase_search`: a bounded code-search subagent (seed 000). The parent passes a query; a
//! search model receives the repository's structure and the query, explores with its own
//! read-only tools (`grep`, `read`, `list_directory`: one file each here) for at most
//! [`MAX_TURNS`] turns (`agent.rs`), and calls `finish` with files and line ranges, which become
//! the snippets the parent receives (`finish.rs`). The parent's context holds the answer, not
//! the search.
//!
//! Invariants:
//! - The search model is the one configured for it (`[search]`, given to
//!   [`CodebaseSearchTool::with_model`]), else the session's ([`ToolContext::model`]); its calls
//!   go through the project's LLM client, so every wire dialect works.
//! - The search reads only, and only inside the session's directory (`root.rs`); files are read
//!   as the editor shows them.
//! - The parent's result is bounded (`finish::MAX_SNIPPET_LINES`, `finish::MAX_SNIPPET_CHARS`).
//! - Cancelling the parent's turn ends the search.

mod agent;
mod calls;
mod finish;
mod grep;
mod list_directory;
mod read;
mod root;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::parse_args;
use super::summary::CallArgs;
use super::{ModelAccess, Tool, ToolContext, ToolError, ToolOutput};
pub use agent::{MAX_TURNS, turn_counter};
pub use finish::{MAX_SNIPPET_CHARS, MAX_SNIPPET_LINES};

/// What a `grep` or `list_directory` result of the search model is replaced with when it has more
/// than 200 lines (the seed's words, exactly).
pub const OVER_LIMIT: &str =
    "query not specific enough, tool called tried to return too much context and failed";

/// The most lines a search model's `grep` and `list_directory` may return, and `read` shows.
pub const GREP_MAX_LINES: usize = grep::MAX_LINES;
pub const LIST_MAX_LINES: usize = list_directory::MAX_LINES;
pub const READ_MAX_LINES: usize = read::MAX_LINES;

pub struct CodebaseSearchTool {
    model: Option<ModelAccess>,
    native_tools: bool,
}

impl CodebaseSearchTool {
    /// Searches with the session's model, offering it the search tools as native functions.
    pub fn new() -> Self {
        Self { model: None, native_tools: true }
    }

    /// Searches with `model` (the `[search]` configuration) instead of the session's.
    pub fn with_model(mut self, model: ModelAccess) -> Self {
        self.model = Some(model);
        self
    }

    /// Whether the search model is offered its tools as native function definitions; without
    /// them it can only write the XML form (a model served without function calling).
    pub fn native_tools(mut self, native: bool) -> Self {
        self.native_tools = native;
        self
    }
}

impl Default for CodebaseSearchTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Args {
    query: String,
}

#[async_trait]
impl Tool for CodebaseSearchTool {
    fn name(&self) -> &str {
        "codebase_search"
    }

    fn description(&self) -> &str {
        "Finds the code that answers a question about this repository, without spending your context on \
         the search: a fast search helper explores the repository (regex search, file reads, directory \
         listings; at most 4 turns) and returns the relevant files with line ranges and their numbered \
         text. Ask in plain words what you need (\"where are session transcripts written to disk?\"), \
         not a regex. Use it when you do not know where something lives; when you know the file, read it."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to find, in plain words: a question or a description of the code."}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn summary(&self, call: &CallArgs<'_>) -> String {
        format!("codebase_search: {}", call.str("query").unwrap_or_default())
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::new("the query is empty: say in plain words what code to find"));
        }
        let model = self.model.as_ref().or(ctx.model.as_ref()).ok_or_else(|| {
            ToolError::new(
                "codebase_search needs a model and none is available here (it runs inside a session); \
                 search with grep and read_file instead",
            )
        })?;
        let root = root::SearchRoot::new(ctx)?;
        match agent::run(model, self.native_tools, ctx, &root, query).await? {
            agent::Ending::Finished { files, turns } => {
                let (snippets, problems) = finish::snippets(ctx, &root, &files).await;
                Ok(ToolOutput::text(finish::render(query, turns, &snippets, &problems)))
            }
            agent::Ending::OutOfTurns => Err(ToolError::new(format!(
                "the search used its {MAX_TURNS} turns without reporting what it found; search with grep \
                 and read_file yourself, or ask a narrower query"
            ))),
        }
    }
}
