//! The host's record of its sessions (their transcripts), as the session and its builder see
//! it: small traits the host implements and passes in, so the session never depends on where
//! its transcripts go (`store` implements them; `agentls exec` passes none).
//!
//! Invariant: the session writes its own history through [`HistorySink`] as it changes; the
//! host adds the end of every input and its subagents' histories ([`TranscriptSink`]). The
//! builder opens one transcript per session through [`Transcripts`]: a new one, or a stored one
//! reopened to go on with it.

use std::path::PathBuf;
use std::sync::Arc;

use super::subagents::AgentInfo;
use super::turn::Turn;
use crate::profiles::ProfileKind;

/// The host's record of a session's history, told of every change as it happens (the session
/// does not know where it goes: the host passes it in).
pub trait HistorySink: Send + Sync {
    /// A turn was appended.
    fn appended(&self, turn: &Turn);
    /// The history was replaced (compaction, pruning); `revision` is its new revision.
    fn rewritten(&self, history: &[Turn], revision: u64);
}

/// A session's transcript as its host writes it: the history (written by the session), the end
/// of every input and the subagents' histories (written by the host).
pub trait TranscriptSink: HistorySink {
    /// An input ended; `reason` is how (`processing_end`'s reason, or `interrupted` for a turn a
    /// dead server never finished).
    fn input_ended(&self, reason: &str);
    /// The session's subagents with their histories as they are now (in spawn order).
    fn agents_changed(&self, agents: &[(AgentInfo, Vec<Turn>)]);
}

/// A stored session's transcript is held by another process (one writes a session at a time):
/// the session cannot be resumed here. A resume stops on it; any other error only leaves the
/// session unstored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "session `{id}` is open in another agentls process (an editor, `agentls acp` or `agentls exec`); continue it there, or close it there first"
)]
pub struct TranscriptBusy {
    pub id: String,
}

/// Why a transcript could not be opened or read.
pub type TranscriptError = Box<dyn std::error::Error + Send + Sync>;

/// What a new session's transcript starts with.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTranscript {
    pub session_id: String,
    pub root: PathBuf,
    pub profile: ProfileKind,
    pub model: String,
}

/// What a stored transcript holds, read once the transcript is held.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredSession {
    /// The session's own history.
    pub history: Vec<Turn>,
    /// The subagents with their histories, in spawn order.
    pub agents: Vec<(AgentInfo, Vec<Turn>)>,
    /// The last input never ended (the server died in it).
    pub interrupted: bool,
}

/// Where a host keeps its sessions' transcripts.
pub trait Transcripts: Send + Sync {
    /// Starts the transcript of a new session.
    fn create(&self, session: &NewTranscript) -> Result<Arc<dyn TranscriptSink>, TranscriptError>;
    /// Reopens the stored transcript of session `id` to go on writing it, and reads what it
    /// holds once it is held (so the last writer's final records are in it). Fails with
    /// [`TranscriptBusy`] while another process holds it.
    fn reopen(&self, id: &str) -> Result<(Arc<dyn TranscriptSink>, StoredSession), TranscriptError>;
}
