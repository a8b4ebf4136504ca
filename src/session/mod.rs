//! The agent core (spec §2): a session runs the agentic loop in its own task; hosts drive it
//! through a [`SessionHandle`] and watch it through its [`Event`] stream.
//!
//! Invariants:
//! - Handle methods never block and never await the model: they queue work for the session task.
//! - Inputs are processed one at a time, in submission order.
//! - `cancel` interrupts the current turn (and drops inputs queued before it); the session then
//!   returns to IDLE and stays usable. `close` ends the session: SESSION_END, then CLOSED.
//! - Every event is delivered (unbounded channel), in order.

//!
//! Parts, each with one reason to change: `runner` (the loop), `context` (the context manager:
//! budget, compaction, pruning, overflow recovery), `prompt` (the system prompt and its cache),
//! `tool_round` (one round of tool calls), `mode` (code blocks and submit mode), `history`
//! (the history and its revision), `inbox` (steering, follow-ups), `control` (cancellation),
//! `transcript` (the host's record, passed in).

mod builder;
pub mod context;
mod control;
mod events;
mod history;
mod inbox;
mod instructions;
mod loop_detection;
mod mode;
mod prompt;
pub mod recovery;
mod runner;
mod subagents;
mod summary;
mod tool_round;
mod transcript;
mod turn;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::checkpoint::{Checkpoints, HistoryMark};
use crate::config::{Approval, CodeLayer, Config, PromptLayer};
use crate::exec::ExecutionEnvironment;
use crate::llm::{self, ReasoningEffort};
use crate::profiles::ProfileKind;
use crate::tools::Tool;
use crate::workspace::{EditorPort, Workspace};

pub use builder::{BuildError, BuiltSession, SessionBuilder, SessionParts};
pub use context::ContextStats;
pub use context::prune::{Pruned, prune};
pub use events::{
    AgentPath, CallOutcome, CallStatus, CallSummary, Content, Delta, EndReason, ErrorData, Event, EventData,
    EventKind, Notice, OutputDelta, ProcessingEnd, ProjectDocsReloaded, SessionEnd, SessionStart, TextEnd,
    TextStart, ToolCallEnd, ToolCallStart, TurnLimit, UndoStatus, UserInput, Warning,
};
pub use events::{Compaction, CompactionTrigger};
pub use loop_detection::{detect_loop, loop_warning};
pub use mode::CONTINUE_MESSAGE;
pub use subagents::AgentInfo;
pub use summary::summarize;
pub use transcript::{
    HistorySink, NewTranscript, StoredSession, TranscriptBusy, TranscriptError, TranscriptSink, Transcripts,
};
pub use turn::{
    AssistantTurn, InstructionsTurn, SUMMARY_SENTINEL, SummaryTurn, TextTurn, ToolResultsTurn, Turn,
    to_messages,
};

