//! Cancellation of a session's inputs: the token of the input that runs and the cancel epoch,
//! under one lock.
//!
//! Invariants: an input queued before a cancel never starts (its epoch is older than the
//! current one); a cancel fires the token of the input that runs, and each input gets a fresh
//! token, so the session stays usable after it.

use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use super::lock;

#[derive(Debug, Default)]
struct State {
    /// The current input's token; replaced for each input.
    token: CancellationToken,
    /// Bumped by every cancel.
    epoch: u64,
}

#[derive(Debug, Default)]
pub(super) struct Control {
    state: Mutex<State>,
}

impl Control {
    /// The epoch an input queued now carries.
    pub(super) fn epoch(&self) -> u64 {
        lock(&self.state).epoch
    }

    /// Cancels the input that runs and every input queued before now.
    pub(super) fn cancel(&self) {
        let mut state = lock(&self.state);
        state.epoch += 1;
        state.token.cancel();
    }

    /// A fresh token for an input queued at `epoch`, unless a cancel came after it was queued.
    pub(super) fn begin(&self, epoch: u64) -> Option<CancellationToken> {
        let mut state = lock(&self.state);
        if state.epoch != epoch {
            return None;
        }
        state.token = CancellationToken::new();
        Some(state.token.clone())
    }

    /// The current input's token.
    pub(super) fn current(&self) -> CancellationToken {
        lock(&self.state).token.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_stops_the_input_that_runs_and_drops_those_queued_before_it() {
        let control = Control::default();
        let queued = control.epoch();
        let running = control.begin(queued).expect("no cancel since it was queued");
        let queued_before = control.epoch();
        control.cancel();
        assert!(running.is_cancelled());
        assert!(control.begin(queued_before).is_none(), "queued before the cancel");
        let next = control.begin(control.epoch()).expect("queued after the cancel");
        assert!(!next.is_cancelled(), "a fresh token for the next input");
        assert!(!control.current().is_cancelled());
    }
}
