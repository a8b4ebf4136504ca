//! Tests of the workspace view: buffer-first reads, the read tracker, and committing change sets
//! to disk through the disk port (path resolution is the environment's: `exec::paths`).

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::config::Approval;
use crate::exec::LocalExecutionEnvironment;

struct Fixture {
    dir: tempfile::TempDir,
    env: Arc<dyn ExecutionEnvironment>,
    workspace: Workspace,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let env: Arc<dyn ExecutionEnvironment> = Arc::new(LocalExecutionEnvironment::new(dir.path()));
        Self { dir, env, workspace: Workspace::default() }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.env.resolve_path(&self.dir.path().join(relative)).unwrap()
    }

    async fn read(&self, path: &Path) -> Snapshot {
        self.workspace.read(&*self.env, path).await.unwrap()
    }

    fn port(&self, approval: Approval) -> DiskPort {
        DiskPort::new(Arc::clone(&self.env), approval)
    }
}

#[tokio::test]
async fn reads_prefer_open_buffers_and_refuse_binary_files() {
    let fx = Fixture::new();
    let (env, workspace) = (&*fx.env, &fx.workspace);
    let path = fx.path("a.txt");
    std::fs::write(&path, "disk\n").unwrap();
    let disk = fx.read(&path).await;
    assert_eq!((&*disk.text, disk.from_buffer, disk.version), ("disk\n", false, None));
    workspace.documents().open(&path, "buffer\n", 7);
    let buffer = fx.read(&path).await;
    assert_eq!((&*buffer.text, buffer.from_buffer, buffer.version), ("buffer\n", true, Some(7)));
    assert_ne!(disk.hash, buffer.hash);

    let binary = fx.path("b.bin");
    std::fs::write(&binary, b"a\0b").unwrap();
    assert_eq!(workspace.read(env, &binary).await.unwrap_err(), WorkspaceError::Binary(binary.clone()));
    std::fs::write(&binary, b"\xff\xfe").unwrap();
    assert_eq!(workspace.read(env, &binary).await.unwrap_err(), WorkspaceError::NotUtf8(binary));
    let missing = fx.path("missing");
    assert_eq!(workspace.read_if_exists(env, &missing).await.unwrap(), None);
    let folder = fx.path("folder");
    std::fs::create_dir(&folder).unwrap();
    assert_eq!(workspace.read(env, &folder).await.unwrap_err(), WorkspaceError::IsDirectory(folder));
}

#[test]
fn read_tracker_guards_edits_and_lists_changed_files() {
    let tracker = ReadTracker::new();
    let snapshot = Snapshot::from_disk("/w/a".into(), "one\n");
    assert_eq!(tracker.check(&snapshot), Err(ReadCheckError::NotRead("/w/a".into())));
    tracker.record_read(&snapshot);
    assert_eq!(tracker.check(&snapshot), Ok(()));
    let changed = Snapshot::from_disk("/w/a".into(), "two\n");
    assert_eq!(tracker.check(&changed), Err(ReadCheckError::ChangedSinceRead("/w/a".into())));
    tracker.record_written(Path::new("/w/a"), "two\n");
    assert_eq!(tracker.check(&changed), Ok(()));
    tracker.record_change(Path::new("/w/b"));
    tracker.record_change(Path::new("/w/a"));
    tracker.record_change(Path::new("/w/b"));
    assert_eq!(
        tracker.changed_files(),
        vec![Path::new("/w/b").to_path_buf(), Path::new("/w/a").to_path_buf()]
    );
}

