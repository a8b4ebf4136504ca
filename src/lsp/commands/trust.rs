//! `agentls.trustFolder {rootUri}` → `{rootUri, trusted}`: the user (through a plugin that
//! follows its editor's trust, or its own question) trusts a workspace folder. Sessions started
//! there afterwards read its whole project file.

use std::sync::Arc;

use serde_json::Value;
use tower_lsp_server::jsonrpc::Result;

use super::args::{CommandArgs, invalid_field, request_failed};
use crate::lsp::convert::{parse_uri, path_of};
use crate::lsp::protocol::{TrustFolderParams, TrustFolderResult};
use crate::lsp::state::ServerState;
use crate::lsp::trust::grant;

pub fn trust_folder(state: &Arc<ServerState>, args: &CommandArgs) -> Result<Value> {
    let params: TrustFolderParams = args.decode()?;
    let root = parse_uri(&params.root_uri)
        .as_ref()
        .and_then(path_of)
        .ok_or_else(|| invalid_field("rootUri", "a file:// URI of a folder"))?;
    grant(state, &root).map_err(|e| request_failed(e.to_string()))?;
    let result = TrustFolderResult { root_uri: params.root_uri, trusted: true };
    serde_json::to_value(result).map_err(|e| request_failed(e.to_string()))
}
