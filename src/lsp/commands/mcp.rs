//! `agentls.mcpServers {rootUri?}` → `{rootUri, servers}` and `agentls.mcpRestart {name,
//! rootUri?}` → `{name, state}`: the MCP servers a session in the folder uses, as the host's
//! one hub runs them (the same servers the sessions call), and restarting one of them.
//!
//! Invariant: neither command waits for a server: listing starts the enabled ones that do not
//! run and reports them as they are now (`starting`); a restart is asked and answered at once.

use std::path::PathBuf;
use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;

use super::Handler;
use super::args::{invalid_field, request_failed, root_of};
use crate::lsp::convert::uri_of;
use crate::lsp::protocol::{
    McpRestart, McpRestartParams, McpRestarted, McpServerInfo, McpServerList, McpServers, McpServersParams,
    McpToolInfo,
};
use crate::lsp::state::ServerState;
use crate::mcp::{EntryKind, McpTools, tool_name};
use crate::session::SessionBuilder;

/// The folder (default: the first workspace folder) and the servers its sessions use.
fn servers(state: &ServerState, root_uri: Option<&str>) -> Result<(PathBuf, Arc<McpTools>)> {
    let root = match root_of(root_uri)? {
        Some(root) => root,
        None => state
            .roots()
            .into_iter()
            .next()
            .ok_or_else(|| request_failed("no workspace folder is open; name one with rootUri"))?,
    };
    let builder = SessionBuilder::load(&state.options.env, root.clone(), state.client_layer())
        .map_err(|e| request_failed(e.to_string()))?;
    let servers = state.mcp.session(builder.config(), &state.options.env, &root);
    Ok((root, servers))
}

impl Handler for McpServers {
    async fn handle(state: &Arc<ServerState>, params: McpServersParams) -> Result<McpServerList> {
        let (root, servers) = servers(state, params.root_uri.as_deref())?;
        let servers = servers
            .entries()
            .iter()
            .map(|entry| McpServerInfo {
                name: entry.name.clone(),
                state: entry.state(),
                target: entry.describe.clone(),
                origin: entry.origin.as_ref().map(|file| file.display().to_string()),
                tools: entry
                    .tools()
                    .iter()
                    .map(|tool| McpToolInfo {
                        name: tool.name.to_string(),
                        tool_name: tool_name(&entry.name, &tool.name),
                        description: tool.description.as_deref().map(str::to_string),
                        read_only_hint: tool.annotations.as_ref().and_then(|a| a.read_only_hint)
                            == Some(true),
                    })
                    .collect(),
                last_error: entry.last_error(),
            })
            .collect();
        let root_uri = uri_of(&root).map(|u| u.as_str().to_string()).unwrap_or_default();
        Ok(McpServerList { root_uri, servers })
    }
}

impl Handler for McpRestart {
    async fn handle(state: &Arc<ServerState>, params: McpRestartParams) -> Result<McpRestarted> {
        let (_, servers) = servers(state, params.root_uri.as_deref())?;
        let Some(entry) = servers.entries().iter().find(|e| e.name == params.name) else {
            let names: Vec<&str> = servers.entries().iter().map(|e| e.name.as_str()).collect();
            let expected = format!("the name of a configured MCP server ({})", names.join(", "));
            return Err(invalid_field("name", &expected));
        };
        match &entry.kind {
            EntryKind::Server(server) => server.restart(),
            _ => {
                return Err(request_failed(format!(
                    "the MCP server `{}` cannot be restarted: it is {}",
                    entry.name,
                    entry.state().as_str()
                )));
            }
        }
        Ok(McpRestarted { name: entry.name.clone(), state: entry.state() })
    }
}
