//! Per-turn checkpoints: for every file a turn (one user input) changed in the workspace, the
//! text before the turn and after it, so the turn can be undone and redone.
//!
//! What is recorded, and how:
//! - Edit tools: their change sets pass through [`RecordingPort`], which reads each file as the
//!   agent's view holds it (open buffer first) before and after the change lands.
//! - Commands: [`RecordingEnvironment`] brings the session's picture of the workspace's files
//!   ([`tree`]: walked once, then kept up to date through inotify where it can be) up to date
//!   before and after each command; the paths that changed between the two points are the
//!   command's. [`RecordingTool`] and [`RecordingToolSource`] do the same around the calls of
//!   tools that change files on their own (code mode's Python, MCP tools). The prior content of a
//!   file such an action changes comes from what was read before it: the files it names (a
//!   path, a directory, a glob; for a tool, among its arguments), the files the agent read or
//!   changed in this session, and those of recorded turns. A changed file whose prior content
//!   was not read is listed as not covered (`prior_unknown`), as are files over
//!   [`MAX_FILE_BYTES`], binary files, and (never scanned) ignored paths. In a workspace of more
//!   than [`scan::MAX_SCANNED`] files, commands are not recorded at all.
//!
//! Invariants:
//! - Nothing is written in the workspace or its `.git`: checkpoints live in the data directory
//!   ([`store`]), bounded per session and collected.
//! - Only a host's session records: its subagents' changes land in the turn of the input that
//!   started them ([`inherit_turn`]), even after that input ended. Nothing else is recorded
//!   outside an input.
//! - Undo and redo never clobber: each file is merged three-way ([`revert`]) onto what it holds
//!   now, and a conflict refuses the whole call before anything is changed.

mod record;
pub mod revert;
pub mod scan;
mod store;
mod tree;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use record::{RecordingEnvironment, RecordingPort, RecordingTool, RecordingToolSource};
pub use revert::{Direction, Reversal};
pub use store::{FileRecord, Move, Stored, TurnRecord, UndoMark, checkpoints_dir, collect_unused};
pub use tree::scan as scan_tree;

use store::Store;

/// Files larger than this that a command changes are not kept (listed as not covered).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Turns a session keeps (the oldest go first).
pub const MAX_TURNS: usize = 100;
/// Bytes of kept text per session, about (the oldest turns go first).
pub const MAX_SESSION_BYTES: u64 = 64 * 1024 * 1024;
/// Paths whose content the scan before a command reads besides the ones it names.
const MAX_KNOWN: usize = 2_000;

/// Why a file's text is not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Uncovered {
    /// Larger than [`MAX_FILE_BYTES`].
    TooLarge,
    /// Not UTF-8 text (NUL bytes, invalid UTF-8).
    Binary,
    /// A command changed it and its prior content had not been read.
    PriorUnknown,
    /// It could not be read.
    Unreadable,
}

impl Uncovered {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TooLarge => "too_large",
            Self::Binary => "binary",
            Self::PriorUnknown => "prior_unknown",
            Self::Unreadable => "unreadable",
        }
    }
}

/// What a path holds at one point of a turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Side {
    Absent,
    Text(Arc<str>),
    NotCovered(Uncovered),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckpointError {
    #[error("`{0}` is not a valid checkpoint id")]
    BadId(String),
    #[error("checkpoints: {0}")]
    Io(String),
    #[error("{0}")]
    Nothing(String),
    #[error("no turn {0} in this session's checkpoints")]
    UnknownTurn(u64),
    /// A file changed since in a way the undo or redo cannot merge with; nothing was changed.
    /// `shown` is `path` as the user sees it (relative to the workspace).
    #[error("{shown} changed since the turn and the change overlaps it ({reason}); nothing was changed")]
    Conflict { path: PathBuf, shown: String, reason: String },
    #[error("the change could not be applied: {0}")]
    Apply(String),
}

/// Where a turn's user input is in the history (to cut the history back before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryMark {
    pub index: usize,
    pub timestamp: DateTime<Utc>,
}

/// Which turns are undone (oldest first) and which of them the next redo re-applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UndoState {
    pub undone: Vec<u64>,
    pub redoable: Vec<u64>,
}

impl UndoState {
    pub fn of(turns: &[TurnRecord]) -> Self {
        let group = redo_group(turns);
        Self {
            undone: turns.iter().filter(|t| t.undone.is_some()).map(|t| t.id).collect(),
            redoable: turns
                .iter()
                .filter(|t| group.is_some() && t.undone.map(|m| m.group) == group)
                .map(|t| t.id)
                .collect(),
        }
    }
}

/// The undo group redo takes: the latest one still redoable.
fn redo_group(turns: &[TurnRecord]) -> Option<u64> {
    turns.iter().filter_map(|t| t.undone.filter(|m| m.redoable).map(|m| m.group)).max()
}

/// The input being recorded.
struct OpenTurn {
    record: TurnRecord,
    files: BTreeMap<PathBuf, (Side, Side)>,
    moves: Vec<Move>,
}