#[tokio::test]
async fn disk_port_commits_all_or_nothing() {
    let fx = Fixture::new();
    let a = fx.path("a.txt");
    let b = fx.path("b.txt");
    std::fs::write(&a, "1\n2\n3\n").unwrap();
    std::fs::write(&b, "old\n").unwrap();
    let port = fx.port(Approval::Auto);

    // The second file already exists: nothing at all is written.
    let change = ChangeSet::new(vec![
        FileChange::modify(fx.read(&a).await, "a.txt", "1\nTWO\n3\n"),
        FileChange::create(b.clone(), "b.txt", "new\n"),
    ])
    .unwrap();
    let outcome = port.propose(change).await.unwrap();
    assert!(outcome.refusal_message().unwrap().contains("already exists"), "{outcome:?}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "1\n2\n3\n");

    // Delete then create at a vacated path, plus a move: all applied.
    let c = fx.path("sub/c.txt");
    let change = ChangeSet::new(vec![
        FileChange::delete(fx.read(&b).await, "b.txt"),
        FileChange::modify(fx.read(&a).await, "a.txt", "1\nTWO\n3\n").moved_to(c.clone()),
    ])
    .unwrap();
    let outcome = port.propose(change).await.unwrap();
    assert!(outcome.applied_any(), "{outcome:?}");
    assert!(!a.exists() && !b.exists());
    assert_eq!(std::fs::read_to_string(&c).unwrap(), "1\nTWO\n3\n");
}

#[tokio::test]
async fn commit_rebases_onto_text_changed_since_the_read_or_refuses() {
    let fx = Fixture::new();
    let a = fx.path("a.txt");
    std::fs::write(&a, "1\n2\n3\n4\n5\n").unwrap();
    let base = fx.read(&a).await;
    std::fs::write(&a, "1\n2\n3\n4\nFIVE\n").unwrap();
    let port = fx.port(Approval::Auto);
    let change =
        ChangeSet::new(vec![FileChange::modify(base.clone(), "a.txt", "ONE\n2\n3\n4\n5\n")]).unwrap();
    let outcome = port.propose(change).await.unwrap();
    assert!(outcome.files[0].rebased);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "ONE\n2\n3\n4\nFIVE\n");

    let change = ChangeSet::new(vec![FileChange::modify(base, "a.txt", "1\n2\n3\n4\nfive\n")]).unwrap();
    let outcome = port.propose(change).await.unwrap();
    let message = outcome.refusal_message().unwrap();
    assert!(message.contains("Read the file again"), "{message}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "ONE\n2\n3\n4\nFIVE\n");
}

#[tokio::test]
async fn deny_refuses_and_review_decisions_pick_hunks() {
    let fx = Fixture::new();
    let a = fx.path("a.txt");
    std::fs::write(&a, "1\n2\n3\n4\n5\n6\n").unwrap();
    let change =
        ChangeSet::new(vec![FileChange::modify(fx.read(&a).await, "a.txt", "one\n2\n3\n4\n5\nsix\n")])
            .unwrap();
    assert_eq!(change.files()[0].hunks.len(), 2);
    let denied = fx.port(Approval::Deny).propose(change.clone()).await.unwrap();
    assert!(denied.refusal_message().unwrap().contains("approval: deny"));
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "1\n2\n3\n4\n5\n6\n");

    let resolved = change.clone().resolve(|_, _| FileDecision::AcceptHunks(vec![1])).unwrap();
    let outcomes = DiskCommitter::new(Arc::clone(&fx.env)).commit(resolved).await.unwrap();
    assert_eq!(
        (outcomes[0].status, &outcomes[0].rejected_hunks[..]),
        (FileStatus::PartiallyApplied, &[0][..])
    );
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "1\n2\n3\n4\n5\nsix\n");
    let unknown = change.resolve(|_, _| FileDecision::AcceptHunks(vec![5])).unwrap_err();
    assert!(matches!(unknown, ChangeError::UnknownHunk { index: 5, count: 2, .. }));
}

#[test]
fn content_hash_changes_with_any_byte_and_with_length() {
    let base: Vec<u8> = (0..200u8).collect();
    let hash = content_hash(&base);
    assert_eq!(hash, content_hash(&base.clone()), "deterministic");
    for at in 0..base.len() {
        let mut changed = base.clone();
        changed[at] ^= 1;
        assert_ne!(content_hash(&changed), hash, "a change at byte {at} went unnoticed");
    }
    for len in 0..base.len() {
        assert_ne!(content_hash(&base[..len]), hash, "a prefix of {len} bytes hashes like the whole");
    }
    assert_ne!(content_hash(b"ab\ncd\n"), content_hash(b"cd\nab\n"));
}

