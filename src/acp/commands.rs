//! The commands a user types as a prompt beyond the built-in `/compact` and `/model`
//! (`prompt.rs`): `/undo`, `/rewind` and `/redo` over the session's checkpoints, and the prompts of the
//! session's MCP servers (`prompts/list`, `prompts/get`), all announced in
//! `available_commands_update`.
//!
//! Invariants:
//! - `/undo` reverts the session's last turn that changed files, `/redo` re-applies the last
//!   undo; either is an edit like any other: each file is merged three-way onto what the client
//!   holds now (read through `fs/read_text_file` when offered), written through
//!   `fs/write_text_file` when offered (else the shared disk writer), and shown as a completed
//!   `tool_call` with a `diff` per file. A file edited since in a way that overlaps the turn
//!   refuses the whole undo before anything is written, and the client is told why.
//! - `/rewind` is `/undo` that also cuts the model's history back to before the turn (as
//!   `agentls.undoTurn`'s `rewind`), only once the files were reverted; `/redo` brings the files
//!   back, not the conversation.
//! - Neither runs while a prompt runs in the session; neither reaches the model.
//! - An MCP prompt's command is its name, or `server:name` when two servers (or a built-in)
//!   share it. `/name args` fetches it with its arguments (`key=value` words, then the other
//!   words in the order the prompt declares its arguments, the last taking the rest) and its
//!   messages become the user's input; a missing required argument is told, nothing is sent.
//! - The prompts are listed once per session, after its servers started; the commands are
//!   announced again when there are any.

use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock, ContentChunk, Error,
    PromptResponse, SessionNotification, SessionUpdate, StopReason, ToolCall, ToolCallContent,
    ToolCallStatus, ToolKind, UnstructuredCommandInput,
};
use async_trait::async_trait;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, ResourceContents, Role};
use serde_json::Value;

use super::Agent;
use super::modes;
use super::session::{AcpSession, PromptCommand};
use super::wire::Wire;
use crate::checkpoint::revert::Apply;
use crate::checkpoint::{CheckpointError, Direction};
use crate::exec::ExecutionEnvironment;
use crate::mcp::Server;
use crate::session::SessionState;
use crate::workspace::{Committer, DiskCommitter, ResolvedChangeSet, Workspace, shown_path};

/// What a typed command does.
pub enum Outcome {
    /// It is done; the prompt is answered with this.
    Done(Result<PromptResponse, Error>),
    /// Its text is the user's input (an MCP prompt's messages).
    Input(String),
}

const BUILT_IN: [&str; 5] = ["compact", "model", "undo", "rewind", "redo"];

/// Every command the session offers now.
pub fn available(session: &AcpSession) -> Vec<AvailableCommand> {
    let mut commands = modes::commands();
    if session.handle.checkpoints().is_some() {
        commands.push(AvailableCommand::new("undo", "Undo the last turn's changes to files"));
        commands.push(AvailableCommand::new(
            "rewind",
            "Undo the last turn's changes to files and take the turn out of the conversation",
        ));
        commands.push(AvailableCommand::new("redo", "Re-apply the changes the last /undo took back"));
    }
    for command in session.prompts.get().into_iter().flatten() {
        let description = command
            .prompt
            .description
            .clone()
            .or_else(|| command.prompt.title.clone())
            .unwrap_or_else(|| format!("MCP prompt `{}`", command.prompt.name));
        let mut available = AvailableCommand::new(command.name.clone(), description);
        let arguments: Vec<String> = command
            .prompt
            .arguments
            .iter()
            .flatten()
            .map(|a| if a.required == Some(true) { a.name.clone() } else { format!("[{}]", a.name) })
            .collect();
        if !arguments.is_empty() {
            available = available.input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                arguments.join(" "),
            )));
        }
        commands.push(available);
    }
    commands
}

fn send_commands(session: &AcpSession, wire: &Wire) {
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(available(session)));
    wire.notify("session/update", SessionNotification::new(session.id.clone(), update));
}

/// Announces the commands; while the MCP servers' prompts are not listed, lists them in the
/// background and announces again when there are any.
pub fn announce(session: &Arc<AcpSession>, wire: &Arc<Wire>) {
    send_commands(session, wire);
    if session.mcp.is_none() || session.prompts.initialized() {
        return;
    }
    let (session, wire) = (Arc::clone(session), Arc::clone(wire));
    tokio::spawn(async move {
        if !prompt_commands(&session).await.is_empty() {
            send_commands(&session, &wire);
        }
    });
}

/// The MCP servers' prompts as commands, listed the first time they are asked for (once the
/// servers started).
async fn prompt_commands(session: &AcpSession) -> &[PromptCommand] {
    session
        .prompts
        .get_or_init(|| async {
            match &session.mcp {
                Some(mcp) => named(mcp.prompts().await),
                None => Vec::new(),
            }
        })
        .await
}

