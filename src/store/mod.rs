//! Session transcripts on disk, under the data dir.
//!
//! Invariants:
//! - A transcript is append-only JSONL: a header line, then one record per line, each flushed
//!   when the session adds the turn, so a killed server loses at most the message being
//!   streamed; a torn last line is skipped on load, never an error, and a reopened transcript
//!   starts its next record on a line of its own.
//! - One process writes a session at a time: a writer holds an advisory lock on its transcript
//!   (released when it is dropped or its process dies), and opening a held one fails with
//!   [`StoreError::Busy`].
//! - Session ids are validated before they become file names: nothing outside the sessions
//!   directory is ever read, written or removed.

mod record;
mod transcript;

use std::path::PathBuf;

pub use record::{Record, SharedRecorder, TranscriptRecorder, agents, history, interrupted};
pub use transcript::{Transcript, TranscriptHeader, TranscriptStore, TranscriptSummary, TranscriptWriter};

use crate::config::Env;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no stored session `{0}`; `agentls sessions list` shows the stored ones")]
    NotFound(String),
    #[error("`{0}` is not a session id (letters, digits, `-` and `_` only)")]
    BadId(String),
    #[error(
        "cannot access {path}: {source}; check the permissions of the data directory or set AGENTLS_DATA_DIR"
    )]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("stored session {path} is unreadable: {message}")]
    Corrupt { path: String, message: String },
    #[error(transparent)]
    Busy(#[from] crate::session::TranscriptBusy),
}

impl StoreError {
    fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io { path: path.display().to_string(), source }
    }
}

/// The agentls data directory: `AGENTLS_DATA_DIR`, else `<data dir>/agentls`.
pub fn data_dir(env: &Env) -> Option<PathBuf> {
    match env.get("AGENTLS_DATA_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => dirs::data_dir().map(|d| d.join("agentls")),
    }
}
