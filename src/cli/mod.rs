//! The command line: `serve` (default) | `acp` | `exec` | `tool` | `doctor` | `sessions` | `demo`.
//!
//! This module parses flags, builds the configuration layer they contribute, sets up logging
//! and hands off to the library. Only the CLI prints to stdout; in `serve` mode stdout is the
//! LSP wire and nothing here writes to it.

mod ask;
mod demo;
mod doctor;
mod exec;
mod mcp;
mod sessions;
mod tool;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::config::{
    Approval, Config, ConfigLayer, Env, LoadOptions, MIN_LOOP_DETECTION_WINDOW, ProfileKind, ProviderKind,
    ShellPermission,
};
use crate::llm::ReasoningEffort;

#[derive(Debug, Parser)]
#[command(name = "agentls", version, about = "A language server that hosts a coding agent in your editor")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve LSP over stdio (the default).
    Serve {
        /// Accepted for compatibility with editors that pass it; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
    },
    /// Serve the Agent Client Protocol over stdio (Zed, JetBrains, Neovim and Emacs ACP clients,
    /// acpx): newline-delimited JSON-RPC, logs to the log file.
    Acp,
    /// Run one headless task and stream the answer to stdout.
    #[command(after_help = exec::EXIT_CODES_HELP)]
    Exec(ExecArgs),
    /// Run one tool of a profile directly (no model) and print what the model would receive.
    Tool(ToolArgs),
    /// Show the resolved configuration; `--ping` sends one tiny request.
    Doctor(DoctorArgs),
    /// Trust a folder, so its project files (`.agentls.toml`) may choose providers and hosts,
    /// loosen shell permission and name files and programs; list or remove trusted folders.
    Trust(TrustArgs),
    /// The configured MCP servers: `list` their state and tools, `tools NAME` one server's tools.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// List, show or remove stored sessions.
    Sessions {
        #[command(subcommand)]
        action: Option<SessionsAction>,
    },
    /// Play a recorded session through the real server and tools on a sample project (no key,
    /// no network).
    Demo(DemoArgs),
    /// The process guard (`exec::guard`): started by agentls itself, never by hand.
    #[command(name = "__guard", hide = true)]
    Guard,
}

/// Flags shared by commands that talk to a model.
#[derive(Debug, Args, Clone, Default)]
pub struct ModelFlags {
    /// anthropic | openai | gemini | openai-chat | replay
    #[arg(long, value_parser = parse_provider)]
    pub provider: Option<ProviderKind>,
    #[arg(long)]
    pub model: Option<String>,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub model: ModelFlags,
    /// Working directory (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Print one JSON event object per line instead of the answer text.
    #[arg(long)]
    pub json: bool,
    /// auto: write edits to disk; deny: refuse them (and shell commands, unless --shell is given).
    #[arg(long, value_parser = parse_approval)]
    pub approval: Option<Approval>,
    /// Shell commands (`[shell] permission`): ask (on the terminal; refused when there is none),
    /// allow, or deny.
    #[arg(long = "shell", value_name = "POLICY", value_parser = parse_shell)]
    pub shell: Option<ShellPermission>,
    /// Run commands that start with PREFIX without asking (adds to `[shell] allow`; repeatable),
    /// e.g. --allow-command 'cargo test'.
    #[arg(long = "allow-command", value_name = "PREFIX")]
    pub allow_command: Vec<String>,
    #[arg(long, value_parser = parse_effort)]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Maximum model turns (0 = unlimited).
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// The agent profile: openai | anthropic | gemini | code (default: the provider's own).
    #[arg(long, value_parser = parse_profile)]
    pub profile: Option<ProfileKind>,
    /// Code mode: the type the task's answer must have (`code.return_type`, default `str`).
    #[arg(long, value_name = "TYPE")]
    pub return_type: Option<String>,
    #[command(flatten)]
    pub agent_loop: LoopFlags,
    /// The task. `-` reads it from stdin.
    pub prompt: String,
}

