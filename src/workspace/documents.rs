//! Open editor buffers: one rope and version per path, kept in sync by the language server
//! (open / incremental change / close).
//!
//! Invariants:
//! - A path is open here exactly while the editor has it open, and its rope is the buffer's text
//!   at `version` as the editor last reported it, unsaved edits included.
//! - After the editor accepted an edit of the server's (`applyEdit` answered `applied: true`) and
//!   before it reported that edit with `didChange` (editors debounce: Neovim 150 ms, eglot on
//!   idle), the text the editor holds is known only to the server: it is kept as the document's
//!   *expected* text, and every read returns it. A report that contains the edit confirms it; a
//!   report that does not yet contain all of it is merged with it three-way, like any user edit;
//!   a report that contradicts it (the user changed the same lines, or undid it) wins.
//! - An edit the editor applied to a file it does not show (it loads it into a hidden buffer
//!   and may never report it) is kept the same way, while the disk still holds the text the edit
//!   was computed against; `didOpen` of that file replaces it.
//! - Every server edit the editor applied is journaled per file (its text before and after) until
//!   it is written to disk, so that a save on the server's side can write the agent's changes
//!   without the user's unrelated unsaved ones.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use ropey::Rope;
use tokio::sync::watch;

use super::position::{PositionEncoding, TextRange, rope_char_index};
use super::rebase::{RebaseConflict, rebase};

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
    expected: Option<Expected>,
}

/// A server edit the editor applied but has not reported yet.
#[derive(Debug)]
struct Expected {
    /// The text the edit was computed against.
    base: Arc<str>,
    /// What the editor holds now as far as the server can tell: the edit, merged with whatever
    /// the editor reported since.
    text: Arc<str>,
}

impl Document {
    /// Settles an expectation against the text the editor just reported.
    fn reconcile(&mut self) {
        let Some(expected) = &self.expected else { return };
        let reported = self.rope.to_string();
        if *reported == *expected.text || *reported == *expected.base {
            // Confirmed, or (base) the editor no longer holds the edit: the user undid it.
            self.expected = None;
            return;
        }
        match rebase(&expected.base, &expected.text, &reported) {
            Ok(merged) if merged != reported => {
                // The report holds part of the edit, or other changes only: keep the rest.
                self.expected = Some(Expected { base: expected.base.clone(), text: Arc::from(merged) });
            }
            Ok(_) => self.expected = None,
            Err(conflict) => {
                tracing::debug!("the editor's text overrides the server's last edit: {conflict}");
                self.expected = None;
            }
        }
    }
}

/// The text of an open buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferText {
    pub text: Arc<str>,
    /// The version the editor last reported.
    pub version: i32,
    /// False while `text` holds a server edit the editor has not reported yet: the editor's own
    /// version for this text is then unknown.
    pub confirmed: bool,
}

/// Open buffers by absolute path.
#[derive(Debug)]
pub struct DocumentStore {
    documents: RwLock<HashMap<PathBuf, Document>>,
    /// Server edits applied to files the editor did not have open.
    unopened: Mutex<HashMap<PathBuf, Expected>>,
    /// Server edits not yet written to disk, per file, oldest first.
    journal: Mutex<HashMap<PathBuf, Vec<Expected>>>,
    /// Bumped on every change, so [`DocumentStore::settled`] can wait for one.
    changed: watch::Sender<u64>,
}

impl Default for DocumentStore {
    fn default() -> Self {
        Self {
            documents: RwLock::default(),
            unopened: Mutex::default(),
            journal: Mutex::default(),
            changed: watch::Sender::new(0),
        }
    }
}

