//! The tool registry: tools by name (latest registration wins), their definitions for the model,
//! and the execution pipeline lookup → parse → validate (JSON Schema) → call → truncate.
//!
//! Invariant: `execute` never fails and never panics: unknown tools, malformed or invalid
//! arguments, tool errors, tool panics and cancelled turns all become `is_error` outcomes the
//! model can recover from, with the full output kept next to the truncated one. A failure of the
//! tool itself (an error it returns, or a panic) reads `Tool error (<name>): …`, as in the spec.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use futures::FutureExt;
use serde_json::Value;

use super::aliases::{declared_parameters, normalize_arguments, tool_alias};
use super::summary::{CallArgs, one_line};
use super::truncate::TruncationPolicy;
use super::{TaskEnd, Tool, ToolContext, ToolImage};
use crate::llm::{ToolCall, ToolDefinition};

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallOutcome {
    /// Full, untruncated output (or error message): what `tool_call_end` events carry.
    pub content: String,
    /// What the model receives: `content` after truncation.
    pub model_content: String,
    pub images: Vec<ToolImage>,
    pub is_error: bool,
    /// The call ended the task (see [`TaskEnd`]).
    pub ends_task: Option<TaskEnd>,
}

impl ToolCallOutcome {
    fn error(message: String, truncation: &TruncationPolicy, tool: &str) -> Self {
        let model_content = truncation.truncate(tool, &message).into_owned();
        Self { content: message, model_content, images: Vec::new(), is_error: true, ends_task: None }
    }
}

/// What the model receives when tool `name` fails with `message` (spec §2.5's error result):
/// `Tool error (<name>): <message>`, `name` being the tool that ran.
pub fn tool_error_message(name: &str, message: &str) -> String {
    format!("Tool error ({name}): {message}")
}

/// How the calls of one model step are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMode {
    /// Read-only calls concurrently; a call that may change files or run a command starts only
    /// after every earlier call has finished, and later calls wait for it. Results in call order.
    Parallel,
    /// One after the other, in call order.
    Sequential,
    /// Only the first call runs; the others get "not executed" error results (seed 002).
    FirstOnly,
}

/// Progress of a batch, for event emission.
#[derive(Debug)]
pub enum BatchEvent<'a> {
    Started { index: usize, call: &'a ToolCall },
    Finished { index: usize, call: &'a ToolCall, outcome: &'a ToolCallOutcome },
}

struct Registered {
    tool: Arc<dyn Tool>,
    /// What the model is told, built once: the parameters are the JSON Schema of the arguments
    /// (root type `object`).
    definition: ToolDefinition,
    /// The compiled argument schema, or why it could not be compiled: compiled on the first call,
    /// so a process that runs one tool (`agentls tool`) compiles one schema, not every tool's.
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    /// Top-level parameter names, for argument aliases.
    declared: Vec<String>,
}

/// Tools available to a session.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<(String, Arc<Registered>)>,
    truncation: TruncationPolicy,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry").field("tools", &self.names()).finish()
    }
}

fn check_root(schema: &Value) -> Result<(), String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the root of a tool's parameter schema must have type \"object\"".into());
    }
    Ok(())
}

