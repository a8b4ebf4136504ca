//! The session's modes and config options: a mode (ask before edits / accept edits / read-only
//! planning) is the session's approval, honoured by the editor port and the policy; the model
//! is the session's model; the reasoning effort the session's (`default` leaves it to the
//! provider). All are `SessionConfigOption`s, and the mode also the legacy `SessionModeState`
//! (`session/set_mode`).
//!
//! Invariants: one mapping between modes and approvals ([`approval_of`], [`mode_of`]); the
//! session's configuration is the truth, read back after every change; the effort option is
//! offered only while the session's model takes one (`llm::capabilities`).

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionMode, SessionModeState, UnstructuredCommandInput,
};

use crate::config::{Approval, ProviderKind, ReasoningEffort};

pub const ASK: &str = "ask";
pub const ACCEPT_EDITS: &str = "accept-edits";
pub const READ_ONLY: &str = "read-only";

pub const MODE_OPTION: &str = "mode";
pub const MODEL_OPTION: &str = "model";
pub const EFFORT_OPTION: &str = "effort";
/// The effort option's value that leaves the effort to the provider.
pub const DEFAULT_EFFORT: &str = "default";

const MODES: [(&str, &str, &str); 3] = [
    (ASK, "Ask before edits", "Every edit is shown as a diff and written only after you allow it"),
    (
        ACCEPT_EDITS,
        "Accept edits",
        "Edits are written without asking; commands still follow the permission policy",
    ),
    (
        READ_ONLY,
        "Read-only planning",
        "Nothing is written and no command is asked about: the agent reads, searches and plans",
    ),
];

pub fn mode_of(approval: Approval) -> &'static str {
    match approval {
        Approval::Review => ASK,
        Approval::Auto => ACCEPT_EDITS,
        Approval::Deny => READ_ONLY,
    }
}

pub fn approval_of(mode: &str) -> Option<Approval> {
    match mode {
        ASK => Some(Approval::Review),
        ACCEPT_EDITS => Some(Approval::Auto),
        READ_ONLY => Some(Approval::Deny),
        _ => None,
    }
}

pub fn mode_state(approval: Approval) -> SessionModeState {
    let modes = MODES
        .iter()
        .map(|(id, name, description)| SessionMode::new(*id, *name).description(description.to_string()))
        .collect();
    SessionModeState::new(mode_of(approval), modes)
}

/// The effort a value of the effort option names: `Some(None)` for `default`.
pub fn effort_of(value: &str) -> Option<Option<ReasoningEffort>> {
    match value {
        DEFAULT_EFFORT => Some(None),
        other => other.parse().ok().map(Some),
    }
}

/// What the options show: the session's configuration and who serves its model.
#[derive(Debug, Clone, PartialEq)]
pub struct Current {
    pub approval: Approval,
    pub model: String,
    pub effort: Option<ReasoningEffort>,
    pub provider: ProviderKind,
}

/// The mode, the model and (when the model takes one) the reasoning effort as config options,
/// with their current values.
pub fn config_options(current: &Current) -> Vec<SessionConfigOption> {
    let Current { approval, model, effort, provider } = current;
    let approval = *approval;
    let modes: Vec<SessionConfigSelectOption> = MODES
        .iter()
        .map(|(id, name, description)| {
            SessionConfigSelectOption::new(*id, *name).description(description.to_string())
        })
        .collect();
    let models = vec![SessionConfigSelectOption::new(model.to_string(), model.to_string())];
    let mut options = vec![
        SessionConfigOption::select(MODE_OPTION, "Mode", mode_of(approval), modes)
            .category(SessionConfigOptionCategory::Mode),
        SessionConfigOption::select(MODEL_OPTION, "Model", model.to_string(), models)
            .category(SessionConfigOptionCategory::Model)
            .description("Another model: type /model NAME".to_string()),
    ];
    if crate::llm::capabilities(*provider, model).reasoning_effort {
        let efforts = std::iter::once(DEFAULT_EFFORT)
            .chain(ReasoningEffort::NAMES.iter().copied())
            .map(|name| SessionConfigSelectOption::new(name, name))
            .collect::<Vec<_>>();
        let value = effort.map_or(DEFAULT_EFFORT, ReasoningEffort::as_str);
        options.push(
            SessionConfigOption::select(EFFORT_OPTION, "Reasoning effort", value, efforts)
                .category(SessionConfigOptionCategory::ThoughtLevel)
                .description(
                    "How much the model thinks before it answers; default: the provider's".to_string(),
                ),
        );
    }
    options
}

/// The built-in commands a user can type (`/compact`, `/model NAME`).
pub fn commands() -> Vec<AvailableCommand> {
    vec![
        AvailableCommand::new("compact", "Summarise the conversation so far to free context"),
        AvailableCommand::new("model", "Show or switch the model: /model NAME")
            .input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("model name"))),
    ]
}
