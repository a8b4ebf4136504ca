//! Parses apply_patch (v4a) text into file operations. Invariant: the parser borrows from the
//! patch text (no copies of line contents), runs in one pass, and reports every problem with the
//! patch line it was found on and what to write instead.
//!
//! Leniencies (models are sloppy here): surrounding whitespace on `***` / `@@` markers, a heredoc
//! wrapper (`<<'EOF'` … `EOF`, optionally after `apply_patch`), a first hunk without `@@`, blank
//! lines inside hunks read as empty context lines, CRLF line breaks in the patch itself, and a
//! unified-diff range (`@@ -1,3 +1,4 @@`) in place of a context hint.

/// One line of a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HunkLine<'a> {
    Context(&'a str),
    Delete(&'a str),
    Add(&'a str),
}

/// One `@@` section of an Update File operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// The text after `@@`: a line that comes before the change.
    pub hint: Option<&'a str>,
    pub lines: Vec<HunkLine<'a>>,
    /// Anchored at the end of the file (`*** End of File`).
    pub end_of_file: bool,
    /// 1-based patch line where the chunk starts.
    pub patch_line: usize,
}

impl<'a> Chunk<'a> {
    /// The lines the chunk expects in the file (context and deleted lines).
    pub fn old_lines(&self) -> Vec<&'a str> {
        self.lines
            .iter()
            .filter_map(|line| match *line {
                HunkLine::Context(text) | HunkLine::Delete(text) => Some(text),
                HunkLine::Add(_) => None,
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOp<'a> {
    Add { path: &'a str, lines: Vec<&'a str>, patch_line: usize },
    Delete { path: &'a str, patch_line: usize },
    Update { path: &'a str, move_to: Option<&'a str>, chunks: Vec<Chunk<'a>>, patch_line: usize },
}

impl PatchOp<'_> {
    pub fn path(&self) -> &str {
        match self {
            Self::Add { path, .. } | Self::Delete { path, .. } | Self::Update { path, .. } => path,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid patch at line {line}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// Parses a whole patch.
pub fn parse_patch(text: &str) -> Result<Vec<PatchOp<'_>>, ParseError> {
    let all: Vec<(usize, &str)> = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .collect();
    let mut lines = trim_blank_edges(&all);
    lines = strip_heredoc(lines);
    let Some(&(first_no, first)) = lines.first() else {
        return Err(ParseError {
            line: 1,
            message: format!("the patch is empty; it must start with `{BEGIN}`"),
        });
    };
    if first.trim() != BEGIN {
        return Err(ParseError {
            line: first_no,
            message: format!("the first line must be `{BEGIN}`, found `{}`", first.trim()),
        });
    }
    let &(last_no, last) = lines.last().unwrap_or(&(first_no, first));
    if lines.len() < 2 || last.trim() != END {
        return Err(ParseError {
            line: last_no,
            message: format!("the last line must be `{END}`, found `{}`", last.trim()),
        });
    }
    let mut parser = Parser { lines: &lines[1..lines.len() - 1], at: 0 };
    let mut ops = Vec::new();
    while let Some(op) = parser.next_op()? {
        ops.push(op);
    }
    Ok(ops)
}

fn trim_blank_edges<'l, 'a>(lines: &'l [(usize, &'a str)]) -> &'l [(usize, &'a str)] {
    let start = lines.iter().position(|(_, line)| !line.trim().is_empty()).unwrap_or(lines.len());
    let end = lines.iter().rposition(|(_, line)| !line.trim().is_empty()).map_or(start, |end| end + 1);
    &lines[start..end]
}

/// `<<'EOF'` / `apply_patch <<"EOF"` … `EOF` around the patch.
fn strip_heredoc<'l, 'a>(lines: &'l [(usize, &'a str)]) -> &'l [(usize, &'a str)] {
    let (Some((_, first)), Some((_, last))) = (lines.first(), lines.last()) else {
        return lines;
    };
    let first = first.trim();
    let Some(marker_at) = first.find("<<") else {
        return lines;
    };
    let command = first[..marker_at].trim();
    if !(command.is_empty() || command == "apply_patch" || command == "applypatch") {
        return lines;
    }
    let tag = first[marker_at + 2..].trim().trim_start_matches('-').trim_matches(|c| c == '\'' || c == '"');
    if lines.len() >= 2 && !tag.is_empty() && last.trim() == tag {
        trim_blank_edges(&lines[1..lines.len() - 1])
    } else {
        lines
    }
}

struct Parser<'l, 'a> {
    lines: &'l [(usize, &'a str)],
    at: usize,
}

fn marker_value<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.trim().strip_prefix(marker).map(str::trim)
}