/// Flags that tune the agent loop; each overrides the configuration key named in its help.
#[derive(Debug, Args, Clone, Default)]
pub struct LoopFlags {
    /// Run only the first tool call of each model step and ask the provider for one call per
    /// step (`one_call_per_step`; `--one-call-per-step=false` overrides a configuration file).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub one_call_per_step: Option<bool>,
    /// Warn the model when its recent tool calls repeat one pattern (`enable_loop_detection`;
    /// `--loop-detection=false` turns it off).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub loop_detection: Option<bool>,
    /// How many consecutive tool calls loop detection looks at (`loop_detection_window`, at least 2).
    #[arg(long, value_name = "CALLS", value_parser = parse_loop_window)]
    pub loop_detection_window: Option<usize>,
    /// The model's context window in tokens, for the 80% usage warning and automatic compaction
    /// (`context_window_tokens`).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub context_window: Option<u64>,
    /// Compact the conversation when it fills `[context] auto_compact_percent` of the context
    /// window (`context.auto_compact`; `--auto-compact=false` turns it off).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub auto_compact: Option<bool>,
    /// Offer the `submit(answer)` tool and work until the model calls it; a reply without tool
    /// calls gets the fixed continue message (`submit_mode`; `--submit=false` turns it off).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub submit: Option<bool>,
    /// Maximum model requests for the task (`max_steps`, 0 = unlimited).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// Wall-clock limit of the task in seconds (`time_limit_secs`, 0 = unlimited).
    #[arg(long, value_name = "SECS")]
    pub time_limit: Option<u64>,
}