/// A session's checkpoints: the turn being recorded and the stored ones.
pub struct Checkpoints {
    store: Store,
    root: PathBuf,
    /// Where the checkpoints are kept: never scanned, should it be inside the workspace.
    data_dir: PathBuf,
    index: Mutex<store::Index>,
    open: Mutex<Option<OpenTurn>>,
    /// Paths read or changed in this session: the scan before a command keeps their content.
    known: Mutex<HashSet<PathBuf>>,
    /// The workspace's files as the last command left them ([`tree`]); made at the first.
    tree: Mutex<Option<tree::Tree>>,
}

tokio::task_local! {
    /// The turn the current task works for: set around a host's input ([`Checkpoints::in_turn`])
    /// and carried into the subagents it starts ([`inherit_turn`]).
    static TURN: TurnScope;
}

#[derive(Debug, Clone, Copy)]
struct TurnScope {
    /// The [`Checkpoints`] the turn is one of (its address).
    owner: usize,
    turn: u64,
}

/// `work` (a subagent's session, started by a tool call) as the work of the turn the current
/// task works for: its changes land in that turn even after the turn ended.
pub fn inherit_turn<F: Future>(work: F) -> impl Future<Output = F::Output> {
    let scope = TURN.try_with(|s| *s).ok();
    async move {
        match scope {
            Some(scope) => TURN.scope(scope, work).await,
            None => work.await,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Checkpoints {
    /// The checkpoints of session `id` in the workspace `root`, kept under `data_dir` (those it
    /// stored before a restart included).
    pub fn open(data_dir: &Path, id: &str, root: &Path) -> Result<Self, CheckpointError> {
        collect_unused(data_dir);
        let store = Store::new(data_dir, id)?;
        let mut index = store.load()?;
        index.root = root.to_path_buf();
        let known = index.turns.iter().flat_map(|t| t.files.iter().map(|f| f.path.clone())).collect();
        Ok(Self {
            store,
            root: root.to_path_buf(),
            data_dir: data_dir.to_path_buf(),
            index: Mutex::new(index),
            open: Mutex::new(None),
            known: Mutex::new(known),
            tree: Mutex::new(None),
        })
    }

    /// The stored checkpoints of session `id`, in the workspace they were recorded in.
    pub fn open_stored(data_dir: &Path, id: &str) -> Result<Self, CheckpointError> {
        let store = Store::new(data_dir, id)?;
        let root = store.load()?.root;
        if root.as_os_str().is_empty() {
            return Err(CheckpointError::Nothing(format!("session {id} has no checkpoints")));
        }
        Self::open(data_dir, id, &root)
    }

    /// The data directory the checkpoints are kept in.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The workspace the checkpoints cover.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Starts recording an input whose user turn is at `mark` in the history; returns the
    /// turn's id (what `agentls.undoTurn` takes and the `user_input` event carries).
    pub fn begin_turn(&self, prompt: &str, mark: HistoryMark) -> u64 {
        let id = {
            let mut index = lock(&self.index);
            index.next_id = index.next_id.max(index.turns.last().map_or(0, |t| t.id)) + 1;
            index.next_id
        };
        let record = TurnRecord {
            id,
            started: Utc::now(),
            prompt: prompt.chars().take(200).collect(),
            history_index: mark.index,
            user_timestamp: mark.timestamp,
            files: Vec::new(),
            moves: Vec::new(),
            undone: None,
        };
        *lock(&self.open) = Some(OpenTurn { record, files: BTreeMap::new(), moves: Vec::new() });
        id
    }

    /// Whether an input is being recorded.
    pub fn recording(&self) -> bool {
        lock(&self.open).is_some()
    }

    fn open_id(&self) -> Option<u64> {
        lock(&self.open).as_ref().map(|t| t.record.id)
    }

    /// Runs `work` (the steps of the input being recorded) as that turn's work: the subagents
    /// it starts carry the turn along ([`inherit_turn`]).
    pub async fn in_turn<F: Future>(&self, work: F) -> F::Output {
        match self.open_id() {
            Some(turn) => TURN.scope(TurnScope { owner: self as *const Self as usize, turn }, work).await,
            None => work.await,
        }
    }

    /// The turn a change made now by the current task belongs to: the one its task works for
    /// (a subagent's, possibly ended), else the one being recorded.
    pub(crate) fn target(&self) -> Option<u64> {
        let me = self as *const Self as usize;
        TURN.try_with(|s| (s.owner == me).then_some(s.turn)).ok().flatten().or_else(|| self.open_id())
    }

    /// Notes that `path` held `before` and now holds `after` in turn `turn` (a turn keeps the
    /// first `before` and the last `after` of each path). A turn that already ended (a
    /// subagent's change after its parent's turn) gets the file added to its stored record.
    pub(crate) fn note(&self, turn: u64, path: &Path, before: Side, after: Side) {
        self.know(path);
        let mut open = lock(&self.open);
        if let Some(open) = open.as_mut().filter(|t| t.record.id == turn) {
            open.files
                .entry(path.to_path_buf())
                .and_modify(|pair| pair.1 = after.clone())
                .or_insert((before, after));
            return;
        }
        if before == after && !matches!(before, Side::NotCovered(_)) {
            return;
        }
        let mut index = lock(&self.index);
        let Some(record) = index.turns.iter_mut().find(|t| t.id == turn) else { return };
        let (before, after) = match (self.store.put(&before), self.store.put(&after)) {
            (Ok(before), Ok(after)) => (before, after),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("a late change of turn {turn} is not kept: {e}");
                return;
            }
        };
        match record.files.iter_mut().find(|f| f.path == path) {
            Some(file) => file.after = after,
            None => record.files.push(FileRecord { path: path.to_path_buf(), before, after }),
        }
        if let Err(e) = self.store.save(&index) {
            tracing::warn!("a late change of turn {turn} is not stored: {e}");
        }
    }

    pub(crate) fn note_move(&self, turn: u64, from: &Path, to: &Path) {
        let mv = Move { from: from.to_path_buf(), to: to.to_path_buf() };
        if let Some(open) = lock(&self.open).as_mut().filter(|t| t.record.id == turn) {
            open.moves.push(mv);
            return;
        }
        if let Some(record) = lock(&self.index).turns.iter_mut().find(|t| t.id == turn) {
            record.moves.push(mv);
        }
    }

    /// Remembers that the agent read or changed `path`.
    pub(crate) fn know(&self, path: &Path) {
        let mut known = lock(&self.known);
        if known.len() < MAX_KNOWN {
            known.insert(path.to_path_buf());
        }
    }

    pub(crate) fn known(&self) -> Vec<PathBuf> {
        lock(&self.known).iter().cloned().collect()
    }

    /// Ends the input being recorded and stores it: its texts as blobs, the turn in the index.
    /// Returns it (`None` when nothing was being recorded).
    pub fn end_turn(&self) -> Option<TurnRecord> {
        // Held to the end: a late change of this turn (a subagent's) waits until it is stored.
        let mut open = lock(&self.open);
        let OpenTurn { mut record, files, moves } = open.take()?;
        let mut failed = None;
        for (path, (before, after)) in files {
            // A file the scans saw change whose text was not kept stays listed.
            if before == after && !matches!(before, Side::NotCovered(_)) {
                continue;
            }
            match (self.store.put(&before), self.store.put(&after)) {
                (Ok(before), Ok(after)) => record.files.push(FileRecord { path, before, after }),
                (Err(e), _) | (_, Err(e)) => failed = Some(e),
            }
        }
        record.moves = moves;
        if let Some(e) = failed {
            tracing::warn!("a checkpoint of turn {} is incomplete: {e}", record.id);
        }
        let mut index = lock(&self.index);
        if record.changed_files() {
            // Turns undone before this one are no longer at the top of the files: no redo.
            for turn in &mut index.turns {
                if let Some(mark) = &mut turn.undone {
                    mark.redoable = false;
                }
            }
        }
        index.turns.push(record.clone());
        let stored = self.store.collect(&mut index).and_then(|()| self.store.save(&index));
        if let Err(e) = stored {
            tracing::warn!("the checkpoint of turn {} is not stored: {e}", record.id);
        }
        drop(open);
        Some(record)
    }

    /// The stored turns, oldest first.
    pub fn turns(&self) -> Vec<TurnRecord> {
        lock(&self.index).turns.clone()
    }

    /// Which turns are undone, and which the next redo takes.
    pub fn undo_state(&self) -> UndoState {
        UndoState::of(&lock(&self.index).turns)
    }

    /// The stored turns of session `id` (none when it has no checkpoints), without opening them.
    pub fn stored_turns(data_dir: &Path, id: &str) -> Vec<TurnRecord> {
        Store::new(data_dir, id).and_then(|store| store.load()).map(|index| index.turns).unwrap_or_default()
    }

    /// Reads a stored side back.
    pub(crate) fn side(&self, stored: &Stored) -> Result<Side, CheckpointError> {
        self.store.get(stored)
    }

    /// Marks the turns of a carried-out reversal undone (or no longer undone) and stores it.
    pub fn finish(&self, reversal: &Reversal) -> Result<(), CheckpointError> {
        let mut index = lock(&self.index);
        let group = index.next_group + 1;
        if reversal.direction == Direction::Undo {
            index.next_group = group;
        }
        for turn in index.turns.iter_mut().filter(|t| reversal.turns.contains(&t.id)) {
            turn.undone = match reversal.direction {
                Direction::Undo => Some(UndoMark { group, redoable: true }),
                Direction::Redo => None,
            };
        }
        self.store.save(&index)
    }

    /// Removes the stored checkpoints of session `id` (with its transcript).
    pub fn remove(data_dir: &Path, id: &str) -> Result<(), CheckpointError> {
        Store::new(data_dir, id)?.remove()
    }
}

#[cfg(test)]
mod tests;
