//! Position conversion between byte/char offsets and LSP-style positions (line, character) in
//! UTF-8, UTF-16 or UTF-32 code units. Invariant: only `\n`, `\r\n` and a lone `\r` end a line
//! (the LSP rule), and every conversion clamps instead of failing: a line past the end maps to
//! the end of the text, a character past the end of its line maps to the line's end, and an
//! offset inside a multi-unit character snaps back to that character's start.

use ropey::Rope;

/// The unit `Position::character` counts in (negotiated with the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PositionEncoding {
    Utf8,
    /// The LSP default.
    #[default]
    Utf16,
    Utf32,
}

impl PositionEncoding {
    /// How many code units `c` takes in this encoding.
    pub fn units(self, c: char) -> usize {
        match self {
            Self::Utf8 => c.len_utf8(),
            Self::Utf16 => c.len_utf16(),
            Self::Utf32 => 1,
        }
    }
}

/// A zero-based line and a column counted in the encoding's code units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

impl Position {
    pub fn new(line: u32, character: u32) -> Self {
        Self { line, character }
    }
}

/// A half-open range of positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TextRange {
    pub start: Position,
    pub end: Position,
}

/// Byte offsets of line starts in a `&str`, for repeated conversions on the same text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    line_starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => line_starts.push(i + 1),
                b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                    line_starts.push(i + 2);
                    i += 1;
                }
                b'\r' => line_starts.push(i + 1),
                _ => {}
            }
            i += 1;
        }
        Self { line_starts, len: text.len() }
    }

    /// Number of lines (a text ending in a line break has an empty last line).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Byte offset where `line` starts; the text length for lines past the end.
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts.get(line).copied().unwrap_or(self.len)
    }

    /// Byte offset where `line`'s content ends (before its line break).
    pub fn line_content_end(&self, text: &str, line: usize) -> usize {
        let Some(&next) = self.line_starts.get(line + 1) else {
            return self.len;
        };
        let bytes = text.as_bytes();
        let mut end = next;
        if end > 0 && bytes.get(end - 1) == Some(&b'\n') {
            end -= 1;
        }
        if end > 0 && bytes.get(end - 1) == Some(&b'\r') {
            end -= 1;
        }
        end.max(self.line_start(line))
    }

    /// The line containing byte `offset` (clamped to the text).
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.len);
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    /// The position of byte `offset` in `text` (which must be the text this index was built on).
    pub fn position(&self, text: &str, offset: usize, encoding: PositionEncoding) -> Position {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let line = self.line_of(offset);
        let start = self.line_start(line);
        let end = offset.min(self.line_content_end(text, line));
        let character = units_in(&text[start..end], encoding);
        Position { line: line as u32, character: character as u32 }
    }

    /// The byte offset of `position` in `text` (which must be the text this index was built on).
    pub fn offset(&self, text: &str, position: Position, encoding: PositionEncoding) -> usize {
        let line = position.line as usize;
        if line >= self.line_count() {
            return self.len;
        }
        let start = self.line_start(line);
        let end = self.line_content_end(text, line);
        start + byte_len_of_units(&text[start..end], position.character as usize, encoding)
    }
}

/// Byte offset of `position` in `text` (builds a throwaway [`LineIndex`]).
pub fn offset_of(text: &str, position: Position, encoding: PositionEncoding) -> usize {
    LineIndex::new(text).offset(text, position, encoding)
}

/// Position of byte `offset` in `text` (builds a throwaway [`LineIndex`]).
pub fn position_of(text: &str, offset: usize, encoding: PositionEncoding) -> Position {
    LineIndex::new(text).position(text, offset, encoding)
}

/// Char index in `rope` of `position`, clamped like [`LineIndex::offset`].
pub fn rope_char_index(rope: &Rope, position: Position, encoding: PositionEncoding) -> usize {
    let line = position.line as usize;
    if line >= rope.len_lines() {
        return rope.len_chars();
    }
    let line_start = rope.line_to_char(line);
    let mut chars = 0;
    let mut units = 0;
    let wanted = position.character as usize;
    for c in rope.line(line).chars() {
        if c == '\n' || c == '\r' {
            break;
        }
        let width = encoding.units(c);
        if units + width > wanted {
            break;
        }
        units += width;
        chars += 1;
    }
    line_start + chars
}

