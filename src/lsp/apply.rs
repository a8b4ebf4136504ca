//! Applying a reviewed change set through the editor: one `workspace/applyEdit` per change set,
//! shaped by what the client announced.
//!
//! Invariants:
//! - What each file becomes is decided by the workspace's one planner (`Workspace::plan`), over
//!   the text the editor holds now (the buffer when open, else the disk): a file that moved on
//!   since the agent read it is rebased three-way; when the rebase conflicts, nothing is sent and
//!   the model is told to re-read. This module only maps the plan to document changes, in an
//!   order in which each file operation finds its path free (a path the change vacates is
//!   deleted or moved away before it is taken again).
//! - An applied edit is recorded in the document store as the editor's expected text until the
//!   editor reports it. A further edit of the same file first waits (briefly) for that report,
//!   so it is computed on the editor's text and version; if the report does not come, it is
//!   computed on the expected text and sent without a version.
//! - Open documents get versioned `TextDocumentEdit`s with minimal edits; clients without
//!   `documentChanges` get `changes`. Create/rename/delete go out as resource operations where
//!   supported; otherwise they are done on disk, and only for files the editor does not have
//!   open. A client without `workspace.applyEdit` gets every change on disk; its open files are
//!   refused, never written behind it.
//! - The disk's part goes through the one file writer, the session's [`DiskCommitter`]: checked
//!   against the text read here, `O_EXCL` for creates, all files or none. Without confirmation it
//!   is written before the editor's part and undone when the editor does not apply that; with
//!   confirmation (the editor asks the user) it is written only after the editor applied its part.
//! - `applied: false`, an editor error or no answer in time is a failure: nothing is reported
//!   as applied. The model is told "nothing was changed" only when nothing was, and otherwise
//!   which files were changed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tower_lsp_server::ls_types::request::ApplyWorkspaceEdit;
use tower_lsp_server::ls_types::{
    AnnotatedTextEdit, ApplyWorkspaceEditParams, ChangeAnnotation, CreateFile, CreateFileOptions, DeleteFile,
    DocumentChangeOperation, DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier, Range,
    RenameFile, ResourceOp, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};

use super::capabilities::ClientProfile;
use super::convert;
use super::outbound::Outbound;
use crate::exec::ExecutionEnvironment;
use crate::workspace::position::{PositionEncoding, position_of};
use crate::workspace::{
    Action, CommitError, Committer, Current, DiskCommitter, FileOp, FileOutcome, FileStatus, Holder,
    MoveCycle, PlanError, ResolvedChangeSet, ResolvedFile, Snapshot, Workspace, compute_hunks,
};

const DIFF_DEADLINE: Duration = Duration::from_millis(500);
const ANNOTATION: &str = "agentls";
/// How long a further edit of a file waits for the editor to report the previous one (editors
/// debounce their reports: Neovim 150 ms, eglot 0.5 s of idle time).
const SETTLE: Duration = Duration::from_secs(2);

/// Minimal edits turning `old` into `new`, in the client's position encoding.
pub fn minimal_edits(old: &str, new: &str, encoding: PositionEncoding) -> Vec<TextEdit> {
    compute_hunks(old, new, Some(Instant::now() + DIFF_DEADLINE))
        .into_iter()
        .map(|hunk| TextEdit {
            range: Range {
                start: convert::position_to_lsp(position_of(old, hunk.old_range.start, encoding)),
                end: convert::position_to_lsp(position_of(old, hunk.old_range.end, encoding)),
            },
            new_text: hunk.new_text,
        })
        .collect()
}

/// A text the editor will hold once it applied the edit: path, reported version, before, after.
type Expectation = (PathBuf, Option<i32>, Arc<str>, Arc<str>);

/// A plan routed: the editor's document changes, and what it cannot do as a change on disk.
struct Routed {
    operations: Vec<DocumentChangeOperation>,
    changes: HashMap<Uri, Vec<TextEdit>>,
    /// What the editor cannot do, as changes of the text on disk, for the committer.
    disk: Vec<ResolvedFile>,
    expectations: Vec<Expectation>,
}

fn uri(path: &Path) -> Result<Uri, String> {
    convert::uri_of(path).ok_or_else(|| format!("{} cannot be expressed as a file: URI", path.display()))
}

fn annotate(edits: Vec<TextEdit>, confirm: bool) -> Vec<OneOf<TextEdit, AnnotatedTextEdit>> {
    edits
        .into_iter()
        .map(|e| {
            if confirm {
                OneOf::Right(AnnotatedTextEdit { text_edit: e, annotation_id: ANNOTATION.into() })
            } else {
                OneOf::Left(e)
            }
        })
        .collect()
}

