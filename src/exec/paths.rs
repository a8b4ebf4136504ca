//! Path resolution for the local environment, and the one owner of lenient canonicalization:
//! relative paths against the working directory, `.` and `..` taken lexically, symlinks followed
//! (also for paths that do not exist yet), workspace roots enforced.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use super::ExecError;

#[derive(Debug, Clone)]
pub(crate) struct PathPolicy {
    cwd: PathBuf,
    roots: Vec<PathBuf>,
    allow_outside: bool,
}

impl PathPolicy {
    pub(crate) fn new(cwd: &Path, roots: &[PathBuf], allow_outside: bool) -> Self {
        let cwd = canonicalize_lenient(cwd);
        let mut roots: Vec<PathBuf> = roots.iter().map(|r| canonicalize_lenient(r)).collect();
        if roots.is_empty() {
            roots.push(cwd.clone());
        }
        Self { cwd, roots, allow_outside }
    }

    pub(crate) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The absolute, symlink-free form of `path`, refused when outside the roots.
    pub(crate) fn resolve(&self, path: &Path) -> Result<PathBuf, ExecError> {
        self.resolve_with(path, &mut HashMap::new())
    }

    /// Resolves `paths` like [`PathPolicy::resolve`], asking the file system about each folder
    /// once (a patch of a thousand files in ten folders canonicalizes ten folders, then checks
    /// each file for being a symlink). The folders are forgotten when it returns.
    pub(crate) fn resolve_all(&self, paths: &[&Path]) -> Vec<Result<PathBuf, ExecError>> {
        let mut folders = HashMap::new();
        paths.iter().map(|path| self.resolve_with(path, &mut folders)).collect()
    }

    /// A path for a file operation: taken as it is when it has the form [`PathPolicy::resolve`]
    /// gives (absolute, without `.` or `..`, inside a root), so a resolved path costs no
    /// further system call; resolved in full otherwise.
    pub(crate) fn check<'p>(&self, path: &'p Path) -> Result<Cow<'p, Path>, ExecError> {
        let normal = path.is_absolute()
            && path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if normal && (self.allow_outside || self.roots.iter().any(|root| path.starts_with(root))) {
            return Ok(Cow::Borrowed(path));
        }
        self.resolve(path).map(Cow::Owned)
    }

    fn resolve_with(
        &self,
        path: &Path,
        folders: &mut HashMap<PathBuf, PathBuf>,
    ) -> Result<PathBuf, ExecError> {
        let joined = normalize_lexically(&self.cwd.join(path));
        let resolved = match (joined.parent(), joined.file_name()) {
            (Some(folder), Some(name)) => {
                let folder = match folders.get(folder) {
                    Some(canonical) => canonical,
                    None => {
                        let canonical = canonicalize_lenient(folder);
                        folders.entry(folder.to_path_buf()).or_insert(canonical)
                    }
                };
                let candidate = folder.join(name);
                match candidate.symlink_metadata() {
                    Ok(metadata) if metadata.file_type().is_symlink() => follow_symlink(&candidate),
                    _ => candidate,
                }
            }
            _ => canonicalize_lenient(&joined),
        };
        if self.allow_outside || self.roots.iter().any(|root| resolved.starts_with(root)) {
            Ok(resolved)
        } else {
            Err(ExecError::OutsideWorkspace {
                path: resolved.display().to_string(),
                roots: self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", "),
            })
        }
    }
}

/// `path` made absolute-looking without `.`/`..`, with symlinks resolved for the longest prefix
/// that exists (the rest, which does not exist yet, is appended as written).
pub(crate) fn canonicalize_lenient(path: &Path) -> PathBuf {
    let normalized = normalize_lexically(path);
    let mut existing = normalized.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut result = canonical;
            result.extend(rest.iter().rev());
            return result;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return normalized,
        }
    }
}

/// Where the symlink `link` (in a canonical folder) leads, also when its target does not exist
/// yet: a write through the link would create the target there.
fn follow_symlink(link: &Path) -> PathBuf {
    // The kernel gives up after 40 links (ELOOP); so does this.
    let mut path = link.to_path_buf();
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&path) else { break };
        let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let joined = normalize_lexically(&folder.join(target));
        path = match (joined.parent(), joined.file_name()) {
            (Some(parent), Some(name)) => canonicalize_lenient(parent).join(name),
            _ => joined,
        };
    }
    canonicalize_lenient(&path)
}

