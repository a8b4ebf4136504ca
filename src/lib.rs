//! agentls: a language server that hosts a coding agent inside any LSP editor.
//!
//! Dependency direction (see docs/ARCHITECTURE.md):
//! `lsp → session → {profiles, mcp, tools, llm, exec, workspace, config}`, `mcp → tools → {exec, workspace}`;
//! every host asks `policy` (above `workspace` and `config`) whether a command may run.
//! Only `lsp` imports LSP types; the agent core talks outward through its event stream and the
//! `EditorPort` / `ExecutionEnvironment` traits.

pub mod acp;
#[cfg(test)]
mod architecture;
pub mod checkpoint;
pub mod cli;
pub mod config;
pub mod exec;
pub mod llm;
pub mod logging;
pub mod lsp;
pub mod mcp;
pub mod policy;
pub mod profiles;
pub mod session;
pub mod store;
pub mod tools;
pub mod workspace;