/// `file` as a change from the text `disk` holds (`None`: the file is new) to `text`, for the
/// committer; the review's outcome is kept.
fn on_disk(file: &ResolvedFile, disk: Option<&Arc<str>>, text: Option<Arc<str>>) -> ResolvedFile {
    let mut file = file.clone();
    if let Some(disk) = disk {
        file.change.base = Some(Snapshot::from_disk(file.change.path.clone(), disk.clone()));
    }
    file.final_text = text;
    file
}

/// The file's text on disk as the plan found it (`None` when the editor has the file open).
fn disk_text(current: &Current<Holder>) -> Option<&Arc<str>> {
    match &current.detail {
        Holder::File => Some(&current.text),
        Holder::Hidden { disk } => disk.as_ref(),
        Holder::Buffer { .. } => None,
    }
}

/// What the model is told when the plan refuses the change, in the words editors always used.
fn refusal(error: &PlanError, change: &ResolvedChangeSet) -> String {
    // A path is the source of one file of a change set at most, and the target of one at most.
    let source =
        |path: &Path| change.files.iter().find(|f| f.change.op != FileOp::Create && f.change.path == path);
    let shown = |path: &Path| {
        source(path).map_or_else(|| path.display().to_string(), |f| f.change.display_path.clone())
    };
    match error {
        PlanError::AlreadyExists(path) => {
            match change.files.iter().find(|f| f.change.op == FileOp::Create && f.change.path == *path) {
                Some(file) => format!(
                    "{} already exists; refusing to overwrite it (nothing was changed). Edit it instead",
                    file.change.display_path
                ),
                None => format!("{} already exists; nothing was changed", path.display()),
            }
        }
        PlanError::Vanished(path) if source(path).is_some_and(|f| f.change.op == FileOp::Delete) => {
            format!("{} no longer exists; nothing was changed", shown(path))
        }
        PlanError::Vanished(path) => {
            format!(
                "{} no longer exists (it was deleted since you read it); nothing was changed",
                shown(path)
            )
        }
        PlanError::ChangedBeforeDelete(path) => format!(
            "{} changed since you read it; nothing was changed. Read it again before deleting it",
            shown(path)
        ),
        PlanError::Conflict { path, conflict } => format!(
            "{} changed in the editor since you read it and your edit overlaps that change ({conflict}); \
             nothing was changed. Read the file again and redo the edit against its current text",
            shown(path)
        ),
        PlanError::Workspace(error) => {
            format!("cannot read {}: {error}; nothing was changed", error.path().display())
        }
    }
}

