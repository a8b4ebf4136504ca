//! The tool registry's execution pipeline (spec §9.2 custom tools, §9.3 tool execution).

use crate::support::tools_support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentls::config::ProfileKind;
use agentls::exec::{
    DirEntry, ExecError, ExecRequest, ExecResult, ExecutionEnvironment, FileStat, GrepOptions, GrepResult,
};
use agentls::llm::ToolCall;
use agentls::tools::profiles::{ToolSetOptions, profile_tools};
use agentls::tools::registry::{BatchEvent, BatchMode, ToolCallOutcome, ToolRegistry};
use agentls::tools::shell::ShellTool;
use agentls::tools::truncate::TruncationPolicy;
use agentls::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify};
use tools_support::{Fixture, without_duration};

/// A tool whose behaviour each test chooses.
struct Scripted {
    name: &'static str,
    run: Box<dyn Fn(Value) -> Result<ToolOutput, ToolError> + Send + Sync>,
}

#[async_trait]
impl Tool for Scripted {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "scripted"
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"text": {"type": "string"}, "count": {"type": "integer", "minimum": 1}},
            "required": ["text"],
            "additionalProperties": false
        })
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        (self.run)(args)
    }
}

fn echo(name: &'static str) -> Arc<dyn Tool> {
    Arc::new(Scripted {
        name,
        run: Box::new(|args| Ok(ToolOutput::text(args["text"].as_str().unwrap_or("")))),
    })
}

fn registry_with(tools: Vec<Arc<dyn Tool>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool);
    }
    registry
}

#[tokio::test]
async fn unknown_tool_returns_an_error_result() {
    let fx = Fixture::new();
    let registry = registry_with(vec![echo("echo")]);
    let outcome = registry.execute("does_not_exist", "{}", &fx.ctx).await;
    assert!(outcome.is_error);
    assert_eq!(outcome.content, "Unknown tool: does_not_exist. Available tools: echo.");
}

