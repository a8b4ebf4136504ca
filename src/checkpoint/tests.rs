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
    assert!(
        error.to_string().starts_with("a.txt changed since the turn"),
        "named as the user sees it: {error}"
    );
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

/// The tree kept between commands sees every change made in between, by anyone.
mod kept_tree {
    use super::*;

    fn texts(turn: &TurnRecord, f: &Folder, name: &str) -> (Side, Side) {
        let file = turn.files.iter().find(|r| r.path == f.dir.path().join(name)).expect("recorded");
        (f.checkpoints.side(&file.before).expect("before"), f.checkpoints.side(&file.after).expect("after"))
    }

    fn text(s: &str) -> Side {
        Side::Text(s.into())
    }

    #[tokio::test]
    async fn a_file_the_user_changes_between_two_commands_is_the_next_commands_prior_text() {
        let f = folder(&[("a.txt", "one\n")]);
        // Known to the session: its text is kept between commands.
        f.recording.read_file(&f.dir.path().join("a.txt"), None, None).await.expect("reads");
        f.checkpoints.begin_turn("first", mark());
        f.run("echo x > other.txt").await;
        f.checkpoints.end_turn().expect("recorded");
        // The user rewrites it (same length: within one clock tick the stamp may not change).
        std::fs::write(f.dir.path().join("a.txt"), "two\n").expect("user edit");
        f.checkpoints.begin_turn("second", mark());
        // The command does not name the file: its prior text is the one kept for it.
        f.run("sed -i s/two/TWO/ $(echo a).txt").await;
        let turn = f.checkpoints.end_turn().expect("recorded");
        #[cfg(target_os = "linux")]
        assert!(lock(&f.checkpoints.tree).as_ref().is_some_and(|t| t.watched()), "watched on Linux");
        assert_eq!(turn.files.len(), 1, "the user's change is not the command's: {turn:?}");
        assert_eq!(texts(&turn, &f, "a.txt"), (text("two\n"), text("TWO\n")));
    }

    #[tokio::test]
    async fn a_file_the_editor_writes_between_two_commands_is_the_next_commands_prior_text() {
        let f = folder(&[("a.txt", "one\n")]);
        f.checkpoints.begin_turn("first", mark());
        f.run("cat a.txt").await;
        // Through the environment, as the editor's disk writes (not recorded: no turn is open).
        f.checkpoints.end_turn().expect("recorded");
        f.recording.write_file(&f.dir.path().join("a.txt"), "editor\n").await.expect("writes");
        f.checkpoints.begin_turn("second", mark());
        f.run("sed -i s/editor/command/ a.txt").await;
        let turn = f.checkpoints.end_turn().expect("recorded");
        assert_eq!(texts(&turn, &f, "a.txt"), (text("editor\n"), text("command\n")));
    }

    #[tokio::test]
    async fn a_second_commands_changes_to_what_the_first_made_are_recorded_and_undone() {
        let f = folder(&[("keep.txt", "keep\n")]);
        f.checkpoints.begin_turn("generate", mark());
        f.run("mkdir -p gen/deep && printf 'a\\n' > gen/a.rs && printf 'b\\n' > gen/deep/b.rs").await;
        let first = f.checkpoints.end_turn().expect("recorded");
        assert_eq!(first.files.len(), 2, "{first:?}");
        f.checkpoints.begin_turn("rework", mark());
        // Rewritten at once with the same length, a file removed, a directory moved.
        f.run("printf 'A\\n' > gen/a.rs && rm gen/deep/b.rs && mv gen moved").await;
        let second = f.checkpoints.end_turn().expect("recorded");
        let mut paths: Vec<String> = second
            .files
            .iter()
            .map(|r| r.path.strip_prefix(f.dir.path()).expect("under").display().to_string())
            .collect();
        paths.sort();
        assert_eq!(paths, ["gen/a.rs", "gen/deep/b.rs", "moved/a.rs"]);
        assert_eq!(texts(&second, &f, "gen/a.rs"), (text("a\n"), Side::Absent));
        assert_eq!(texts(&second, &f, "moved/a.rs"), (Side::Absent, text("A\n")));
        // The moved directory is watched under its new name.
        f.checkpoints.begin_turn("third", mark());
        f.run("printf 'again\\n' >> moved/a.rs").await;
        let third = f.checkpoints.end_turn().expect("recorded");
        assert_eq!(texts(&third, &f, "moved/a.rs"), (text("A\n"), text("A\nagain\n")));

        f.reverse(Direction::Undo).await.expect("undoes the third");
        f.reverse(Direction::Undo).await.expect("undoes the second");
        assert_eq!(f.read("gen/a.rs").as_deref(), Some("a\n"));
        assert_eq!(f.read("gen/deep/b.rs").as_deref(), Some("b\n"));
        assert_eq!(f.read("moved/a.rs"), None);
    }