/// Commands for the listed prompts: each under its name unless another prompt or a built-in
/// has it, then as `server:name`.
fn named(listed: Vec<(String, Arc<Server>, Prompt)>) -> Vec<PromptCommand> {
    let shared =
        |name: &str| BUILT_IN.contains(&name) || listed.iter().filter(|(_, _, p)| p.name == name).count() > 1;
    let names: Vec<String> = listed
        .iter()
        .map(|(server, _, p)| if shared(&p.name) { format!("{server}:{}", p.name) } else { p.name.clone() })
        .collect();
    listed
        .into_iter()
        .zip(names)
        .map(|((_, server, prompt), name)| PromptCommand { name, server, prompt })
        .collect()
}

/// Runs `/name argument` when it is one of these commands; `None` when it is not.
pub async fn run(agent: &Agent, session: &AcpSession, name: &str, argument: &str) -> Option<Outcome> {
    match name {
        "undo" => Some(Outcome::Done(reverse(agent, session, Direction::Undo, false).await)),
        "rewind" => Some(Outcome::Done(reverse(agent, session, Direction::Undo, true).await)),
        "redo" => Some(Outcome::Done(reverse(agent, session, Direction::Redo, false).await)),
        _ => {
            let (server, prompt) = {
                let found = prompt_commands(session).await.iter().find(|c| c.name == name)?;
                (Arc::clone(&found.server), found.prompt.clone())
            };
            Some(match arguments(&prompt, argument) {
                Err(message) => {
                    say(&agent.wire, session, format!("/{name}: {message}"));
                    Outcome::Done(Ok(PromptResponse::new(StopReason::EndTurn)))
                }
                Ok(arguments) => match server.prompt(&prompt.name, arguments).await {
                    Ok(got) => Outcome::Input(input_of(got)),
                    Err(message) => Outcome::Done(Err(Error::internal_error().data(Value::String(message)))),
                },
            })
        }
    }
}

fn say(wire: &Wire, session: &AcpSession, message: String) {
    let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(message)));
    wire.notify("session/update", SessionNotification::new(session.id.clone(), update));
}

/// The prompt's arguments from what the user typed after its command.
fn arguments(prompt: &Prompt, typed: &str) -> Result<JsonObject, String> {
    let declared = prompt.arguments.clone().unwrap_or_default();
    let mut values = JsonObject::new();
    let mut words = Vec::new();
    for word in typed.split_whitespace() {
        match word.split_once('=') {
            Some((key, value)) if declared.iter().any(|a| a.name == key) => {
                values.insert(key.to_string(), Value::String(value.to_string()));
            }
            _ => words.push(word),
        }
    }
    let open: Vec<&str> =
        declared.iter().map(|a| a.name.as_str()).filter(|n| !values.contains_key(*n)).collect();
    let mut words = words.into_iter();
    for (i, name) in open.iter().enumerate() {
        let value = if i + 1 == open.len() {
            words.by_ref().collect::<Vec<_>>().join(" ")
        } else {
            words.next().unwrap_or_default().to_string()
        };
        if !value.is_empty() {
            values.insert(name.to_string(), Value::String(value));
        }
    }
    let extra: Vec<&str> = words.collect();
    if !extra.is_empty() {
        return Err(format!(
            "it takes no more arguments than {}; left over: {}",
            open.len(),
            extra.join(" ")
        ));
    }
    let missing: Vec<String> = declared
        .iter()
        .filter(|a| a.required == Some(true) && !values.contains_key(&a.name))
        .map(|a| match &a.description {
            Some(d) => format!("`{}` ({d})", a.name),
            None => format!("`{}`", a.name),
        })
        .collect();
    if !missing.is_empty() {
        return Err(format!("it needs {}; nothing was sent", missing.join(", ")));
    }
    Ok(values)
}

/// A prompt's messages as one input: texts as they are, text resources in fenced blocks naming
/// their URI, an assistant's message marked as such; what is not text is named, not sent.
fn input_of(result: GetPromptResult) -> String {
    let parts: Vec<String> = result
        .messages
        .into_iter()
        .map(|message| {
            let body = match message.content {
                rmcp::model::ContentBlock::Text(t) => t.text,
                rmcp::model::ContentBlock::Resource(r) => match r.resource {
                    ResourceContents::TextResourceContents { uri, text, .. } => {
                        format!("Content of {uri}:\n```\n{text}\n```")
                    }
                    ResourceContents::BlobResourceContents { uri, .. } => {
                        format!("[binary resource {uri}, not included]")
                    }
                    _ => "[a resource, not included]".to_string(),
                },
                rmcp::model::ContentBlock::ResourceLink(link) => {
                    let uri = serde_json::to_value(&link).ok();
                    format!("@{}", uri.as_ref().and_then(|v| v["uri"].as_str()).unwrap_or_default())
                }
                rmcp::model::ContentBlock::Image(_) => "[an image, not included]".to_string(),
                rmcp::model::ContentBlock::Audio(_) => "[audio, not included]".to_string(),
                _ => "[content that is not text, not included]".to_string(),
            };
            match message.role {
                Role::Assistant => format!("(As the assistant:) {body}"),
                Role::User => body,
            }
        })
        .collect();
    parts.join("\n\n")
}

