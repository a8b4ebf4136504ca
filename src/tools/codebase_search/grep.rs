//! The search model's `grep`: a regex over the files below `sub_dir` (ripgrep engine, .gitignore
//! respected, open buffers searched as the editor shows them), printed as ripgrep prints it with
//! one line of context: `path:line:text` for a match, `path-line-text` for context, `--` between
//! groups. More than [`MAX_LINES`] lines fail with the seed's message.

use std::sync::Arc;

use super::OVER_LIMIT;
use super::calls::GrepArgs;
use super::root::SearchRoot;
use crate::exec::{GrepMode, GrepOptions};
use crate::tools::ToolContext;
use crate::tools::grep::open_buffers;

/// The most lines a grep result may have.
pub(super) const MAX_LINES: usize = 200;
/// Lines of context shown before and after each match.
const CONTEXT: usize = 1;

pub(super) async fn run(ctx: &ToolContext, root: &SearchRoot, args: &GrepArgs) -> Result<String, String> {
    let dir = root.resolve(ctx, args.sub_dir.as_deref().unwrap_or("."))?;
    let options = GrepOptions {
        glob: args.glob.clone(),
        mode: GrepMode::Content,
        context_before: CONTEXT,
        context_after: CONTEXT,
        // One match more than could ever fit tells an oversized result apart.
        max_results: MAX_LINES + 1,
        buffers: Arc::new(open_buffers(ctx, &dir)),
        ..GrepOptions::default()
    };
    let result = ctx.env.grep(&args.pattern, &dir, options).await.map_err(|e| e.to_string())?;
    if result.limit_reached {
        return Err(OVER_LIMIT.into());
    }
    let mut lines: Vec<String> = Vec::new();
    for file in &result.files {
        let shown = root.show(&file.path);
        let mut previous: Option<u64> = None;
        for line in &file.lines {
            let apart = previous.is_none_or(|p| line.line_number > p + 1);
            if apart && !lines.is_empty() {
                lines.push("--".into());
            }
            let sep = if line.is_context { '-' } else { ':' };
            lines.push(format!("{shown}{sep}{}{sep}{}", line.line_number, line.text));
            previous = Some(line.line_number);
        }
    }
    if lines.len() > MAX_LINES {
        return Err(OVER_LIMIT.into());
    }
    if lines.is_empty() {
        return Ok("No matches found.".into());
    }
    Ok(lines.join("\n"))
}
