//! Tests of the workspace view: path resolution, buffer-first reads, the read tracker, and
//! committing change sets to disk through the disk port.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::config::Approval;

fn temp_workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::for_disk(dir.path().to_path_buf());
    (dir, workspace)
}

#[test]
fn resolve_makes_paths_absolute_and_refuses_outside_roots() {
    let (dir, workspace) = temp_workspace();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    assert_eq!(workspace.resolve(&root.join("src"), "../a/./b.rs").unwrap(), root.join("a/b.rs"));
    assert_eq!(workspace.resolve(&root, &root.join("x").display().to_string()).unwrap(), root.join("x"));
    let outside = workspace.resolve(&root, "../../etc/passwd").unwrap_err();
    assert!(matches!(outside, WorkspaceError::OutsideRoots { .. }), "{outside}");
    assert_eq!(workspace.resolve(&root, "  ").unwrap_err(), WorkspaceError::EmptyPath);
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/", root.join("escape")).unwrap();
        assert!(matches!(
            workspace.resolve(&root, "escape/etc").unwrap_err(),
            WorkspaceError::OutsideRoots { .. }
        ));
        let open = Workspace::new(vec![root.clone()], Arc::new(DocumentStore::new()), true);
        assert_eq!(open.resolve(&root, "escape/etc").unwrap(), Path::new("/etc"));
    }
}

