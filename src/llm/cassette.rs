//! Record and replay of model exchanges. A cassette is a JSONL file: one [`Exchange`] per line,
//! in call order. Only neutral requests, responses, events and errors are written — never HTTP
//! headers — so cassettes hold no API keys. Replay plays exchanges in order and does not demand
//! the same request (paths and dates differ between runs); a cassette written by hand may leave
//! `request` out.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::assemble::events_for;
use super::error::LlmError;
use super::types::{Request, Response, StreamEvent};

/// One recorded model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// `complete` or `stream`.
    pub mode: ExchangeMode,
    pub provider: String,
    /// The request as recorded; empty in a cassette written by hand.
    #[serde(default)]
    pub request: Request,
    /// Every event handed to the caller (streams) or the events equivalent to the response.
    #[serde(default)]
    pub events: Vec<StreamEvent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Response>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<LlmError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExchangeMode {
    Complete,
    Stream,
}

/// Appends exchanges to a cassette file.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl Recorder {
    pub fn create(path: &Path) -> Result<Self, LlmError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| cassette_error(path, &e))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| cassette_error(path, &e))?;
        Ok(Self { path: path.to_path_buf(), file: Mutex::new(file) })
    }

    /// Writes one exchange; a failure is logged, never fatal to the run.
    pub fn record(&self, exchange: &Exchange) {
        let line = match serde_json::to_string(exchange) {
            Ok(line) => line,
            Err(e) => return tracing::warn!(error = %e, "cannot serialize exchange for the cassette"),
        };
        let Ok(mut file) = self.file.lock() else { return };
        if let Err(e) = writeln!(file, "{line}").and_then(|_| file.flush()) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write to the cassette");
        }
    }
}

/// Plays a cassette back, one exchange per call, in order.
#[derive(Debug)]
pub struct Player {
    path: PathBuf,
    queue: Mutex<VecDeque<Exchange>>,
    total: usize,
}

impl Player {
    pub fn open(path: &Path) -> Result<Self, LlmError> {
        if path.as_os_str().is_empty() {
            return Err(LlmError::Cassette {
                path: String::new(),
                message: "the replay provider needs a cassette: set `cassette` in the configuration \
                          or the replay provider's base_url to the recorded file"
                    .into(),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|e| cassette_error(path, &e))?;
        let mut queue = VecDeque::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let exchange: Exchange = serde_json::from_str(line).map_err(|e| LlmError::Cassette {
                path: path.display().to_string(),
                message: format!("line {}: not a recorded exchange: {e}", n + 1),
            })?;
            queue.push_back(exchange);
        }
        let total = queue.len();
        Ok(Self { path: path.to_path_buf(), queue: Mutex::new(queue), total })
    }

    /// The next exchange, or an error when the cassette is used up.
    pub fn next(&self, request: &Request) -> Result<Exchange, LlmError> {
        let next = self.queue.lock().ok().and_then(|mut q| q.pop_front());
        let exchange = next.ok_or_else(|| LlmError::Cassette {
            path: self.path.display().to_string(),
            message: format!("all {} recorded exchanges were played; the run asked for more", self.total),
        })?;
        let recorded = exchange.request.messages.len();
        if recorded != 0 && recorded != request.messages.len() {
            tracing::warn!(
                recorded,
                asked = request.messages.len(),
                "replayed exchange was recorded for a different conversation length"
            );
        }
        Ok(exchange)
    }
}

impl Exchange {
    /// The events to play for this exchange, ending in `Finish` unless it recorded an error.
    pub fn playback_events(&self) -> Vec<StreamEvent> {
        match (&self.response, self.events.is_empty()) {
            (_, false) => self.events.clone(),
            (Some(response), true) => events_for(response),
            (None, true) => Vec::new(),
        }
    }

    /// The final response, from `response` or the recorded `Finish` event.
    pub fn final_response(&self) -> Option<Response> {
        self.response.clone().or_else(|| {
            self.events.iter().rev().find_map(|e| match e {
                StreamEvent::Finish(r) => Some(r.clone()),
                _ => None,
            })
        })
    }
}

fn cassette_error(path: &Path, e: &std::io::Error) -> LlmError {
    LlmError::Cassette { path: path.display().to_string(), message: e.to_string() }
}
