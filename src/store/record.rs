//! What a transcript stores after its header: the session's history, appended turn by turn.
//!
//! Invariants:
//! - [`history`] of the records written by a [`TranscriptRecorder`] is the session's history at
//!   its last flush, so a resumed session starts from exactly what the model saw.
//! - A record of a kind this version does not know is skipped when reading, never an error.

use serde::{Deserialize, Serialize};

use super::{StoreError, TranscriptWriter};
use crate::session::Turn;

/// One line of a transcript after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// A turn appended to the history.
    Turn { turn: Turn },
    /// The whole history, written when turns were replaced or removed (compaction, pruning): it
    /// replaces everything before.
    Snapshot { turns: Vec<Turn> },
}

/// The history a transcript's records describe.
pub fn history(records: &[Record]) -> Vec<Turn> {
    let mut turns = Vec::new();
    for record in records {
        match record {
            Record::Turn { turn } => turns.push(turn.clone()),
            Record::Snapshot { turns: all } => turns = all.clone(),
        }
    }
    turns
}

/// Keeps a transcript in step with a session's history: appends the turns added since the last
/// call, or a snapshot when the history was rewritten (its revision changed, or it shrank).
#[derive(Debug)]
pub struct TranscriptRecorder {
    writer: TranscriptWriter,
    /// How many turns of the history are stored.
    persisted: usize,
    /// The history revision stored (see `SessionHandle::history_with_revision`).
    revision: u64,
}

impl TranscriptRecorder {
    /// `persisted` is the length of the history the transcript already holds (0 for a new one).
    pub fn new(writer: TranscriptWriter, persisted: usize) -> Self {
        Self { writer, persisted, revision: 0 }
    }

    /// Stores what changed in `history` (at `revision`) and flushes.
    pub fn record(&mut self, history: &[Turn], revision: u64) -> Result<(), StoreError> {
        if history.len() < self.persisted || revision != self.revision {
            self.writer.append(&Record::Snapshot { turns: history.to_vec() })?;
        } else {
            for turn in &history[self.persisted..] {
                self.writer.append(&Record::Turn { turn: turn.clone() })?;
            }
        }
        self.writer.flush()?;
        self.persisted = history.len();
        self.revision = revision;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{TranscriptHeader, TranscriptStore};

    #[test]
    fn recorded_history_reads_back_through_appends_and_snapshots() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = TranscriptStore::new(dir.path());
        let header = TranscriptHeader {
            session_id: "s".into(),
            root: "/w".into(),
            profile: "openai".into(),
            model: "m".into(),
            created: "t".into(),
        };
        let mut recorder = TranscriptRecorder::new(store.create(header).expect("create"), 0);
        let turns: Vec<Turn> = ["one", "two", "three"].into_iter().map(Turn::user).collect();
        recorder.record(&turns[..2], 0).expect("record");
        recorder.record(&turns, 0).expect("record");
        assert_eq!(history(&store.load("s").expect("load").records), turns);
        recorder.record(&turns[2..], 1).expect("record a pruned history");
        assert_eq!(history(&store.load("s").expect("load").records), turns[2..].to_vec());
        // A compaction can leave the history as long as it was: the revision says it changed.
        let rewritten: Vec<Turn> = ["summary", "four"].into_iter().map(Turn::user).collect();
        recorder.record(&turns[2..], 1).expect("nothing new");
        recorder.record(&rewritten[..1], 2).expect("record a compacted history");
        recorder.record(&rewritten, 2).expect("record");
        assert_eq!(history(&store.load("s").expect("load").records), rewritten);
    }
}