#[test]
fn reads_prefer_open_buffers_and_refuse_binary_files() {
    let (dir, workspace) = temp_workspace();
    let path = workspace.resolve(dir.path(), "a.txt").unwrap();
    std::fs::write(&path, "disk\n").unwrap();
    let disk = workspace.read(&path).unwrap();
    assert_eq!((&*disk.text, disk.from_buffer, disk.version), ("disk\n", false, None));
    workspace.documents().open(&path, "buffer\n", 7);
    let buffer = workspace.read(&path).unwrap();
    assert_eq!((&*buffer.text, buffer.from_buffer, buffer.version), ("buffer\n", true, Some(7)));
    assert_ne!(disk.hash, buffer.hash);

    let binary = workspace.resolve(dir.path(), "b.bin").unwrap();
    std::fs::write(&binary, b"a\0b").unwrap();
    assert_eq!(workspace.read(&binary).unwrap_err(), WorkspaceError::Binary(binary.clone()));
    std::fs::write(&binary, b"\xff\xfe").unwrap();
    assert_eq!(workspace.read(&binary).unwrap_err(), WorkspaceError::NotUtf8(binary));
    let missing = workspace.resolve(dir.path(), "missing").unwrap();
    assert_eq!(workspace.read_if_exists(&missing).unwrap(), None);
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
    let (dir, workspace) = temp_workspace();
    let a = workspace.resolve(dir.path(), "a.txt").unwrap();
    let b = workspace.resolve(dir.path(), "b.txt").unwrap();
    std::fs::write(&a, "1\n2\n3\n").unwrap();
    std::fs::write(&b, "old\n").unwrap();
    let port = DiskPort::new(Approval::Auto);

    // The second file already exists: nothing at all is written.
    let change = ChangeSet::new(vec![
        FileChange::modify(workspace.read(&a).unwrap(), "a.txt", "1\nTWO\n3\n"),
        FileChange::create(b.clone(), "b.txt", "new\n"),
    ])
    .unwrap();
    let outcome = port.propose(change).await.unwrap();
    assert!(outcome.refusal_message().unwrap().contains("already exists"), "{outcome:?}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "1\n2\n3\n");

    // Delete then create at a vacated path, plus a move: all applied.
    let c = workspace.resolve(dir.path(), "sub/c.txt").unwrap();
    let change = ChangeSet::new(vec![
        FileChange::delete(workspace.read(&b).unwrap(), "b.txt"),
        FileChange::modify(workspace.read(&a).unwrap(), "a.txt", "1\nTWO\n3\n").moved_to(c.clone()),
    ])
    .unwrap();
    let outcome = port.propose(change).await.unwrap();
    assert!(outcome.applied_any(), "{outcome:?}");
    assert!(!a.exists() && !b.exists());
    assert_eq!(std::fs::read_to_string(&c).unwrap(), "1\nTWO\n3\n");
}

#[tokio::test]
async fn commit_rebases_onto_text_changed_since_the_read_or_refuses() {
    let (dir, workspace) = temp_workspace();
    let a = workspace.resolve(dir.path(), "a.txt").unwrap();
    std::fs::write(&a, "1\n2\n3\n4\n5\n").unwrap();
    let base = workspace.read(&a).unwrap();
    std::fs::write(&a, "1\n2\n3\n4\nFIVE\n").unwrap();
    let port = DiskPort::new(Approval::Auto);
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
    let (dir, workspace) = temp_workspace();
    let a = workspace.resolve(dir.path(), "a.txt").unwrap();
    std::fs::write(&a, "1\n2\n3\n4\n5\n6\n").unwrap();
    let change = ChangeSet::new(vec![FileChange::modify(
        workspace.read(&a).unwrap(),
        "a.txt",
        "one\n2\n3\n4\n5\nsix\n",
    )])
    .unwrap();
    assert_eq!(change.files()[0].hunks.len(), 2);
    let denied = DiskPort::new(Approval::Deny).propose(change.clone()).await.unwrap();
    assert!(denied.refusal_message().unwrap().contains("approval: deny"));
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "1\n2\n3\n4\n5\n6\n");

    let resolved = change.clone().resolve(|_, _| FileDecision::AcceptHunks(vec![1])).unwrap();
    let outcomes = DiskCommitter.commit(resolved).await.unwrap();
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
    let (dir, workspace) = temp_workspace();
    let a = workspace.resolve(dir.path(), "a.txt").unwrap();
    std::fs::write(&a, "one\ntwo\nthree\n").unwrap();
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o751)).unwrap();
    let link = dir.path().join("hard-link.txt");
    std::fs::hard_link(&a, &link).unwrap();
    let inode = std::fs::metadata(&a).unwrap().ino();
    let port = DiskPort::new(Approval::Auto);

    // Shorter, then longer: the same inode (so the hard link sees it) with the same mode.
    for text in ["1\n", "one\ntwo\nthree\nfour\n"] {
        let change =
            ChangeSet::new(vec![FileChange::modify(workspace.read(&a).unwrap(), "a.txt", text)]).unwrap();
        assert!(port.propose(change).await.unwrap().applied_any());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), text);
        let metadata = std::fs::metadata(&a).unwrap();
        assert_eq!((metadata.ino(), metadata.mode() & 0o777), (inode, 0o751));
    }

    // A later write fails (its folder would be under a file): the earlier one is undone in place.
    std::fs::write(dir.path().join("blocker"), "a file\n").unwrap();
    let blocked = workspace.resolve(dir.path(), "blocker/new.txt").unwrap();
    let change = ChangeSet::new(vec![
        FileChange::modify(workspace.read(&a).unwrap(), "a.txt", "x\n"),
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
#[test]
fn a_batch_resolver_agrees_with_canonicalizing_each_path_through_symlinks() {
    let (dir, workspace) = temp_workspace();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("real/sub")).unwrap();
    std::fs::write(root.join("real/sub/f.txt"), "f\n").unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("folder-link")).unwrap();
    std::os::unix::fs::symlink(root.join("real/sub/f.txt"), root.join("real/file-link")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", root.join("real/outside-link")).unwrap();
    let paths = [
        "real/sub/f.txt",
        "folder-link/sub/f.txt",
        "real/file-link",
        "folder-link/file-link",
        "folder-link/sub/../sub/new.txt",
        "missing/dir/new.txt",
        "real/outside-link",
        "folder-link/outside-link",
        "../escape.txt",
    ];
    let mut resolver = workspace.resolver(&root);
    for path in paths {
        // What canonicalizing the whole path, with no cache, gives.
        let expected = canonicalize_lenient(&root.join(path));
        match resolver.resolve(path) {
            Ok(resolved) => assert_eq!(resolved, expected, "{path}"),
            Err(WorkspaceError::OutsideRoots { path: resolved, .. }) => {
                assert_eq!(resolved, expected, "{path}");
                assert!(!expected.starts_with(&root), "{path}");
            }
            Err(error) => panic!("{path}: {error}"),
        }
    }
    assert_eq!(resolver.resolve("folder-link/file-link").unwrap(), root.join("real/sub/f.txt"));
    assert!(matches!(resolver.resolve("real/outside-link"), Err(WorkspaceError::OutsideRoots { .. })));
}
