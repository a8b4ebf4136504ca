//! Where a session's changes are seen: its editor port (edit tools' change sets) and its
//! execution environment (commands), each wrapped to tell the session's [`Checkpoints`].
//!
//! Invariants:
//! - The wrappers change nothing about what they wrap: every call is passed on as it came, and
//!   its answer returned as it was.
//! - A change set's files are read as the agent's view holds them (open buffers first) just
//!   before it is proposed and just after its outcome; a command's changes are found by the
//!   stat scans just before and after it, off the async threads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::scan::{self, Difference, Scan};
use super::{Checkpoints, Side, Uncovered};
use crate::exec::{ExecError, ExecRequest, ExecResult, ExecutionEnvironment};
use crate::workspace::{
    ChangeOutcome, ChangeSet, EditorPort, FileOp, FileStatus, PermissionDecision, PermissionRequest,
    PortError, Workspace, WorkspaceError,
};

/// The session's editor port, telling its checkpoints what each change set did.
pub struct RecordingPort {
    inner: Arc<dyn EditorPort>,
    checkpoints: Arc<Checkpoints>,
    workspace: Arc<Workspace>,
    env: Arc<dyn ExecutionEnvironment>,
}

impl RecordingPort {
    pub fn new(
        inner: Arc<dyn EditorPort>,
        checkpoints: Arc<Checkpoints>,
        workspace: Arc<Workspace>,
        env: Arc<dyn ExecutionEnvironment>,
    ) -> Self {
        Self { inner, checkpoints, workspace, env }
    }

    async fn held(&self, path: &Path) -> Side {
        match self.workspace.read_if_exists(self.env.as_ref(), path).await {
            Ok(Some(snapshot)) => Side::Text(snapshot.text),
            Ok(None) => Side::Absent,
            Err(WorkspaceError::TooLarge { .. }) => Side::NotCovered(Uncovered::TooLarge),
            Err(WorkspaceError::Binary(_) | WorkspaceError::NotUtf8(_)) => {
                Side::NotCovered(Uncovered::Binary)
            }
            Err(_) => Side::NotCovered(Uncovered::Unreadable),
        }
    }
}

#[async_trait]
impl EditorPort for RecordingPort {
    async fn propose(&self, change: ChangeSet) -> Result<ChangeOutcome, PortError> {
        if !self.checkpoints.recording() {
            return self.inner.propose(change).await;
        }
        // Each file's paths: its own, and for a move its target.
        let paths: Vec<Vec<PathBuf>> = change
            .files()
            .iter()
            .map(|f| match &f.op {
                FileOp::Rename { to } => vec![f.path.clone(), to.clone()],
                _ => vec![f.path.clone()],
            })
            .collect();
        let mut before = HashMap::new();
        for path in paths.iter().flatten() {
            let held = self.held(path).await;
            before.insert(path.clone(), held);
        }
        let outcome = self.inner.propose(change).await?;
        let landed: Vec<PathBuf> = outcome
            .files
            .iter()
            .filter(|f| f.status != FileStatus::Rejected)
            .map(|f| f.path.clone())
            .collect();
        // The text the commit reports is the after-text: a read could come before the editor
        // reported it (a file created through `workspace/applyEdit` opens empty, then fills).
        let committed: HashMap<&PathBuf, Arc<str>> =
            outcome.files.iter().filter_map(|f| Some((&f.path, f.final_text.clone()?))).collect();
        for file in paths.iter().filter(|p| landed.contains(&p[0])) {
            // A move's text ends at its target; anything else at its own path.
            let landed_at = file.last().expect("a file has a path");
            for path in file {
                let after = match committed.get(&file[0]) {
                    Some(text) if path == landed_at => Side::Text(text.clone()),
                    _ => self.held(path).await,
                };
                let prior = before.get(path).cloned().unwrap_or(Side::Absent);
                self.checkpoints.note(path, prior, after);
            }
            if let [from, to] = file.as_slice() {
                self.checkpoints.note_move(from, to);
            }
        }
        Ok(outcome)
    }

    async fn ask_permission(&self, request: PermissionRequest) -> PermissionDecision {
        self.inner.ask_permission(request).await
    }

    async fn save(&self, paths: &[PathBuf]) -> Result<(), PortError> {
        self.inner.save(paths).await
    }
}

