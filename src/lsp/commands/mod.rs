//! `workspace/executeCommand`: the `agentls.*` commands, one object argument each, one object
//! result each. [`COMMANDS`] is the one table of them: each entry is a command type of
//! `lsp::protocol` (its name, `Params` and `Result`), whose [`Handler`] is in the file of its
//! family (`session.rs`, `review.rs`, `permission.rs`, `trust.rs`, `mcp.rs`).
//!
//! Invariant: a command either returns at once (work is queued on a session task) or answers
//! with a JSON-RPC error that names the bad field; an unknown command names the known ones.
//! The exceptions are `undoTurn` and `redoTurn`, which answer once their edit was applied (or
//! refused): the editor's `workspace/applyEdit` answer is awaited, bounded by its deadline.
//! A command's argument is decoded into its `Params` before its handler runs, and its result is
//! its `Result` type: no handler reads or writes JSON by key.

mod args;
mod mcp;
mod permission;
mod review;
mod session;
mod trust;
mod undo;

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};

use super::protocol::{
    Cancel, CloseSession, Command, Compact, Configure, FollowUp, History, ListSessions, McpRestart,
    McpServers, NewSession, Prompt, RedoTurn, ResolvePermission, ResolveReview, ResumeSession, Steer,
    TrustFolder, UndoTurn,
};
use super::state::ServerState;

/// What the server does for a command: its work, on its decoded argument.
trait Handler: Command {
    fn handle(
        state: &Arc<ServerState>,
        params: Self::Params,
    ) -> impl Future<Output = Result<Self::Result>> + Send;
}

/// Every command the server executes, in the order `executeCommandProvider` announces them.
const COMMANDS: &[Entry] = &[
    Entry::of::<NewSession>(),
    Entry::of::<Prompt>(),
    Entry::of::<Steer>(),
    Entry::of::<FollowUp>(),
    Entry::of::<Cancel>(),
    Entry::of::<CloseSession>(),
    Entry::of::<ListSessions>(),
    Entry::of::<ResumeSession>(),
    Entry::of::<History>(),
    Entry::of::<Configure>(),
    Entry::of::<Compact>(),
    Entry::of::<UndoTurn>(),
    Entry::of::<RedoTurn>(),
    Entry::of::<ResolveReview>(),
    Entry::of::<ResolvePermission>(),
    Entry::of::<TrustFolder>(),
    Entry::of::<McpServers>(),
    Entry::of::<McpRestart>(),
];

/// A command's name and its handler, behind one signature.
struct Entry {
    name: &'static str,
    run: for<'a> fn(&'a Arc<ServerState>, Vec<Value>) -> BoxFuture<'a, Result<Value>>,
    /// Reads a documented example (argument, result) back through the command's types.
    #[cfg(test)]
    round_trip: fn(&Value, &Value),
}

impl Entry {
    const fn of<C: Handler>() -> Self {
        Self {
            name: C::NAME,
            run: run::<C>,
            #[cfg(test)]
            round_trip: |params, result| {
                crate::lsp::protocol::documented::round_trip::<C::Params>(params);
                crate::lsp::protocol::documented::round_trip::<C::Result>(result);
            },
        }
    }
}

/// Decodes the argument, runs the handler, encodes the result.
fn run<C: Handler>(state: &Arc<ServerState>, arguments: Vec<Value>) -> BoxFuture<'_, Result<Value>> {
    Box::pin(async move {
        let params = args::decode::<C::Params>(arguments)?;
        let result = C::handle(state, params).await?;
        serde_json::to_value(result).map_err(|e| args::request_failed(e.to_string()))
    })
}

/// The names of every command, as announced in `executeCommandProvider`.
pub fn names() -> impl Iterator<Item = &'static str> {
    COMMANDS.iter().map(|entry| entry.name)
}

/// Runs one command.
pub async fn dispatch(state: &Arc<ServerState>, command: String, arguments: Vec<Value>) -> Result<Value> {
    match COMMANDS.iter().find(|entry| entry.name == command) {
        Some(entry) => (entry.run)(state, arguments).await,
        None => Err(Error {
            code: ErrorCode::InvalidParams,
            message: format!(
                "unknown command `{command}`; known commands: {}",
                names().collect::<Vec<_>>().join(", ")
            )
            .into(),
            data: Some(Value::String("command".into())),
        }),
    }
}

#[cfg(test)]
mod tests {
    //! docs/protocol.md documents every command of the table, and its examples are the types.

    use super::*;
    use crate::lsp::protocol::documented::examples;

    #[test]
    fn every_command_has_a_documented_argument_and_result_of_its_types() {
        let examples = examples();
        for entry in COMMANDS {
            let documented: Vec<_> = examples.iter().filter(|e| e.command() == Some(entry.name)).collect();
            assert!(!documented.is_empty(), "docs/protocol.md has no example of `{}`", entry.name);
            for example in documented {
                let result = example.result.as_ref().unwrap_or_else(|| {
                    panic!("docs/protocol.md's example of `{}` has no result (`→ {{…}}`)", entry.name)
                });
                (entry.round_trip)(example.argument(), result);
            }
        }
        for example in &examples {
            if let Some(name) = example.command() {
                assert!(names().any(|n| n == name), "docs/protocol.md documents an unknown command `{name}`");
            }
        }
    }

    #[test]
    fn the_documented_initialize_result_announces_every_command() {
        let init = examples()
            .into_iter()
            .map(|example| example.value)
            .find(|v| v.get("capabilities").is_some())
            .expect("docs/protocol.md has the InitializeResult");
        let announced = &init["capabilities"]["executeCommandProvider"]["commands"];
        assert_eq!(announced, &Value::from(names().collect::<Vec<_>>()));
    }
}
