//! What a transcript stores after its header: the session's history, appended turn by turn.
//!
//! Invariants:
//! - [`history`] of the records written by a [`TranscriptRecorder`] is the session's history at
//!   its last flush, so a resumed session starts from exactly what the model saw.
//! - A record of a kind this version does not know is skipped when reading, never an error.
//! - A subagent's history is stored in its parent's transcript (`agent`, `agent_turn`,
//!   `agent_snapshot` records): [`agents`] reads each one back as [`history`] does the parent's.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{StoreError, TranscriptWriter};
use crate::session::{AgentInfo, Turn};

/// One line of a transcript after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// A turn appended to the history.
    Turn { turn: Turn },
    /// The whole history, written when turns were replaced or removed (compaction, pruning): it
    /// replaces everything before.
    Snapshot { turns: Vec<Turn> },
    /// A subagent the session spawned (written once, before its turns).
    Agent { agent: AgentInfo },
    /// A turn appended to a subagent's history (`session_id`: the subagent's own).
    AgentTurn { session_id: String, turn: Turn },
    /// A subagent's whole history after it shrank.
    AgentSnapshot { session_id: String, turns: Vec<Turn> },
}

/// The history a transcript's records describe.
pub fn history(records: &[Record]) -> Vec<Turn> {
    let mut turns = Vec::new();
    for record in records {
        match record {
            Record::Turn { turn } => turns.push(turn.clone()),
            Record::Snapshot { turns: all } => turns = all.clone(),
            Record::Agent { .. } | Record::AgentTurn { .. } | Record::AgentSnapshot { .. } => {}
        }
    }
    turns
}

/// The subagents a transcript's records describe, with their histories, in spawn order.
pub fn agents(records: &[Record]) -> Vec<(AgentInfo, Vec<Turn>)> {
    let mut agents: Vec<(AgentInfo, Vec<Turn>)> = Vec::new();
    let find = |agents: &mut Vec<(AgentInfo, Vec<Turn>)>, id: &str| {
        agents.iter().position(|(a, _)| a.path.session_id == id)
    };
    for record in records {
        match record {
            Record::Agent { agent } => agents.push((agent.clone(), Vec::new())),
            Record::AgentTurn { session_id, turn } => {
                if let Some(i) = find(&mut agents, session_id) {
                    agents[i].1.push(turn.clone());
                }
            }
            Record::AgentSnapshot { session_id, turns } => {
                if let Some(i) = find(&mut agents, session_id) {
                    agents[i].1 = turns.clone();
                }
            }
            Record::Turn { .. } | Record::Snapshot { .. } => {}
        }
    }
    agents
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
    /// The same for each subagent, by its session id.
    agents: HashMap<String, usize>,
}

impl TranscriptRecorder {
    /// `persisted` is the length of the history the transcript already holds (0 for a new one).
    pub fn new(writer: TranscriptWriter, persisted: usize) -> Self {
        Self { writer, persisted, revision: 0, agents: HashMap::new() }
    }

    /// Notes subagents the transcript already holds (a resumed session's).
    pub fn with_agents(mut self, stored: &[(AgentInfo, Vec<Turn>)]) -> Self {
        for (agent, turns) in stored {
            self.agents.insert(agent.path.session_id.clone(), turns.len());
        }
        self
    }

    /// Stores what changed in the subagents' histories (a new subagent first) and flushes.
    pub fn record_agents(&mut self, agents: &[(AgentInfo, Vec<Turn>)]) -> Result<(), StoreError> {
        for (agent, history) in agents {
            let session_id = &agent.path.session_id;
            let persisted = match self.agents.get(session_id) {
                Some(&n) => n,
                None => {
                    self.writer.append(&Record::Agent { agent: agent.clone() })?;
                    0
                }
            };
            if history.len() < persisted {
                let turns = history.clone();
                self.writer.append(&Record::AgentSnapshot { session_id: session_id.clone(), turns })?;
            } else {
                for turn in &history[persisted..] {
                    let turn = turn.clone();
                    self.writer.append(&Record::AgentTurn { session_id: session_id.clone(), turn })?;
                }
            }
            self.agents.insert(session_id.clone(), history.len());
        }
        self.writer.flush()
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

    fn header(session_id: &str) -> TranscriptHeader {
        TranscriptHeader {
            session_id: session_id.into(),
            root: "/w".into(),
            profile: "openai".into(),
            model: "m".into(),
            created: "t".into(),
        }
    }

    #[test]
    fn recorded_history_reads_back_through_appends_and_snapshots() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = TranscriptStore::new(dir.path());
        let mut recorder = TranscriptRecorder::new(store.create(header("s")).expect("create"), 0);
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

    #[test]
    fn subagents_are_stored_with_their_parent_and_read_back_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = TranscriptStore::new(dir.path());
        let mut recorder = TranscriptRecorder::new(store.create(header("p")).expect("create"), 0);
        let agent = AgentInfo {
            path: crate::session::AgentPath {
                agent_id: "agent-1".into(),
                session_id: "p-agent-1".into(),
                parent_session_id: "p".into(),
                parent_call_id: "c1".into(),
            },
            task: "write tests".into(),
            cwd: "/w".into(),
            model: "m".into(),
        };
        let parent = vec![Turn::user("delegate")];
        let child: Vec<Turn> = ["write tests", "more"].into_iter().map(Turn::user).collect();
        recorder.record(&parent, 0).expect("record");
        recorder.record_agents(&[(agent.clone(), child[..1].to_vec())]).expect("record agents");
        recorder.record_agents(&[(agent.clone(), child.clone())]).expect("record agents");
        let records = store.load("p").expect("load").records;
        assert_eq!(history(&records), parent, "the parent's history holds none of the child's turns");
        assert_eq!(agents(&records), vec![(agent.clone(), child.clone())]);
        // Reopened for a resumed session, only what is new is appended.
        let mut again =
            TranscriptRecorder::new(store.reopen("p").expect("reopen"), 1).with_agents(&agents(&records));
        again.record_agents(&[(agent.clone(), child[1..].to_vec())]).expect("a pruned child");
        assert_eq!(agents(&store.load("p").expect("load").records), vec![(agent, child[1..].to_vec())]);
    }
}
