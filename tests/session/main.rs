//! Integration tests, one binary per group (docs/ARCHITECTURE.md, "Testing"): the agent loop
//! against the loopback mock provider: sessions, compaction, prompts, instructions, subagents,
//! processes, the profile parity matrix, code mode and codebase search. Each module is one former
//! test file; `tests/support` is the one support module.

#[path = "../support/mod.rs"]
mod support;

mod agent_loop;
mod code_mode;
mod codebase_search;
mod compaction;
mod instructions;
mod parity_matrix;
mod processes;
mod prompts;
mod subagents;
mod submit;
