//! `agentls.resolvePermission {requestId, decision, feedback?}` → `{requestId, decision}`.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;

use super::Handler;
use super::args::invalid_field;
use crate::lsp::permission::decision_of;
use crate::lsp::protocol::{PermissionResolved, ResolvePermission, ResolvePermissionParams};
use crate::lsp::state::ServerState;

impl Handler for ResolvePermission {
    async fn handle(state: &Arc<ServerState>, params: ResolvePermissionParams) -> Result<PermissionResolved> {
        let decision = decision_of(params.decision, params.feedback);
        if !state.permissions.resolve(&params.request_id, decision) {
            return Err(invalid_field(
                "requestId",
                "the id of a pending permission request (it may already be resolved)",
            ));
        }
        Ok(PermissionResolved { request_id: params.request_id, decision: params.decision })
    }
}
