//! Where tools run: the [`ExecutionEnvironment`] trait (spec §4) and its local implementation.
//! Placeholder: the full interface is filled in by the execution-environment work.

/// Files, processes and search, wherever they live (local by default).
pub trait ExecutionEnvironment: Send + Sync {}
