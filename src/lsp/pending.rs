//! Questions sent to the client that wait for an answer command (`resolveReview`,
//! `resolvePermission`), keyed by id and owned by a session.
//!
//! Invariant: every registered question gets exactly one answer — the user's, the one
//! `cancel_session` supplies, or none when its deadline passes — and is gone from the map once
//! answered.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

struct Entry<T, M> {
    session_id: String,
    meta: M,
    answer: oneshot::Sender<T>,
}

/// Open questions with answers of type `T` and per-question data `M`.
pub struct PendingAnswers<T, M = ()> {
    entries: Mutex<HashMap<String, Entry<T, M>>>,
}

impl<T, M> Default for PendingAnswers<T, M> {
    fn default() -> Self {
        Self { entries: Mutex::new(HashMap::new()) }
    }
}

impl<T, M: Clone> PendingAnswers<T, M> {
    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry<T, M>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers question `id` of `session_id`; the receiver yields its answer.
    pub fn register(&self, id: &str, session_id: &str, meta: M) -> oneshot::Receiver<T> {
        let (answer, rx) = oneshot::channel();
        self.entries().insert(id.to_string(), Entry { session_id: session_id.to_string(), meta, answer });
        rx
    }

    /// Drops question `id` (its waiter stopped waiting).
    pub fn forget(&self, id: &str) {
        self.entries().remove(id);
    }

    /// Waits for the answer to question `id` (registered as `answer`) at most `deadline`; `None`
    /// when it was abandoned or the deadline passed. The question is gone afterwards either way.
    pub async fn wait(&self, id: &str, answer: oneshot::Receiver<T>, deadline: Duration) -> Option<T> {
        let answer = tokio::time::timeout(deadline, answer).await;
        self.forget(id);
        answer.ok()?.ok()
    }

    /// The data registered with question `id` while it is pending.
    pub fn meta(&self, id: &str) -> Option<M> {
        self.entries().get(id).map(|e| e.meta.clone())
    }

    /// Answers question `id`; `false` when it is not pending.
    pub fn resolve(&self, id: &str, answer: T) -> bool {
        match self.entries().remove(id) {
            Some(entry) => {
                let _ = entry.answer.send(answer);
                true
            }
            None => false,
        }
    }

    /// Answers every question of `session_id` with `answer()` (its turn was cancelled).
    pub fn cancel_session(&self, session_id: &str, answer: impl Fn() -> T) {
        for (_, entry) in self.entries().extract_if(|_, entry| entry.session_id == session_id) {
            let _ = entry.answer.send(answer());
        }
    }
}
