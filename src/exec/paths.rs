//! Path resolution for the local environment: relative paths against the working directory,
//! symlinks followed (also for paths that do not exist yet), workspace roots enforced.

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
        let joined = if path.is_absolute() { path.to_path_buf() } else { self.cwd.join(path) };
        let resolved = canonicalize_lenient(&joined);
        if self.allow_outside || self.roots.iter().any(|root| resolved.starts_with(root)) {
            Ok(resolved)
        } else {
            Err(ExecError::OutsideWorkspace {
                path: path.display().to_string(),
                roots: self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", "),
            })
        }
    }
}

/// Canonicalizes the longest existing ancestor of `path` and appends the rest, normalizing `.`
/// and `..` in the part that does not exist (it cannot contain symlinks).
pub(crate) fn canonicalize_lenient(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for component in rest.iter().rev() {
                push_normalized(&mut out, *component);
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => {
                let mut out = PathBuf::new();
                for component in path.components() {
                    push_normalized(&mut out, component);
                }
                return out;
            }
        }
    }
}

fn push_normalized(out: &mut PathBuf, component: Component<'_>) {
    match component {
        Component::CurDir => {}
        Component::ParentDir => {
            out.pop();
        }
        other => out.push(other.as_os_str()),
    }
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
    fn symlinks_pointing_outside_are_refused_unless_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let strict = PathPolicy::new(dir.path(), &[], false);
        assert!(matches!(strict.resolve(Path::new("link/new.txt")), Err(ExecError::OutsideWorkspace { .. })));
        let lenient = PathPolicy::new(dir.path(), &[], true);
        let expected = outside.path().canonicalize().unwrap().join("new.txt");
        assert_eq!(lenient.resolve(Path::new("link/new.txt")).unwrap(), expected);
    }
}