#[cfg(unix)]
#[tokio::test]
async fn commits_write_files_in_place_and_roll_back_in_place() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let fx = Fixture::new();
    let a = fx.path("a.txt");
    std::fs::write(&a, "one\ntwo\nthree\n").unwrap();
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o751)).unwrap();
    let link = fx.dir.path().join("hard-link.txt");
    std::fs::hard_link(&a, &link).unwrap();
    let inode = std::fs::metadata(&a).unwrap().ino();
    let port = fx.port(Approval::Auto);

    // Shorter, then longer: the same inode (so the hard link sees it) with the same mode.
    for text in ["1\n", "one\ntwo\nthree\nfour\n"] {
        let change = ChangeSet::new(vec![FileChange::modify(fx.read(&a).await, "a.txt", text)]).unwrap();
        assert!(port.propose(change).await.unwrap().applied_any());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), text);
        let metadata = std::fs::metadata(&a).unwrap();
        assert_eq!((metadata.ino(), metadata.mode() & 0o777), (inode, 0o751));
    }

    // A later write fails (its folder would be under a file): the earlier one is undone in place.
    std::fs::write(fx.dir.path().join("blocker"), "a file\n").unwrap();
    let blocked = fx.path("blocker/new.txt");
    let change = ChangeSet::new(vec![
        FileChange::modify(fx.read(&a).await, "a.txt", "x\n"),
        FileChange::create(blocked.clone(), "blocker/new.txt", "new\n"),
    ])
    .unwrap();
    let outcome = port.propose(change).await.unwrap();
    assert!(outcome.refusal_message().unwrap().contains("could not write"), "{outcome:?}");
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "one\ntwo\nthree\nfour\n");
    assert_eq!(std::fs::metadata(&a).unwrap().ino(), inode);
    assert!(!blocked.exists());
}

#[cfg(unix)]
#[tokio::test]
async fn a_move_whose_second_step_fails_puts_everything_back() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let (a, b) = (fx.path("a.txt"), fx.path("b.txt"));
    std::fs::write(&a, "a\n").unwrap();
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::write(&b, "b\n").unwrap();
    // The move's target folder would be under a file: its write (after the source was removed
    // and b was written) fails.
    std::fs::write(fx.dir.path().join("blocker"), "a file\n").unwrap();
    let change = ChangeSet::new(vec![
        FileChange::modify(fx.read(&a).await, "a.txt", "A\n").moved_to(fx.path("blocker/a.txt")),
        FileChange::modify(fx.read(&b).await, "b.txt", "B\n"),
    ])
    .unwrap();
    let outcome = fx.port(Approval::Auto).propose(change).await.unwrap();
    let message = outcome.refusal_message().unwrap();
    assert!(message.contains("could not write") && message.ends_with("nothing was changed"), "{message}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "a\n");
    assert_eq!(std::fs::metadata(&a).unwrap().permissions().mode() & 0o777, 0o640);
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "b\n");
    assert_eq!(std::fs::read_to_string(fx.dir.path().join("blocker")).unwrap(), "a file\n");
}

#[tokio::test]
async fn an_undone_commit_leaves_alone_a_file_changed_since() {
    let fx = Fixture::new();
    let (a, b) = (fx.path("a.txt"), fx.path("b.txt"));
    std::fs::write(&a, "a\n").unwrap();
    let change = ChangeSet::new(vec![
        FileChange::modify(fx.read(&a).await, "a.txt", "A\n"),
        FileChange::create(b.clone(), "b.txt", "b\n"),
    ])
    .unwrap();
    let committer = DiskCommitter::new(Arc::clone(&fx.env));
    let committed = committer.commit_undoable(change.clone().accept_all()).await.unwrap();
    assert_eq!(
        (std::fs::read_to_string(&a).unwrap(), std::fs::read_to_string(&b).unwrap()),
        ("A\n".into(), "b\n".into())
    );
    committed.undo().await.unwrap();
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "a\n");
    assert!(!b.exists());

    // Someone edits the created file before the undo: it is kept and named.
    let committed = committer.commit_undoable(change.accept_all()).await.unwrap();
    std::fs::write(&b, "theirs\n").unwrap();
    let left = committed.undo().await.unwrap_err();
    assert!(left.to_string().contains("b.txt changed again since it was written"), "{left}");
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "theirs\n");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "a\n");
}

/// Moves a.txt onto b.txt, which the same change deletes (listed after the move), and deletes
/// c.txt and creates it again.
async fn vacate_and_fill(fx: &Fixture) -> ChangeSet {
    let (a, b, c) = (fx.path("a.txt"), fx.path("b.txt"), fx.path("c.txt"));
    ChangeSet::new(vec![
        FileChange::modify(fx.read(&a).await, "a.txt", "moved\n").moved_to(b.clone()),
        FileChange::delete(fx.read(&b).await, "b.txt"),
        FileChange::delete(fx.read(&c).await, "c.txt"),
        FileChange::create(c, "c.txt", "new c\n"),
    ])
    .unwrap()
}

