//! Integration tests, one binary per group (docs/ARCHITECTURE.md, "Testing"): the command line as
//! processes: `agentls exec`, `doctor`, `demo`, `tool`, and the faults (processes, paths, provider)
//! seen through `agentls exec`. Each module is one former test file; `tests/support` is the one
//! support module.

#[path = "../support/mod.rs"]
mod support;

mod demo;
mod doctor;
mod exec;
mod faults_paths;
mod faults_process;
mod faults_provider;
mod tool;