impl DocumentStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens (or reopens) `path` with the editor's text.
    pub fn open(&self, path: &Path, text: &str, version: i32) {
        let key = store_key(path);
        guard(&self.unopened).remove(&key);
        let document = Document { rope: Rope::from_str(text), version, expected: None };
        self.write().insert(key, document);
        self.bump();
    }

    /// Records that the editor applied an edit of the server's that turns `base` into `text`:
    /// the buffer at `version` when the file is open, else the file on disk. Until the editor
    /// reports it, reads return `text`.
    pub fn expect(&self, path: &Path, version: Option<i32>, base: Arc<str>, text: Arc<str>) {
        if base == text {
            return;
        }
        let key = store_key(path);
        let edit = Expected { base: base.clone(), text: text.clone() };
        guard(&self.journal).entry(key.clone()).or_default().push(edit);
        let mut documents = self.write();
        match lookup_mut(&mut documents, path) {
            Some(document) => {
                document.expected = Some(Expected { base, text });
                if Some(document.version) != version {
                    // The editor reported changes since the edit was computed (VS Code reports
                    // an applied edit before it answers): settle against them now.
                    document.reconcile();
                }
            }
            None => {
                guard(&self.unopened).insert(key, Expected { base, text });
            }
        }
        drop(documents);
        self.bump();
    }

    /// The text the editor holds for `path`, which it does not show, after a server edit: only
    /// while the disk still holds what the edit was computed against (`disk`, `None` when the
    /// file does not exist).
    pub fn unopened_text(&self, path: &Path, disk: Option<&str>) -> Option<Arc<str>> {
        let mut unopened = guard(&self.unopened);
        if unopened.is_empty() {
            return None;
        }
        let key = store_key(path);
        let expected = unopened.get(&key)?;
        if *expected.base == *disk.unwrap_or("") {
            return Some(expected.text.clone());
        }
        // Saved or changed on disk since: the disk is what the editor shows now.
        unopened.remove(&key);
        None
    }

    /// Whether the server has an edit of `path` waiting in a hidden editor buffer.
    pub fn has_unopened(&self, path: &Path) -> bool {
        let unopened = guard(&self.unopened);
        !unopened.is_empty() && unopened.contains_key(&store_key(path))
    }

    /// `disk` with the server's journaled edits of `path` replayed on it (each rebased three-way),
    /// so the user's other unsaved changes stay out: `Ok(None)` when there is no edit to write.
    pub fn server_edits_onto(&self, path: &Path, disk: &str) -> Result<Option<String>, RebaseConflict> {
        let journal = guard(&self.journal);
        let Some(edits) = journal.get(&store_key(path)).filter(|edits| !edits.is_empty()) else {
            return Ok(None);
        };
        let mut text = disk.to_string();
        for edit in edits {
            text = rebase(&edit.base, &edit.text, &text)?;
        }
        Ok(Some(text))
    }

    /// Forgets the journaled edits of `path`: they are on disk now.
    pub fn written(&self, path: &Path) {
        guard(&self.journal).remove(&store_key(path));
    }

    /// Waits until the editor has reported the server's last edit of `path` (at most
    /// `timeout`); true when nothing is left unconfirmed.
    pub async fn settled(&self, path: &Path, timeout: Duration) -> bool {
        let mut changes = self.changed.subscribe();
        let wait = async {
            loop {
                if self.get(path).is_none_or(|buffer| buffer.confirmed) {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.is_ok() && self.get(path).is_none_or(|b| b.confirmed)
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
        document.reconcile();
        drop(documents);
        self.bump();
        Ok(())
    }

    pub fn close(&self, path: &Path) {
        self.write().remove(&store_key(path));
        self.bump();
    }

    /// The buffer's text (with a server edit the editor has not reported yet) and version, if
    /// `path` is open.
    pub fn get(&self, path: &Path) -> Option<BufferText> {
        let documents = self.documents.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        lookup(&documents, path).map(|document| match &document.expected {
            Some(expected) => {
                BufferText { text: expected.text.clone(), version: document.version, confirmed: false }
            }
            None => BufferText {
                text: Arc::from(document.rope.to_string()),
                version: document.version,
                confirmed: true,
            },
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

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// Buffers are keyed by the same canonical path the execution environment's `resolve_path`
/// returns.
fn store_key(path: &Path) -> PathBuf {
    crate::exec::canonicalize_lenient(path)
}

/// The document open at `path`. Resolved paths are keys already, so
/// the file system is only asked (to canonicalize) when there are documents and no exact hit.
fn lookup<'a>(documents: &'a HashMap<PathBuf, Document>, path: &Path) -> Option<&'a Document> {
    if documents.is_empty() {
        return None;
    }
    documents.get(path).or_else(|| documents.get(&store_key(path)))
}

fn guard<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn lookup_mut<'a>(documents: &'a mut HashMap<PathBuf, Document>, path: &Path) -> Option<&'a mut Document> {
    if documents.is_empty() {
        return None;
    }
    if documents.contains_key(path) {
        return documents.get_mut(path);
    }
    documents.get_mut(&store_key(path))
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

    fn whole(text: &str) -> TextChange {
        TextChange { range: None, text: text.to_string() }
    }

    fn line_edit(line: u32, text: &str) -> TextChange {
        TextChange {
            range: Some(TextRange { start: Position::new(line, 0), end: Position::new(line + 1, 0) }),
            text: text.to_string(),
        }
    }

    fn state(store: &DocumentStore, path: &Path) -> (String, bool) {
        let buffer = store.get(path).unwrap();
        (buffer.text.to_string(), buffer.confirmed)
    }

    const BASE: &str = "a\nb\nc\nd\n";
    const EDITED: &str = "a\nB\nc\nd\n";

    fn store_with_edit() -> (DocumentStore, &'static Path) {
        let store = DocumentStore::new();
        let path = Path::new("/nonexistent-agentls/e.txt");
        store.open(path, BASE, 3);
        store.expect(path, Some(3), Arc::from(BASE), Arc::from(EDITED));
        (store, path)
    }

    #[test]
    fn an_applied_edit_is_read_back_before_the_editor_reports_it() {
        let (store, path) = store_with_edit();
        assert_eq!(state(&store, path), (EDITED.to_string(), false));
        store.change(path, 4, &[line_edit(1, "B\n")], PositionEncoding::Utf8).unwrap();
        assert_eq!(state(&store, path), (EDITED.to_string(), true), "the report confirms it");
    }

    #[test]
    fn a_report_with_the_edit_and_user_typing_confirms_it() {
        let (store, path) = store_with_edit();
        store.change(path, 4, &[line_edit(1, "B\n"), line_edit(3, "D\n")], PositionEncoding::Utf8).unwrap();
        assert_eq!(state(&store, path), ("a\nB\nc\nD\n".to_string(), true));
    }

    #[test]
    fn a_report_without_the_edit_is_merged_with_it() {
        let (store, path) = store_with_edit();
        // The user typed on another line; the editor has not reported the server's edit yet.
        store.change(path, 4, &[line_edit(3, "D\n")], PositionEncoding::Utf8).unwrap();
        assert_eq!(state(&store, path), ("a\nB\nc\nD\n".to_string(), false));
        store.change(path, 5, &[line_edit(1, "B\n")], PositionEncoding::Utf8).unwrap();
        assert_eq!(state(&store, path), ("a\nB\nc\nD\n".to_string(), true));
    }

    #[test]
    fn a_report_that_contradicts_the_edit_wins() {
        let (store, path) = store_with_edit();
        store.change(path, 4, &[whole(BASE)], PositionEncoding::Utf8).unwrap();
        assert_eq!(state(&store, path), (BASE.to_string(), true), "the user undid the edit");

        let (store, path) = store_with_edit();
        store.change(path, 4, &[line_edit(1, "user\n")], PositionEncoding::Utf8).unwrap();
        assert_eq!(state(&store, path), ("a\nuser\nc\nd\n".to_string(), true), "the user rewrote the line");
    }

    #[test]
    fn an_edit_reported_before_the_answer_is_confirmed_at_once() {
        let store = DocumentStore::new();
        let path = Path::new("/nonexistent-agentls/f.txt");
        store.open(path, BASE, 3);
        store.change(path, 4, &[line_edit(1, "B\n")], PositionEncoding::Utf8).unwrap();
        store.expect(path, Some(3), Arc::from(BASE), Arc::from(EDITED));
        assert_eq!(state(&store, path), (EDITED.to_string(), true));
    }

    #[test]
    fn an_edit_of_an_unopened_file_holds_while_the_disk_is_unchanged() {
        let store = DocumentStore::new();
        let path = Path::new("/nonexistent-agentls/g.txt");
        store.expect(path, None, Arc::from(BASE), Arc::from(EDITED));
        assert!(store.get(path).is_none(), "not open");
        assert_eq!(store.unopened_text(path, Some(BASE)).as_deref(), Some(EDITED));
        assert_eq!(store.unopened_text(path, Some(EDITED)), None, "saved: the disk wins");
        assert_eq!(store.unopened_text(path, Some(BASE)), None, "and it is forgotten");

        store.expect(path, None, Arc::from(BASE), Arc::from(EDITED));
        store.open(path, EDITED, 1);
        assert!(!store.has_unopened(path), "didOpen replaces it");
    }

    #[test]
    fn server_edits_are_replayed_onto_the_disk_without_the_users_other_changes() {
        let store = DocumentStore::new();
        let path = Path::new("/nonexistent-agentls/h.txt");
        // The buffer has an unsaved user change on line 4 ("D"); the agent edits lines 2, then 3.
        store.open(path, "a\nb\nc\nD\n", 1);
        store.expect(path, Some(1), Arc::from("a\nb\nc\nD\n"), Arc::from("a\nB\nc\nD\n"));
        store.expect(path, Some(1), Arc::from("a\nB\nc\nD\n"), Arc::from("a\nB\nC\nD\n"));
        assert_eq!(store.server_edits_onto(path, BASE), Ok(Some("a\nB\nC\nd\n".to_string())));
        assert!(store.server_edits_onto(path, "a\nx\nc\nd\n").is_err(), "the disk changed under the edit");
        store.written(path);
        assert_eq!(store.server_edits_onto(path, BASE), Ok(None));
    }

    #[tokio::test]
    async fn settled_waits_for_the_report() {
        let (store, path) = store_with_edit();
        let store = Arc::new(store);
        assert!(!store.settled(path, Duration::from_millis(20)).await, "no report yet");
        let reporter = Arc::clone(&store);
        let report = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            reporter.change(path, 4, &[line_edit(1, "B\n")], PositionEncoding::Utf8).unwrap();
        });
        assert!(store.settled(path, Duration::from_secs(5)).await);
        report.await.unwrap();
        assert!(store.settled(Path::new("/nonexistent-agentls/closed.txt"), Duration::ZERO).await);
    }
}
