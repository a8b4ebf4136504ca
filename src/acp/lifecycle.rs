//! `initialize`: the protocol version and what this agent implements, nothing more.
//!
//! Invariant: every capability advertised is implemented and tested: sessions can be loaded
//! (`loadSession`), listed, resumed and closed; prompts take embedded context (resources),
//! images when the model the user's configuration resolves to takes them (a session whose
//! model does not — a project's choice, `/model` — refuses an image block saying so), never
//! audio; MCP servers over stdio (always) and Streamable HTTP, not SSE.

use std::sync::Arc;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, Error, Implementation, InitializeRequest, InitializeResponse, McpCapabilities,
    PromptCapabilities, SessionCapabilities, SessionCloseCapabilities, SessionListCapabilities,
    SessionResumeCapabilities,
};

use super::Agent;
use crate::config::{Config, LoadOptions, resolve_provider};

/// Whether the model of the user's configuration (no project yet: `initialize` names no
/// folder) takes images.
fn takes_images(agent: &Agent) -> bool {
    let config = match Config::load(&agent.env, LoadOptions::default()) {
        Ok(config) => config,
        Err(e) => {
            tracing::warn!("the configuration does not load: {e}");
            return false;
        }
    };
    resolve_provider(&config, &agent.env, || false)
        .is_ok_and(|settings| crate::llm::capabilities(settings.kind, &settings.model).images)
}

pub fn initialize(agent: &Arc<Agent>, request: InitializeRequest) -> Result<InitializeResponse, Error> {
    if agent.client.set(request.client_capabilities.clone()).is_err() {
        tracing::info!("a second `initialize`: the first one's client capabilities stay");
    }
    let version = request.protocol_version.min(ProtocolVersion::LATEST);
    tracing::info!(
        client = ?request.client_info.as_ref().map(|i| format!("{} {}", i.name, i.version)),
        fs_read = request.client_capabilities.fs.read_text_file,
        fs_write = request.client_capabilities.fs.write_text_file,
        "ACP client initialized"
    );
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(takes_images(agent)))
        .mcp_capabilities(McpCapabilities::new().http(true))
        .session_capabilities(
            SessionCapabilities::new()
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new())
                .close(SessionCloseCapabilities::new()),
        );
    Ok(InitializeResponse::new(version)
        .agent_capabilities(capabilities)
        .agent_info(Implementation::new("agentls", env!("CARGO_PKG_VERSION")).title("agentls".to_string())))
}
