//! Integration tests, one binary per group (docs/ARCHITECTURE.md, "Testing"): the tools in process:
//! the registry, each tool, truncation, the execution environments, the edit conformance corpus and
//! the prompts that name the tools. Each module is one former test file; `tests/support` is the one
//! support module.

#[path = "../support/mod.rs"]
mod support;

mod edit_conformance;
mod environment;
mod exec_local;
mod prompts_match_tools;
mod python;
mod read_file;
mod registry;
mod search;
mod shell;
mod truncation;
