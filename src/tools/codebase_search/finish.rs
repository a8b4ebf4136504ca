//! The search model's `finish`: the files and line ranges it names become the snippets the
//! parent receives (path, line range, the numbered text as `N | text`, as `read_file` shows it).
//!
//! Invariant: the parent's result is bounded: at most [`MAX_SNIPPET_LINES`] lines of code and
//! [`MAX_SNIPPET_CHARS`] characters; ranges past the bound are still named, with how to read them.

use super::calls::FinishFile;
use super::read::{self, LineRanges};
use super::root::SearchRoot;
use crate::tools::ToolContext;
use crate::tools::read_file::number_lines;

/// Lines of code the parent receives at most.
pub const MAX_SNIPPET_LINES: usize = 400;
/// Characters of code the parent receives at most.
pub const MAX_SNIPPET_CHARS: usize = 24_000;

/// One range of one file, with its text when it fit.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Snippet {
    pub path: String,
    pub start: usize,
    pub end: usize,
    /// `None`: left out by the bound.
    pub text: Option<String>,
}

/// The snippets of `files`, in order, and the files that could not be read (with why).
pub(super) async fn snippets(
    ctx: &ToolContext,
    root: &SearchRoot,
    files: &[FinishFile],
) -> (Vec<Snippet>, Vec<String>) {
    let mut snippets = Vec::new();
    let mut problems = Vec::new();
    let (mut lines_left, mut chars_left) = (MAX_SNIPPET_LINES, MAX_SNIPPET_CHARS);
    for file in files {
        let ranges = async {
            let path = root.resolve(ctx, &file.path)?;
            let text = read::text(ctx, root, &path).await?;
            let lines: Vec<String> = read::lines(&text).into_iter().map(str::to_string).collect();
            let ranges = LineRanges::parse(file.lines.as_deref(), lines.len())?;
            Ok::<_, String>((root.show(&path), lines, ranges))
        }
        .await;
        let (path, lines, ranges) = match ranges {
            Ok(found) => found,
            Err(why) => {
                problems.push(format!("{}: {why}", file.path));
                continue;
            }
        };
        for (start, end) in ranges.0 {
            let count = end - start + 1;
            let body = number_lines(start, lines[start - 1..end].iter().map(String::as_str));
            let fits = count <= lines_left && body.len() <= chars_left;
            if fits {
                lines_left -= count;
                chars_left -= body.len();
            }
            snippets.push(Snippet { path: path.clone(), start, end, text: fits.then_some(body) });
        }
    }
    (snippets, problems)
}

/// What the parent receives.
pub(super) fn render(query: &str, turns: usize, snippets: &[Snippet], problems: &[String]) -> String {
    let files = {
        let mut paths: Vec<&str> = snippets.iter().map(|s| s.path.as_str()).collect();
        paths.dedup();
        paths.len()
    };
    let turns_word = if turns == 1 { "turn" } else { "turns" };
    let mut out = if snippets.is_empty() {
        format!("No code found for \"{query}\" (the search used {turns} {turns_word}).\n")
    } else {
        format!(
            "{} snippet{} from {files} file{} for \"{query}\" (the search used {turns} {turns_word}):\n",
            snippets.len(),
            if snippets.len() == 1 { "" } else { "s" },
            if files == 1 { "" } else { "s" },
        )
    };
    let mut left_out = Vec::new();
    for snippet in snippets {
        let place = format!("{}:{}-{}", snippet.path, snippet.start, snippet.end);
        match &snippet.text {
            Some(text) => out.push_str(&format!("\n{place}\n{text}")),
            None => left_out.push(place),
        }
    }
    if !left_out.is_empty() {
        out.push_str(&format!(
            "\nLeft out (the result is limited to {MAX_SNIPPET_LINES} lines); read them with read_file:\n"
        ));
        for place in left_out {
            out.push_str(&format!("{place}\n"));
        }
    }
    if !problems.is_empty() {
        out.push_str("\nNamed by the search but not readable:\n");
        for problem in problems {
            out.push_str(&format!("{problem}\n"));
        }
    }
    out
}
