//! `workspace/executeCommand`: the `agentls.*` commands, one object argument each, one object
//! result each.
//!
//! Invariant: a command either returns at once (work is queued on a session task) or answers
//! with a JSON-RPC error that names the bad field; an unknown command names the known ones.

pub mod args;
mod permission;
mod review;
mod session;
mod trust;

use std::sync::Arc;

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};

use super::state::ServerState;
use args::CommandArgs;

/// Every command the server executes, as announced in `executeCommandProvider`.
pub const NAMES: &[&str] = &[
    "agentls.newSession",
    "agentls.prompt",
    "agentls.steer",
    "agentls.followUp",
    "agentls.cancel",
    "agentls.closeSession",
    "agentls.listSessions",
    "agentls.resumeSession",
    "agentls.history",
    "agentls.configure",
    "agentls.compact",
    "agentls.resolveReview",
    "agentls.resolvePermission",
    "agentls.trustFolder",
];

/// Runs one command.
pub async fn dispatch(state: &Arc<ServerState>, command: String, arguments: Vec<Value>) -> Result<Value> {
    let args = CommandArgs::from_arguments(arguments)?;
    match command.as_str() {
        "agentls.newSession" => session::new_session(state, &args).await,
        "agentls.prompt" => session::prompt(state, &args).await,
        "agentls.steer" => session::steer(state, &args),
        "agentls.followUp" => session::follow_up(state, &args),
        "agentls.cancel" => session::cancel(state, &args),
        "agentls.closeSession" => session::close(state, &args),
        "agentls.listSessions" => session::list(state),
        "agentls.resumeSession" => session::resume(state, &args).await,
        "agentls.history" => session::history(state, &args),
        "agentls.configure" => session::configure(state, &args),
        "agentls.compact" => session::compact(state, &args),
        "agentls.resolveReview" => review::resolve(state, &args),
        "agentls.resolvePermission" => permission::resolve(state, &args),
        "agentls.trustFolder" => trust::trust_folder(state, &args),
        other => Err(Error {
            code: ErrorCode::InvalidParams,
            message: format!("unknown command `{other}`; known commands: {}", NAMES.join(", ")).into(),
            data: Some(Value::String("command".into())),
        }),
    }
}