    #[tokio::test]
    async fn a_rewrite_within_one_clock_tick_is_seen_and_a_new_ignore_rule_applies_at_once() {
        let f = folder(&[("a.txt", "one\n")]);
        for (n, word) in ["two", "six", "ten"].into_iter().enumerate() {
            f.checkpoints.begin_turn("rewrite", mark());
            f.run(&format!("printf '{word}\\n' > a.txt")).await;
            let turn = f.checkpoints.end_turn().expect("recorded");
            assert_eq!(turn.files.len(), 1, "rewrite {n}: {turn:?}");
            assert_eq!(texts(&turn, &f, "a.txt").1, text(&format!("{word}\n")));
        }
        f.checkpoints.begin_turn("ignore", mark());
        f.run("printf '*.tmp\\n' > .gitignore && echo x > scratch.tmp").await;
        let turn = f.checkpoints.end_turn().expect("recorded");
        let names: Vec<_> = turn.files.iter().map(|r| r.path.file_name().expect("name").to_owned()).collect();
        assert_eq!(names, [std::ffi::OsString::from(".gitignore")]);
    }

    #[tokio::test]
    async fn a_subagents_change_after_its_turn_ended_lands_in_that_turn() {
        let f = Arc::new(folder(&[("a.txt", "one\n")]));
        f.checkpoints.begin_turn("delegate", mark());
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let child = {
            let f = f.clone();
            // Started from the turn's steps, as spawn_agent starts a subagent's session.
            f.checkpoints
                .clone()
                .in_turn(async move {
                    // Awaited after the turn ended.
                    Some(tokio::spawn(inherit_turn(async move {
                        wait.await.expect("go");
                        f.run("echo late > a.txt").await;
                    })))
                })
                .await
                .expect("spawned")
        };
        let first = f.checkpoints.end_turn().expect("recorded");
        assert!(first.files.is_empty());
        f.checkpoints.begin_turn("next", mark());
        go.send(()).expect("child waits");
        child.await.expect("child ran");
        let next = f.checkpoints.end_turn().expect("recorded");
        assert!(next.files.is_empty(), "not the next turn's: {next:?}");
        let stored = f.checkpoints.turns();
        let first = stored.iter().find(|t| t.id == first.id).expect("stored");
        assert_eq!(texts(first, &f, "a.txt"), (text("one\n"), text("late\n")));
    }
}

/// A tool that writes on its own, as an MCP server or code mode's Python does.
struct Writer;

#[async_trait]
impl crate::tools::Tool for Writer {
    fn name(&self) -> &str {
        "python"
    }
    fn description(&self) -> &str {
        "writes"
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn call(
        &self,
        args: serde_json::Value,
        _ctx: &crate::tools::ToolContext,
    ) -> Result<crate::tools::ToolOutput, crate::tools::ToolError> {
        let path = args["path"].as_str().expect("path");
        std::fs::write(path, args["text"].as_str().expect("text")).expect("write");
        Ok(crate::tools::ToolOutput::text("written"))
    }
}

#[tokio::test]
async fn a_tool_that_writes_on_its_own_is_recorded_around_its_call() {
    let f = folder(&[("a.txt", "one\n")]);
    let tool = RecordingTool::wrap_all(vec![Arc::new(Writer)], &f.checkpoints).remove(0);
    let ctx = crate::tools::ToolContext {
        env: f.env.clone(),
        workspace: Arc::new(Workspace::default()),
        editor: Arc::new(crate::workspace::DiskPort::new(f.env.clone(), crate::config::Approval::Auto)),
        reads: Arc::new(crate::workspace::ReadTracker::new()),
        cwd: f.dir.path().to_path_buf(),
        call_id: "c1".into(),
        shell: crate::exec::ShellLimits::default(),
        cancel: tokio_util::sync::CancellationToken::new(),
        model: None,
        output: None,
        agents: None,
    };
    let args = |text: &str| serde_json::json!({"path": f.dir.path().join("a.txt"), "text": text});
    // Outside a turn nothing is recorded.
    tool.call(args("zero\n"), &ctx).await.expect("writes");
    f.checkpoints.begin_turn("python", mark());
    tool.call(args("two\n"), &ctx).await.expect("writes");
    let turn = f.checkpoints.end_turn().expect("recorded");
    let file = &turn.files[0];
    assert_eq!(file.path, f.dir.path().join("a.txt"));
    // The path is among the call's arguments: its prior text was read.
    assert_eq!(f.checkpoints.side(&file.before).expect("before"), Side::Text("zero\n".into()));
    f.reverse(Direction::Undo).await.expect("undoes");
    assert_eq!(f.read("a.txt").as_deref(), Some("zero\n"));
}
