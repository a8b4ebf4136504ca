//! The `write_file` tool: a file's full new content, proposed as a change set whose hunks are
//! the minimal line edits (diffed with a deadline), so the editor receives small edits rather
//! than a whole-buffer replacement. Invariant: the content is written byte for byte as given;
//! missing parent directories are created by the committer.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::exec::FileKind;
use crate::workspace::{ChangeSet, FileChange};

const DESCRIPTION: &str = "Write content to a file. Creates the file and parent directories if needed; \
replaces the whole content of an existing file (prefer editing tools for small changes).";

pub struct WriteFileTool {
    /// An existing file must have been read in this session (and be unchanged) before it is overwritten.
    require_read: bool,
}

impl WriteFileTool {
    pub fn new(require_read: bool) -> Self {
        Self { require_read }
    }
}

#[async_trait]
impl Tool for WriteFileTool {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": { "type": "string", "description": "Path of the file (absolute, or relative to the working directory)." },
                "content": { "type": "string", "description": "The full content of the file." }
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let field = |name: &str| {
            args.get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::new(format!("missing `{name}`: it must be a string")))
        };
        let (file_path, content) = (field("file_path")?, field("content")?);
        let shown = crate::workspace::shown_path(std::path::Path::new(file_path), &[&ctx.cwd]);
        let display = shown.as_str();
        let path = ctx.resolve(file_path)?;
        if let Ok(Some(stat)) = ctx.env.stat(&path).await
            && stat.kind == FileKind::Directory
        {
            return Err(ToolError::new(format!("{display} is a directory; give the path of a file")));
        }
        let existing = ctx
            .workspace
            .read_if_exists(&*ctx.env, &path)
            .await
            .map_err(|error| ToolError::new(error.to_string()))?;
        let change = match existing {
            Some(snapshot) => {
                if self.require_read {
                    ctx.reads.check(&snapshot).map_err(|error| ToolError::new(error.to_string()))?;
                }
                FileChange::modify(snapshot, display, content)
            }
            None => FileChange::create(path, display, content),
        };
        let created = change.base.is_none();
        let change = ChangeSet::new(vec![change]).map_err(|error| ToolError::new(error.to_string()))?;
        let outcome = ctx.editor.propose(change).await.map_err(|error| ToolError::new(error.to_string()))?;
        if let Some(refusal) = outcome.refusal_message() {
            return Err(ToolError::new(refusal));
        }
        ctx.reads.record_outcome(&outcome);
        let verb = if created { "Created" } else { "Wrote" };
        Ok(ToolOutput::text(format!("{verb} {display} ({} bytes).{}", content.len(), outcome.notes())))
    }
}
