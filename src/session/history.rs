//! A session's conversation history and its revision, under one lock, and the host's record of
//! both.
//!
//! Invariants:
//! - The turns and the revision are read and changed together: nobody sees a rewritten history
//!   with the old revision, or the reverse.
//! - The revision changes exactly when the history is rewritten (compaction, pruning) rather
//!   than appended to, so a transcript knows to store it whole.
//! - Every change reaches the host's sink as it happens: a turn is written before it joins the
//!   history (a server that dies mid-turn loses at most the message being streamed), a rewrite
//!   whole, with its new revision.
//! - Only the session task changes the history; everyone else reads snapshots.

use std::sync::{Arc, Mutex};

use super::lock;
use super::transcript::HistorySink;
use super::turn::Turn;

#[derive(Debug, Default)]
struct Revisioned {
    turns: Vec<Turn>,
    revision: u64,
}

/// The history of one session.
pub(super) struct History {
    state: Mutex<Revisioned>,
    /// Where the history goes as it changes (the host's transcript); `None` keeps it in memory.
    sink: Option<Arc<dyn HistorySink>>,
}

impl History {
    pub(super) fn new(turns: Vec<Turn>, sink: Option<Arc<dyn HistorySink>>) -> Self {
        Self { state: Mutex::new(Revisioned { turns, revision: 0 }), sink }
    }

    /// Appends a turn, written to the sink first.
    pub(super) fn push(&self, turn: Turn) {
        if let Some(sink) = &self.sink {
            sink.appended(&turn);
        }
        lock(&self.state).turns.push(turn);
    }

    /// Rewrites the history with `change` (compaction, pruning). When it changed something
    /// (`Some`), the history gets a new revision and the sink the whole of it.
    pub(super) fn rewrite<R>(&self, change: impl FnOnce(&mut Vec<Turn>) -> Option<R>) -> Option<R> {
        let mut state = lock(&self.state);
        let changed = change(&mut state.turns)?;
        state.revision += 1;
        if let Some(sink) = &self.sink {
            sink.rewritten(&state.turns, state.revision);
        }
        Some(changed)
    }

    /// Reads the turns in place.
    pub(super) fn read<R>(&self, read: impl FnOnce(&[Turn]) -> R) -> R {
        read(&lock(&self.state).turns)
    }

    /// A copy of the turns.
    pub(super) fn snapshot(&self) -> Vec<Turn> {
        self.read(<[Turn]>::to_vec)
    }

    /// A copy of the turns and their revision, taken together.
    pub(super) fn with_revision(&self) -> (Vec<Turn>, u64) {
        let state = lock(&self.state);
        (state.turns.clone(), state.revision)
    }

    /// Model turns of the session, those a summary replaced included.
    pub(super) fn model_turns(&self) -> usize {
        self.read(|turns| {
            turns
                .iter()
                .map(|t| match t {
                    Turn::Assistant(_) => 1,
                    Turn::Summary(s) => s.model_turns,
                    _ => 0,
                })
                .sum()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a sink was told, in order.
    #[derive(Default)]
    struct Told(Mutex<Vec<String>>);

    fn text(turn: &Turn) -> &str {
        match turn {
            Turn::User(t) => &t.content,
            _ => "",
        }
    }

    impl HistorySink for Told {
        fn appended(&self, turn: &Turn) {
            lock(&self.0).push(format!("appended {}", text(turn)));
        }

        fn rewritten(&self, history: &[Turn], revision: u64) {
            let texts: Vec<&str> = history.iter().map(text).collect();
            lock(&self.0).push(format!("rewritten to {texts:?}, revision {revision}"));
        }
    }

    #[test]
    fn appends_keep_the_revision_and_rewrites_bump_it_and_are_written_whole() {
        let told = Arc::new(Told::default());
        let history = History::new(vec![Turn::user("resumed")], Some(told.clone()));
        history.push(Turn::user("a"));
        history.push(Turn::user("b"));
        assert_eq!(history.with_revision().1, 0, "appending is not rewriting");
        assert_eq!(history.rewrite(|turns| Some(turns.drain(..2).count())), Some(2));
        assert_eq!(history.rewrite(|_| None::<()>), None, "nothing changed: no new revision");
        let (turns, revision) = history.with_revision();
        assert_eq!((turns.iter().map(text).collect::<Vec<_>>(), revision), (vec!["b"], 1));
        assert_eq!(
            *lock(&told.0),
            ["appended a", "appended b", r#"rewritten to ["b"], revision 1"#],
            "the resumed turn was stored already; every change is told as it happens"
        );
    }

    #[test]
    fn model_turns_count_those_a_summary_replaced() {
        let history = History::new(Vec::new(), None);
        history.push(Turn::Summary(crate::session::turn::SummaryTurn {
            summary: "earlier".into(),
            turns_summarized: 6,
            model_turns: 3,
            timestamp: chrono::Utc::now(),
        }));
        history.push(Turn::assistant(&Default::default()));
        history.push(Turn::user("next"));
        assert_eq!(history.model_turns(), 4);
    }
}
