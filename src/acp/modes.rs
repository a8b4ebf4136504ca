//! The session's modes and config options: a mode (ask before edits / accept edits / read-only
//! planning) is the session's approval, honoured by the editor port and the policy; the model
//! is the session's model. Both are `SessionConfigOption`s, and the mode also the legacy
//! `SessionModeState` (`session/set_mode`).
//!
//! Invariant: one mapping between modes and approvals ([`approval_of`], [`mode_of`]); the
//! session's configuration is the truth, read back after every change.

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionMode, SessionModeState, UnstructuredCommandInput,
};

use crate::config::Approval;

pub const ASK: &str = "ask";
pub const ACCEPT_EDITS: &str = "accept-edits";
pub const READ_ONLY: &str = "read-only";

pub const MODE_OPTION: &str = "mode";
pub const MODEL_OPTION: &str = "model";

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

/// The mode and the model as config options, with their current values.
pub fn config_options(approval: Approval, model: &str) -> Vec<SessionConfigOption> {
    let modes: Vec<SessionConfigSelectOption> = MODES
        .iter()
        .map(|(id, name, description)| {
            SessionConfigSelectOption::new(*id, *name).description(description.to_string())
        })
        .collect();
    let models = vec![SessionConfigSelectOption::new(model.to_string(), model.to_string())];
    vec![
        SessionConfigOption::select(MODE_OPTION, "Mode", mode_of(approval), modes)
            .category(SessionConfigOptionCategory::Mode),
        SessionConfigOption::select(MODEL_OPTION, "Model", model.to_string(), models)
            .category(SessionConfigOptionCategory::Model)
            .description("Another model: type /model NAME".to_string()),
    ]
}

/// The built-in commands a user can type (`/compact`, `/model NAME`).
pub fn commands() -> Vec<AvailableCommand> {
    vec![
        AvailableCommand::new("compact", "Summarise the conversation so far to free context"),
        AvailableCommand::new("model", "Show or switch the model: /model NAME")
            .input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("model name"))),
    ]
}
