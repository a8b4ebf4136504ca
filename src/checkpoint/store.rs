//! A session's checkpoints on disk: `<data dir>/checkpoints/<session id>/index.json` (the
//! turns, what each changed and whether it is undone) and `blobs/` (each text once, named by
//! its hash and length).
//!
//! Invariants:
//! - Every write is a new file renamed into place: a crash leaves the old index or the new one.
//! - The store holds at most [`MAX_TURNS`](super::MAX_TURNS) turns and about
//!   [`MAX_SESSION_BYTES`](super::MAX_SESSION_BYTES) of blobs; the oldest turns go first, and a
//!   blob no kept turn names is removed.
//! - Nothing is ever written outside the session's own directory (ids are checked first).

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{CheckpointError, MAX_SESSION_BYTES, MAX_TURNS, Side, Uncovered};
use crate::workspace::content_hash;

/// One side of a file in a stored turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Stored {
    Absent,
    Blob { id: String },
    NotCovered { reason: Uncovered },
}

/// A file a turn changed: what it held before the turn and after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    pub path: PathBuf,
    pub before: Stored,
    pub after: Stored,
}

/// A file an edit tool moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    pub from: PathBuf,
    pub to: PathBuf,
}

/// A turn that was undone, and whether redo can still bring it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoMark {
    /// Turns undone by one call share their group; redo takes the latest group.
    pub group: u64,
    /// False once a later turn changed files: its changes are no longer on top of this one's.
    pub redoable: bool,
}

/// One user input and the files it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub id: u64,
    pub started: DateTime<Utc>,
    /// The user's input (its first 200 characters).
    pub prompt: String,
    /// Where the input's user turn is in the history, and its timestamp (to find it again).
    pub history_index: usize,
    pub user_timestamp: DateTime<Utc>,
    pub files: Vec<FileRecord>,
    #[serde(default)]
    pub moves: Vec<Move>,
    #[serde(default)]
    pub undone: Option<UndoMark>,
}

impl TurnRecord {
    pub fn changed_files(&self) -> bool {
        !self.files.is_empty()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Index {
    /// The workspace the turns changed.
    #[serde(default)]
    pub root: PathBuf,
    pub next_id: u64,
    pub next_group: u64,
    pub turns: Vec<TurnRecord>,
}

/// The directory of one session's checkpoints.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 160 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn io(path: &Path, error: std::io::Error) -> CheckpointError {
    CheckpointError::Io(format!("{}: {error}", path.display()))
}

/// Writes `bytes` to `path` through a temporary file renamed into place.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile_in(dir)?;
    tmp.1.write_all(bytes).map_err(|e| io(&tmp.0, e))?;
    drop(tmp.1);
    std::fs::rename(&tmp.0, path).map_err(|e| io(path, e))
}

fn tempfile_in(dir: &Path) -> Result<(PathBuf, std::fs::File), CheckpointError> {
    for _ in 0..16 {
        let path = dir.join(format!(".tmp-{:016x}", fastrand::u64(..)));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&path, e)),
        }
    }
    Err(CheckpointError::Io(format!("{}: no temporary file name was free", dir.display())))
}

/// Where the checkpoints of every session are.
pub fn checkpoints_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("checkpoints")
}

impl Store {
    /// The store of session `id` under `data_dir` (created on first write).
    pub fn new(data_dir: &Path, id: &str) -> Result<Self, CheckpointError> {
        if !valid_id(id) {
            return Err(CheckpointError::BadId(id.to_string()));
        }
        Ok(Self { dir: checkpoints_dir(data_dir).join(id) })
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join("index.json")
    }

    fn blobs(&self) -> PathBuf {
        self.dir.join("blobs")
    }

