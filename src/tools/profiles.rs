//! Which tools each provider profile registers, with the parameter shapes and defaults of the
//! reference agent it is aligned with (codex for `openai`, Claude Code for `anthropic`,
//! gemini-cli for `gemini`).

use std::sync::{Arc, OnceLock};

use crate::config::ProfileKind;

use super::apply_patch::ApplyPatchTool;
use super::codebase_search::CodebaseSearchTool;
use super::edit_file::EditFileTool;
use super::glob::GlobTool;
use super::grep::GrepTool;
use super::list_dir::ListDirTool;
use super::python::PythonTool;
use super::read_file::{ReadFileShape, ReadFileTool};
use super::read_many_files::ReadManyFilesTool;
use super::registry::ToolRegistry;
use super::replace::ReplaceTool;
use super::shell::ShellTool;
use super::subagents::{CloseAgentTool, SendInputTool, SpawnAgentTool, WaitTool};
use super::submit::SubmitTool;
use super::write_file::WriteFileTool;

/// The shell timeout Claude Code uses when a call sets none. Sessions apply it as the profile's
/// default (see `ProfileKind::default_shell_timeout_ms`) unless the configuration sets another.
pub const ANTHROPIC_SHELL_TIMEOUT_MS: u64 = 120_000;

/// Choices that change how a profile's tools behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSetOptions {
    /// Turn on the read-before-edit guard where the profile uses it (Anthropic's edit_file).
    /// Off for one-shot runs such as `agentls tool`, where nothing could have been read first.
    pub read_before_edit: bool,
}

impl Default for ToolSetOptions {
    fn default() -> Self {
        Self { read_before_edit: true }
    }
}

/// The tools of `profile`, in the order the model sees them.
pub fn profile_tools(profile: ProfileKind, options: &ToolSetOptions) -> ToolRegistry {
    let guard = options.read_before_edit;
    let mut registry = ToolRegistry::new();
    match profile {
        ProfileKind::OpenAi => {
            registry.register(Arc::new(ReadFileTool::new(ReadFileShape::FilePath)));
            registry.register(Arc::new(ApplyPatchTool));
            registry.register(Arc::new(WriteFileTool::new(false)));
            registry.register(Arc::new(ShellTool::new()));
            registry.register(Arc::new(GrepTool));
            registry.register(Arc::new(GlobTool));
            registry.register(Arc::new(CodebaseSearchTool::new()));
        }
        ProfileKind::Anthropic => {
            registry.register(Arc::new(ReadFileTool::new(ReadFileShape::FilePath)));
            registry.register(Arc::new(WriteFileTool::new(guard)));
            registry.register(Arc::new(EditFileTool::new(guard)));
            // The 120 s default comes from the session's limits, so a configured default wins.
            registry.register(Arc::new(ShellTool::new()));
            registry.register(Arc::new(GrepTool));
            registry.register(Arc::new(GlobTool));
            registry.register(Arc::new(CodebaseSearchTool::new()));
        }
        ProfileKind::Gemini => {
            registry.register(Arc::new(ReadFileTool::new(ReadFileShape::AbsolutePath)));
            registry.register(Arc::new(ReadManyFilesTool));
            registry.register(Arc::new(WriteFileTool::new(false)));
            registry.register(Arc::new(ReplaceTool::new(false)));
            registry.register(Arc::new(ShellTool::new()));
            registry.register(Arc::new(GrepTool));
            registry.register(Arc::new(GlobTool));
            registry.register(Arc::new(ListDirTool));
            registry.register(Arc::new(CodebaseSearchTool::new()));
        }
        ProfileKind::Code => {
            registry.register(Arc::new(PythonTool::default()));
        }
    }
    // Spec §7: the coding profiles can delegate to subagents (a session at its depth limit drops
    // these); code mode's one tool stays `python`.
    if profile != ProfileKind::Code {
        registry.register(Arc::new(SpawnAgentTool));
        registry.register(Arc::new(SendInputTool));
        registry.register(Arc::new(WaitTool));
        registry.register(Arc::new(CloseAgentTool));
    }
    registry
}

/// Every tool agentls has, each under its name: what describes the calls of a history whose
/// session is not running (a stored one), as the session's own registry does for a live one.
pub fn catalogue() -> &'static ToolRegistry {
    static CATALOGUE: OnceLock<ToolRegistry> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        let mut all = ToolRegistry::new();
        for profile in ProfileKind::ALL {
            for tool in profile_tools(profile, &ToolSetOptions::default()).tools() {
                all.register(tool);
            }
        }
        all.register(Arc::new(SubmitTool));
        all
    })
}
