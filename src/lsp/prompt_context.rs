//! The context of an `agentls.prompt`: the file the user is in and the lines they mean.
//!
//! Invariants: line numbers shown are 1-based and inclusive, and a range that ends at column 0
//! of a line does not include that line. Without a real selection (an empty range, or a part of
//! one line such as the word under the cursor) the block of non-blank lines around the cursor is
//! sent, or the prompt says that the cursor is on an empty line: never an empty or one-word
//! excerpt passed off as the code to look at.

use tower_lsp_server::ls_types::Range;

use super::convert;
use crate::workspace::position::PositionEncoding;

/// How far the block around a cursor reaches on each side.
const MAX_BLOCK_LINES: usize = 25;

/// `prompt` followed by the context: `display` is the file's workspace-relative path, `text`
/// the editor's text of it.
pub fn with_context(
    prompt: &str,
    display: &str,
    text: &str,
    range: Option<Range>,
    encoding: PositionEncoding,
) -> String {
    let Some(range) = range else {
        return format!("{prompt}\n\n(Context: the user is looking at {display}.)");
    };
    let bytes = convert::byte_range(text, range, encoding);
    let selected = text.get(bytes).unwrap_or_default();
    if selected.contains('\n') {
        let last = if range.end.character == 0 && range.end.line > range.start.line {
            range.end.line - 1
        } else {
            range.end.line
        };
        let selected = selected.strip_suffix('\n').unwrap_or(selected);
        return format!(
            "{prompt}\n\nContext: {display}, {} (as in the editor):\n```\n{selected}\n```",
            lines_label(range.start.line as usize, last as usize)
        );
    }
    let lines: Vec<&str> = text.lines().collect();
    let cursor = range.start.line as usize;
    let blank = |i: usize| lines.get(i).is_none_or(|l| l.trim().is_empty());
    if blank(cursor) {
        return format!(
            "{prompt}\n\n(Context: the user's cursor is in {display} at line {}, on an empty line; nothing is selected.)",
            cursor + 1
        );
    }
    let mut first = cursor;
    while first > 0 && cursor - first < MAX_BLOCK_LINES && !blank(first - 1) {
        first -= 1;
    }
    let mut last = cursor;
    while last + 1 < lines.len() && last - cursor < MAX_BLOCK_LINES && !blank(last + 1) {
        last += 1;
    }
    let focus = selected.trim();
    let on = if focus.is_empty() { String::new() } else { format!(", on `{focus}`") };
    format!(
        "{prompt}\n\nContext: {display}, {} around the cursor at line {}{on} (as in the editor):\n```\n{}\n```",
        lines_label(first, last),
        cursor + 1,
        lines[first..=last].join("\n")
    )
}

fn lines_label(first: usize, last: usize) -> String {
    if first == last { format!("line {}", first + 1) } else { format!("lines {}-{}", first + 1, last + 1) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::ls_types::Position;

    const TEXT: &str = "import os\n\ndef main():\n    x = 1\n    return x\n\nmain()\n";

    fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> Option<Range> {
        Some(Range { start: Position::new(l1, c1), end: Position::new(l2, c2) })
    }

    fn context(range: Option<Range>) -> String {
        with_context("Explain.", "src/m.py", TEXT, range, PositionEncoding::Utf16)
    }

    #[test]
    fn a_selection_of_whole_lines_ends_before_column_zero() {
        assert_eq!(
            context(range(2, 0, 4, 0)),
            "Explain.\n\nContext: src/m.py, lines 3-4 (as in the editor):\n```\ndef main():\n    x = 1\n```"
        );
        assert_eq!(
            context(range(3, 4, 4, 12)),
            "Explain.\n\nContext: src/m.py, lines 4-5 (as in the editor):\n```\nx = 1\n    return x\n```"
        );
    }

    #[test]
    fn no_selection_sends_the_block_around_the_cursor() {
        let block = "```\ndef main():\n    x = 1\n    return x\n```";
        assert_eq!(
            context(range(3, 2, 3, 2)),
            format!(
                "Explain.\n\nContext: src/m.py, lines 3-5 around the cursor at line 4 (as in the editor):\n{block}"
            )
        );
        assert_eq!(
            context(range(4, 11, 4, 12)),
            format!(
                "Explain.\n\nContext: src/m.py, lines 3-5 around the cursor at line 5, on `x` (as in the editor):\n{block}"
            )
        );
        assert_eq!(
            context(range(6, 0, 6, 4)),
            "Explain.\n\nContext: src/m.py, line 7 around the cursor at line 7, on `main` (as in the editor):\n```\nmain()\n```"
        );
    }

    #[test]
    fn an_empty_line_or_no_range_is_said_as_such() {
        assert_eq!(
            context(range(1, 0, 1, 0)),
            "Explain.\n\n(Context: the user's cursor is in src/m.py at line 2, on an empty line; nothing is selected.)"
        );
        assert_eq!(context(None), "Explain.\n\n(Context: the user is looking at src/m.py.)");
    }
}