/// Limits and settings of a session (spec §2.2 plus what agentls adds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionConfig {
    /// The model every request names; `configure` may change it between calls.
    pub model: String,
    /// Maximum model turns per session (0 = unlimited).
    pub max_turns: u32,
    /// Maximum tool rounds per user input (0 = unlimited).
    pub max_tool_rounds_per_input: u32,
    /// Shell timeout when a call sets none; `None` = the profile's default (120 s for anthropic).
    pub default_command_timeout_ms: Option<u64>,
    pub max_command_timeout_ms: u64,
    /// `None` = the provider's default.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Per-tool character limits of what the model receives.
    pub tool_output_limits: BTreeMap<String, usize>,
    /// Per-tool line limits of what the model receives.
    pub tool_line_limits: BTreeMap<String, usize>,
    pub enable_loop_detection: bool,
    /// Number of consecutive tool calls checked for a repeating pattern.
    pub loop_detection_window: usize,
    pub max_subagent_depth: u32,
    /// Seed 002 mode: ask for one tool call per step; extra calls get "not executed" results.
    pub one_call_per_step: bool,
    /// How change sets are handled (read by editor ports that support review).
    pub approval: Approval,
    /// The user's own instructions, appended last to the system prompt.
    pub instructions: Option<String>,
    /// Overrides the profile's context window (tokens) for the 80% warning.
    pub context_window_tokens: Option<u64>,
    /// Characters per token of the context estimate (calibrated by the provider's reports).
    pub chars_per_token: u32,
    /// Compact the history before a model call whose estimate crosses `auto_compact_percent`.
    pub auto_compact: bool,
    /// Share of the context window (percent) that triggers automatic compaction.
    pub auto_compact_percent: u8,
    /// How many of the latest exchanges compaction keeps.
    pub keep_exchanges: usize,
    /// The model that writes summaries; `None` = the session's model.
    pub compaction_model: Option<String>,
    /// Seed 002 submit mode: the `submit(answer)` tool ends an input; a reply without tool
    /// calls gets the fixed continue message.
    pub submit_mode: bool,
    /// Maximum model requests per user input (0 = unlimited).
    pub max_steps: u32,
    /// Wall-clock limit per user input in seconds (0 = unlimited).
    pub time_limit_secs: u64,
    /// Prompt section overrides of the configuration (`[prompt]`).
    pub prompt: PromptLayer,
    /// The user's folder of prompt section files (`<config dir>/agentls/prompts`).
    pub user_prompts_dir: Option<PathBuf>,
    /// Code mode's settings (`[code]`).
    pub code: CodeLayer,
    /// Told once as `warning` events right after `session_start` (a top session's only): what
    /// the configuration could not apply, such as an untrusted project file's keys.
    pub startup_warnings: Vec<String>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            model: String::new(),
            max_turns: 0,
            max_tool_rounds_per_input: 0,
            default_command_timeout_ms: None,
            max_command_timeout_ms: crate::config::MAX_TIMEOUT_MS,
            reasoning_effort: None,
            tool_output_limits: BTreeMap::new(),
            tool_line_limits: BTreeMap::new(),
            enable_loop_detection: true,
            loop_detection_window: 10,
            max_subagent_depth: 1,
            one_call_per_step: false,
            approval: Approval::Review,
            instructions: None,
            context_window_tokens: None,
            chars_per_token: context::DEFAULT_CHARS_PER_TOKEN,
            auto_compact: true,
            auto_compact_percent: 85,
            keep_exchanges: 3,
            compaction_model: None,
            submit_mode: false,
            max_steps: 0,
            time_limit_secs: 0,
            prompt: PromptLayer::default(),
            user_prompts_dir: None,
            code: CodeLayer::default(),
            startup_warnings: Vec::new(),
        }
    }
}

impl SessionConfig {
    /// The session settings a loaded configuration asks for, with `model` as the model: the one
    /// mapping from configuration keys to session settings, used by every host (the language
    /// server and `agentls exec`). Every key of [`ConfigLayer`](crate::config::ConfigLayer) that
    /// concerns the agent loop is read here; what a layer leaves unset keeps the default.
    pub fn from_config(config: &Config, model: impl Into<String>) -> Self {
        let layer = &config.layer;
        let shell = config.shell();
        let context = config.context();
        let defaults = Self::default();
        Self {
            model: model.into(),
            max_turns: layer.max_turns.unwrap_or(defaults.max_turns),
            max_tool_rounds_per_input: layer
                .max_tool_rounds_per_input
                .unwrap_or(defaults.max_tool_rounds_per_input),
            default_command_timeout_ms: shell.default_timeout_ms,
            max_command_timeout_ms: shell.max_timeout_ms.unwrap_or(defaults.max_command_timeout_ms),
            reasoning_effort: layer.reasoning_effort,
            tool_output_limits: layer.tool_output_limits.clone().unwrap_or_default(),
            tool_line_limits: layer.tool_line_limits.clone().unwrap_or_default(),
            enable_loop_detection: layer.enable_loop_detection.unwrap_or(defaults.enable_loop_detection),
            loop_detection_window: layer.loop_detection_window.unwrap_or(defaults.loop_detection_window),
            max_subagent_depth: layer.max_subagent_depth.unwrap_or(defaults.max_subagent_depth),
            one_call_per_step: layer.one_call_per_step.unwrap_or(defaults.one_call_per_step),
            approval: layer.approval.unwrap_or(defaults.approval),
            instructions: layer.instructions.clone(),
            context_window_tokens: layer.context_window_tokens,
            chars_per_token: context.chars_per_token.unwrap_or(defaults.chars_per_token),
            auto_compact: context.auto_compact.unwrap_or(defaults.auto_compact),
            auto_compact_percent: context.auto_compact_percent.unwrap_or(defaults.auto_compact_percent),
            keep_exchanges: context.keep_exchanges.unwrap_or(defaults.keep_exchanges),
            compaction_model: context.compaction_model,
            submit_mode: layer.submit_mode.unwrap_or(defaults.submit_mode),
            max_steps: layer.max_steps.unwrap_or(defaults.max_steps),
            time_limit_secs: layer.time_limit_secs.unwrap_or(defaults.time_limit_secs),
            prompt: layer.prompt.clone().unwrap_or_default(),
            user_prompts_dir: config.user_prompts_dir(),
            code: layer.code.clone().unwrap_or_default(),
            startup_warnings: config.trust.as_ref().and_then(|t| t.report()).into_iter().collect(),
        }
    }
}

