//! `agentls.resolvePermission {requestId, decision, feedback?}` → `{requestId, decision}`.

use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;

use super::args::{CommandArgs, invalid_field};
use crate::lsp::permission::decision_from;
use crate::lsp::state::ServerState;

const DECISIONS: &[&str] = &["allow_once", "allow_always", "deny"];

pub fn resolve(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let request_id = args.required_str("requestId")?;
    let name = args.required_choice("decision", DECISIONS)?;
    let feedback = args.optional_str("feedback")?;
    let decision =
        decision_from(&name, feedback).ok_or_else(|| invalid_field("decision", "a known decision"))?;
    if !state.permissions.resolve(&request_id, decision) {
        return Err(invalid_field(
            "requestId",
            "the id of a pending permission request (it may already be resolved)",
        ));
    }
    Ok(json!({"requestId": request_id, "decision": name}))
}