/// The session's execution environment, scanning the workspace around each command and
/// noting the files the agent reads.
pub struct RecordingEnvironment {
    inner: Arc<dyn ExecutionEnvironment>,
    checkpoints: Arc<Checkpoints>,
}

impl RecordingEnvironment {
    pub fn new(inner: Arc<dyn ExecutionEnvironment>, checkpoints: Arc<Checkpoints>) -> Self {
        Self { inner, checkpoints }
    }
}

/// The workspace before a command: its scan and the content of its candidates.
struct Before {
    scan: Scan,
    content: HashMap<PathBuf, Side>,
}

/// Scans `root` and reads the files the command names and the ones the session knows.
fn before_command(root: &Path, skip: &Path, command: &str, cwd: &Path, known: Vec<PathBuf>) -> Before {
    let scan = scan::scan(root, skip);
    let mut candidates = scan::named_by(command, cwd, &scan);
    candidates.extend(known);
    let content = candidates
        .into_iter()
        .filter_map(|path| {
            let len = scan.files.get(&path)?.len;
            let side = scan::read_side(&path, len);
            Some((path, side))
        })
        .collect();
    Before { scan, content }
}

/// What changed since `before`: each path with what it held and holds.
fn after_command(root: &Path, skip: &Path, mut before: Before) -> Vec<(PathBuf, Side, Side)> {
    let after = scan::scan(root, skip);
    if !(before.scan.complete && after.complete) {
        tracing::warn!(
            "{} has more than {} files: the command's changes are not recorded (no undo for them)",
            root.display(),
            scan::MAX_SCANNED
        );
        return Vec::new();
    }
    scan::differences(&before.scan, &after)
        .into_iter()
        .map(|(path, difference)| {
            let prior = match difference {
                Difference::Created => Side::Absent,
                Difference::Modified | Difference::Deleted => {
                    before.content.remove(&path).unwrap_or_else(|| {
                        let len = before.scan.files.get(&path).map_or(0, |s| s.len);
                        Side::NotCovered(if len > super::MAX_FILE_BYTES {
                            Uncovered::TooLarge
                        } else {
                            Uncovered::PriorUnknown
                        })
                    })
                }
            };
            let now = match after.files.get(&path) {
                Some(stamp) => scan::read_side(&path, stamp.len),
                None => Side::Absent,
            };
            (path, prior, now)
        })
        .collect()
}

crate::exec::wrapper_impl!(RecordingEnvironment, inner, reads, {
    async fn exec_command(&self, request: ExecRequest) -> Result<ExecResult, ExecError> {
        if !self.checkpoints.recording() {
            return self.inner.exec_command(request).await;
        }
        let root = self.checkpoints.root().to_path_buf();
        let cwd = request.working_dir.clone().unwrap_or_else(|| self.inner.working_directory().to_path_buf());
        let (command, known) = (request.command.clone(), self.checkpoints.known());
        let skip = self.checkpoints.data_dir().to_path_buf();
        let (scan_root, scan_skip) = (root.clone(), skip.clone());
        let before = tokio::task::spawn_blocking(move || {
            before_command(&scan_root, &scan_skip, &command, &cwd, known)
        })
        .await
        .ok();
        let result = self.inner.exec_command(request).await;
        if let Some(before) = before {
            let changes = tokio::task::spawn_blocking(move || after_command(&root, &skip, before)).await;
            for (path, prior, now) in changes.unwrap_or_default() {
                self.checkpoints.note(&path, prior, now);
            }
        }
        result
    }

    async fn read_file(
        &self,
        path: &Path,
        offset: Option<usize>,
        limit: Option<usize>,
    ) -> Result<String, ExecError> {
        self.checkpoints.know(path);
        self.inner.read_file(path, offset, limit).await
    }

    async fn read_bytes(&self, path: &Path, max_len: u64) -> Result<Arc<[u8]>, ExecError> {
        self.checkpoints.know(path);
        self.inner.read_bytes(path, max_len).await
    }

    async fn write_file(&self, path: &Path, content: &str) -> Result<(), ExecError> {
        self.inner.write_file(path, content).await
    }

    async fn create_file(&self, path: &Path, content: &str, mode: Option<u32>) -> Result<(), ExecError> {
        self.inner.create_file(path, content, mode).await
    }

    async fn remove_file(&self, path: &Path) -> Result<(), ExecError> {
        self.inner.remove_file(path).await
    }
});
