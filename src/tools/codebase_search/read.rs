//! The search model's `read`: a file as the editor shows it (open buffer first), whole or in line
//! ranges, each line as `line|text`; ranges apart are separated by `...`. More than
//! [`MAX_LINES`] lines are cut there, with a warning. [`LineRanges`] is the one reader of line
//! specs (`1-20,40-60`), shared with `finish`.

use std::path::Path;

use super::calls::ReadArgs;
use super::root::SearchRoot;
use crate::tools::ToolContext;
use crate::workspace::WorkspaceError;

/// The most lines a read returns.
pub(super) const MAX_LINES: usize = 800;

/// 1-based, inclusive line ranges, sorted, merged and within a file's length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LineRanges(pub Vec<(usize, usize)>);

impl LineRanges {
    /// Reads `spec` (`None`: the whole file) for a file of `total` lines. Ranges past the end
    /// are cut to it; a range that starts past the end is an error.
    pub fn parse(spec: Option<&str>, total: usize) -> Result<Self, String> {
        let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Self(if total == 0 { Vec::new() } else { vec![(1, total)] }));
        };
        let invalid =
            |part: &str| format!("invalid line range `{part}`: use start-end, e.g. 10-40 or 1-20,55-80");
        let mut ranges = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (start, end) = match part.split_once('-') {
                Some((start, end)) => {
                    let start: usize = start.trim().parse().map_err(|_| invalid(part))?;
                    let end = match end.trim() {
                        "" => total,
                        end => end.parse().map_err(|_| invalid(part))?,
                    };
                    (start, end)
                }
                None => {
                    let line: usize = part.parse().map_err(|_| invalid(part))?;
                    (line, line)
                }
            };
            let start = start.max(1);
            if end < start {
                return Err(invalid(part));
            }
            if start > total {
                return Err(format!("line {start} is past the end of the file, which has {total} lines"));
            }
            ranges.push((start, end.min(total)));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 + 1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        Ok(Self(merged))
    }

    pub fn line_count(&self) -> usize {
        self.0.iter().map(|(start, end)| end - start + 1).sum()
    }
}

/// The text of `path` as the editor shows it, or why it cannot be read.
pub(super) async fn text(
    ctx: &ToolContext,
    root: &SearchRoot,
    path: &Path,
) -> Result<std::sync::Arc<str>, String> {
    let shown = root.show(path);
    match ctx.workspace.read(&*ctx.env, path).await {
        Ok(snapshot) => Ok(snapshot.text),
        Err(WorkspaceError::Binary(_) | WorkspaceError::NotUtf8(_)) => {
            Err(format!("{shown} is a binary file"))
        }
        Err(WorkspaceError::IsDirectory(_)) => {
            Err(format!("{shown} is a directory; list it with list_directory"))
        }
        Err(error) => Err(error.to_string()),
    }
}

/// The lines of `text`, without their line breaks.
pub(super) fn lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    text.strip_suffix('\n').unwrap_or(text).split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect()
}

pub(super) async fn run(ctx: &ToolContext, root: &SearchRoot, args: &ReadArgs) -> Result<String, String> {
    let path = root.resolve(ctx, &args.path)?;
    let text = text(ctx, root, &path).await?;
    let lines = lines(&text);
    if lines.is_empty() {
        return Ok(format!("({} is empty)", root.show(&path)));
    }
    let ranges = LineRanges::parse(args.lines.as_deref(), lines.len())?;
    let wanted = ranges.line_count();
    let mut out: Vec<String> = Vec::new();
    let mut shown = 0;
    'ranges: for (i, &(start, end)) in ranges.0.iter().enumerate() {
        if i > 0 {
            out.push("...".into());
        }
        for number in start..=end {
            if shown == MAX_LINES {
                break 'ranges;
            }
            out.push(format!("{number}|{}", lines[number - 1]));
            shown += 1;
        }
    }
    if shown < wanted {
        out.push(format!(
            "[truncated: showing {MAX_LINES} of the {wanted} lines asked for; read a narrower range with lines]"
        ));
    }
    Ok(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_specs_are_sorted_merged_and_cut_to_the_file() {
        let parse = |spec: &str| LineRanges::parse(Some(spec), 100).map(|r| r.0);
        assert_eq!(parse("40-60, 1-20"), Ok(vec![(1, 20), (40, 60)]));
        assert_eq!(parse("1-20,15-30,31-35"), Ok(vec![(1, 35)]));
        assert_eq!(parse("7"), Ok(vec![(7, 7)]));
        assert_eq!(parse("90-"), Ok(vec![(90, 100)]));
        assert_eq!(parse("0-3,95-400"), Ok(vec![(1, 3), (95, 100)]));
        assert_eq!(LineRanges::parse(None, 12).map(|r| r.0), Ok(vec![(1, 12)]));
        assert!(parse("a-b").unwrap_err().contains("invalid line range `a-b`"));
        assert!(parse("9-3").unwrap_err().contains("invalid line range `9-3`"));
        assert_eq!(parse("101-120"), Err("line 101 is past the end of the file, which has 100 lines".into()));
    }
}