/// Compiles a tool's parameter schema. Tool schemas are read as draft 7 (what the providers'
/// schema subsets are based on): its meta-schema, which every schema is checked against first,
/// compiles in a fraction of the time of 2020-12's.
fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    check_root(schema)?;
    jsonschema::options().with_draft(jsonschema::Draft::Draft7).build(schema).map_err(|e| e.to_string())
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_truncation(&mut self, truncation: TruncationPolicy) {
        self.truncation = truncation;
    }

    pub fn truncation(&self) -> &TruncationPolicy {
        &self.truncation
    }

    /// Adds a tool; a tool already registered under the same name is replaced (and returned).
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        let name = tool.name().to_string();
        let parameters = tool.parameters();
        if let Err(error) = check_root(&parameters) {
            tracing::warn!(tool = %name, %error, "tool schema is invalid; calls will fail");
        }
        let declared = declared_parameters(&parameters);
        let definition = ToolDefinition {
            name: name.clone(),
            description: tool.description().to_string(),
            parameters: Arc::new(parameters),
        };
        let entry = Arc::new(Registered { tool, definition, validator: OnceLock::new(), declared });
        match self.tools.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => Some(std::mem::replace(&mut slot.1, entry).tool.clone()),
            None => {
                self.tools.push((name, entry));
                None
            }
        }
    }

    pub fn unregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let index = self.tools.iter().position(|(n, _)| n == name)?;
        Some(self.tools.remove(index).1.tool.clone())
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entry(name).map(|r| r.tool.clone())
    }

    fn entry(&self, name: &str) -> Option<&Arc<Registered>> {
        self.resolve(name).map(|(_, r)| r)
    }

    /// The registered name and entry a call of `name` runs: the tool of that name, else the
    /// first registered tool `name` is an alias of (see `aliases`).
    fn resolve(&self, name: &str) -> Option<(&str, &Arc<Registered>)> {
        let by_name =
            |wanted: &str| self.tools.iter().find(|(n, _)| n == wanted).map(|(n, r)| (n.as_str(), r));
        by_name(name).or_else(|| tool_alias(name).find_map(by_name))
    }

    /// Whether a call of `name` only reads. An unknown name is answered with an error without
    /// running anything, so it counts as read-only.
    pub fn read_only(&self, name: &str) -> bool {
        self.resolve(name).is_none_or(|(_, entry)| entry.tool.read_only())
    }

    /// The tools themselves, in registration order.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.iter().map(|(_, r)| r.tool.clone()).collect()
    }

    /// Tool names in registration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The one-line summary of a call of `name` in the session directory `cwd`: the tool it
    /// runs describes it ([`Tool::summary`]); a call of no tool is shown by its name and path.
    pub fn summary(&self, name: &str, args: &Value, cwd: &Path) -> String {
        let call = CallArgs::new(name, args, cwd);
        let text = match self.resolve(name) {
            Some((_, entry)) => entry.tool.summary(&call),
            None => call.default_summary(),
        };
        one_line(text.trim())
    }

    /// Definitions for the model, in registration order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.iter().map(|(_, r)| r.definition.clone()).collect()
    }

    /// The arguments a call of `name` runs with: `parsed` (or why the model's text is not JSON)
    /// checked against the tool's schema; the error names each offending field and what is
    /// expected.
    fn arguments_of(&self, name: &str, parsed: Result<Value, serde_json::Error>) -> Result<Value, String> {
        match parsed {
            Ok(args) => self.check_arguments(name, args),
            Err(e) => Err(format!(
                "Invalid arguments for tool {name}: the arguments are not valid JSON ({e}). \
                 Send one JSON object that matches the tool's parameter schema."
            )),
        }
    }

    /// Checks parsed arguments against the tool's schema (after normalising them).
    pub fn check_arguments(&self, name: &str, mut args: Value) -> Result<Value, String> {
        let entry = self.entry(name).ok_or_else(|| self.unknown_tool_message(name))?;
        let Some(object) = args.as_object_mut() else {
            return Err(format!("Invalid arguments for tool {name}: the arguments must be a JSON object."));
        };
        normalize_arguments(object, &entry.declared);
        let validator = entry
            .validator
            .get_or_init(|| {
                let compiled = compile(&entry.definition.parameters);
                if let Err(error) = &compiled {
                    tracing::warn!(tool = %name, %error, "tool schema does not compile; calls fail");
                }
                compiled
            })
            .as_ref()
            .map_err(|e| format!("Tool {name} cannot be called: its parameter schema is invalid ({e})."))?;
        let problems: Vec<String> = validator
            .iter_errors(&args)
            .map(|error| {
                let pointer = error.instance_path().to_string();
                let field = pointer.trim_start_matches('/').replace('/', ".");
                if field.is_empty() { error.to_string() } else { format!("`{field}`: {error}") }
            })
            .collect();
        if problems.is_empty() {
            Ok(args)
        } else {
            Err(format!("Invalid arguments for tool {name}: {}.", problems.join("; ")))
        }
    }

    fn unknown_tool_message(&self, name: &str) -> String {
        format!("Unknown tool: {name}. Available tools: {}.", self.names().join(", "))
    }

    /// Runs one call given as a tool name and the arguments' text (empty text is `{}`), end to
    /// end. Never fails: every problem is an `is_error` outcome.
    pub async fn execute(&self, name: &str, raw_arguments: &str, ctx: &ToolContext) -> ToolCallOutcome {
        let parsed = if raw_arguments.trim().is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str(raw_arguments)
        };
        self.execute_with(name, |registry, name| registry.arguments_of(name, parsed), ctx).await
    }

    /// Runs one call the model made, end to end: arguments that are not JSON reach the model
    /// as such. Never fails: every problem is an `is_error` outcome.
    pub async fn execute_call(&self, call: &ToolCall, ctx: &ToolContext) -> ToolCallOutcome {
        let parsed = call.parsed_arguments().cloned();
        self.execute_with(&call.name, |registry, name| registry.arguments_of(name, parsed), ctx).await
    }

    /// Like [`ToolRegistry::execute`] with arguments already parsed (a large input is not
    /// serialised to JSON and parsed back).
    pub async fn execute_value(&self, name: &str, args: Value, ctx: &ToolContext) -> ToolCallOutcome {
        self.execute_with(name, |registry, name| registry.check_arguments(name, args), ctx).await
    }

    async fn execute_with(
        &self,
        name: &str,
        arguments: impl FnOnce(&Self, &str) -> Result<Value, String>,
        ctx: &ToolContext,
    ) -> ToolCallOutcome {
        let Some((registered_name, entry)) = self.resolve(name) else {
            return ToolCallOutcome::error(self.unknown_tool_message(name), &self.truncation, name);
        };
        // Truncation limits follow the tool that runs, whatever name the model used.
        let name = registered_name;
        let args = match arguments(self, name) {
            Ok(args) => args,
            Err(message) => return ToolCallOutcome::error(message, &self.truncation, name),
        };
        if ctx.cancel.is_cancelled() {
            return ToolCallOutcome::error(
                format!("Tool call {name} was not executed: the turn was cancelled."),
                &self.truncation,
                name,
            );
        }
        let call = AssertUnwindSafe(entry.tool.call(args, ctx)).catch_unwind().await;
        match call {
            Ok(Ok(output)) => {
                let model_content = self.truncation.truncate(name, &output.content).into_owned();
                ToolCallOutcome {
                    content: output.content,
                    model_content,
                    images: output.images,
                    is_error: false,
                    ends_task: output.ends_task,
                }
            }
            Ok(Err(error)) => {
                ToolCallOutcome::error(tool_error_message(name, &error.0), &self.truncation, name)
            }
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("unknown failure");
                tracing::error!(tool = %name, panic = %what, "tool panicked");
                ToolCallOutcome::error(
                    tool_error_message(name, &format!("the tool crashed: {what}")),
                    &self.truncation,
                    name,
                )
            }
        }
    }

    /// Runs the calls of one model step and returns their outcomes in call order. Each call gets
    /// `ctx` with its own `call_id`.
    pub async fn execute_batch(
        &self,
        calls: &[ToolCall],
        ctx: &ToolContext,
        mode: BatchMode,
        observe: &(dyn Fn(BatchEvent<'_>) + Send + Sync),
    ) -> Vec<ToolCallOutcome> {
        let run_one = |index: usize| {
            let call = &calls[index];
            let mut call_ctx = ctx.clone();
            call_ctx.call_id = call.id.clone();
            async move {
                observe(BatchEvent::Started { index, call });
                let outcome = self.execute_call(call, &call_ctx).await;
                observe(BatchEvent::Finished { index, call, outcome: &outcome });
                outcome
            }
        };
        match mode {
            BatchMode::Parallel => {
                let mut outcomes = Vec::with_capacity(calls.len());
                let mut start = 0;
                while start < calls.len() {
                    // A run of read-only calls goes together; any other call goes alone.
                    let end = if self.read_only(&calls[start].name) {
                        (start..calls.len()).find(|&i| !self.read_only(&calls[i].name)).unwrap_or(calls.len())
                    } else {
                        start + 1
                    };
                    outcomes.extend(futures::future::join_all((start..end).map(run_one)).await);
                    start = end;
                }
                outcomes
            }
            BatchMode::Sequential => {
                let mut outcomes = Vec::with_capacity(calls.len());
                for index in 0..calls.len() {
                    outcomes.push(run_one(index).await);
                }
                outcomes
            }
            BatchMode::FirstOnly => {
                let mut outcomes = Vec::with_capacity(calls.len());
                if !calls.is_empty() {
                    outcomes.push(run_one(0).await);
                }
                for (index, call) in calls.iter().enumerate().skip(1) {
                    let outcome = ToolCallOutcome::error(
                        format!(
                            "Tool call {} was not executed: only one tool call is executed per step. \
                             Call it again on its own if it is still needed.",
                            call.name
                        ),
                        &self.truncation,
                        &call.name,
                    );
                    observe(BatchEvent::Started { index, call });
                    observe(BatchEvent::Finished { index, call, outcome: &outcome });
                    outcomes.push(outcome);
                }
                outcomes
            }
        }
    }
}
