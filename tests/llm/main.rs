//! Integration tests, one binary per group (docs/ARCHITECTURE.md, "Testing"): the provider clients
//! against the loopback mock provider in each of the four wire dialects. Each module is one former
//! test file; `tests/support` is the one support module.

#[path = "../support/mod.rs"]
mod support;

mod anthropic;
mod client;
mod gemini;
mod openai;
mod openai_chat;
mod tool_schemas;