/// The session's environment, as undo and redo write through it.
struct Through(DiskCommitter);

#[async_trait]
impl Apply for Through {
    async fn apply(&self, change: ResolvedChangeSet) -> Result<(), String> {
        self.0.commit(change).await.map(drop).map_err(|e| e.to_string())
    }
}

/// `/undo`, `/rewind` (`rewind`: the history cut back too) or `/redo`: carried out, shown as a
/// tool call with its diffs, and summarised.
async fn reverse(
    agent: &Agent,
    session: &AcpSession,
    direction: Direction,
    rewind: bool,
) -> Result<PromptResponse, Error> {
    let verb = match (direction, rewind) {
        (Direction::Undo, false) => "undo",
        (Direction::Undo, true) => "rewind",
        (Direction::Redo, _) => "redo",
    };
    let Some(checkpoints) = session.handle.checkpoints() else {
        say(
            &agent.wire,
            session,
            format!("Cannot {verb}: this session records no checkpoints (no data directory)."),
        );
        return Ok(PromptResponse::new(StopReason::EndTurn));
    };
    if session.handle.state() == SessionState::Processing {
        return Err(Error::invalid_request().data(Value::String(format!(
            "the session is working on an input; wait for it or cancel it before /{verb}"
        ))));
    }
    let env: Arc<dyn ExecutionEnvironment> = Arc::clone(&session.env);
    let apply = Through(DiskCommitter::new(Arc::clone(&env)));
    let call_id = format!("{verb}-{}", uuid::Uuid::new_v4());
    let reversal = checkpoints.reverse(direction, None, &Workspace::default(), env.as_ref(), &apply).await;
    let update = |call: ToolCall| {
        agent.wire.notify(
            "session/update",
            SessionNotification::new(session.id.clone(), SessionUpdate::ToolCall(call)),
        )
    };
    let label = match direction {
        Direction::Undo => "Undo",
        Direction::Redo => "Redo",
    };
    match reversal {
        Ok(reversal) => {
            let turns: Vec<String> = reversal.turns.iter().map(u64::to_string).collect();
            let title = format!("{label} turn {}", turns.join(", "));
            let (content, locations) = match &reversal.change {
                Some(change) => super::port::diff_content(change),
                None => (Vec::new(), Vec::new()),
            };
            let files = content.len();
            update(
                ToolCall::new(call_id, title.clone())
                    .kind(ToolKind::Edit)
                    .status(ToolCallStatus::Completed)
                    .content(content)
                    .locations(locations),
            );
            let mut message = format!(
                "{title}: {}.",
                match files {
                    0 => "the files already held what they should".to_string(),
                    1 => "1 file changed".to_string(),
                    n => format!("{n} files changed"),
                }
            );
            if !reversal.not_covered.is_empty() {
                let left: Vec<String> = reversal
                    .not_covered
                    .iter()
                    .map(|(path, reason)| {
                        format!("{} ({})", shown_path(path, &[checkpoints.root()]), reason.as_str())
                    })
                    .collect();
                message.push_str(&format!(" Not covered, left as they are: {}.", left.join(", ")));
            }
            if rewind {
                match session.handle.rewind(reversal.mark).await {
                    Ok(entries) => message.push_str(&format!(
                        " The conversation is back to before turn {} ({entries} entries taken out).",
                        turns.first().map_or("?", String::as_str)
                    )),
                    Err(e) => message.push_str(&format!(" The conversation could not be cut back: {e}.")),
                }
            }
            say(&agent.wire, session, message);
        }
        Err(error) => {
            if let CheckpointError::Conflict { path, .. } = &error {
                update(
                    ToolCall::new(call_id, format!("{label} the last turn"))
                        .kind(ToolKind::Edit)
                        .status(ToolCallStatus::Failed)
                        .content(vec![ToolCallContent::from(ContentBlock::from(error.to_string()))])
                        .locations(vec![agent_client_protocol_schema::v1::ToolCallLocation::new(
                            path.clone(),
                        )]),
                );
            }
            say(&agent.wire, session, format!("Cannot {verb}: {error}."));
        }
    }
    Ok(PromptResponse::new(StopReason::EndTurn))
}
