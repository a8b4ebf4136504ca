//! `agentls mcp list` and `agentls mcp tools NAME`: the configured MCP servers, started as a
//! session would start them, with their state, tools and last error. `agentls doctor` prints
//! the same list.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{McpAction, load_config};
use crate::config::{ConfigLayer, Env};
use crate::mcp::{Entry, EntryState, McpHub, McpTools, tool_name};

pub fn run(env: &Env, action: McpAction) -> Result<ExitCode, String> {
    let (cwd, name) = match &action {
        McpAction::List { cwd } => (cwd.clone(), None),
        McpAction::Tools { name, cwd } => (cwd.clone(), Some(name.clone())),
    };
    let config = load_config(env, cwd.clone(), ConfigLayer::default())?;
    crate::logging::init(&config, env, false);
    let root = root(cwd)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let hub = McpHub::one_look();
        let servers = hub.session(&config, env, &root);
        servers.wait_started().await;
        let code = match name {
            None => {
                print_list(&servers, "");
                if servers.entries().is_empty() {
                    println!("no MCP servers are configured (see docs/configuration.md, \"MCP servers\")");
                }
                ExitCode::SUCCESS
            }
            Some(name) => print_tools(&servers, &name),
        };
        hub.shutdown().await;
        Ok(code)
    })
}

fn root(cwd: Option<PathBuf>) -> Result<PathBuf, String> {
    match cwd {
        Some(dir) => Ok(dir),
        None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}")),
    }
}

/// One line per server (name, state, tool count, what it is, where it is configured), its
/// last error under it; every line starts with `indent`.
pub fn print_list(servers: &McpTools, indent: &str) {
    for entry in servers.entries() {
        let tools = match entry.state() {
            EntryState::Running => format!("{} tools", entry.tools().len()),
            _ => "no tools".into(),
        };
        println!(
            "{indent}{}: {} ({tools}) {}{}",
            entry.name,
            entry.state().as_str(),
            entry.describe,
            origin(entry)
        );
        if let Some(error) = entry.last_error() {
            println!("{indent}  last error: {error}");
        }
        if entry.state() == EntryState::NeedsTrust {
            println!("{indent}  a project's server starts only in a folder you trust (`agentls trust`)");
        }
    }
}

fn origin(entry: &Entry) -> String {
    match &entry.origin {
        Some(file) => format!(" [{}]", file.display()),
        None => String::new(),
    }
}

fn print_tools(servers: &McpTools, name: &str) -> ExitCode {
    let Some(entry) = servers.entries().iter().find(|e| e.name == name) else {
        let names: Vec<&str> = servers.entries().iter().map(|e| e.name.as_str()).collect();
        eprintln!(
            "agentls: no MCP server `{name}` is configured{}",
            if names.is_empty() { String::new() } else { format!(" (configured: {})", names.join(", ")) }
        );
        return ExitCode::FAILURE;
    };
    if entry.state() != EntryState::Running {
        eprintln!("agentls: MCP server `{name}` is not running ({})", entry.state().as_str());
        if let Some(error) = entry.last_error() {
            eprintln!("  last error: {error}");
        }
        return ExitCode::FAILURE;
    }
    for tool in entry.tools() {
        let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
        println!("{}{}", tool_name(&entry.name, &tool.name), if read_only { " (read-only)" } else { "" });
        if let Some(description) = tool.description.as_deref().and_then(|d| d.lines().next()) {
            println!("  {description}");
        }
    }
    ExitCode::SUCCESS
}
