//! Finding a hunk's lines in a file: exact, then ignoring trailing whitespace, then ignoring
//! surrounding whitespace, then with Unicode punctuation and spaces normalised to ASCII.
//! Invariant: a stricter pass always wins over a looser one, and within a pass the first match
//! at or after the cursor wins.

/// How a sequence was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pass {
    Exact,
    TrailingWhitespace,
    Trimmed,
    Normalized,
}

pub const PASSES: [Pass; 4] = [Pass::Exact, Pass::TrailingWhitespace, Pass::Trimmed, Pass::Normalized];

impl Pass {
    pub fn lines_equal(self, file_line: &str, patch_line: &str) -> bool {
        match self {
            Self::Exact => file_line == patch_line,
            Self::TrailingWhitespace => file_line.trim_end() == patch_line.trim_end(),
            Self::Trimmed => file_line.trim() == patch_line.trim(),
            Self::Normalized => normalized_equal(file_line.trim(), patch_line.trim()),
        }
    }
}

/// Numbered lines (without their breaks) that hunks are sought in.
pub trait Lines {
    fn count(&self) -> usize;
    /// Line `i` (`i < count()`).
    fn line(&self, i: usize) -> &str;

    /// The first `i` in `from..=last` where `pattern` (not empty) matches exactly.
    fn find_exact(&self, pattern: &[&str], from: usize, last: usize) -> Option<usize> {
        (from..=last).find(|&i| matches_at(self, pattern, i, Pass::Exact))
    }
}

impl Lines for [&str] {
    fn count(&self) -> usize {
        self.len()
    }

    fn line(&self, i: usize) -> &str {
        self[i]
    }
}

/// The first index `i >= start` where `pattern` matches `lines[i..]` under the loosest-needed
/// pass. With `end_of_file`, a match that ends at the last line is tried first in each pass.
pub fn seek<L: Lines + ?Sized>(
    lines: &L,
    pattern: &[&str],
    start: usize,
    end_of_file: bool,
) -> Option<(usize, Pass)> {
    if pattern.is_empty() {
        return Some((start.min(lines.count()), Pass::Exact));
    }
    if pattern.len() > lines.count() {
        return None;
    }
    let last_start = lines.count() - pattern.len();
    for pass in PASSES {
        if end_of_file && matches_at(lines, pattern, last_start, pass) {
            return Some((last_start, pass));
        }
        if start > last_start {
            continue;
        }
        let found = match pass {
            Pass::Exact => lines.find_exact(pattern, start, last_start),
            _ => (start..=last_start).find(|&i| matches_at(lines, pattern, i, pass)),
        };
        if let Some(found) = found {
            return Some((found, pass));
        }
    }
    None
}

/// Where `pattern` matches with the loosest pass anywhere in `lines` (to explain failures).
pub fn seek_anywhere<L: Lines + ?Sized>(lines: &L, pattern: &[&str]) -> Option<usize> {
    if pattern.is_empty() || pattern.len() > lines.count() {
        return None;
    }
    (0..=lines.count() - pattern.len()).find(|&i| matches_at(lines, pattern, i, Pass::Normalized))
}

pub fn matches_at<L: Lines + ?Sized>(lines: &L, pattern: &[&str], at: usize, pass: Pass) -> bool {
    pattern.iter().enumerate().all(|(k, expected)| pass.lines_equal(lines.line(at + k), expected))
}

/// Equal after normalising punctuation and spaces and collapsing runs of whitespace.
fn normalized_equal(a: &str, b: &str) -> bool {
    collapse_spaces(a.chars().flat_map(normalize_char))
        .eq(collapse_spaces(b.chars().flat_map(normalize_char)))
}

fn collapse_spaces(chars: impl Iterator<Item = char>) -> impl Iterator<Item = char> {
    let mut previous_space = false;
    chars.filter(move |&c| {
        let skip = c == ' ' && previous_space;
        previous_space = c == ' ';
        !skip
    })
}

/// Typographic punctuation and exotic spaces as the ASCII a model would type.
pub(crate) fn normalize_char(c: char) -> impl Iterator<Item = char> {
    let replacement: &'static str = match c {
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}' | '\u{2212}'
        | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => "-",
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{FF07}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{00AB}' | '\u{00BB}'
        | '\u{FF02}' => "\"",
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\t' => " ",
        '\u{2026}' => "...",
        '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' => "",
        _ => {
            return Normalized::Char(Some(c));
        }
    };
    Normalized::Str(replacement.chars())
}

enum Normalized {
    Char(Option<char>),
    Str(std::str::Chars<'static>),
}

impl Iterator for Normalized {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        match self {
            Self::Char(c) => c.take(),
            Self::Str(chars) => chars.next(),
        }
    }
}

/// Lines longer than this (in bytes, both together) are compared by their common start and end
/// only: a character diff of long lines costs the product of their lengths.
const MAX_DIFFED_BYTES: usize = 512;

/// A 0..=1 similarity of two lines (ignoring surrounding whitespace), for "closest line" hints.
/// Linear in the lines' length beyond [`MAX_DIFFED_BYTES`].
pub fn similarity(a: &str, b: &str) -> f32 {
    let (a, b) = (a.trim(), b.trim());
    if a == b {
        return 1.0;
    }
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    if a.len() + b.len() > MAX_DIFFED_BYTES {
        let prefix = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let room = a.len().min(b.len()) - prefix;
        let suffix = a.bytes().rev().zip(b.bytes().rev()).take(room).take_while(|(x, y)| x == y).count();
        return (2 * (prefix + suffix)) as f32 / (a.len() + b.len()) as f32;
    }
    similar::TextDiff::from_chars(a, b).ratio()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stricter_passes_win() {
        let lines: &[&str] = &["a  ", "  b", "c\u{2014}d", "a", "b"];
        assert_eq!(seek(lines, &["a", "b"], 0, false), Some((3, Pass::Exact)));
        assert_eq!(seek(lines, &["a", "  b"], 0, false), Some((0, Pass::TrailingWhitespace)));
        assert_eq!(seek(lines, &["  a", "b"], 0, false), Some((0, Pass::Trimmed)));
        assert_eq!(seek(lines, &["c-d"], 0, false), Some((2, Pass::Normalized)));
        assert_eq!(seek(lines, &["a", "b"], 0, true), Some((3, Pass::Exact)));
        assert_eq!(seek(lines, &["zzz"], 0, false), None);
        assert_eq!(seek(lines, &["a"], 4, false), None);
    }

    #[test]
    fn similarity_of_long_lines_is_linear_and_sensible() {
        let long = "x".repeat(1 << 20);
        let changed = format!("y{}", &long[1..]);
        assert!(similarity(&long, &changed) > 0.99);
        assert!(similarity(&long, "short") < 0.1);
        assert!(similarity("let value = 1;", "let valeu = 1;") > 0.8);
    }

    #[test]
    fn normalisation_covers_quotes_spaces_and_ellipsis() {
        assert!(
            Pass::Normalized
                .lines_equal("say(\u{201C}hi\u{201D}, \u{2018}x\u{2019})\u{2026}", "say(\"hi\", 'x')...")
        );
        assert!(Pass::Normalized.lines_equal("a\u{00A0}=\u{2009}1", "a = 1"));
        assert!(!Pass::Normalized.lines_equal("a = 1", "a = 2"));
        assert!(Pass::Normalized.lines_equal("return  1", "return 1"));
    }
}