/// Plans `change` on the text the editor holds and routes each file to the editor or the disk.
async fn route(
    change: &ResolvedChangeSet,
    workspace: &Workspace,
    env: &dyn ExecutionEnvironment,
    profile: &ClientProfile,
    confirm: bool,
) -> Result<(Routed, Vec<FileOutcome>), String> {
    let plan = workspace.plan(env, change).await.map_err(|error| refusal(&error, change))?;
    let steps = match plan.in_sequence() {
        Ok(steps) => steps,
        Err(MoveCycle(target)) if profile.document_changes && profile.rename_files => {
            return Err(trading_places(change, &target));
        }
        // The moves are done on disk, all at once.
        Err(_) => plan.steps.iter().collect(),
    };
    let annotation = confirm.then(|| ANNOTATION.to_string());
    let mut p = Routed {
        operations: Vec::new(),
        changes: HashMap::new(),
        disk: Vec::new(),
        expectations: Vec::new(),
    };
    let text_edit =
        |p: &mut Routed, path: &Path, version: Option<i32>, edits: Vec<TextEdit>| -> Result<(), String> {
            if edits.is_empty() {
                return Ok(());
            }
            let uri = uri(path)?;
            if profile.document_changes {
                p.operations.push(DocumentChangeOperation::Edit(TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier { uri, version },
                    edits: annotate(edits, confirm),
                }));
            } else {
                p.changes.entry(uri).or_default().extend(edits);
            }
            Ok(())
        };
    for step in steps {
        let file = step.file;
        let fc = &file.change;
        match &step.action {
            Action::Create { text } => {
                if profile.document_changes && profile.create_files {
                    let uri = uri(&fc.path)?;
                    p.operations.push(DocumentChangeOperation::Op(ResourceOp::Create(CreateFile {
                        uri: uri.clone(),
                        options: Some(CreateFileOptions {
                            overwrite: Some(false),
                            ignore_if_exists: Some(false),
                        }),
                        annotation_id: annotation.clone(),
                    })));
                    text_edit(&mut p, &fc.path, None, minimal_edits("", text, profile.encoding))?;
                    p.expectations.push((fc.path.clone(), None, Arc::from(""), text.clone()));
                } else {
                    p.disk.push(on_disk(file, None, Some(text.clone())));
                }
            }
            Action::Delete { current } => {
                if profile.document_changes && profile.delete_files {
                    p.operations.push(DocumentChangeOperation::Op(ResourceOp::Delete(DeleteFile {
                        uri: uri(&fc.path)?,
                        options: None,
                        annotation_id: annotation.clone(),
                    })));
                } else if matches!(current.detail, Holder::Buffer { .. }) {
                    return Err(format!(
                        "{} is open in the editor and this editor cannot delete files through LSP; close it first",
                        fc.display_path
                    ));
                } else {
                    p.disk.push(on_disk(file, disk_text(current), None));
                }
            }
            Action::Move { current, text } => {
                let to = fc.target_path();
                if profile.document_changes && profile.rename_files {
                    p.operations.push(DocumentChangeOperation::Op(ResourceOp::Rename(RenameFile {
                        old_uri: uri(&fc.path)?,
                        new_uri: uri(to)?,
                        options: None,
                        annotation_id: annotation.clone(),
                    })));
                    text_edit(&mut p, to, None, minimal_edits(&current.text, text, profile.encoding))?;
                } else if matches!(current.detail, Holder::Buffer { .. }) {
                    return Err(format!(
                        "{} is open in the editor and this editor cannot rename files through LSP; close it first",
                        fc.display_path
                    ));
                } else {
                    p.disk.push(on_disk(file, disk_text(current), Some(text.clone())));
                }
            }
            Action::Modify { current, text } if profile.apply_edit => {
                let (reported, version) = match current.detail {
                    Holder::Buffer { version, confirmed } => (Some(version), confirmed.then_some(version)),
                    Holder::Hidden { .. } | Holder::File => (None, None),
                };
                text_edit(&mut p, &fc.path, version, minimal_edits(&current.text, text, profile.encoding))?;
                p.expectations.push((fc.path.clone(), reported, current.text.clone(), text.clone()));
            }
            Action::Modify { current, .. } if matches!(current.detail, Holder::Buffer { .. }) => {
                return Err(format!(
                    "{} is open in the editor and this editor does not accept edits from the \
                     server (no workspace.applyEdit); nothing was changed. Close it and retry, or \
                     ask the user to make the change",
                    fc.display_path
                ));
            }
            Action::Modify { current, text } => {
                p.disk.push(on_disk(file, disk_text(current), Some(text.clone())))
            }
        }
    }
    Ok((p, plan.outcomes))
}

/// Why moves that take each other's paths are refused: the editor renames one file at a time.
fn trading_places(change: &ResolvedChangeSet, target: &Path) -> String {
    let (moved, to) = change.files.iter().find(|file| file.change.target_path() == target).map_or_else(
        || (String::from("a file"), target.display().to_string()),
        |file| (file.change.display_path.clone(), file.change.shown_target(target)),
    );
    format!(
        "{moved} cannot be moved to {to}: the files this change moves take each other's places, and the editor \
         moves one file at a time; nothing was changed. Move one of them to a new name first, in a change of its own"
    )
}

