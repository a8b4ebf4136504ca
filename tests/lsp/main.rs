//! Integration tests, one binary per group (docs/ARCHITECTURE.md, "Testing"): the language server
//! over real JSON-RPC: in process and as the real binary over stdio (protocol, flows, sessions,
//! review, undo, faults). Each module is one former test file; `tests/support` is the one support
//! module.

#[path = "../support/mod.rs"]
mod support;

mod faults;
mod flows;
mod protocol;
mod review;
mod sessions;
mod stdio;
mod undo;
