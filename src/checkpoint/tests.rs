//! The recorder around real commands on a real folder, and undo and redo on its files.

use std::sync::Arc;

use async_trait::async_trait;

use super::revert::Apply;
use super::*;
use crate::exec::{ExecRequest, ExecutionEnvironment, LocalExecutionEnvironment};
use crate::workspace::{Committer, DiskCommitter, FileChange, ResolvedChangeSet, Workspace};

struct OnDisk(DiskCommitter);

#[async_trait]
impl Apply for OnDisk {
    async fn apply(&self, change: ResolvedChangeSet) -> Result<(), String> {
        self.0.commit(change).await.map(drop).map_err(|e| e.to_string())
    }
}

struct Folder {
    _data: tempfile::TempDir,
    dir: tempfile::TempDir,
    checkpoints: Arc<Checkpoints>,
    env: Arc<dyn ExecutionEnvironment>,
    recording: RecordingEnvironment,
}

fn folder(files: &[(&str, &str)]) -> Folder {
    let data = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    let checkpoints = Arc::new(Checkpoints::open(data.path(), "s1", dir.path()).expect("open"));
    let env: Arc<dyn ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::new(dir.path()));
    let recording = RecordingEnvironment::new(env.clone(), checkpoints.clone());
    Folder { _data: data, dir, checkpoints, env, recording }
}

impl Folder {
    async fn run(&self, command: &str) {
        let result = self.recording.exec_command(ExecRequest::new(command)).await.expect("runs");
        assert_eq!(result.exit_code, 0, "{command}: {}", result.stderr);
    }

    fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join(name)).ok()
    }

    async fn reverse(&self, direction: Direction) -> Result<Reversal, CheckpointError> {
        let apply = OnDisk(DiskCommitter::new(self.env.clone()));
        self.checkpoints.reverse(direction, None, &Workspace::default(), self.env.as_ref(), &apply).await
    }
}

fn mark() -> HistoryMark {
    HistoryMark { index: 0, timestamp: chrono::Utc::now() }
}

#[tokio::test]
async fn a_commands_changes_are_undone_and_redone_keeping_the_users_later_edit() {
    let f = folder(&[("a.txt", "one\ntwo\nthree\n"), ("gone.txt", "bye\n")]);
    f.checkpoints.begin_turn("change things", mark());
    f.run("sed -i 's/two/TWO/' a.txt && rm gone.txt && printf 'made\\n' > new.txt").await;
    let turn = f.checkpoints.end_turn().expect("recorded");
    assert_eq!(turn.files.len(), 3, "{turn:?}");
    std::fs::write(f.dir.path().join("a.txt"), "one\nTWO\nthree\nmine\n").expect("user edit");

    let undone = f.reverse(Direction::Undo).await.expect("undoes");
    assert_eq!(undone.turns, [turn.id]);
    assert_eq!(f.read("a.txt").as_deref(), Some("one\ntwo\nthree\nmine\n"));
    assert_eq!(f.read("gone.txt").as_deref(), Some("bye\n"));
    assert_eq!(f.read("new.txt"), None);

    f.reverse(Direction::Redo).await.expect("redoes");
    assert_eq!(f.read("a.txt").as_deref(), Some("one\nTWO\nthree\nmine\n"));
    assert_eq!(f.read("gone.txt"), None);
    assert_eq!(f.read("new.txt").as_deref(), Some("made\n"));
    assert!(matches!(f.reverse(Direction::Redo).await, Err(CheckpointError::Nothing(_))));
}

#[tokio::test]
async fn a_conflict_changes_nothing_and_an_unread_file_is_not_covered() {
    let f = folder(&[("a.txt", "one\n"), ("b.txt", "b\n")]);
    f.checkpoints.begin_turn("edit", mark());
    f.run("echo ONE > a.txt; echo B > $(echo b).txt").await;
    f.checkpoints.end_turn().expect("recorded");
    std::fs::write(f.dir.path().join("a.txt"), "user\n").expect("user edit");
    let error = f.reverse(Direction::Undo).await.expect_err("conflicts");
    assert!(matches!(&error, CheckpointError::Conflict { path, .. } if path.ends_with("a.txt")), "{error}");
    assert_eq!(f.read("a.txt").as_deref(), Some("user\n"));
    std::fs::write(f.dir.path().join("a.txt"), "ONE\n").expect("user puts it back");
    let undone = f.reverse(Direction::Undo).await.expect("undoes");
    assert_eq!(f.read("a.txt").as_deref(), Some("one\n"));
    assert_eq!(undone.not_covered, [(f.dir.path().join("b.txt"), Uncovered::PriorUnknown)]);
    assert_eq!(f.read("b.txt").as_deref(), Some("B\n"), "not covered: left as it is");
}

