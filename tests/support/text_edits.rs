//! LSP `TextEdit`s applied to a text as an editor applies them, for tests that check what a
//! server's `workspace/applyEdit` does to a buffer. Positions are UTF-8 code units (the servers
//! under test negotiate `utf-8`; the tests' texts are ASCII).

use serde_json::Value;

/// Byte offset of an LSP position in `text`.
pub fn offset(text: &str, position: &Value) -> usize {
    let line = position["line"].as_u64().expect("line") as usize;
    let character = position["character"].as_u64().expect("character") as usize;
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    start + character
}

/// The text after applying `edits` (non-overlapping, as LSP requires) to `text`.
pub fn apply_edits(text: &str, edits: &[Value]) -> String {
    let mut ranged: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            let range = &e["range"];
            (
                offset(text, &range["start"]),
                offset(text, &range["end"]),
                e["newText"].as_str().expect("newText"),
            )
        })
        .collect();
    ranged.sort_by_key(|(start, _, _)| std::cmp::Reverse(*start));
    let mut out = text.to_string();
    for (start, end, new) in ranged {
        out.replace_range(start..end, new);
    }
    out
}