pub(crate) fn normalize_lexically(path: &Path) -> PathBuf {
    let mut normalized = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !normalized.pop() {
                    normalized.push(component);
                }
            }
            other => normalized.push(other),
        }
    }
    normalized
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_and_missing_paths_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let policy = PathPolicy::new(dir.path(), &[], false);
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(policy.resolve(Path::new("a/b/../c.txt")).unwrap(), root.join("a/c.txt"));
        assert!(matches!(policy.resolve(Path::new("../x")), Err(ExecError::OutsideWorkspace { .. })));
    }

    #[test]
    fn resolves_against_the_working_directory_and_refuses_outside_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        let policy = PathPolicy::new(&root, &[], false);
        assert_eq!(policy.resolve(&root.join("src").join("../a/./b.rs")).unwrap(), root.join("a/b.rs"));
        assert_eq!(policy.resolve(&root.join("x")).unwrap(), root.join("x"));
        let outside = policy.resolve(Path::new("../../etc/passwd")).unwrap_err();
        assert!(matches!(outside, ExecError::OutsideWorkspace { .. }), "{outside}");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/", root.join("escape")).unwrap();
            let escaped = policy.resolve(Path::new("escape/etc")).unwrap_err();
            assert!(matches!(escaped, ExecError::OutsideWorkspace { .. }), "{escaped}");
            let open = PathPolicy::new(&root, &[], true);
            assert_eq!(open.resolve(Path::new("escape/etc")).unwrap(), Path::new("/etc"));
        }
    }

    #[test]
    fn symlinks_pointing_outside_are_refused_unless_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let strict = PathPolicy::new(dir.path(), &[], false);
        assert!(matches!(strict.resolve(Path::new("link/new.txt")), Err(ExecError::OutsideWorkspace { .. })));
        let lenient = PathPolicy::new(dir.path(), &[], true);
        let expected = outside.path().canonicalize().unwrap().join("new.txt");
        assert_eq!(lenient.resolve(Path::new("link/new.txt")).unwrap(), expected);
        // A dangling link leads where a write through it would create the file (faults_paths).
        std::os::unix::fs::symlink(outside.path().join("created.txt"), dir.path().join("dangling")).unwrap();
        assert!(matches!(strict.resolve(Path::new("dangling")), Err(ExecError::OutsideWorkspace { .. })));
        let created = outside.path().canonicalize().unwrap().join("created.txt");
        assert_eq!(lenient.resolve(Path::new("dangling")).unwrap(), created);
    }

    #[test]
    fn file_operations_take_resolved_paths_as_they_are_and_resolve_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let policy = PathPolicy::new(&root, &[], false);
        let resolved = root.join("a/b.txt");
        assert!(matches!(policy.check(&resolved), Ok(Cow::Borrowed(path)) if path == resolved));
        assert_eq!(policy.check(Path::new("a/./b.txt")).unwrap(), resolved);
        assert_eq!(policy.check(&root.join("c/../a/b.txt")).unwrap(), resolved);
        assert!(matches!(policy.check(Path::new("/etc/passwd")), Err(ExecError::OutsideWorkspace { .. })));
        assert!(matches!(policy.check(&root.join("../x")), Err(ExecError::OutsideWorkspace { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn a_batch_agrees_with_canonicalizing_each_path_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
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
        let policy = PathPolicy::new(&root, &[], false);
        let batch: Vec<&Path> = paths.iter().map(Path::new).collect();
        for (path, result) in paths.iter().zip(policy.resolve_all(&batch)) {
            // What canonicalizing the whole path, with no cache, gives.
            let expected = canonicalize_lenient(&root.join(path));
            match result {
                Ok(resolved) => assert_eq!(resolved, expected, "{path}"),
                Err(ExecError::OutsideWorkspace { .. }) => assert!(!expected.starts_with(&root), "{path}"),
                Err(error) => panic!("{path}: {error}"),
            }
        }
        let links = policy.resolve_all(&[Path::new("folder-link/file-link"), Path::new("real/outside-link")]);
        assert_eq!(links[0].as_ref().unwrap(), &root.join("real/sub/f.txt"));
        assert!(matches!(links[1], Err(ExecError::OutsideWorkspace { .. })));
    }
}
