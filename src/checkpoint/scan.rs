//! The stat scan of a workspace around a command: every file the ignore files leave in (the
//! `ignore` crate's rules: `.gitignore` with or without git, `.ignore`, `.git/info/exclude`;
//! hidden files included, `.git` itself never entered), each with its size, times and inode,
//! and the prior content of the candidates a command is likely to change.
//!
//! Invariants:
//! - A scan reads metadata only; content is read for the candidates alone, each at most
//!   [`MAX_FILE_BYTES`](super::MAX_FILE_BYTES).
//! - Two scans differ at a path exactly when its stamp (size, mtime, ctime, inode) changed, it
//!   appeared or it went away.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use globset::Glob;

use super::{MAX_FILE_BYTES, Side, Uncovered};

/// What a file's metadata says of its content: a change of content changes the stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
}

impl Stamp {
    pub(super) fn of(metadata: &std::fs::Metadata) -> Self {
        Self {
            len: metadata.len(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
            ino: metadata.ino(),
        }
    }
}

/// The files of a workspace by absolute path.
#[derive(Debug, Default)]
pub struct Scan {
    pub files: HashMap<PathBuf, Stamp>,
    /// False when the walk stopped at [`MAX_SCANNED`] files: such scans are not compared.
    pub complete: bool,
}

/// Most files a scan looks at; a larger workspace's commands are not recorded (a scan of it
/// would cost more than the command).
pub const MAX_SCANNED: usize = 200_000;

/// How a path differs between two scans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Difference {
    Created,
    Modified,
    Deleted,
}

/// The paths that differ from `before` to `after`, sorted.
pub fn differences(before: &Scan, after: &Scan) -> Vec<(PathBuf, Difference)> {
    let mut out: Vec<(PathBuf, Difference)> = after
        .files
        .iter()
        .filter_map(|(path, stamp)| match before.files.get(path) {
            None => Some((path.clone(), Difference::Created)),
            Some(old) if old != stamp => Some((path.clone(), Difference::Modified)),
            Some(_) => None,
        })
        .chain(
            before
                .files
                .keys()
                .filter(|path| !after.files.contains_key(*path))
                .map(|path| (path.clone(), Difference::Deleted)),
        )
        .collect();
    out.sort();
    out
}

/// The text a file holds, as a checkpoint keeps it: text, or why it is not kept.
pub fn read_side(path: &Path, len: u64) -> Side {
    if len > MAX_FILE_BYTES {
        return Side::NotCovered(Uncovered::TooLarge);
    }
    match std::fs::read(path) {
        Ok(bytes) => side_of(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Side::Absent,
        Err(_) => Side::NotCovered(Uncovered::Unreadable),
    }
}

/// Bytes as a checkpoint keeps them.
pub fn side_of(bytes: Vec<u8>) -> Side {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Side::NotCovered(Uncovered::TooLarge);
    }
    if memchr::memchr(0, &bytes).is_some() {
        return Side::NotCovered(Uncovered::Binary);
    }
    match String::from_utf8(bytes) {
        Ok(text) => Side::Text(text.into()),
        Err(_) => Side::NotCovered(Uncovered::Binary),
    }
}

/// Most paths a command's words may add as candidates (a directory's files, a glob's matches).
pub const MAX_NAMED: usize = 2_000;

/// A set of files a command's words are looked up in.
pub trait Files {
    fn contains(&self, path: &Path) -> bool;
    /// Files under `dir` (at most [`MAX_NAMED`]).
    fn under(&self, dir: &Path) -> Vec<PathBuf>;
    /// Files `matcher` matches (at most [`MAX_NAMED`]).
    fn matching(&self, matcher: &globset::GlobMatcher) -> Vec<PathBuf>;
}

impl Files for Scan {
    fn contains(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    fn under(&self, dir: &Path) -> Vec<PathBuf> {
        self.files.keys().filter(|p| p.starts_with(dir)).take(MAX_NAMED).cloned().collect()
    }

    fn matching(&self, matcher: &globset::GlobMatcher) -> Vec<PathBuf> {
        self.files.keys().filter(|p| matcher.is_match(p)).take(MAX_NAMED).cloned().collect()
    }
}

/// The files of `files` that `command` names, run in `cwd`: a word that is a file, the files
/// under a word that is a directory, the files a word with glob characters matches.
pub fn named_by(command: &str, cwd: &Path, files: &impl Files) -> HashSet<PathBuf> {
    let mut named = HashSet::new();
    let words = command
        .split(|c: char| {
            c.is_whitespace() || matches!(c, ';' | '|' | '&' | '<' | '>' | '(' | ')' | '\'' | '"' | '=')
        })
        .filter(|w| !w.is_empty() && !w.starts_with('-'));
    for word in words {
        if named.len() >= MAX_NAMED {
            break;
        }
        let path = crate::exec::normalize_lexically(&cwd.join(word));
        if files.contains(&path) {
            named.insert(path);
        } else if word.contains(['*', '?', '[']) {
            if let Ok(glob) = Glob::new(&path.to_string_lossy()) {
                named.extend(files.matching(&glob.compile_matcher()));
            }
        } else if path.is_dir() {
            named.extend(files.under(&path));
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use super::super::tree::scan;
    use super::*;

    #[test]
    fn a_scan_honours_ignore_files_without_git_and_sees_hidden_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").expect("write");
        std::fs::create_dir_all(root.join("target")).expect("mkdir");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::create_dir_all(root.join("data")).expect("mkdir");
        for file in ["a.txt", ".env", "target/out.bin", "run.log", ".git/HEAD", "data/blob"] {
            std::fs::write(root.join(file), "x").expect("write");
        }
        let mut seen: Vec<String> = scan(root, &root.join("data"))
            .files
            .keys()
            .map(|p| p.strip_prefix(root).expect("under root").display().to_string())
            .collect();
        seen.sort();
        assert_eq!(seen, [".env", ".gitignore", "a.txt"]);
    }

    #[test]
    fn differences_are_created_modified_and_deleted_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for file in ["keep", "change", "gone"] {
            std::fs::write(root.join(file), "1").expect("write");
        }
        let before = scan(root, &root.join("data"));
        std::fs::write(root.join("change"), "22").expect("write");
        std::fs::remove_file(root.join("gone")).expect("rm");
        std::fs::write(root.join("new"), "3").expect("write");
        let after = scan(root, &root.join("data"));
        let found: Vec<(String, Difference)> = differences(&before, &after)
            .into_iter()
            .map(|(p, d)| (p.file_name().expect("name").to_string_lossy().into_owned(), d))
            .collect();
        assert_eq!(
            found,
            [
                ("change".to_string(), Difference::Modified),
                ("gone".to_string(), Difference::Deleted),
                ("new".to_string(), Difference::Created)
            ]
        );
    }

    #[test]
    fn a_command_names_files_directories_and_globs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        for file in ["a.txt", "b.txt", "c.md", "src/x.rs", "src/y.rs"] {
            std::fs::write(root.join(file), "x").expect("write");
        }
        let found = scan(root, &root.join("data"));
        let names = |command: &str| {
            let mut out: Vec<String> = named_by(command, root, &found)
                .into_iter()
                .map(|p| p.strip_prefix(root).expect("under").display().to_string())
                .collect();
            out.sort();
            out
        };
        assert_eq!(names("sed -i 's/a/b/' c.md"), ["c.md"]);
        assert_eq!(names("rm -rf src"), ["src/x.rs", "src/y.rs"]);
        assert_eq!(names("perl -pi -e s/x/y/ *.txt && true"), ["a.txt", "b.txt"]);
        assert!(names("echo hello").is_empty());
    }
}
