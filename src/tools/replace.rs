//! The `replace` tool (Gemini profile, gemini-cli parameter shape) over the same exact-string
//! engine as `edit_file`. Invariant: the number of occurrences must equal `expected_replacements`
//! (default 1) unless `allow_multiple` accepts any positive number.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::edit_file::{Expected, StringEdit, propose_string_edit};
use super::{Tool, ToolContext, ToolError, ToolOutput};

const DESCRIPTION: &str = "Replaces text within a file. By default replaces a single occurrence; set \
`expected_replacements` to the number of occurrences to replace them all (or `allow_multiple` to \
replace every occurrence). Always read the file first to know its exact current content.

`old_string` must be the exact literal text to replace, including all whitespace and indentation, \
with enough context (at least 3 lines before and after) to identify a single occurrence. \
`new_string` is the exact literal text to replace it with. With an empty `old_string` and a \
`file_path` that does not exist, a new file is created with `new_string` as its content.";

pub struct ReplaceTool {
    require_read: bool,
}

impl ReplaceTool {
    pub fn new(require_read: bool) -> Self {
        Self { require_read }
    }
}

#[async_trait]
impl Tool for ReplaceTool {
    fn name(&self) -> &str {
        "replace"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": { "type": "string", "description": "The path of the file to modify (absolute, or relative to the working directory)." },
                "old_string": { "type": "string", "description": "The exact literal text to replace." },
                "new_string": { "type": "string", "description": "The exact literal text to replace old_string with." },
                "expected_replacements": { "type": "integer", "minimum": 1, "description": "Number of replacements expected (default 1)." },
                "allow_multiple": { "type": "boolean", "description": "Replace every occurrence, however many there are." },
                "instruction": { "type": "string", "description": "What the change does (for the record)." }
            },
            "required": ["file_path", "old_string", "new_string"]
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let request = StringEdit::from_args(&args)?;
        let expected =
            match (args.get("allow_multiple").and_then(Value::as_bool), args.get("expected_replacements")) {
                (Some(true), _) => Expected::AtLeastOne,
                (_, Some(value)) => match value.as_u64() {
                    Some(count) if count >= 1 => Expected::Exactly(count as usize),
                    _ => return Err(ToolError::new("expected_replacements must be a positive integer")),
                },
                _ => Expected::Exactly(1),
            };
        let edited = propose_string_edit(ctx, &request, expected, self.require_read).await?;
        let content = if edited.created {
            format!("Created new file: {} with provided content.", request.file_path)
        } else {
            format!(
                "Successfully modified file: {} ({} replacements).",
                request.file_path, edited.replacements
            )
        };
        Ok(ToolOutput::text(content + &edited.outcome.notes()))
    }
}