/// Applies `change` in the editor (and on `env`'s disk where the editor cannot); `confirm` asks
/// the client to confirm each edit (plain clients with change-annotation support). Returns what
/// happened to each file.
pub async fn apply(
    outbound: &Outbound,
    workspace: &Workspace,
    env: &Arc<dyn ExecutionEnvironment>,
    profile: &ClientProfile,
    change: &ResolvedChangeSet,
    label: &str,
    confirm: bool,
) -> Result<Vec<FileOutcome>, String> {
    let documents = workspace.documents();
    for file in change.files.iter().filter(|f| f.accepted) {
        if !documents.settled(&file.change.path, SETTLE).await {
            tracing::debug!(
                "the editor has not reported the previous edit of {} yet; the next one is sent unversioned",
                file.change.path.display()
            );
        }
    }
    let (plan, mut outcomes) = route(change, workspace, &**env, profile, confirm).await?;
    let in_editor: Vec<String> = outcomes
        .iter()
        .filter(|outcome| !plan.disk.iter().any(|file| file.change.path == outcome.path))
        .filter(|outcome| outcome.status != FileStatus::Rejected)
        .map(|outcome| outcome.display_path.clone())
        .collect();
    let edit = workspace_edit(plan.operations, plan.changes, profile, label, confirm);
    let disk = (!plan.disk.is_empty()).then_some(ResolvedChangeSet { files: plan.disk });
    let committer = DiskCommitter::new(Arc::clone(env));
    let committed = match (edit, disk) {
        (None, None) => Vec::new(),
        (None, Some(disk)) => committer.commit(disk).await.map_err(|error| error.to_string())?,
        (Some(edit), None) => {
            send(outbound, edit, label, confirm)
                .await
                .map_err(|reason| format!("{reason}; nothing was changed"))?;
            Vec::new()
        }
        (Some(edit), Some(disk)) if confirm => {
            // The user confirms the editor's part: nothing reaches the disk before that.
            send(outbound, edit, label, confirm)
                .await
                .map_err(|reason| format!("{reason}; nothing was changed"))?;
            match committer.commit(disk).await {
                Ok(files) => files,
                Err(error) => {
                    for (path, reported, before, after) in plan.expectations {
                        documents.expect(&path, reported, before, after);
                    }
                    return Err(applied_in_editor_only(&in_editor, &error));
                }
            }
        }
        (Some(edit), Some(disk)) => {
            let committed = committer.commit_undoable(disk).await.map_err(|error| error.to_string())?;
            if let Err(reason) = send(outbound, edit, label, confirm).await {
                return Err(match committed.undo().await {
                    Ok(()) => format!("{reason}; nothing was changed"),
                    Err(left) => format!(
                        "{reason}; the files already changed on disk could not all be put back: {left}. Read them \
                         before editing them further"
                    ),
                });
            }
            committed.files
        }
    };
    for (path, reported, before, after) in plan.expectations {
        documents.expect(&path, reported, before, after);
    }
    // The committer may have merged changes that reached the disk after the plan was made.
    for file in committed {
        if let Some(outcome) = outcomes.iter_mut().find(|outcome| outcome.path == file.path) {
            outcome.rebased |= file.rebased;
            outcome.final_text = file.final_text;
        }
    }
    Ok(outcomes)
}

/// The edit for the editor, if it has anything to do.
fn workspace_edit(
    operations: Vec<DocumentChangeOperation>,
    changes: HashMap<Uri, Vec<TextEdit>>,
    profile: &ClientProfile,
    label: &str,
    confirm: bool,
) -> Option<WorkspaceEdit> {
    if operations.is_empty() && changes.is_empty() {
        return None;
    }
    let mut edit = WorkspaceEdit::default();
    if profile.document_changes {
        edit.document_changes = Some(DocumentChanges::Operations(operations));
    } else {
        edit.changes = Some(changes);
    }
    if confirm {
        edit.change_annotations = Some(HashMap::from([(
            ANNOTATION.to_string(),
            ChangeAnnotation {
                label: label.to_string(),
                needs_confirmation: Some(true),
                description: Some("Proposed by the agentls agent".into()),
            },
        )]));
    }
    Some(edit)
}

/// Sends `edit` with `workspace/applyEdit`; the error says why the editor did not apply it.
async fn send(outbound: &Outbound, edit: WorkspaceEdit, label: &str, confirm: bool) -> Result<(), String> {
    let deadline = if confirm { outbound.deadlines.human } else { outbound.deadlines.request };
    let params = ApplyWorkspaceEditParams { label: Some(label.to_string()), edit };
    let response =
        outbound.request_within::<ApplyWorkspaceEdit>(params, deadline).await.map_err(|e| e.to_string())?;
    if !response.applied {
        let reason = response.failure_reason.unwrap_or_else(|| "no reason given".into());
        return Err(format!("the editor did not apply the edit ({reason})"));
    }
    Ok(())
}

/// What the model is told when the editor applied its part and the disk's part failed.
fn applied_in_editor_only(in_editor: &[String], error: &CommitError) -> String {
    let applied = format!("The editor applied your edits to {}", in_editor.join(", "));
    match error {
        CommitError::NotRolledBack { left, .. } => format!(
            "{applied}, but the files to change on disk were not: {}; and the files written on disk before it \
             could not all be put back: {left}. Read them before editing them further",
            error.reason()
        ),
        _ => format!(
            "{applied}, but the files to change on disk were left as they were: {}. Read the files again before \
             editing them further",
            error.reason()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_edits_touch_only_changed_lines() {
        let edits = minimal_edits("a\nb\nc\n", "a\nB\nc\n", PositionEncoding::Utf16);
        assert_eq!(
            edits,
            vec![TextEdit {
                range: Range {
                    start: tower_lsp_server::ls_types::Position { line: 1, character: 0 },
                    end: tower_lsp_server::ls_types::Position { line: 2, character: 0 },
                },
                new_text: "B\n".into(),
            }]
        );
    }
}
