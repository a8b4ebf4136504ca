//! `agentls.trustFolder {rootUri}` → `{rootUri, trusted}`: the user (through a plugin that
//! follows its editor's trust, or its own question) trusts a workspace folder. Sessions started
//! there afterwards read its whole project file.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;

use super::Handler;
use super::args::{invalid_field, request_failed};
use crate::lsp::convert::{parse_uri, path_of};
use crate::lsp::protocol::{TrustFolder, TrustFolderParams, TrustFolderResult};
use crate::lsp::state::ServerState;
use crate::lsp::trust::grant;

impl Handler for TrustFolder {
    async fn handle(state: &Arc<ServerState>, params: TrustFolderParams) -> Result<TrustFolderResult> {
        let root = parse_uri(&params.root_uri)
            .as_ref()
            .and_then(path_of)
            .ok_or_else(|| invalid_field("rootUri", "a file:// URI of a folder"))?;
        grant(state, &root).map_err(|e| request_failed(e.to_string()))?;
        Ok(TrustFolderResult { root_uri: params.root_uri, trusted: true })
    }
}
