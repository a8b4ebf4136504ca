//! Integration tests, one binary per group (docs/ARCHITECTURE.md, "Testing"): the Agent Client
//! Protocol: `agentls acp` over stdio, and real ACP clients driving it. Each module is one former
//! test file; `tests/support` is the one support module.

#[path = "../support/mod.rs"]
mod support;

mod clients;
mod stdio;
