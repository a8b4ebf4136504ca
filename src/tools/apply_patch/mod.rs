//! The `apply_patch` tool (OpenAI profile): a v4a patch becomes one [`ChangeSet`] proposed to the
//! editor. Invariant: every operation of the patch is checked against the workspace (files exist
//! or not as the patch says, every hunk applies) before anything is proposed, so a patch applies
//! completely or not at all; Add and Move never overwrite a file the patch did not delete first.

mod apply;
mod parser;
pub(crate) mod seek;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

pub use apply::{ApplyError, Changes, apply_chunks, apply_chunks_deferred};
pub use parser::{Chunk, HunkLine, ParseError, PatchOp, parse_patch};

use super::summary::CallArgs;
use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::exec::{ExecutionEnvironment, FileKind, SharedStrBuilder};
use crate::workspace::{ChangeSet, FileChange, Snapshot, Workspace, shown_path};

const DESCRIPTION: &str = "Apply code changes using the patch format. Supports creating, deleting, \
and modifying files in a single operation. The patch is applied completely or not at all.

*** Begin Patch
*** Add File: path/new.py
+line of the new file
*** Delete File: path/old.py
*** Update File: path/file.py
*** Move to: path/renamed.py   (optional)
@@ def some_function():        (a line before the change, to locate it; optional)
 context line (space prefix; show 3 lines of context above and below each change)
-line to remove
+line to add
*** End of File                (optional: the hunk ends at the end of the file)
*** End Patch

Paths are relative to the working directory. Hunks of one file must be in file order and must \
not overlap. Add File refuses to overwrite an existing file unless the same patch deletes it first.";

pub struct ApplyPatchTool;

#[async_trait]
impl Tool for ApplyPatchTool {
    fn name(&self) -> &str {
        "apply_patch"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "patch": { "type": "string", "description": "The patch in v4a format, from `*** Begin Patch` to `*** End Patch`." }
            },
            "required": ["patch"],
            "additionalProperties": false
        })
    }

    fn summary(&self, call: &CallArgs<'_>) -> String {
        let patch = call.str("patch").or_else(|| call.str("input")).unwrap_or_default();
        let files: Vec<String> = patch
            .lines()
            .filter_map(|l| {
                ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                    .iter()
                    .find_map(|p| l.strip_prefix(p))
            })
            .map(|path| call.shown(path))
            .collect();
        format!("apply_patch {}", files.join(", "))
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut args = args;
        let key = if args.get("patch").is_some() { "patch" } else { "input" };
        let patch = match args.get_mut(key).map(Value::take) {
            Some(Value::String(patch)) => patch,
            _ => {
                return Err(ToolError::new(
                    "missing `patch`: pass the patch text as the `patch` string argument",
                ));
            }
        };
        let plan = plan_owned_patch(patch, &ctx.workspace, &*ctx.env, &ctx.cwd)
            .await
            .map_err(|error| ToolError::new(error.to_string()))?;
        let change = ChangeSet::new(plan.files).map_err(|error| ToolError::new(error.to_string()))?;
        let outcome = ctx.editor.propose(change).await.map_err(|error| ToolError::new(error.to_string()))?;
        if let Some(refusal) = outcome.refusal_message() {
            return Err(ToolError::new(refusal));
        }
        ctx.reads.record_outcome(&outcome);
        let mut content = String::from("Success. Updated the following files:");
        for line in &plan.summary {
            content.push('\n');
            content.push_str(line);
        }
        content.push_str(&outcome.notes());
        Ok(ToolOutput::text(content))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("{0}\nNothing was changed. Fix the patch and send it again.")]
    Parse(#[from] ParseError),
    #[error("{0}\nNothing was changed. Read the file again and send a corrected patch.")]
    Apply(#[from] ApplyError),
    #[error("{0}\nNothing was changed.")]
    Workspace(String),
    #[error("{0}\nNothing was changed.")]
    Refused(String),
}

/// A checked patch: the file changes to propose and the `A/M/D path` lines to report.
#[derive(Debug)]
pub struct PatchPlan {
    pub files: Vec<FileChange>,
    pub summary: Vec<String>,
}

/// The state of one path while the patch's operations are replayed in order.
struct Entry {
    display: String,
    original: Option<Snapshot>,
    /// The text now: the snapshot's own text until an operation produces another.
    current: Option<Arc<str>>,
    /// The changes from `original` to `current` when exactly one update produced `current`.
    changes: Option<Changes>,
    /// Set when this path was moved away to another path by the patch.
    moved_to: Option<PathBuf>,
    /// Set when this path received a file moved from another path.
    moved_from: Option<PathBuf>,
}

/// Parses `patch` and replays it against the workspace (open buffers, and the files of `env`),
/// producing the change to propose.
pub async fn plan_patch(
    patch: &str,
    workspace: &Workspace,
    env: &dyn ExecutionEnvironment,
    cwd: &Path,
) -> Result<PatchPlan, PatchError> {
    Ok(replay_patch(patch, &Files { workspace, env }, cwd).await?.into_plan())
}

/// Like [`plan_patch`], releasing the patch text before the hunks are made: at the peak, memory
/// holds the patch, the files read and their new text, but never also the hunks.
pub async fn plan_owned_patch(
    patch: String,
    workspace: &Workspace,
    env: &dyn ExecutionEnvironment,
    cwd: &Path,
) -> Result<PatchPlan, PatchError> {
    let replayed = replay_patch(&patch, &Files { workspace, env }, cwd).await?;
    drop(patch);
    Ok(replayed.into_plan())
}

/// Where a patch reads the files it changes: open buffers first, the environment otherwise.
struct Files<'f> {
    workspace: &'f Workspace,
    env: &'f dyn ExecutionEnvironment,
}