/// A change requested with [`SessionHandle::configure`]; it applies to the next model call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConfigChange {
    pub model: Option<String>,
    /// `Some(None)` resets to the provider default.
    pub reasoning_effort: Option<Option<ReasoningEffort>>,
    pub approval: Option<Approval>,
}

/// Lifecycle state (spec §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    Idle,
    Processing,
    /// The model ended its turn with a question for the user.
    AwaitingInput,
    Closed,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Processing => "processing",
            Self::AwaitingInput => "awaiting_input",
            Self::Closed => "closed",
        }
    }
}

/// Everything a session is built from.
pub struct SessionOptions {
    /// Session id; a new UUID when `None`.
    pub id: Option<String>,
    pub profile: ProfileKind,
    pub client: llm::Client,
    pub env: Arc<dyn ExecutionEnvironment>,
    pub workspace: Arc<Workspace>,
    pub editor: Arc<dyn EditorPort>,
    pub config: SessionConfig,
    pub cwd: PathBuf,
    /// The turns of a resumed session; empty for a new one.
    pub history: Vec<Turn>,
    /// A resumed session's subagents with their histories (restored idle); empty for a new one.
    pub agents: Vec<(AgentInfo, Vec<Turn>)>,
    /// The tools the model may call: usually the profile's set, plus custom tools (a later
    /// tool with the same name replaces an earlier one).
    pub tools: Vec<Arc<dyn Tool>>,
    /// Where the history is written as it changes; `None` keeps it in memory only (subagents,
    /// whose histories their parent's host stores).
    pub transcript: Option<Arc<dyn HistorySink>>,
    /// Tools that come and go (the session's MCP servers), asked before every model call.
    pub tool_source: Option<Arc<dyn crate::tools::ToolSource>>,
    /// Where each input's file changes are recorded (a host's session; `None` for subagents,
    /// whose changes land in their parent's input, and for sessions without a data directory).
    pub checkpoints: Option<Arc<Checkpoints>>,
}

/// Work queued for the session task.
enum Command {
    /// `context`: files the input is about (their nested instruction files apply).
    Submit {
        text: String,
        epoch: u64,
        context: Vec<PathBuf>,
        /// Images the user attached; they join the input's message.
        images: Vec<llm::Image>,
    },
    FollowUpWake,
    /// Compact the history (`agentls.compact`); runs between inputs, never mid round.
    Compact {
        epoch: u64,
    },
    /// Cut the history back to before the user input at `mark` (`agentls.undoTurn`'s rewind);
    /// runs between inputs. Answers how many turns were cut.
    Rewind {
        mark: HistoryMark,
        reply: tokio::sync::oneshot::Sender<Result<usize, RewindError>>,
    },
    Close,
}

/// Why the history could not be cut back.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RewindError {
    #[error(
        "the turn's input is no longer in the history (compaction summarised it); the files were changed, the conversation was not cut"
    )]
    NotFound,
    #[error("the session ended")]
    Closed,
}

