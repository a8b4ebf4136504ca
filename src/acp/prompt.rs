//! `session/prompt` and the built-in commands typed as prompts (`/compact`, `/model NAME`; the
//! others in `commands.rs`).
//!
//! Invariants:
//! - One prompt runs per session at a time; a second one is refused, not queued.
//! - A prompt's content becomes the session's input: text as it is, a `resource_link` as a
//!   mention of its file (which joins the input's context), an embedded text resource as its
//!   text in a fenced block naming its URI, an image as an image of the input's message when the
//!   session's model takes images (refused otherwise, with a message naming the model). Audio
//!   is refused (`initialize` says so).
//! - The response comes after every update of the turn (the pump answers the waiter after it
//!   sent them), with the stop reason of the turn's end; `cancelled` after `session/cancel`.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, EmbeddedResourceResource, Error, ImageContent, PromptRequest, PromptResponse,
    SessionNotification, SessionUpdate, StopReason,
};
use base64::Engine;
use serde_json::Value;
use tokio::sync::oneshot;

use super::Agent;
use super::session::{AcpSession, Waiter};
use crate::llm::Image;
use crate::session::ConfigChange;

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(Value::String(message.into()))
}

/// A `file://` URI's path.
fn file_path(uri: &str) -> Option<PathBuf> {
    url::Url::parse(uri).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok())
}

/// What a prompt's content becomes: the input's text, the files it is about, its images.
struct Input {
    text: String,
    context: Vec<PathBuf>,
    images: Vec<Image>,
}

/// An image block's bytes, or why not.
fn image(block: &ImageContent) -> Result<Image, Error> {
    if !block.mime_type.starts_with("image/") {
        return Err(invalid(format!("`{}` is not an image type", block.mime_type)));
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(block.data.trim().as_bytes())
        .map_err(|e| invalid(format!("the image's data is not base64: {e}")))?;
    Ok(Image { media_type: block.mime_type.clone(), data })
}

/// The input of a prompt's blocks; `model` takes images when `takes_images`.
fn input(blocks: &[ContentBlock], model: &str, takes_images: bool) -> Result<Input, Error> {
    let mut text = String::new();
    let mut context = Vec::new();
    let mut images = Vec::new();
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
            ContentBlock::Image(block) if takes_images => images.push(image(block)?),
            ContentBlock::Image(_) => {
                return Err(invalid(format!("the session's model `{model}` takes no images")));
            }
            ContentBlock::Audio(_) => return Err(invalid("audio is not supported (promptCapabilities)")),
            _ => return Err(invalid("an unknown content block")),
        }
    }
    if text.trim().is_empty() && images.is_empty() {
        return Err(invalid("the prompt is empty"));
    }
    Ok(Input { text, context, images })
}

fn say(agent: &Agent, session: &AcpSession, message: String) {
    let update = SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(message)));
    agent.wire.notify("session/update", SessionNotification::new(session.id.clone(), update));
}

pub async fn prompt(agent: &Arc<Agent>, request: PromptRequest) -> Result<PromptResponse, Error> {
    let session = agent.session(&request.session_id.0)?;
    let current = session.current();
    let takes_images = crate::llm::capabilities(current.provider, &current.model).images;
    let Input { mut text, context, images } = input(&request.prompt, &current.model, takes_images)?;
    let typed = text.trim().to_string();
    let (command, argument) = match typed.strip_prefix('/') {
        Some(rest) => {
            let (name, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            (Some(name), argument.trim())
        }
        None => (None, ""),
    };
    // `/undo`, `/redo` and the MCP servers' prompts (`commands.rs`).
    if let Some(name) = command
        && session.turns().waiter.is_none()
    {
        match super::commands::run(agent, &session, name, argument).await {
            Some(super::commands::Outcome::Done(answer)) => return answer,
            Some(super::commands::Outcome::Input(prompt)) => text = prompt,
            None => {}
        }
    }
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
                session.handle.submit_with_images(text, context, images);
            }
        }
    }
    match answer.await {
        Ok(Ok(reason)) => Ok(PromptResponse::new(reason)),
        Ok(Err(message)) => Err(Error::internal_error().data(Value::String(message))),
        Err(_) => Ok(PromptResponse::new(StopReason::Cancelled)),
    }
}