    /// The stored index; an empty one when there is none yet.
    pub fn load(&self) -> Result<Index, CheckpointError> {
        let path = self.index_path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| CheckpointError::Io(format!("{} is unreadable: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Index::default()),
            Err(e) => Err(io(&path, e)),
        }
    }

    pub fn save(&self, index: &Index) -> Result<(), CheckpointError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let bytes = serde_json::to_vec(index).map_err(|e| CheckpointError::Io(e.to_string()))?;
        write_atomically(&self.index_path(), &bytes)
    }

    /// Stores one side of a file: a text as a blob (once per content).
    pub fn put(&self, side: &Side) -> Result<Stored, CheckpointError> {
        let text = match side {
            Side::Absent => return Ok(Stored::Absent),
            Side::NotCovered(reason) => return Ok(Stored::NotCovered { reason: *reason }),
            Side::Text(text) => text,
        };
        let blobs = self.blobs();
        std::fs::create_dir_all(&blobs).map_err(|e| io(&blobs, e))?;
        let base = format!("{:016x}-{}", content_hash(text.as_bytes()), text.len());
        // The same name with other bytes (a hash collision) gets a suffix.
        for n in 0..8 {
            let id = if n == 0 { base.clone() } else { format!("{base}-{n}") };
            let path = blobs.join(&id);
            match std::fs::read(&path) {
                Ok(existing) if existing == text.as_bytes() => return Ok(Stored::Blob { id }),
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    write_atomically(&path, text.as_bytes())?;
                    return Ok(Stored::Blob { id });
                }
                Err(e) => return Err(io(&path, e)),
            }
        }
        Err(CheckpointError::Io(format!("{base}: too many blobs of one hash")))
    }

    /// Reads one side back.
    pub fn get(&self, stored: &Stored) -> Result<Side, CheckpointError> {
        match stored {
            Stored::Absent => Ok(Side::Absent),
            Stored::NotCovered { reason } => Ok(Side::NotCovered(*reason)),
            Stored::Blob { id } => {
                if !valid_id(id) {
                    return Err(CheckpointError::BadId(id.clone()));
                }
                let path = self.blobs().join(id);
                let bytes = std::fs::read(&path).map_err(|e| io(&path, e))?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| CheckpointError::Io(format!("{} is not text", path.display())))?;
                Ok(Side::Text(Arc::from(text)))
            }
        }
    }

    /// Keeps the store within its bounds: the oldest turns are dropped while there are too many
    /// or their blobs take too much room, then unnamed blobs are removed.
    pub fn collect(&self, index: &mut Index) -> Result<(), CheckpointError> {
        let size = |id: &str| id.split('-').nth(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        let named = |turns: &[TurnRecord]| -> HashSet<String> {
            turns
                .iter()
                .flat_map(|t| &t.files)
                .flat_map(|f| [&f.before, &f.after])
                .filter_map(|s| match s {
                    Stored::Blob { id } => Some(id.clone()),
                    _ => None,
                })
                .collect()
        };
        loop {
            let bytes: u64 = named(&index.turns).iter().map(|id| size(id)).sum();
            if index.turns.len() <= MAX_TURNS && (bytes <= MAX_SESSION_BYTES || index.turns.len() <= 1) {
                break;
            }
            index.turns.remove(0);
        }
        let keep = named(&index.turns);
        let blobs = self.blobs();
        let Ok(entries) = std::fs::read_dir(&blobs) else { return Ok(()) };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !keep.contains(&name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    /// Removes the session's checkpoints (`agentls sessions rm`).
    pub fn remove(&self) -> Result<(), CheckpointError> {
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&self.dir, e)),
            _ => Ok(()),
        }
    }
}

/// How long the checkpoints of a session nobody touched are kept.
const UNUSED_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Removes the checkpoints of sessions not used for [`UNUSED_FOR`] (their index unchanged).
pub fn collect_unused(data_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(checkpoints_dir(data_dir)) else { return };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let index = entry.path().join("index.json");
        let old = std::fs::metadata(&index)
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > UNUSED_FOR));
        if old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