/// Position of char index `char_index` in `rope` (clamped to the rope).
pub fn rope_position(rope: &Rope, char_index: usize, encoding: PositionEncoding) -> Position {
    let char_index = char_index.min(rope.len_chars());
    let line = rope.char_to_line(char_index);
    let line_start = rope.line_to_char(line);
    let mut character = 0;
    for c in rope.slice(line_start..char_index).chars() {
        if c == '\n' || c == '\r' {
            break;
        }
        character += encoding.units(c);
    }
    Position { line: line as u32, character: character as u32 }
}

fn units_in(text: &str, encoding: PositionEncoding) -> usize {
    match encoding {
        PositionEncoding::Utf8 => text.len(),
        PositionEncoding::Utf16 => text.chars().map(char::len_utf16).sum(),
        PositionEncoding::Utf32 => text.chars().count(),
    }
}

/// Bytes of `line` covered by `units` code units, stopping before a character that would cross it.
fn byte_len_of_units(line: &str, units: usize, encoding: PositionEncoding) -> usize {
    if encoding == PositionEncoding::Utf8 {
        return floor_char_boundary(line, units.min(line.len()));
    }
    let mut counted = 0;
    for (offset, c) in line.char_indices() {
        let width = encoding.units(c);
        if counted + width > units {
            return offset;
        }
        counted += width;
    }
    line.len()
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_follow_lsp_rules() {
        let text = "a\nb\r\nc\rd\u{2028}e";
        let index = LineIndex::new(text);
        assert_eq!(index.line_count(), 4);
        assert_eq!(
            index.position(text, text.find('d').unwrap(), PositionEncoding::Utf8),
            Position::new(3, 0)
        );
        assert_eq!(
            index.position(text, text.find('e').unwrap(), PositionEncoding::Utf16),
            Position::new(3, 2)
        );
        let rope = Rope::from_str(text);
        assert_eq!(rope.len_lines(), 4);
        assert_eq!(rope_position(&rope, rope.len_chars() - 1, PositionEncoding::Utf16), Position::new(3, 2));
    }

    #[test]
    fn encodings_count_their_units() {
        let text = "x😀é=1\n";
        let at_eq = text.find('=').unwrap();
        let cases = [(PositionEncoding::Utf8, 7), (PositionEncoding::Utf16, 4), (PositionEncoding::Utf32, 3)];
        for (encoding, character) in cases {
            let position = position_of(text, at_eq, encoding);
            assert_eq!(position, Position::new(0, character), "{encoding:?}");
            assert_eq!(offset_of(text, position, encoding), at_eq, "{encoding:?}");
            let rope = Rope::from_str(text);
            let char_index = rope.byte_to_char(at_eq);
            assert_eq!(rope_char_index(&rope, position, encoding), char_index);
            assert_eq!(rope_position(&rope, char_index, encoding), position);
        }
    }

    #[test]
    fn out_of_range_positions_clamp() {
        let text = "ab\r\ncd";
        assert_eq!(offset_of(text, Position::new(0, 99), PositionEncoding::Utf16), 2);
        assert_eq!(offset_of(text, Position::new(9, 0), PositionEncoding::Utf16), text.len());
        // Inside a surrogate pair: snaps back to the character's start.
        assert_eq!(offset_of("😀x", Position::new(0, 1), PositionEncoding::Utf16), 0);
        assert_eq!(position_of("😀x", 2, PositionEncoding::Utf16), Position::new(0, 0));
        let rope = Rope::from_str(text);
        assert_eq!(rope_char_index(&rope, Position::new(0, 99), PositionEncoding::Utf8), 2);
        assert_eq!(rope_char_index(&rope, Position::new(7, 1), PositionEncoding::Utf8), 6);
    }
}
