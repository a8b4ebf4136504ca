//! Integration tests, one binary per group (docs/ARCHITECTURE.md, "Testing"): MCP servers:
//! configured for `agentls exec` and for the language server. Each module is one former test file;
//! `tests/support` is the one support module.

#[path = "../support/mod.rs"]
mod support;

mod exec;
mod lsp;