#[tokio::test]
async fn invalid_arguments_name_the_field_and_what_is_expected() {
    let fx = Fixture::new();
    let registry = registry_with(vec![echo("echo")]);

    let wrong_type = registry.execute("echo", r#"{"text": 5}"#, &fx.ctx).await;
    assert!(wrong_type.is_error);
    assert_eq!(wrong_type.content, "Invalid arguments for tool echo: `text`: 5 is not of type \"string\".");

    let missing = registry.execute("echo", "{}", &fx.ctx).await;
    assert!(missing.is_error);
    assert_eq!(missing.content, "Invalid arguments for tool echo: \"text\" is a required property.");

    let extra = registry.execute("echo", r#"{"text": "a", "colour": 1}"#, &fx.ctx).await;
    assert!(extra.is_error && extra.content.contains("colour"), "{}", extra.content);

    let below_minimum = registry.execute("echo", r#"{"text": "a", "count": 0}"#, &fx.ctx).await;
    assert!(below_minimum.is_error && below_minimum.content.contains("`count`"), "{}", below_minimum.content);
}

#[tokio::test]
async fn malformed_json_and_non_objects_are_error_results() {
    let fx = Fixture::new();
    let registry = registry_with(vec![echo("echo")]);
    let broken = registry.execute("echo", r#"{"text": "#, &fx.ctx).await;
    assert!(broken.is_error && broken.content.contains("not valid JSON"), "{}", broken.content);
    let array = registry.execute("echo", "[1]", &fx.ctx).await;
    assert!(array.is_error && array.content.contains("must be a JSON object"), "{}", array.content);
}

/// A model's call whose arguments are not JSON is told so (the provider layer keeps the text),
/// as a call given as text is.
#[tokio::test]
async fn a_model_call_whose_arguments_are_not_json_is_told_so() {
    let fx = Fixture::new();
    let registry = registry_with(vec![echo("echo")]);
    let broken = registry.execute_call(&call("c1", "echo", r#"{"text": "#), &fx.ctx).await;
    let expected = registry.execute("echo", r#"{"text": "#, &fx.ctx).await;
    assert_eq!(broken, expected);
    assert!(
        broken.content.starts_with("Invalid arguments for tool echo: the arguments are not valid JSON (")
    );
    let string = registry.execute_call(&call("c2", "echo", r#""{\"text\": \"a\"}""#), &fx.ctx).await;
    assert!(string.is_error && string.content.contains("must be a JSON object"), "{}", string.content);
    let fine = registry.execute_call(&call("c3", "echo", r#"{"text": "a"}"#), &fx.ctx).await;
    assert!(!fine.is_error, "{}", fine.content);
}

#[tokio::test]
async fn empty_arguments_count_as_an_empty_object() {
    let fx = Fixture::new();
    let no_args: Arc<dyn Tool> =
        Arc::new(Scripted { name: "ping", run: Box::new(|_| Ok(ToolOutput::text("pong"))) });
    let mut registry = ToolRegistry::new();
    registry.register(no_args);
    // The schema requires `text`, so an empty string is validated like `{}`.
    let outcome = registry.execute("ping", "", &fx.ctx).await;
    assert!(outcome.is_error && outcome.content.contains("\"text\" is a required property"));
}

#[tokio::test]
async fn executor_failures_and_panics_become_error_results() {
    let fx = Fixture::new();
    let failing: Arc<dyn Tool> =
        Arc::new(Scripted { name: "fail", run: Box::new(|_| Err(ToolError::new("disk on fire"))) });
    let panicking: Arc<dyn Tool> = Arc::new(Scripted { name: "boom", run: Box::new(|_| panic!("kaboom")) });
    let registry = registry_with(vec![failing, panicking]);

    let failed = registry.execute("fail", r#"{"text": "x"}"#, &fx.ctx).await;
    assert_eq!(
        failed,
        ToolCallOutcome {
            content: "Tool error (fail): disk on fire".into(),
            model_content: "Tool error (fail): disk on fire".into(),
            images: vec![],
            is_error: true,
            ends_task: None,
        }
    );
    let crashed = registry.execute("boom", r#"{"text": "x"}"#, &fx.ctx).await;
    assert!(crashed.is_error);
    assert_eq!(crashed.content, "Tool error (boom): the tool crashed: kaboom");
}

#[tokio::test]
async fn custom_tools_override_profile_tools_latest_wins() {
    let fx = Fixture::new();
    let mut registry = profile_tools(ProfileKind::OpenAi, &ToolSetOptions::default());
    let before = registry.names();
    let replaced = registry.register(echo("shell"));
    assert!(replaced.is_some());
    assert_eq!(registry.names(), before, "the override keeps the tool's place");
    let outcome = registry.execute("shell", r#"{"text": "custom"}"#, &fx.ctx).await;
    assert_eq!(outcome.content, "custom");
    assert!(registry.unregister("shell").is_some());
    assert!(registry.get("shell").is_none());
}

#[tokio::test]
async fn output_is_truncated_for_the_model_but_kept_whole() {
    let fx = Fixture::new();
    let big: Arc<dyn Tool> = Arc::new(Scripted {
        name: "read_file",
        run: Box::new(|_| Ok(ToolOutput::text("x".repeat(100_000)))),
    });
    let mut registry = registry_with(vec![big]);
    let outcome = registry.execute("read_file", r#"{"text": "a"}"#, &fx.ctx).await;
    assert_eq!(outcome.content.len(), 100_000);
    assert!(
        outcome.model_content.contains("[WARNING: Tool output was truncated. 50000 characters were removed")
    );

    registry
        .set_truncation(TruncationPolicy::new([("read_file".to_string(), 1_000)].into(), Default::default()));
    let outcome = registry.execute("read_file", r#"{"text": "a"}"#, &fx.ctx).await;
    assert!(outcome.model_content.contains("99000 characters were removed from the middle"));
}

/// Each call waits until both have started, so the batch only finishes when run concurrently;
/// the second call finishes first, yet results come back in call order.
struct Rendezvous {
    barrier: Arc<Barrier>,
    second_done: Arc<Notify>,
}

#[async_trait]
impl Tool for Rendezvous {
    fn name(&self) -> &str {
        "rendezvous"
    }
    fn description(&self) -> &str {
        "waits for its sibling"
    }
    fn read_only(&self) -> bool {
        true
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.barrier.wait().await;
        let label = args["label"].as_str().unwrap_or_default().to_string();
        if label == "first" {
            self.second_done.notified().await;
        } else {
            self.second_done.notify_one();
        }
        Ok(ToolOutput::text(format!("{label} ran as {}", ctx.call_id)))
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::from_text(id, name, arguments)
}

#[tokio::test]
async fn parallel_batch_runs_concurrently_and_returns_results_in_call_order() {
    let fx = Fixture::new();
    let tool: Arc<dyn Tool> =
        Arc::new(Rendezvous { barrier: Arc::new(Barrier::new(2)), second_done: Arc::new(Notify::new()) });
    let registry = registry_with(vec![tool]);
    let calls =
        [call("c1", "rendezvous", r#"{"label":"first"}"#), call("c2", "rendezvous", r#"{"label":"second"}"#)];
    let finished = Mutex::new(Vec::new());
    let observe = |event: BatchEvent<'_>| {
        if let BatchEvent::Finished { index, .. } = event {
            finished.lock().unwrap().push(index);
        }
    };
    let outcomes = registry.execute_batch(&calls, &fx.ctx, BatchMode::Parallel, &observe).await;
    let contents: Vec<_> = outcomes.iter().map(|o| o.content.as_str()).collect();
    assert_eq!(contents, ["first ran as c1", "second ran as c2"]);
    assert_eq!(*finished.lock().unwrap(), [1, 0], "the second call finished first");
}

/// Logs when it starts and ends; reads stay busy a moment so overlap would show.
struct Logged {
    name: &'static str,
    read_only: bool,
    log: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Tool for Logged {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "logs its start and end"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]})
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let label = args["label"].as_str().unwrap_or_default().to_string();
        self.log.lock().unwrap().push(format!("{label}+"));
        tokio::time::sleep(std::time::Duration::from_millis(if self.read_only { 40 } else { 5 })).await;
        self.log.lock().unwrap().push(format!("{label}-"));
        Ok(ToolOutput::text(label))
    }
}

#[tokio::test]
async fn parallel_batch_runs_a_changing_call_alone_after_every_earlier_call() {
    let fx = Fixture::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let read: Arc<dyn Tool> = Arc::new(Logged { name: "look", read_only: true, log: Arc::clone(&log) });
    let write: Arc<dyn Tool> = Arc::new(Logged { name: "change", read_only: false, log: Arc::clone(&log) });
    let registry = registry_with(vec![read, write]);
    let calls = [
        call("1", "look", r#"{"label":"r1"}"#),
        call("2", "look", r#"{"label":"r2"}"#),
        call("3", "change", r#"{"label":"w3"}"#),
        call("4", "change", r#"{"label":"w4"}"#),
        call("5", "look", r#"{"label":"r5"}"#),
        call("6", "look", r#"{"label":"r6"}"#),
    ];
    let outcomes = registry.execute_batch(&calls, &fx.ctx, BatchMode::Parallel, &|_| {}).await;
    let contents: Vec<_> = outcomes.iter().map(|o| o.content.as_str()).collect();
    assert_eq!(contents, ["r1", "r2", "w3", "w4", "r5", "r6"], "results in call order");
    assert_eq!(
        *log.lock().unwrap(),
        ["r1+", "r2+", "r1-", "r2-", "w3+", "w3-", "w4+", "w4-", "r5+", "r6+", "r5-", "r6-"],
        "reads together, each change alone and in order"
    );
}

#[tokio::test]
async fn sequential_batch_keeps_order() {
    let fx = Fixture::new();
    let registry = registry_with(vec![echo("echo")]);
    let calls =
        [call("a", "echo", r#"{"text":"1"}"#), call("b", "nope", "{}"), call("c", "echo", r#"{"text":"3"}"#)];
    let outcomes = registry.execute_batch(&calls, &fx.ctx, BatchMode::Sequential, &|_| {}).await;
    let summary: Vec<_> = outcomes.iter().map(|o| (o.content.as_str(), o.is_error)).collect();
    assert_eq!(summary, [("1", false), ("Unknown tool: nope. Available tools: echo.", true), ("3", false)]);
}

#[tokio::test]
async fn one_call_per_step_mode_reports_extra_calls_as_not_executed() {
    let fx = Fixture::new();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&ran);
    let recorder: Arc<dyn Tool> = Arc::new(Scripted {
        name: "record",
        run: Box::new(move |args| {
            log.lock().unwrap().push(args["text"].as_str().unwrap_or_default().to_string());
            Ok(ToolOutput::text("done"))
        }),
    });
    let registry = registry_with(vec![recorder]);
    let calls = [call("a", "record", r#"{"text":"1"}"#), call("b", "record", r#"{"text":"2"}"#)];
    let outcomes = registry.execute_batch(&calls, &fx.ctx, BatchMode::FirstOnly, &|_| {}).await;
    assert_eq!(*ran.lock().unwrap(), ["1"]);
    assert!(!outcomes[0].is_error);
    assert!(outcomes[1].is_error);
    assert_eq!(
        outcomes[1].content,
        "Tool call record was not executed: only one tool call is executed per step. \
         Call it again on its own if it is still needed."
    );
}

#[tokio::test]
async fn cancelled_turns_do_not_start_tools() {
    let fx = Fixture::new();
    let registry = registry_with(vec![echo("echo")]);
    fx.ctx.cancel.cancel();
    let outcome = registry.execute("echo", r#"{"text":"x"}"#, &fx.ctx).await;
    assert!(outcome.is_error && outcome.content.contains("cancelled"));
}

/// A tool whose schema is an object at the root but does not compile.
struct BadSchema;

#[async_trait]
impl Tool for BadSchema {
    fn name(&self) -> &str {
        "bad"
    }
    fn description(&self) -> &str {
        "a tool with a broken schema"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": 5}}})
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ran"))
    }
}

#[tokio::test]
async fn a_tool_whose_schema_does_not_compile_is_never_called_and_the_others_still_work() {
    let fx = Fixture::new();
    let registry = registry_with(vec![Arc::new(BadSchema), echo("echo")]);
    for _ in 0..2 {
        let outcome = registry.execute("bad", r#"{"text":"x"}"#, &fx.ctx).await;
        assert!(outcome.is_error);
        assert!(
            outcome.content.starts_with("Tool bad cannot be called: its parameter schema is invalid ("),
            "{}",
            outcome.content
        );
    }
    let outcome = registry.execute("echo", r#"{"text":"x"}"#, &fx.ctx).await;
    assert_eq!((outcome.is_error, outcome.content.as_str()), (false, "x"));
}

#[test]
fn every_profile_tool_has_a_valid_object_schema() {
    for profile in [ProfileKind::OpenAi, ProfileKind::Anthropic, ProfileKind::Gemini] {
        let registry = profile_tools(profile, &ToolSetOptions::default());
        for definition in registry.definitions() {
            assert_eq!(definition.parameters["type"], "object", "{}", definition.name);
            assert!(jsonschema::validator_for(&definition.parameters).is_ok(), "{}", definition.name);
            // The registry compiles tool schemas as draft 7.
            assert!(jsonschema::draft7::meta::is_valid(&definition.parameters), "{}", definition.name);
            assert!(!definition.description.is_empty());
        }
    }
}

#[test]
fn profiles_register_their_reference_agents_tools() {
    let names = |p| profile_tools(p, &ToolSetOptions::default()).names();
    for tool in ["read_file", "shell", "grep", "glob", "codebase_search"] {
        assert!(names(ProfileKind::OpenAi).contains(&tool.to_string()));
        assert!(names(ProfileKind::Anthropic).contains(&tool.to_string()));
        assert!(names(ProfileKind::Gemini).contains(&tool.to_string()));
    }
    assert!(names(ProfileKind::Gemini).contains(&"read_many_files".to_string()));
    assert!(names(ProfileKind::Gemini).contains(&"list_dir".to_string()));
    let gemini_read =
        profile_tools(ProfileKind::Gemini, &ToolSetOptions::default()).get("read_file").unwrap();
    assert_eq!(gemini_read.parameters()["required"], json!(["absolute_path"]));
    let openai_read =
        profile_tools(ProfileKind::OpenAi, &ToolSetOptions::default()).get("read_file").unwrap();
    assert_eq!(openai_read.parameters()["required"], json!(["file_path"]));
}

/// A consumer-written environment: commands "run" by echoing them back.
struct EchoEnvironment {
    cwd: PathBuf,
    seen: Mutex<Vec<ExecRequest>>,
}

#[async_trait]
impl ExecutionEnvironment for EchoEnvironment {
    async fn read_file(&self, _: &Path, _: Option<usize>, _: Option<usize>) -> Result<String, ExecError> {
        Ok(String::new())
    }
    async fn read_bytes(&self, _: &Path, _: u64) -> Result<Arc<[u8]>, ExecError> {
        Ok(Arc::from([]))
    }
    async fn file_equals(&self, _: &Path, expected: &[u8]) -> Result<bool, ExecError> {
        Ok(expected.is_empty())
    }
    async fn write_file(&self, _: &Path, _: &str) -> Result<(), ExecError> {
        Err(ExecError::ReadOnly)
    }
    async fn create_file(&self, _: &Path, _: &str, _: Option<u32>) -> Result<(), ExecError> {
        Err(ExecError::ReadOnly)
    }
    async fn remove_file(&self, _: &Path) -> Result<(), ExecError> {
        Err(ExecError::ReadOnly)
    }
    async fn stat(&self, _: &Path) -> Result<Option<FileStat>, ExecError> {
        Ok(None)
    }
    async fn file_exists(&self, _: &Path) -> bool {
        false
    }
    async fn list_directory(&self, _: &Path, _: usize) -> Result<Vec<DirEntry>, ExecError> {
        Ok(Vec::new())
    }
    async fn exec_command(&self, request: ExecRequest) -> Result<ExecResult, ExecError> {
        let stdout = format!("remote: {}\n", request.command);
        let timeout_ms = request.timeout_ms;
        self.seen.lock().unwrap().push(request);
        Ok(ExecResult { stdout, timeout_ms, ..ExecResult::default() })
    }
    async fn grep(&self, _: &str, _: &Path, _: GrepOptions) -> Result<GrepResult, ExecError> {
        Ok(GrepResult::default())
    }
    async fn glob(&self, _: &str, _: &Path) -> Result<Vec<PathBuf>, ExecError> {
        Ok(Vec::new())
    }
    fn resolve_path(&self, path: &Path) -> Result<PathBuf, ExecError> {
        Ok(self.cwd.join(path))
    }
    fn working_directory(&self) -> &Path {
        &self.cwd
    }
    fn platform(&self) -> String {
        "wasm".into()
    }
    fn os_version(&self) -> String {
        "test".into()
    }
}

#[tokio::test]
async fn consumers_can_plug_in_their_own_execution_environment() {
    let mut fx = Fixture::new();
    let env = Arc::new(EchoEnvironment { cwd: fx.root().to_path_buf(), seen: Mutex::new(Vec::new()) });
    fx.ctx.env = env.clone();
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(ShellTool::with_default_timeout_ms(120_000)));
    let outcome = registry.execute("shell", r#"{"command": "make test"}"#, &fx.ctx).await;
    assert_eq!(without_duration(&outcome.content), "remote: make test\nExit code: 0");
    assert_eq!(env.seen.lock().unwrap()[0].timeout_ms, 120_000, "the profile's default timeout applies");
}

#[tokio::test]
async fn other_agents_names_for_tools_and_arguments_reach_the_tool_meant() {
    let fx = Fixture::new();
    std::fs::write(fx.dir.path().join("a.txt"), "alpha\n").unwrap();
    let gemini = profile_tools(ProfileKind::Gemini, &ToolSetOptions::default());
    // The loop spec's `file_path` on gemini-cli's `absolute_path` read_file.
    let read = gemini.execute("read_file", r#"{"file_path": "a.txt"}"#, &fx.ctx).await;
    assert!(!read.is_error, "{}", read.content);
    assert!(read.content.contains("alpha"));
    // gemini-cli's name for the shell runs shell (`edit_file` → `replace`: tests/cli/tool.rs).
    let shell = gemini.execute("run_shell_command", r#"{"command": "echo hi"}"#, &fx.ctx).await;
    assert!(!shell.is_error && shell.content.contains("hi"), "{}", shell.content);
    // A declared parameter is never renamed away: a stray alias next to it is still refused.
    let anthropic = profile_tools(ProfileKind::Anthropic, &ToolSetOptions::default());
    let both =
        anthropic.execute("read_file", r#"{"file_path": "a.txt", "absolute_path": "b.txt"}"#, &fx.ctx).await;
    assert!(both.is_error && both.content.contains("absolute_path"), "{}", both.content);
    // Names that are aliases of nothing registered stay unknown.
    let openai = profile_tools(ProfileKind::OpenAi, &ToolSetOptions::default());
    assert!(openai.execute("edit_file", "{}", &fx.ctx).await.content.starts_with("Unknown tool: edit_file."));
}
