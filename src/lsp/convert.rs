//! Conversions between protocol types and the workspace's own types (positions, ranges, paths).
//!
//! Invariant: this is the only place where `ls_types` positions become workspace positions; the
//! encoding is the one negotiated in `initialize`, never assumed.

use std::path::{Path, PathBuf};

use tower_lsp_server::ls_types::{Position, PositionEncodingKind, Range, Uri};

use crate::workspace::position::{self, PositionEncoding, TextRange};

pub fn encoding_kind(encoding: PositionEncoding) -> PositionEncodingKind {
    match encoding {
        PositionEncoding::Utf8 => PositionEncodingKind::UTF8,
        PositionEncoding::Utf16 => PositionEncodingKind::UTF16,
        PositionEncoding::Utf32 => PositionEncodingKind::UTF32,
    }
}

pub fn position_from_lsp(p: Position) -> position::Position {
    position::Position::new(p.line, p.character)
}

pub fn position_to_lsp(p: position::Position) -> Position {
    Position { line: p.line, character: p.character }
}

pub fn range_from_lsp(r: Range) -> TextRange {
    TextRange { start: position_from_lsp(r.start), end: position_from_lsp(r.end) }
}

/// The path of a `file:` URI.
pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned())
}

/// The `file:` URI of an absolute path.
pub fn uri_of(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

/// Parses a URI string given in a command argument.
pub fn parse_uri(text: &str) -> Option<Uri> {
    text.parse().ok()
}

/// The byte range of `range` in `text`, converted with `encoding` and clamped to the text.
pub fn byte_range(text: &str, range: Range, encoding: PositionEncoding) -> std::ops::Range<usize> {
    let start = position::offset_of(text, position_from_lsp(range.start), encoding);
    let end = position::offset_of(text, position_from_lsp(range.end), encoding).max(start);
    start..end
}