/// Every path a patch names, resolved by the environment in one batch (each folder once), handed
/// out in the order the replay asks for them: an operation's path, then its `Move to`.
struct ResolvedPaths(std::vec::IntoIter<Result<PathBuf, String>>);

impl ResolvedPaths {
    fn new(ops: &[PatchOp<'_>], env: &dyn ExecutionEnvironment, cwd: &Path) -> Self {
        let mut named = Vec::new();
        for op in ops {
            named.push(cwd.join(op.path().trim()));
            if let PatchOp::Update { move_to: Some(to), .. } = op {
                named.push(cwd.join(to.trim()));
            }
        }
        let named: Vec<&Path> = named.iter().map(PathBuf::as_path).collect();
        let resolved: Vec<_> =
            env.resolve_paths(&named).into_iter().map(|result| result.map_err(|e| e.to_string())).collect();
        Self(resolved.into_iter())
    }

    fn next(&mut self) -> Result<PathBuf, PatchError> {
        match self.0.next() {
            Some(resolved) => resolved.map_err(PatchError::Workspace),
            None => Err(PatchError::Workspace("internal error: a patch path was not resolved".into())),
        }
    }
}

/// Every touched path's final state, in first-touched order (owns no part of the patch).
struct Replayed {
    entries: HashMap<PathBuf, Entry>,
    order: Vec<PathBuf>,
    summary: Vec<String>,
}

impl Replayed {
    fn into_plan(self) -> PatchPlan {
        PatchPlan { files: file_changes(self.entries, &self.order), summary: self.summary }
    }
}

async fn replay_patch(patch: &str, files: &Files<'_>, cwd: &Path) -> Result<Replayed, PatchError> {
    let ops = parse_patch(patch)?;
    if ops.is_empty() {
        return Err(PatchError::Refused("The patch contains no file operations.".into()));
    }
    let mut entries: HashMap<PathBuf, Entry> = HashMap::new();
    let mut order: Vec<PathBuf> = Vec::new();
    let mut summary = Vec::new();
    let mut paths = ResolvedPaths::new(&ops, files.env, cwd);
    for op in &ops {
        let path = paths.next()?;
        load(&mut entries, &mut order, files, &path, &shown_path(std::path::Path::new(op.path()), &[cwd]))
            .await?;
        match op {
            PatchOp::Add { path: display, lines, .. } => {
                let entry = entries.get_mut(&path).expect("loaded");
                if entry.current.is_some() {
                    return Err(PatchError::Refused(format!(
                        "Add File {display}: the file already exists; refusing to overwrite it. Use `*** Update File: {display}` \
                         to change it, or `*** Delete File: {display}` before adding it."
                    )));
                }
                let mut text = SharedStrBuilder::with_len(lines.iter().map(|line| line.len() + 1).sum());
                for line in lines {
                    text.push_str(line);
                    text.push_str("\n");
                }
                entry.current = Some(text.finish());
                entry.changes = None;
                summary.push(format!("A {display}"));
            }
            PatchOp::Delete { path: display, .. } => {
                let entry = entries.get_mut(&path).expect("loaded");
                if entry.current.take().is_none() {
                    return Err(PatchError::Refused(format!(
                        "Delete File {display}: no such file (or an earlier operation of this patch removed it)."
                    )));
                }
                entry.changes = None;
                summary.push(format!("D {display}"));
            }
            PatchOp::Update { path: display, move_to, chunks, .. } => {
                let entry = entries.get_mut(&path).expect("loaded");
                let Some(current) = entry.current.clone() else {
                    return Err(PatchError::Refused(format!(
                        "Update File {display}: no such file (or an earlier operation of this patch removed it); \
                         use `*** Add File: {display}` to create it."
                    )));
                };
                let (text, changes) = apply_chunks_deferred(&current, chunks, display)?;
                let first_update =
                    entry.original.as_ref().is_some_and(|original| Arc::ptr_eq(&original.text, &current))
                        && entry.moved_from.is_none();
                entry.changes = first_update.then_some(changes);
                let destination = match move_to {
                    Some(to) => Some((paths.next()?, *to)),
                    None => None,
                };
                match destination {
                    Some((to_path, to_display)) if to_path != path => {
                        load(
                            &mut entries,
                            &mut order,
                            files,
                            &to_path,
                            &shown_path(std::path::Path::new(to_display), &[cwd]),
                        )
                        .await?;
                        if entries[&to_path].current.is_some() {
                            return Err(PatchError::Refused(format!(
                                "Move to {to_display}: the file already exists; refusing to overwrite it. Delete it \
                                 earlier in the patch, or choose another name."
                            )));
                        }
                        let source = entries.get_mut(&path).expect("loaded");
                        let changes = source.changes.take();
                        source.current = None;
                        source.moved_to = Some(to_path.clone());
                        let target = entries.get_mut(&to_path).expect("loaded");
                        target.current = Some(text);
                        target.moved_from = Some(path.clone());
                        // Hunks against the source's text only describe a target that did not exist.
                        target.changes = if target.original.is_none() { changes } else { None };
                        summary.push(format!("M {to_display}"));
                    }
                    _ => {
                        entries.get_mut(&path).expect("loaded").current = Some(text);
                        summary.push(format!("M {display}"));
                    }
                }
            }
        }
    }
    Ok(Replayed { entries, order, summary })
}

async fn load(
    entries: &mut HashMap<PathBuf, Entry>,
    order: &mut Vec<PathBuf>,
    files: &Files<'_>,
    path: &Path,
    display: &str,
) -> Result<(), PatchError> {
    if entries.contains_key(path) {
        return Ok(());
    }
    let original = files
        .workspace
        .read_if_exists(files.env, path)
        .await
        .map_err(|error| PatchError::Workspace(error.to_string()))?;
    if original.is_none()
        && let Ok(Some(stat)) = files.env.stat(path).await
        && stat.kind == FileKind::Directory
    {
        return Err(PatchError::Refused(format!("{display} is a directory, not a file.")));
    }
    let current = original.as_ref().map(|snapshot| snapshot.text.clone());
    entries.insert(
        path.to_path_buf(),
        Entry {
            display: display.to_string(),
            original,
            current,
            changes: None,
            moved_to: None,
            moved_from: None,
        },
    );
    order.push(path.to_path_buf());
    Ok(())
}

/// The final state of every touched path as file changes against the workspace's current text.
fn file_changes(mut entries: HashMap<PathBuf, Entry>, order: &[PathBuf]) -> Vec<FileChange> {
    let mut files = Vec::new();
    for path in order {
        let Some(entry) = entries.remove(path) else {
            continue; // consumed as the target of a move
        };
        // A file moved away that ends up at a path that did not exist before: one rename.
        if let (Some(original), None, Some(to)) = (&entry.original, &entry.current, &entry.moved_to)
            && let Some(target) = entries.get(to)
            && target.original.is_none()
            && target.moved_from.as_deref() == Some(path.as_path())
            && target.current.is_some()
        {
            let target = entries.remove(to).expect("present");
            let text = target.current.expect("checked above");
            let change = modification(original.clone(), &entry.display, text, target.changes);
            files.push(change.moved_to(to.clone()));
            continue;
        }
        match (entry.original, entry.current) {
            (None, None) => {}
            (None, Some(text)) => files.push(FileChange::create(path.clone(), &entry.display, text)),
            (Some(original), None) => files.push(FileChange::delete(original, &entry.display)),
            (Some(original), Some(text)) => {
                files.push(modification(original, &entry.display, text, entry.changes))
            }
        }
    }
    files
}

/// A modification of `original` into `text`: hunks from the patch's own changes when they
/// describe it, else from a diff.
fn modification(original: Snapshot, display: &str, text: Arc<str>, changes: Option<Changes>) -> FileChange {
    match changes {
        Some(changes) => {
            let hunks = changes.hunks(&original.text, &text);
            FileChange::modify_with_hunks(original, display, text, hunks)
        }
        None => FileChange::modify(original, display, text),
    }
}