fn write_abc(fx: &Fixture) {
    for name in ["a", "b", "c"] {
        std::fs::write(fx.path(&format!("{name}.txt")), format!("{name}\n")).unwrap();
    }
}

#[cfg(unix)]
#[tokio::test]
async fn the_disk_committer_fills_a_path_the_change_vacates_and_undoes_it_all() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    write_abc(&fx);
    let a = fx.path("a.txt");
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o640)).unwrap();
    let change = vacate_and_fill(&fx).await;
    let committed =
        DiskCommitter::new(Arc::clone(&fx.env)).commit_undoable(change.accept_all()).await.unwrap();
    let read = |name: &str| std::fs::read_to_string(fx.path(name)).ok();
    assert_eq!(
        (read("a.txt"), read("b.txt"), read("c.txt")),
        (None, Some("moved\n".into()), Some("new c\n".into()))
    );
    let mode = std::fs::metadata(fx.path("b.txt")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the moved file keeps its mode");
    committed.undo().await.unwrap();
    assert_eq!(
        (read("a.txt"), read("b.txt"), read("c.txt")),
        (Some("a\n".into()), Some("b\n".into()), Some("c\n".into()))
    );
}

#[tokio::test]
async fn the_plan_over_buffers_fills_a_path_the_change_vacates_once_it_is_vacated() {
    let fx = Fixture::new();
    write_abc(&fx);
    // b.txt is open with unsaved text: that is what the delete must find.
    fx.workspace.documents().open(&fx.path("b.txt"), "b (unsaved)\n", 3);
    let change = vacate_and_fill(&fx).await.accept_all();
    let plan = fx.workspace.plan(&*fx.env, &change).await.unwrap();
    let order: Vec<(char, &str)> = plan
        .in_sequence()
        .unwrap()
        .iter()
        .map(|step| (step.file.change.op.letter(), step.file.change.display_path.as_str()))
        .collect();
    assert_eq!(order, [('D', "b.txt"), ('R', "a.txt"), ('D', "c.txt"), ('A', "c.txt")]);
    let held: Vec<&Holder> = plan
        .steps
        .iter()
        .filter_map(|step| match &step.action {
            Action::Delete { current } | Action::Move { current, .. } => Some(&current.detail),
            Action::Create { .. } | Action::Modify { .. } => None,
        })
        .collect();
    assert_eq!(held, [&Holder::File, &Holder::Buffer { version: 3, confirmed: true }, &Holder::File]);

    // A path nobody vacates is refused, by both planners.
    let (a, b) = (fx.path("a.txt"), fx.path("b.txt"));
    let onto_b =
        ChangeSet::new(vec![FileChange::modify(fx.read(&a).await, "a.txt", "x\n").moved_to(b.clone())])
            .unwrap()
            .accept_all();
    assert_eq!(fx.workspace.plan(&*fx.env, &onto_b).await.unwrap_err(), PlanError::AlreadyExists(b.clone()));
    let committed = DiskCommitter::new(Arc::clone(&fx.env)).commit(onto_b).await;
    assert_eq!(committed.unwrap_err(), CommitError::Plan(PlanError::AlreadyExists(b)));
}

#[tokio::test]
async fn files_trading_places_are_moved_on_disk_and_cannot_be_sequenced_for_an_editor() {
    let fx = Fixture::new();
    write_abc(&fx);
    let (a, b) = (fx.path("a.txt"), fx.path("b.txt"));
    let swap = ChangeSet::new(vec![
        FileChange::modify(fx.read(&a).await, "a.txt", "a\n").moved_to(b.clone()),
        FileChange::modify(fx.read(&b).await, "b.txt", "b\n").moved_to(a.clone()),
    ])
    .unwrap()
    .accept_all();
    let plan = fx.workspace.plan(&*fx.env, &swap).await.unwrap();
    assert_eq!(plan.in_sequence().unwrap_err(), MoveCycle(b.clone()));
    DiskCommitter::new(Arc::clone(&fx.env)).commit(swap).await.unwrap();
    assert_eq!(
        (std::fs::read_to_string(&a).unwrap(), std::fs::read_to_string(&b).unwrap()),
        ("b\n".into(), "a\n".into())
    );
}
