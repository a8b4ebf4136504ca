//! What a transcript stores after its header: the session's history, appended turn by turn as
//! it happens.
//!
//! Invariants:
//! - [`history`] of the records written by a [`TranscriptRecorder`] is the session's history at
//!   its last flush, so a resumed session starts from exactly what the model saw. The session
//!   writes each turn when it is added ([`SharedRecorder`], its `HistorySink`), flushed at once:
//!   a server that dies loses at most the message being streamed.
//! - Every input that ends is followed by a `turn_end` record; turns after the last one belong
//!   to an input that was cut off ([`interrupted`]).
//! - A record of a kind this version does not know is skipped when reading, never an error.
//! - A subagent's history is stored in its parent's transcript (`agent`, `agent_turn`,
//!   `agent_snapshot` records): [`agents`] reads each one back as [`history`] does the parent's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::{StoreError, Transcript, TranscriptHeader, TranscriptStore, TranscriptWriter};
use crate::session::{
    AgentInfo, HistorySink, NewTranscript, StoredSession, TranscriptError, TranscriptSink, Transcripts, Turn,
};

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
    /// An input ended (`reason`: the `processing_end` reason).
    TurnEnd { reason: String },
}

/// Whether a transcript ends inside an input that never ended: turns were appended after the
/// last `turn_end` (or with none at all). Transcripts written before `turn_end` existed
/// (`TranscriptHeader::input_ends` false) say no here; their unfinished tool calls still show
/// (`session::recovery`).
pub fn interrupted(transcript: &Transcript) -> bool {
    let records = &transcript.records;
    let last_end = records.iter().rposition(|r| matches!(r, Record::TurnEnd { .. }));
    let last_turn = records.iter().rposition(|r| matches!(r, Record::Turn { .. }));
    transcript.header.input_ends && last_turn.is_some_and(|turn| last_end.is_none_or(|end| turn > end))
}

/// The history a transcript's records describe.
pub fn history(records: &[Record]) -> Vec<Turn> {
    let mut turns = Vec::new();
    for record in records {
        match record {
            Record::Turn { turn } => turns.push(turn.clone()),
            Record::Snapshot { turns: all } => turns = all.clone(),
            Record::Agent { .. }
            | Record::AgentTurn { .. }
            | Record::AgentSnapshot { .. }
            | Record::TurnEnd { .. } => {}
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
            Record::Turn { .. } | Record::Snapshot { .. } | Record::TurnEnd { .. } => {}
        }
    }
    agents
}

/// Writes a session's history to its transcript: each turn as it is appended, the whole history
/// when it was rewritten, the end of each input, and its subagents' histories.
#[derive(Debug)]
pub struct TranscriptRecorder {
    writer: TranscriptWriter,
    /// How many turns of each subagent's history are stored, by its session id.
    agents: HashMap<String, usize>,
}

impl TranscriptRecorder {
    pub fn new(writer: TranscriptWriter) -> Self {
        Self { writer, agents: HashMap::new() }
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

    /// Stores one turn appended to the history and flushes.
    pub fn append_turn(&mut self, turn: &Turn) -> Result<(), StoreError> {
        self.writer.append(&Record::Turn { turn: turn.clone() })?;
        self.writer.flush()
    }

    /// Stores a history that was rewritten (compacted, pruned), whole, and flushes.
    pub fn rewrite(&mut self, history: &[Turn]) -> Result<(), StoreError> {
        self.writer.append(&Record::Snapshot { turns: history.to_vec() })?;
        self.writer.flush()
    }

    /// Marks the end of an input and flushes.
    pub fn end_turn(&mut self, reason: &str) -> Result<(), StoreError> {
        self.writer.append(&Record::TurnEnd { reason: reason.to_string() })?;
        self.writer.flush()
    }
}

/// A recorder the session writes through (its `HistorySink`) and its host shares (subagents,
/// input ends). A write that fails is logged; the session goes on.
#[derive(Debug, Clone)]
pub struct SharedRecorder(Arc<Mutex<TranscriptRecorder>>);

impl SharedRecorder {
    pub fn new(recorder: TranscriptRecorder) -> Self {
        Self(Arc::new(Mutex::new(recorder)))
    }

    /// Runs `write` on the recorder; a failure is logged.
    pub fn with(&self, write: impl FnOnce(&mut TranscriptRecorder) -> Result<(), StoreError>) {
        let mut recorder = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = write(&mut recorder) {
            tracing::warn!("cannot write the transcript: {e}");
        }
    }
}

impl HistorySink for SharedRecorder {
    fn appended(&self, turn: &Turn) {
        self.with(|r| r.append_turn(turn));
    }

    fn rewritten(&self, history: &[Turn], _revision: u64) {
        self.with(|r| r.rewrite(history));
    }
}

impl TranscriptSink for SharedRecorder {
    fn input_ended(&self, reason: &str) {
        self.with(|r| r.end_turn(reason));
    }

    fn agents_changed(&self, agents: &[(AgentInfo, Vec<Turn>)]) {
        self.with(|r| r.record_agents(agents));
    }
}

/// The sessions' transcripts as the session builder opens them.
impl Transcripts for TranscriptStore {
    fn create(&self, session: &NewTranscript) -> Result<Arc<dyn TranscriptSink>, TranscriptError> {
        let writer = TranscriptStore::create(
            self,
            TranscriptHeader {
                session_id: session.session_id.clone(),
                root: session.root.clone(),
                profile: session.profile.as_str().into(),
                model: session.model.clone(),
                created: chrono::Utc::now().to_rfc3339(),
                input_ends: true,
            },
        )?;
        Ok(Arc::new(SharedRecorder::new(TranscriptRecorder::new(writer))))
    }

