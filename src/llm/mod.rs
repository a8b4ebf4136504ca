//! The unified LLM client: provider-neutral types, one adapter per provider dialect.

pub mod types;

pub use types::ReasoningEffort;
