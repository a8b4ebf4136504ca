//! Open editor buffers: one rope and version per path, kept in sync by the language server
//! (open / incremental change / close). Invariant: a path is open here exactly while the editor
//! has it open, and its text is the buffer's text at `version`, unsaved edits included.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use ropey::Rope;

use super::position::{PositionEncoding, TextRange, rope_char_index};

/// One change from `textDocument/didChange`: a range replacement, or the whole text when
/// `range` is `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct TextChange {
    pub range: Option<TextRange>,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DocumentError {
    #[error("{0} is not open in the editor; open it before sending changes")]
    NotOpen(PathBuf),
}

#[derive(Debug)]
struct Document {
    rope: Rope,
    version: i32,
}

/// The text of an open buffer at one version.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferText {
    pub text: Arc<str>,
    pub version: i32,
}

/// Open buffers by absolute path.
#[derive(Debug, Default)]
pub struct DocumentStore {
    documents: RwLock<HashMap<PathBuf, Document>>,
}

impl DocumentStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens (or reopens) `path` with the editor's text.
    pub fn open(&self, path: &Path, text: &str, version: i32) {
        let document = Document { rope: Rope::from_str(text), version };
        self.write().insert(store_key(path), document);
    }

    /// Applies `changes` in order (each range is relative to the text after the previous one).
    pub fn change(
        &self,
        path: &Path,
        version: i32,
        changes: &[TextChange],
        encoding: PositionEncoding,
    ) -> Result<(), DocumentError> {
        let mut documents = self.write();
        let document =
            documents.get_mut(&store_key(path)).ok_or_else(|| DocumentError::NotOpen(path.to_path_buf()))?;
        for change in changes {
            match change.range {
                None => document.rope = Rope::from_str(&change.text),
                Some(range) => {
                    let start = rope_char_index(&document.rope, range.start, encoding);
                    let end = rope_char_index(&document.rope, range.end, encoding).max(start);
                    document.rope.remove(start..end);
                    document.rope.insert(start, &change.text);
                }
            }
        }
        document.version = version;
        Ok(())
    }

    pub fn close(&self, path: &Path) {
        self.write().remove(&store_key(path));
    }

    /// The buffer's text and version, if `path` is open.
    pub fn get(&self, path: &Path) -> Option<BufferText> {
        let documents = self.documents.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        lookup(&documents, path).map(|document| BufferText {
            text: Arc::from(document.rope.to_string()),
            version: document.version,
        })
    }

    pub fn is_open(&self, path: &Path) -> bool {
        let documents = self.documents.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        lookup(&documents, path).is_some()
    }

    /// Paths of all open buffers, sorted.
    pub fn open_paths(&self) -> Vec<PathBuf> {
        let documents = self.documents.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut paths: Vec<PathBuf> = documents.keys().cloned().collect();
        paths.sort();
        paths
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<PathBuf, Document>> {
        self.documents.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Buffers are keyed by the same canonical path [`super::Workspace::resolve`] returns.
fn store_key(path: &Path) -> PathBuf {
    super::canonicalize_lenient(path)
}

/// The document open at `path`. Paths from [`super::Workspace::resolve`] are keys already, so
/// the file system is only asked (to canonicalize) when there are documents and no exact hit.
fn lookup<'a>(documents: &'a HashMap<PathBuf, Document>, path: &Path) -> Option<&'a Document> {
    if documents.is_empty() {
        return None;
    }
    documents.get(path).or_else(|| documents.get(&store_key(path)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::position::Position;

    #[test]
    fn incremental_changes_apply_in_order() {
        let store = DocumentStore::new();
        let path = Path::new("/nonexistent-agentls/a.rs");
        store.open(path, "fn main() {\r\n    x😀y\r\n}\r\n", 1);
        let edit = |l1, c1, l2, c2, text: &str| TextChange {
            range: Some(TextRange { start: Position::new(l1, c1), end: Position::new(l2, c2) }),
            text: text.to_string(),
        };
        let changes = [edit(1, 5, 1, 7, "Z"), edit(0, 3, 0, 7, "start"), edit(2, 1, 2, 1, " // end")];
        store.change(path, 2, &changes, PositionEncoding::Utf16).unwrap();
        let buffer = store.get(path).unwrap();
        assert_eq!(&*buffer.text, "fn start() {\r\n    xZy\r\n} // end\r\n");
        assert_eq!(buffer.version, 2);
        let whole = TextChange { range: None, text: "new".into() };
        store.change(path, 3, &[whole], PositionEncoding::Utf8).unwrap();
        assert_eq!(&*store.get(path).unwrap().text, "new");
        store.close(path);
        assert!(!store.is_open(path));
        assert_eq!(
            store.change(path, 4, &[], PositionEncoding::Utf8),
            Err(DocumentError::NotOpen(path.into()))
        );
    }
}
