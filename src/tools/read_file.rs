//! `read_file`: a text file as the agent's editor sees it (open buffer first, disk otherwise),
//! line-numbered, with offset/limit paging; images go back as image parts; other binary files are
//! refused. Every read is recorded for the read-before-edit guard.

use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::{display, parse_args};
use super::{Tool, ToolContext, ToolError, ToolImage, ToolOutput};
use crate::exec::ExecError;
use crate::workspace::WorkspaceError;

/// Lines returned when the call sets no limit.
pub const DEFAULT_LINE_LIMIT: usize = 2_000;
/// Largest image sent to the model.
pub const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;

/// Which reference agent's parameter names and offset convention the tool follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFileShape {
    /// codex / Claude Code: `file_path`, 1-based `offset`, `limit`.
    FilePath,
    /// gemini-cli: `absolute_path`, 0-based `offset`, `limit`.
    AbsolutePath,
}

pub struct ReadFileTool {
    shape: ReadFileShape,
}

impl ReadFileTool {
    pub fn new(shape: ReadFileShape) -> Self {
        Self { shape }
    }
}

#[derive(Deserialize)]
struct Args {
    #[serde(alias = "absolute_path")]
    file_path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

/// The media type of an image file the model can look at, by extension.
pub fn image_media_type(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// Numbers `lines` starting at `first` (1-based) as `N | text`, numbers right-aligned.
pub fn number_lines<'a>(first: usize, lines: impl ExactSizeIterator<Item = &'a str>) -> String {
    let last = first + lines.len().saturating_sub(1);
    let width = last.to_string().len().max(3);
    let mut out = String::new();
    for (i, line) in lines.enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(&format!("{:>width$} | {line}\n", first + i));
    }
    out
}

#[async_trait]
impl Tool for ReadFileTool {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        match self.shape {
            ReadFileShape::FilePath => {
                "Reads a file from the workspace. Returns its lines numbered as `N | text` (line numbers \
                 start at 1 and are not part of the file). By default up to 2000 lines from the start \
                 are returned; use `offset` (1-based first line) and `limit` for long files. Images \
                 (PNG, JPEG, GIF, WebP) are returned as images. Binary files cannot be read. Open \
                 editor buffers are read with their unsaved changes. Read a file before editing it."
            }
            ReadFileShape::AbsolutePath => {
                "Reads and returns the content of a file, line-numbered as `N | text` (line numbers start \
                 at 1 and are not part of the file). For long text files use `offset` (0-based line to \
                 start from) and `limit` (number of lines); without them up to 2000 lines are returned. \
                 Handles images (PNG, JPEG, GIF, WebP); other binary files are refused."
            }
        }
    }

    fn parameters(&self) -> Value {
        match self.shape {
            ReadFileShape::FilePath => json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "The path of the file to read (absolute, or relative to the working directory)."},
                    "offset": {"type": "integer", "minimum": 1, "description": "The 1-based line number to start reading from. Only give it when the file is too long to read at once."},
                    "limit": {"type": "integer", "minimum": 1, "description": "The number of lines to read (default 2000)."}
                },
                "required": ["file_path"],
                "additionalProperties": false
            }),
            ReadFileShape::AbsolutePath => json!({
                "type": "object",
                "properties": {
                    "absolute_path": {"type": "string", "description": "The absolute path to the file to read. Relative paths are resolved against the working directory."},
                    "offset": {"type": "integer", "minimum": 0, "description": "For text files, the 0-based line number to start reading from. Use for paginating through large files."},
                    "limit": {"type": "integer", "minimum": 1, "description": "For text files, the maximum number of lines to read (default 2000)."}
                },
                "required": ["absolute_path"],
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let path = ctx.resolve(&args.file_path)?;
        let shown = display(ctx, &path);

        if let Some(media_type) = image_media_type(&path)
            && !ctx.workspace.documents().is_open(&path)
        {
            return read_image(ctx, &path, &shown, media_type).await;
        }

        let snapshot = ctx.workspace.read(&*ctx.env, &path).await.map_err(|error| match error {
            WorkspaceError::Binary(_) | WorkspaceError::NotUtf8(_) => ToolError::new(format!(
                "Cannot read {shown}: it is a binary file, not text. read_file reads text files and \
                 images (PNG, JPEG, GIF, WebP); use a shell command (e.g. `file` or `xxd | head`) to \
                 inspect other binary files."
            )),
            WorkspaceError::IsDirectory(_) => ToolError::new(format!(
                "{shown} is a directory, not a file; use list_dir or glob to see what it contains."
            )),
            other => ToolError::new(other.to_string()),
        })?;
        ctx.reads.record_read(&snapshot);

        let text: &str = &snapshot.text;
        if text.is_empty() {
            return Ok(ToolOutput::text(format!("[{shown} is empty.]")));
        }
        let lines: Vec<&str> = text.strip_suffix('\n').unwrap_or(text).split('\n').collect();
        let total = lines.len();
        let first_index = match (self.shape, args.offset) {
            (ReadFileShape::FilePath, Some(offset)) => offset.saturating_sub(1) as usize,
            (ReadFileShape::AbsolutePath, Some(offset)) => offset as usize,
            (_, None) => 0,
        };
        if first_index >= total {
            let asked = args.offset.unwrap_or(0);
            return Err(ToolError::new(format!(
                "offset {asked} is past the end of {shown}, which has {total} lines."
            )));
        }
        let limit = args.limit.map_or(DEFAULT_LINE_LIMIT, |l| l.max(1) as usize);
        let end = first_index.saturating_add(limit).min(total);
        let mut out = number_lines(first_index + 1, lines[first_index..end].iter().copied());
        if end < total || first_index > 0 {
            let next = match self.shape {
                ReadFileShape::FilePath => end + 1,
                ReadFileShape::AbsolutePath => end,
            };
            let more = if end < total { format!(" Use offset={next} to read more.") } else { String::new() };
            out.push_str(&format!("\n[Showing lines {}-{end} of {total}.{more}]\n", first_index + 1));
        }
        Ok(ToolOutput::text(out))
    }
}

async fn read_image(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    media_type: &str,
) -> Result<ToolOutput, ToolError> {
    let data = ctx.env.read_bytes(path, MAX_IMAGE_BYTES).await.map_err(|error| match error {
        ExecError::TooLarge { size, .. } => ToolError::new(format!(
            "{shown} is too large to show ({size} bytes; the limit is {MAX_IMAGE_BYTES} bytes)."
        )),
        error => ToolError::new(error.to_string()),
    })?;
    Ok(ToolOutput {
        content: format!("Image {shown} ({media_type}, {} bytes) is attached.", data.len()),
        images: vec![ToolImage { media_type: media_type.to_string(), data: data.to_vec() }],
        ends_task: None,
    })
}