fn is_file_marker(line: &str) -> bool {
    let line = line.trim();
    line.starts_with(ADD) || line.starts_with(DELETE) || line.starts_with(UPDATE) || line == END
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<(usize, &'a str)> {
        self.lines.get(self.at).copied()
    }

    fn next_op(&mut self) -> Result<Option<PatchOp<'a>>, ParseError> {
        while let Some((_, line)) = self.peek() {
            if !line.trim().is_empty() {
                break;
            }
            self.at += 1;
        }
        let Some((no, line)) = self.peek() else {
            return Ok(None);
        };
        self.at += 1;
        let path_of = |value: &'a str, marker: &str| -> Result<&'a str, ParseError> {
            if value.is_empty() {
                Err(ParseError { line: no, message: format!("`{marker}` needs a file path after it") })
            } else {
                Ok(value)
            }
        };
        if let Some(value) = marker_value(line, ADD) {
            let path = path_of(value, ADD)?;
            return Ok(Some(PatchOp::Add { path, lines: self.add_lines(path)?, patch_line: no }));
        }
        if let Some(value) = marker_value(line, DELETE) {
            let path = path_of(value, DELETE)?;
            return Ok(Some(PatchOp::Delete { path, patch_line: no }));
        }
        if let Some(value) = marker_value(line, UPDATE) {
            let path = path_of(value, UPDATE)?;
            let mut move_to = None;
            if let Some((move_no, move_line)) = self.peek()
                && let Some(value) = marker_value(move_line, MOVE)
            {
                self.at += 1;
                move_to = Some(if value.is_empty() {
                    return Err(ParseError {
                        line: move_no,
                        message: format!("`{MOVE}` needs a file path after it"),
                    });
                } else {
                    value
                });
            }
            let chunks = self.chunks(path, no)?;
            return Ok(Some(PatchOp::Update { path, move_to, chunks, patch_line: no }));
        }
        Err(ParseError {
            line: no,
            message: format!(
                "expected `{ADD} <path>`, `{DELETE} <path>` or `{UPDATE} <path>`, found `{}`",
                line.trim()
            ),
        })
    }

    fn add_lines(&mut self, path: &str) -> Result<Vec<&'a str>, ParseError> {
        let mut lines = Vec::new();
        let mut pending_blank = 0;
        while let Some((no, line)) = self.peek() {
            if is_file_marker(line) {
                break;
            }
            self.at += 1;
            if let Some(content) = line.strip_prefix('+') {
                lines.extend(std::iter::repeat_n("", pending_blank));
                pending_blank = 0;
                lines.push(content);
            } else if line.trim().is_empty() {
                pending_blank += 1;
            } else {
                return Err(ParseError {
                    line: no,
                    message: format!(
                        "every line of `{ADD} {path}` must start with `+`, found `{line}`; \
                         to change an existing file use `{UPDATE}`"
                    ),
                });
            }
        }
        Ok(lines)
    }

    fn chunks(&mut self, path: &str, header_line: usize) -> Result<Vec<Chunk<'a>>, ParseError> {
        let mut chunks: Vec<Chunk<'a>> = Vec::new();
        let mut current: Option<Chunk<'a>> = None;
        while let Some((no, line)) = self.peek() {
            if is_file_marker(line) {
                break;
            }
            self.at += 1;
            let trimmed = line.trim();
            if trimmed == END_OF_FILE {
                match current.as_mut() {
                    Some(chunk) if !chunk.lines.is_empty() => chunk.end_of_file = true,
                    _ => {
                        return Err(ParseError {
                            line: no,
                            message: format!("`{END_OF_FILE}` must follow the lines of a hunk"),
                        });
                    }
                }
                chunks.extend(current.take());
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix("@@") {
                if let Some(chunk) = current.take() {
                    chunks.push(finish_chunk(chunk, path)?);
                }
                current = Some(Chunk {
                    hint: context_hint(rest),
                    lines: Vec::new(),
                    end_of_file: false,
                    patch_line: no,
                });
                continue;
            }
            let hunk_line = match line.as_bytes().first() {
                None => HunkLine::Context(""),
                Some(b' ') => HunkLine::Context(&line[1..]),
                Some(b'-') => HunkLine::Delete(&line[1..]),
                Some(b'+') => HunkLine::Add(&line[1..]),
                Some(_) if trimmed.is_empty() => HunkLine::Context(""),
                Some(_) => {
                    return Err(ParseError {
                        line: no,
                        message: format!(
                            "unexpected line `{line}` in a hunk of {path}: every hunk line starts with ` ` \
                             (context), `-` (remove) or `+` (add), and hunks start with `@@`"
                        ),
                    });
                }
            };
            match current.as_mut() {
                Some(chunk) => chunk.lines.push(hunk_line),
                None if chunks.is_empty() => {
                    current = Some(Chunk {
                        hint: None,
                        lines: vec![hunk_line],
                        end_of_file: false,
                        patch_line: no,
                    });
                }
                None => {
                    return Err(ParseError {
                        line: no,
                        message: format!(
                            "a hunk line after `{END_OF_FILE}` in {path}; start a new hunk with `@@`"
                        ),
                    });
                }
            }
        }
        if let Some(chunk) = current.take() {
            chunks.push(finish_chunk(chunk, path)?);
        }
        if chunks.is_empty() {
            return Err(ParseError {
                line: header_line,
                message: format!("`{UPDATE} {path}` has no hunks; add `@@` and the lines to change"),
            });
        }
        Ok(chunks)
    }
}

