//! What the user queued for a running session: steering (injected after the current tool round,
//! or before the next call) and follow-ups (processed once the current input is fully handled).
//!
//! Invariants: each queue is taken in the order it was filled; a cancel empties both at once.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::lock;

#[derive(Debug, Default)]
struct Queues {
    steering: VecDeque<String>,
    follow_ups: VecDeque<String>,
}

/// The steering and follow-up queues of one session.
#[derive(Debug, Default)]
pub(super) struct Inbox {
    queues: Mutex<Queues>,
}

impl Inbox {
    pub(super) fn steer(&self, text: String) {
        lock(&self.queues).steering.push_back(text);
    }

    pub(super) fn follow_up(&self, text: String) {
        lock(&self.queues).follow_ups.push_back(text);
    }

    /// The oldest steering message not yet injected.
    pub(super) fn next_steering(&self) -> Option<String> {
        lock(&self.queues).steering.pop_front()
    }

    /// The oldest follow-up not yet processed.
    pub(super) fn next_follow_up(&self) -> Option<String> {
        lock(&self.queues).follow_ups.pop_front()
    }

    /// Drops everything queued (a cancel).
    pub(super) fn clear(&self) {
        *lock(&self.queues) = Queues::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_are_taken_in_order_and_a_clear_empties_both() {
        let inbox = Inbox::default();
        inbox.steer("s1".into());
        inbox.follow_up("f1".into());
        inbox.steer("s2".into());
        assert_eq!(inbox.next_steering().as_deref(), Some("s1"));
        inbox.follow_up("f2".into());
        inbox.clear();
        assert_eq!((inbox.next_steering(), inbox.next_follow_up()), (None, None));
        inbox.follow_up("f3".into());
        assert_eq!(inbox.next_follow_up().as_deref(), Some("f3"), "usable after a clear");
    }
}