/// State shared by the handle and the session task, each part behind its own small API. Locks
/// are held briefly and never across an await.
struct Shared {
    id: Arc<str>,
    state: Mutex<SessionState>,
    /// The conversation and its revision (written through to the host's transcript).
    history: history::History,
    /// What the session last computed of its context use (the context manager publishes it).
    context: Arc<Mutex<context::ContextStats>>,
    /// Steering and follow-ups queued by the user.
    inbox: inbox::Inbox,
    config: Mutex<SessionConfig>,
    /// The current input's cancellation and the cancel epoch.
    control: control::Control,
    docs_dirty: AtomicBool,
    commands: mpsc::UnboundedSender<Command>,
    /// For the events the handle itself emits (CONFIG_CHANGED). Weak, so the stream still ends
    /// when the session task finishes.
    events: mpsc::WeakUnboundedSender<Event>,
    /// Why the session task died, when it panicked.
    failure: Mutex<Option<String>>,
    /// The session's children.
    agents: Mutex<Children>,
    checkpoints: Option<Arc<Checkpoints>>,
}

/// A session's children, as transcripts read them.
enum Children {
    /// Running (from the task's start, below the depth limit).
    Running(Arc<subagents::Subagents>),
    /// As they were when the session closed; none before the task started or at the depth limit.
    Stored(Vec<(AgentInfo, Vec<Turn>)>),
}

