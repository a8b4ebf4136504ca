//! The search model's `list_directory`: a directory two levels deep as an indented tree
//! (directories end in `/`; .gitignored entries and `.git` left out). More than [`MAX_LINES`]
//! lines fail with the seed's message. [`repo_structure`] is the same listing of the root, which
//! opens every search.

use std::path::Path;

use super::OVER_LIMIT;
use super::calls::ListArgs;
use super::root::SearchRoot;
use crate::exec::DirEntry;
use crate::tools::ToolContext;

/// The most lines a listing may have.
pub(super) const MAX_LINES: usize = 200;
/// How many levels a listing shows.
pub(super) const DEPTH: usize = 2;

pub(super) async fn run(ctx: &ToolContext, root: &SearchRoot, args: &ListArgs) -> Result<String, String> {
    let dir = root.resolve(ctx, args.path.as_deref().unwrap_or("."))?;
    let lines = tree(ctx, root, &dir, DEPTH).await?;
    if lines.len() > MAX_LINES {
        return Err(OVER_LIMIT.into());
    }
    Ok(lines.join("\n"))
}

/// The root two levels deep; one level when that is too long, cut to [`MAX_LINES`] when even
/// that is.
pub(super) async fn repo_structure(ctx: &ToolContext, root: &SearchRoot) -> String {
    let mut lines = Vec::new();
    for depth in [DEPTH, 1] {
        lines = match tree(ctx, root, root.dir(), depth).await {
            Ok(lines) => lines,
            Err(error) => return format!("(the repository could not be listed: {error})"),
        };
        if lines.len() <= MAX_LINES {
            return lines.join("\n");
        }
    }
    let left_out = lines.len() - MAX_LINES;
    lines.truncate(MAX_LINES);
    lines.push(format!("... ({left_out} more entries)"));
    lines.join("\n")
}

/// The header line (`name/`) and one line per entry, indented two spaces a level.
async fn tree(ctx: &ToolContext, root: &SearchRoot, dir: &Path, depth: usize) -> Result<Vec<String>, String> {
    let entries = ctx.env.list_directory(dir, depth).await.map_err(|e| e.to_string())?;
    let header = match root.show(dir).as_str() {
        "." => dir.file_name().map_or_else(|| ".".to_string(), |n| n.to_string_lossy().into_owned()),
        shown => shown.to_string(),
    };
    let mut lines = vec![format!("{}/", header.trim_end_matches('/'))];
    lines.extend(entries.iter().map(entry_line));
    Ok(lines)
}

fn entry_line(entry: &DirEntry) -> String {
    let name = entry.name.rsplit('/').next().unwrap_or(&entry.name);
    let slash = if entry.is_dir { "/" } else { "" };
    format!("{}{name}{slash}", "  ".repeat(entry.depth + 1))
}
