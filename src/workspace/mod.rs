//! What the agent reads and writes: open buffers (document store) before the disk, change sets,
//! hunks, diffs, three-way rebase, and the [`EditorPort`] seam to the editor.
//! Placeholder types below are filled in by the editing-engine work.

mod port;

pub use port::{EditorPort, PermissionDecision, PermissionRequest, PortError};

/// The agent's view of files: open buffers first, the disk otherwise.
#[derive(Debug, Default)]
pub struct Workspace {}

/// Files read in a session and the snapshot each was read at (read-before-edit guard).
#[derive(Debug, Default)]
pub struct ReadTracker {}

/// A proposed set of file operations with hunks; never applied by the tool that built it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeSet {}

/// What happened to a proposed change set.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeOutcome {}