#[tokio::test]
async fn checkpoints_survive_a_reopen() {
    let f = folder(&[("a.txt", "one\n")]);
    f.checkpoints.begin_turn("edit", mark());
    f.run("echo two > a.txt").await;
    f.checkpoints.end_turn().expect("recorded");
    let reopened = Checkpoints::open_stored(f._data.path(), "s1").expect("reopens");
    assert_eq!(reopened.root(), f.dir.path());
    let apply = OnDisk(DiskCommitter::new(f.env.clone()));
    reopened
        .reverse(Direction::Undo, None, &Workspace::default(), f.env.as_ref(), &apply)
        .await
        .expect("undoes");
    assert_eq!(f.read("a.txt").as_deref(), Some("one\n"));
}

/// An editor whose buffer lags its answer, as VS Code's after `workspace/applyEdit` creates a
/// file: the change lands on disk, the editor opens the new file empty and reports its text a
/// moment later (after the commit's outcome came back).
struct LaggingEditor {
    committer: DiskCommitter,
    documents: Arc<crate::workspace::DocumentStore>,
}

#[async_trait]
impl crate::workspace::EditorPort for LaggingEditor {
    async fn propose(
        &self,
        change: crate::workspace::ChangeSet,
    ) -> Result<crate::workspace::ChangeOutcome, crate::workspace::PortError> {
        let files = self.committer.commit(change.accept_all()).await.expect("commits");
        for file in &files {
            self.documents.open(&file.path, "", 1);
        }
        Ok(crate::workspace::ChangeOutcome { files, feedback: None, error: None })
    }

    async fn ask_permission(
        &self,
        _: crate::workspace::PermissionRequest,
    ) -> crate::workspace::PermissionDecision {
        crate::workspace::PermissionDecision::AllowOnce
    }

    async fn save(&self, _: &[std::path::PathBuf]) -> Result<(), crate::workspace::PortError> {
        Ok(())
    }
}

/// Commit ac07159: a file's after-text is the text the commit reports, not what the editor's
/// buffer holds right after it (empty, for a file just created), so undoing the turn that
/// created it is not refused as "edited since".
#[tokio::test]
async fn the_after_text_is_the_committed_text_even_when_the_buffer_lags() {
    let f = folder(&[]);
    let documents = Arc::new(crate::workspace::DocumentStore::new());
    let workspace = Arc::new(Workspace::new(documents.clone()));
    let editor = LaggingEditor { committer: DiskCommitter::new(f.env.clone()), documents: documents.clone() };
    let port = RecordingPort::new(Arc::new(editor), f.checkpoints.clone(), workspace.clone(), f.env.clone());
    let path = f.dir.path().join("added.txt");
    let text = "hello from agentls\n";
    f.checkpoints.begin_turn("add a file", mark());
    let change = crate::workspace::ChangeSet::new(vec![FileChange::create(path.clone(), "added.txt", text)])
        .expect("a change set");
    crate::workspace::EditorPort::propose(&port, change).await.expect("proposed");
    assert_eq!(
        workspace.read_if_exists(f.env.as_ref(), &path).await.expect("reads").map(|s| s.text),
        Some("".into()),
        "the buffer lags"
    );
    let turn = f.checkpoints.end_turn().expect("recorded");
    let after =
        turn.files.iter().map(|file| (file.path.clone(), f.checkpoints.side(&file.after).expect("stored")));
    assert_eq!(after.collect::<Vec<_>>(), [(path.clone(), Side::Text(text.into()))]);

    documents.open(&path, text, 2);
    let apply = OnDisk(DiskCommitter::new(f.env.clone()));
    let undone = f
        .checkpoints
        .reverse(Direction::Undo, None, &workspace, f.env.as_ref(), &apply)
        .await
        .expect("the undo is not refused");
    assert_eq!(undone.turns, [turn.id]);
    assert_eq!(f.read("added.txt"), None, "the file the turn created is removed");
}