impl LoopFlags {
    pub fn layer(&self) -> ConfigLayer {
        ConfigLayer {
            one_call_per_step: self.one_call_per_step,
            enable_loop_detection: self.loop_detection,
            loop_detection_window: self.loop_detection_window,
            context_window_tokens: self.context_window,
            submit_mode: self.submit,
            max_steps: self.max_steps,
            time_limit_secs: self.time_limit,
            context: self
                .auto_compact
                .map(|on| crate::config::ContextLayer { auto_compact: Some(on), ..Default::default() }),
            ..Default::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct ToolArgs {
    /// Tool name, e.g. apply_patch, edit_file, write_file, read_file, grep.
    pub name: String,
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Profile whose tool set is used: openai | anthropic | gemini.
    #[arg(long)]
    pub profile: Option<String>,
    /// Arguments as a JSON object, or `-` to read them from stdin.
    pub args: String,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub model: ModelFlags,
    /// Send one tiny request and print the reply and latency.
    #[arg(long)]
    pub ping: bool,
    /// Print the final system prompt and where each of its sections came from.
    #[arg(long)]
    pub prompt: bool,
    /// The profile whose prompt `--prompt` prints (default: the configured or provider's one).
    #[arg(long, value_parser = parse_profile, requires = "prompt")]
    pub profile: Option<ProfileKind>,
    /// Working directory whose project files `--prompt` uses (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The folder to trust (default: the current directory); it covers its subfolders.
    #[arg(conflicts_with = "list")]
    pub dir: Option<PathBuf>,
    /// List the trusted folders.
    #[arg(long)]
    pub list: bool,
    /// Stop trusting DIR.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["list", "dir"])]
    pub remove: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Make the sample project in this folder (new, empty, or from a previous demo) instead of
    /// a new temporary one.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Open the session in Neovim with the agentls plugin instead of printing it.
    #[arg(long)]
    pub nvim: bool,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Every configured server: its state, how many tools, what it runs, its last error.
    List {
        /// The workspace whose project files count (default: the current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// The tools of server NAME as the model sees them (`mcp__NAME__tool`).
    Tools {
        name: String,
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    List,
    Show {
        id: String,
    },
    Rm {
        id: String,
    },
    /// The turns of a session that changed files, as its checkpoints recorded them.
    Turns {
        id: String,
    },
    /// Reverts the latest turn of a session that changed files (or `--turn N` and every later
    /// one), keeping edits made since; a conflict changes nothing.
    Undo {
        id: String,
        #[arg(long)]
        turn: Option<u64>,
    },
    /// Re-applies the turns the latest undo reverted.
    Redo {
        id: String,
    },
}

fn parse_provider(s: &str) -> Result<ProviderKind, String> {
    s.parse()
}
fn parse_profile(s: &str) -> Result<ProfileKind, String> {
    s.parse()
}
fn parse_approval(s: &str) -> Result<Approval, String> {
    match s.parse()? {
        Approval::Review => Err("`review` needs an editor; use auto or deny".into()),
        a => Ok(a),
    }
}
fn parse_shell(s: &str) -> Result<ShellPermission, String> {
    s.parse()
}
fn parse_effort(s: &str) -> Result<ReasoningEffort, String> {
    s.parse()
}
fn parse_loop_window(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= MIN_LOOP_DETECTION_WINDOW => Ok(n),
        _ => Err(format!(
            "expected a number of tool calls of at least {MIN_LOOP_DETECTION_WINDOW}; \
             to turn loop detection off, pass --loop-detection=false"
        )),
    }
}

impl ModelFlags {
    pub fn layer(&self) -> ConfigLayer {
        ConfigLayer { provider: self.provider, model: self.model.clone(), ..Default::default() }
    }
}

/// Loads configuration for a CLI command rooted at `cwd`.
pub fn load_config(env: &Env, cwd: Option<PathBuf>, overrides: ConfigLayer) -> Result<Config, String> {
    let root = match cwd {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    Config::load(env, LoadOptions { project_root: Some(root), overrides, ..Default::default() })
        .map_err(|e| e.to_string())
}

pub fn main() -> ExitCode {
    // The editor's invocation (`agentls`, `agentls serve [--stdio]`) skips building the parser
    // of every other command: a cold start of the server touches only the server's code.
    let command = if is_plain_serve(std::env::args_os().skip(1)) {
        Command::Serve { stdio: true }
    } else {
        Cli::parse().command.unwrap_or(Command::Serve { stdio: true })
    };
    let env = Env::from_process();
    // Whatever this process starts ends with it, even when it is killed.
    if let Ok(program) = std::env::current_exe() {
        crate::exec::guard::enable(program);
    }
    let result = match command {
        Command::Serve { stdio: _ } => serve(env),
        Command::Acp => acp(env),
        Command::Exec(args) => Ok(exec::run(&env, args)),
        Command::Tool(args) => tool::run(&env, args),
        Command::Doctor(args) => doctor::run(&env, args),
        Command::Trust(args) => trust::run(&env, args),
        Command::Mcp { action } => mcp::run(&env, action),
        Command::Sessions { action } => sessions::run(&env, action),
        Command::Demo(args) => demo::run(args),
        Command::Guard => {
            crate::exec::guard::run();
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("agentls: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Whether the arguments (after the program name) are exactly one of the server's
/// invocations without options clap would have to check: none, `serve`, `serve --stdio`.
fn is_plain_serve(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    let args: Vec<_> = args.take(3).collect();
    matches!(
        args.iter().map(|a| a.to_str()).collect::<Vec<_>>().as_slice(),
        [] | [Some("serve")] | [Some("serve"), Some("--stdio")]
    )
}

/// `agentls serve`: logs go to the log file (stdout is the LSP wire).
fn serve(env: Env) -> Result<ExitCode, String> {
    let config = load_config(&env, None, ConfigLayer::default()).unwrap_or_else(|e| {
        eprintln!("agentls: {e}; starting with defaults");
        Config::defaults()
    });
    crate::logging::init(&config, &env, true);
    let ended = crate::lsp::run_stdio(crate::lsp::ServerOptions::from_env(env))
        .map_err(|e| format!("cannot start the language server runtime: {e}"))?;
    Ok(match ended {
        crate::lsp::Ended::AfterShutdown => ExitCode::SUCCESS,
        crate::lsp::Ended::WithoutShutdown => ExitCode::FAILURE,
    })
}

/// `agentls acp`: logs go to the log file (stdout is the ACP wire).
fn acp(env: Env) -> Result<ExitCode, String> {
    let config = load_config(&env, None, ConfigLayer::default()).unwrap_or_else(|e| {
        eprintln!("agentls: {e}; starting with defaults");
        Config::defaults()
    });
    crate::logging::init(&config, &env, true);
    crate::acp::run(env).map_err(|e| format!("cannot start the ACP runtime: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<std::ffi::OsString> {
        list.iter().map(Into::into).collect()
    }

    #[test]
    fn the_plain_serve_shortcut_agrees_with_the_parser() {
        for plain in [&[][..], &["serve"], &["serve", "--stdio"]] {
            assert!(is_plain_serve(args(plain).into_iter()), "{plain:?}");
            let parsed = Cli::try_parse_from(std::iter::once("agentls").chain(plain.iter().copied()))
                .expect("clap parses it");
            assert!(matches!(
                parsed.command.unwrap_or(Command::Serve { stdio: true }),
                Command::Serve { .. }
            ));
        }
        for other in [&["serve", "--help"][..], &["--version"], &["serve", "--stdio", "x"], &["exec", "hi"]] {
            assert!(!is_plain_serve(args(other).into_iter()), "{other:?} goes through clap");
        }
    }
}