    fn reopen(&self, id: &str) -> Result<(Arc<dyn TranscriptSink>, StoredSession), TranscriptError> {
        let writer = TranscriptStore::reopen(self, id).map_err(|e| -> TranscriptError {
            match e {
                // The builder stops a resume on it: the session's own error type.
                StoreError::Busy(busy) => Box::new(busy),
                other => Box::new(other),
            }
        })?;
        // Read with the lock held: nobody appends any more.
        let transcript = self.load(id)?;
        let stored = StoredSession {
            history: history(&transcript.records),
            agents: agents(&transcript.records),
            interrupted: interrupted(&transcript),
        };
        let recorder = TranscriptRecorder::new(writer).with_agents(&stored.agents);
        Ok((Arc::new(SharedRecorder::new(recorder)), stored))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::TranscriptBusy;
    use crate::store::{TranscriptHeader, TranscriptStore};

    fn header(session_id: &str) -> TranscriptHeader {
        TranscriptHeader {
            session_id: session_id.into(),
            root: "/w".into(),
            profile: "openai".into(),
            model: "m".into(),
            created: "t".into(),
            input_ends: true,
        }
    }

    #[test]
    fn recorded_history_reads_back_through_appends_snapshots_and_ends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = TranscriptStore::new(dir.path());
        let mut recorder = TranscriptRecorder::new(store.create(header("s")).expect("create"));
        let turns: Vec<Turn> = ["one", "two", "three"].into_iter().map(Turn::user).collect();
        recorder.append_turn(&turns[0]).expect("append");
        recorder.append_turn(&turns[1]).expect("append");
        // Each turn is on disk as soon as it is appended, before the input ends.
        let records = store.load("s").expect("load").records;
        assert_eq!(history(&records), turns[..2].to_vec());
        recorder.end_turn("completed").expect("end");
        recorder.append_turn(&turns[2]).expect("append");
        let transcript = store.load("s").expect("load");
        assert_eq!(history(&transcript.records), turns);
        assert!(interrupted(&transcript), "a turn after the last end is an input that never ended");
        let older = Transcript {
            header: TranscriptHeader { input_ends: false, ..transcript.header.clone() },
            ..transcript
        };
        assert!(!interrupted(&older), "a transcript that records no ends cannot say");
        recorder.end_turn("completed").expect("end");
        assert!(!interrupted(&store.load("s").expect("load")));
        // A rewritten history replaces everything before it.
        let rewritten: Vec<Turn> = ["summary", "four"].into_iter().map(Turn::user).collect();
        recorder.rewrite(&rewritten).expect("rewrite");
        let transcript = store.load("s").expect("load");
        assert_eq!(history(&transcript.records), rewritten);
        assert!(!interrupted(&transcript), "a compaction between inputs is not an input");
    }

    /// What the session builder and the pump do through the session's port: a new transcript
    /// with its header, a resumed one reopened with its subagents and its cut input found.
    #[test]
    fn the_store_is_the_sessions_transcripts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = TranscriptStore::new(dir.path());
        let transcripts: &dyn Transcripts = &store;
        let new = NewTranscript {
            session_id: "s".into(),
            root: "/w".into(),
            profile: crate::profiles::ProfileKind::Gemini,
            model: "m".into(),
        };
        let sink = transcripts.create(&new).expect("create");
        sink.appended(&Turn::user("one"));
        sink.input_ended("completed");
        sink.appended(&Turn::user("two"));
        let stored = store.load("s").expect("load");
        assert_eq!(
            (stored.header.profile.as_str(), stored.header.model.as_str(), stored.header.input_ends),
            ("gemini", "m", true)
        );
        let busy = transcripts.reopen("s").err().expect("held by its writer");
        assert_eq!(busy.downcast_ref::<TranscriptBusy>(), Some(&TranscriptBusy { id: "s".into() }));
        // Its writer's last record, written as it lets go, is in what the next one reads.
        sink.appended(&Turn::user("three"));
        drop(sink);
        let (again, stored) = transcripts.reopen("s").expect("reopen");
        let texts: Vec<String> = stored
            .history
            .iter()
            .map(|t| match t {
                Turn::User(t) => t.content.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, ["one", "two", "three"]);
        assert_eq!((stored.agents.len(), stored.interrupted), (0, true));
        again.rewritten(&[Turn::user("summary")], 1);
        again.input_ended("interrupted");
        drop(again);
        let turns = history(&store.load("s").expect("load").records);
        assert!(matches!(turns.as_slice(), [Turn::User(t)] if t.content == "summary"), "{turns:?}");
        let (_, stored) = transcripts.reopen("s").expect("reopen");
        assert!(!stored.interrupted);
        assert!(transcripts.reopen("missing").is_err());
    }

    #[test]
    fn subagents_are_stored_with_their_parent_and_read_back_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = TranscriptStore::new(dir.path());
        let mut recorder = TranscriptRecorder::new(store.create(header("p")).expect("create"));
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
        recorder.append_turn(&parent[0]).expect("append");
        recorder.record_agents(&[(agent.clone(), child[..1].to_vec())]).expect("record agents");
        recorder.record_agents(&[(agent.clone(), child.clone())]).expect("record agents");
        let records = store.load("p").expect("load").records;
        assert_eq!(history(&records), parent, "the parent's history holds none of the child's turns");
        assert_eq!(agents(&records), vec![(agent.clone(), child.clone())]);
        // Reopened for a resumed session (its first writer gone), only what is new is appended.
        drop(recorder);
        let mut again =
            TranscriptRecorder::new(store.reopen("p").expect("reopen")).with_agents(&agents(&records));
        again.record_agents(&[(agent.clone(), child[1..].to_vec())]).expect("a pruned child");
        assert_eq!(agents(&store.load("p").expect("load").records), vec![(agent, child[1..].to_vec())]);
    }
}