/// Refuses an empty hunk.
fn finish_chunk<'a>(chunk: Chunk<'a>, path: &str) -> Result<Chunk<'a>, ParseError> {
    if chunk.lines.is_empty() {
        return Err(ParseError {
            line: chunk.patch_line,
            message: format!("empty hunk in {path}: a hunk needs context, `-` or `+` lines"),
        });
    }
    Ok(chunk)
}

/// The hint after `@@`; a unified-diff range such as `-12,3 +12,4 @@ fn x()` leaves only `fn x()`.
fn context_hint(rest: &str) -> Option<&str> {
    let mut hint = rest.trim();
    if let Some(after_range) = strip_unified_range(hint) {
        hint = after_range;
    }
    let hint = hint.trim_end_matches("@@").trim();
    (!hint.is_empty()).then_some(hint)
}

fn strip_unified_range(hint: &str) -> Option<&str> {
    let mut parts = hint.splitn(3, ' ');
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let is_range =
        |range: &str| range.split(',').all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if !is_range(old) || !is_range(new) {
        return None;
    }
    let rest = parts.next().unwrap_or("").trim();
    Some(rest.strip_prefix("@@").unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_operation() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+one\n+\n+two\n*** Delete File: b.txt\n\
                     *** Update File: c.txt\n*** Move to: d.txt\n@@ fn main()\n ctx\n-old\n+new\n@@\n-x\n+y\n*** End of File\n*** End Patch\n";
        let ops = parse_patch(patch).unwrap();
        assert_eq!(
            ops,
            vec![
                PatchOp::Add { path: "a.txt", lines: vec!["one", "", "two"], patch_line: 2 },
                PatchOp::Delete { path: "b.txt", patch_line: 6 },
                PatchOp::Update {
                    path: "c.txt",
                    move_to: Some("d.txt"),
                    chunks: vec![
                        Chunk {
                            hint: Some("fn main()"),
                            lines: vec![
                                HunkLine::Context("ctx"),
                                HunkLine::Delete("old"),
                                HunkLine::Add("new")
                            ],
                            end_of_file: false,
                            patch_line: 9,
                        },
                        Chunk {
                            hint: None,
                            lines: vec![HunkLine::Delete("x"), HunkLine::Add("y")],
                            end_of_file: true,
                            patch_line: 13,
                        },
                    ],
                    patch_line: 7,
                },
            ]
        );
    }

    #[test]
    fn accepts_sloppy_wrappers() {
        let patch = "apply_patch <<'EOF'\r\n  *** Begin Patch \r\n*** Update File:  x.py \r\n-a\r\n+b\r\n *** End Patch\r\nEOF\r\n";
        let ops = parse_patch(patch).unwrap();
        let PatchOp::Update { path, chunks, .. } = &ops[0] else { panic!("{ops:?}") };
        assert_eq!(
            (*path, chunks[0].lines.clone()),
            ("x.py", vec![HunkLine::Delete("a"), HunkLine::Add("b")])
        );
        let ranged = parse_patch(
            "*** Begin Patch\n*** Update File: x\n@@ -1,2 +1,2 @@ def f():\n-a\n+b\n*** End Patch",
        )
        .unwrap();
        let PatchOp::Update { chunks, .. } = &ranged[0] else { panic!() };
        assert_eq!(chunks[0].hint, Some("def f():"));
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("", 1, "empty"),
            ("*** Update File: x\n", 1, "Begin Patch"),
            ("*** Begin Patch\n*** Update File: x\n-a\n", 3, "End Patch"),
            ("*** Begin Patch\n*** Frobnicate: x\n*** End Patch", 2, "expected"),
            ("*** Begin Patch\n*** Add File: x\nno plus\n*** End Patch", 3, "must start with `+`"),
            ("*** Begin Patch\n*** Update File: x\n*** End Patch", 2, "no hunks"),
            ("*** Begin Patch\n*** Update File: x\n@@\n*** End Patch", 3, "empty hunk"),
            ("*** Begin Patch\n*** Update File: x\n@@\n a\n?b\n*** End Patch", 5, "unexpected line"),
            ("*** Begin Patch\n*** Delete File:\n*** End Patch", 2, "needs a file path"),
        ];
        for (patch, line, needle) in cases {
            let error = parse_patch(patch).unwrap_err();
            assert_eq!(error.line, line, "{patch:?}: {error}");
            assert!(error.message.contains(needle), "{patch:?}: {error}");
        }
    }
}
