//! `session/prompt` and the built-in commands typed as prompts (`/compact`, `/model NAME`).
//!
//! Invariants:
//! - One prompt runs per session at a time; a second one is refused, not queued.
//! - A prompt's content becomes the session's input: text as it is, a `resource_link` as a
//!   mention of its file (which joins the input's context), an embedded text resource as its
//!   text in a fenced block naming its URI. Images and audio are refused (`initialize` says so).
//! - The response comes after every update of the turn (the pump answers the waiter after it
//!   sent them), with the stop reason of the turn's end; `cancelled` after `session/cancel`.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, EmbeddedResourceResource, Error, PromptRequest, PromptResponse,
    SessionNotification, SessionUpdate, StopReason,
};
use serde_json::Value;
use tokio::sync::oneshot;

use super::Agent;
use super::sessions::{AcpSession, Waiter};
use crate::session::ConfigChange;

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(Value::String(message.into()))
}

/// A `file://` URI's path.
fn file_path(uri: &str) -> Option<PathBuf> {
    url::Url::parse(uri).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok())
}

/// The input's text, and the files it is about.
fn input(blocks: &[ContentBlock]) -> Result<(String, Vec<PathBuf>), Error> {
    let mut text = String::new();
    let mut context = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => {
                let path = file_path(&link.uri);
                let shown =
                    path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| link.uri.clone());
                text.push_str(&format!("@{shown}"));
                context.extend(path);
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    let path = file_path(&r.uri);
                    let shown =
                        path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| r.uri.clone());
                    text.push_str(&format!(
                        "\n\nContent of {shown} (as the editor holds it):\n```\n{}\n```\n",
                        r.text
                    ));
                    context.extend(path);
                }
                _ => return Err(invalid("binary resources are not supported; send text resources")),
            },
            ContentBlock::Image(_) | ContentBlock::Audio(_) => {
                return Err(invalid("images and audio are not supported (promptCapabilities)"));
            }
            _ => return Err(invalid("an unknown content block")),
        }
    }
    if text.trim().is_empty() {
        return Err(invalid("the prompt is empty"));
    }
    Ok((text, context))
}

fn say(agent: &Agent, session: &AcpSession, message: String) {
    let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(message)));
    agent.wire.notify("session/update", SessionNotification::new(session.id.clone(), update));
}

pub async fn prompt(agent: &Arc<Agent>, request: PromptRequest) -> Result<PromptResponse, Error> {
    let session = agent.session(&request.session_id.0)?;
    let (text, context) = input(&request.prompt)?;
    let trimmed = text.trim();
    let (command, argument) = match trimmed.strip_prefix('/') {
        Some(rest) => {
            let (name, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            (Some(name), argument.trim())
        }
        None => (None, ""),
    };
    let (reply, answer) = oneshot::channel();
    {
        let mut turns = session.turns();
        if turns.waiter.is_some() {
            return Err(Error::invalid_request()
                .data(Value::String("a prompt is already running in this session; cancel it first".into())));
        }
        match command {
            Some("model") => {
                drop(turns);
                if !argument.is_empty() {
                    session
                        .handle
                        .configure(ConfigChange { model: Some(argument.to_string()), ..Default::default() });
                }
                say(agent, &session, format!("Model: {}", session.handle.config().model));
                return Ok(PromptResponse::new(StopReason::EndTurn));
            }
            Some("compact") => {
                turns.waiter = Some(Waiter::Compact { reply });
                drop(turns);
                session.handle.compact();
            }
            _ => {
                turns.submitted += 1;
                turns.waiter = Some(Waiter::Input { input: turns.submitted, reply });
                drop(turns);
                session.handle.submit_with_context(text, context);
            }
        }
    }
    match answer.await {
        Ok(Ok(reason)) => Ok(PromptResponse::new(reason)),
        Ok(Err(message)) => Err(Error::internal_error().data(Value::String(message))),
        Err(_) => Ok(PromptResponse::new(StopReason::Cancelled)),
    }
}