impl Shared {
    /// The children, while they run.
    fn running_agents(&self) -> Option<Arc<subagents::Subagents>> {
        match &*lock(&self.agents) {
            Children::Running(agents) => Some(Arc::clone(agents)),
            Children::Stored(_) => None,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere must not take the session down with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Controls a running session. Cheap to clone; every method returns at once.
#[derive(Clone)]
pub struct SessionHandle {
    shared: Arc<Shared>,
}

impl SessionHandle {
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// Queues a user input; it is processed after the inputs queued before it.
    pub fn submit(&self, text: String) {
        self.submit_with_context(text, Vec::new());
    }

    /// Queues a user input about `context` (the file the user is in): the instruction files of
    /// its subdirectories apply from this input on.
    pub fn submit_with_context(&self, text: String, context: Vec<PathBuf>) {
        self.submit_with_images(text, context, Vec::new());
    }

    /// Queues a user input with images attached (the front door checked the model takes them).
    pub fn submit_with_images(&self, text: String, context: Vec<PathBuf>, images: Vec<llm::Image>) {
        let epoch = self.shared.control.epoch();
        let _ = self.shared.commands.send(Command::Submit { text, epoch, context, images });
    }

    /// Injects a message after the current tool round (or before the next call when idle).
    pub fn steer(&self, text: String) {
        self.shared.inbox.steer(text);
    }

    /// Queues a message processed once the current input is fully handled.
    pub fn follow_up(&self, text: String) {
        self.shared.inbox.follow_up(text);
        let _ = self.shared.commands.send(Command::FollowUpWake);
    }

    /// Interrupts the current turn: the model stream is closed and running commands are
    /// stopped. Inputs, steering and follow-ups queued before the cancel are dropped.
    /// Subagents are closed (spec Appendix B, step 6): their commands stop with their turns.
    pub fn cancel(&self) {
        self.shared.control.cancel();
        self.shared.inbox.clear();
        if let Some(agents) = self.shared.running_agents() {
            agents.close_all();
        }
    }

    /// Ends the session: the current turn is interrupted, then SESSION_END, then CLOSED.
    pub fn close(&self) {
        self.cancel();
        let _ = self.shared.commands.send(Command::Close);
    }

    /// Changes model, reasoning effort or approval; takes effect on the next model call.
    /// CONFIG_CHANGED reports the resulting values (not after SESSION_END).
    pub fn configure(&self, change: ConfigChange) {
        let mut config = lock(&self.shared.config);
        if let Some(model) = change.model {
            config.model = model;
        }
        if let Some(effort) = change.reasoning_effort {
            config.reasoning_effort = effort;
        }
        if let Some(approval) = change.approval {
            config.approval = approval;
        }
        if let Some(tx) = self.shared.events.upgrade() {
            events::Emitter::new(self.shared.id.clone(), tx).emit(EventData::ConfigChanged(
                events::ConfigChanged {
                    model: config.model.clone(),
                    reasoning_effort: config.reasoning_effort,
                    approval: config.approval,
                },
            ));
        }
    }

    /// An instruction file changed: the project-doc layer is rebuilt before the next call.
    pub fn reload_project_docs(&self) {
        self.shared.docs_dirty.store(true, Ordering::SeqCst);
    }

    pub fn state(&self) -> SessionState {
        *lock(&self.shared.state)
    }

    /// The current input's cancellation token: it fires when the turn is cancelled.
    pub fn cancellation(&self) -> CancellationToken {
        self.shared.control.current()
    }

    /// A snapshot of the conversation (for transcripts).
    pub fn history(&self) -> Vec<Turn> {
        self.shared.history.snapshot()
    }

    /// A snapshot of the conversation and its revision, which changes whenever turns were
    /// replaced or removed (compaction, pruning) rather than appended.
    pub fn history_with_revision(&self) -> (Vec<Turn>, u64) {
        self.shared.history.with_revision()
    }

    /// Queues a compaction of the history: it runs after the current input (never in the middle
    /// of a tool round) and reports a COMPACTION event, or a WARNING when there is nothing to
    /// summarise.
    pub fn compact(&self) {
        let epoch = self.shared.control.epoch();
        let _ = self.shared.commands.send(Command::Compact { epoch });
    }

    /// The context estimate, its calibration factor and the context window.
    pub fn context(&self) -> context::ContextStats {
        *lock(&self.shared.context)
    }

    /// A snapshot of the current configuration.
    pub fn config(&self) -> SessionConfig {
        lock(&self.shared.config).clone()
    }

    /// Each subagent this session spawned, with its history, in spawn order (for transcripts).
    pub fn agents(&self) -> Vec<(AgentInfo, Vec<Turn>)> {
        // Their histories are read after the lock is let go.
        let running = match &*lock(&self.shared.agents) {
            Children::Running(agents) => Arc::clone(agents),
            Children::Stored(agents) => return agents.clone(),
        };
        running.snapshot()
    }

    /// Where the session records each input's file changes (undo, redo).
    pub fn checkpoints(&self) -> Option<Arc<Checkpoints>> {
        self.shared.checkpoints.clone()
    }

    /// Cuts the history back to before the user input at `mark`, once the current input is
    /// done; the transcript stores the history that results. Answers how many turns were cut.
    pub async fn rewind(&self, mark: HistoryMark) -> Result<usize, RewindError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.shared.commands.send(Command::Rewind { mark, reply }).map_err(|_| RewindError::Closed)?;
        answer.await.map_err(|_| RewindError::Closed)?
    }

    /// The panic message when the session task died of a panic.
    pub fn failure(&self) -> Option<String> {
        lock(&self.shared.failure).clone()
    }
}

/// Starts a session task on the current tokio runtime. SESSION_START is the first event.
pub fn spawn(opts: SessionOptions) -> (SessionHandle, mpsc::UnboundedReceiver<Event>) {
    let lineage = subagents::Lineage { depth: 0, root: opts.cwd.clone() };
    spawn_in_tree(opts, lineage)
}

/// Starts a session at its place in a tree of sessions (a host's session, or a subagent).
fn spawn_in_tree(
    opts: SessionOptions,
    lineage: subagents::Lineage,
) -> (SessionHandle, mpsc::UnboundedReceiver<Event>) {
    let (event_tx, event_rx) = mpsc::unbounded_channel();
    let (command_tx, command_rx) = mpsc::unbounded_channel();
    let id: Arc<str> = opts.id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()).into();
    let weak_events = event_tx.downgrade();
    // Held until the cause of a panic is recorded, so the event channel closes only after it.
    let events_open = event_tx.clone();
    let emitter = events::Emitter::new(id.clone(), event_tx);
    let shared = Arc::new(Shared {
        id: id.clone(),
        state: Mutex::new(SessionState::Idle),
        history: history::History::new(opts.history.clone(), opts.transcript.clone()),
        context: Arc::new(Mutex::new(context::ContextStats {
            estimate_tokens: 0,
            calibration: 1.0,
            context_window: opts
                .config
                .context_window_tokens
                .unwrap_or_else(|| opts.profile.context_window(&opts.config.model)),
        })),
        inbox: inbox::Inbox::default(),
        config: Mutex::new(opts.config.clone()),
        control: control::Control::default(),
        docs_dirty: AtomicBool::new(false),
        commands: command_tx,
        events: weak_events,
        failure: Mutex::new(None),
        agents: Mutex::new(Children::Stored(Vec::new())),
        checkpoints: opts.checkpoints.clone(),
    });
    // A subagent started by a tool call works for its parent's turn: its changes land there.
    let task = runner::run(opts, lineage, shared.clone(), emitter, command_rx);
    let task = std::panic::AssertUnwindSafe(crate::checkpoint::inherit_turn(task));
    let watched = shared.clone();
    tokio::spawn(async move {
        // The event channel closes without SESSION_END; the host reports it with this cause.
        if let Err(panic) = futures::FutureExt::catch_unwind(task).await {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!(session = %watched.id, "the session task panicked: {message}");
            *lock(&watched.failure) = Some(message);
        }
        drop(events_open);
    });
    (SessionHandle { shared }, event_rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigLayer;

    #[test]
    fn every_loop_key_of_the_configuration_reaches_the_session_settings() {
        let layer = ConfigLayer::parse_toml(
            "max_turns = 7\nmax_tool_rounds_per_input = 3\napproval = \"deny\"\ninstructions = \"be brief\"\n\
             enable_loop_detection = false\nloop_detection_window = 6\none_call_per_step = true\n\
             context_window_tokens = 9000\nreasoning_effort = \"high\"\nmax_subagent_depth = 2\n\
             submit_mode = true\nmax_steps = 12\ntime_limit_secs = 30\n\
             [context]\nchars_per_token = 3\nauto_compact = false\nauto_compact_percent = 70\n\
             keep_exchanges = 2\ncompaction_model = \"small\"\n\
             [tool_output_limits]\ngrep = 100\n[tool_line_limits]\nshell = 20\n\
             [shell]\ndefault_timeout_ms = 2000\nmax_timeout_ms = 4000\n\
             [prompt.sections]\ntools = \"T\"\n[code]\ntool_calls = false\nreturn_type = \"int\"\n",
            std::path::Path::new("test.toml"),
        )
        .expect("valid");
        let config = Config::defaults().overlay(layer);
        assert_eq!(
            SessionConfig::from_config(&config, "m"),
            SessionConfig {
                model: "m".into(),
                max_turns: 7,
                max_tool_rounds_per_input: 3,
                default_command_timeout_ms: Some(2000),
                max_command_timeout_ms: 4000,
                reasoning_effort: Some(ReasoningEffort::High),
                tool_output_limits: BTreeMap::from([("grep".into(), 100)]),
                tool_line_limits: BTreeMap::from([("shell".into(), 20)]),
                enable_loop_detection: false,
                loop_detection_window: 6,
                max_subagent_depth: 2,
                one_call_per_step: true,
                approval: Approval::Deny,
                instructions: Some("be brief".into()),
                context_window_tokens: Some(9000),
                chars_per_token: 3,
                auto_compact: false,
                auto_compact_percent: 70,
                keep_exchanges: 2,
                compaction_model: Some("small".into()),
                submit_mode: true,
                max_steps: 12,
                time_limit_secs: 30,
                prompt: crate::config::PromptLayer {
                    sections: Some(BTreeMap::from([(crate::config::PromptSection::Tools, "T".into())])),
                    profiles: None,
                },
                user_prompts_dir: None,
                code: CodeLayer { tool_calls: Some(false), return_type: Some("int".into()), premise: None },
                startup_warnings: Vec::new(),
            }
        );
        let defaults = SessionConfig::from_config(&Config::defaults(), "m");
        assert_eq!(defaults, SessionConfig { model: "m".into(), ..SessionConfig::default() });
    }
}
