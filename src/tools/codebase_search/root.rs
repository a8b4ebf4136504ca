//! The search root: the session's directory. Every path the search model names is resolved
//! against it and must stay inside it; paths are shown relative to it.

use std::path::{Path, PathBuf};

use crate::tools::{ToolContext, ToolError};

pub(super) struct SearchRoot {
    dir: PathBuf,
}

impl SearchRoot {
    pub fn new(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(Self { dir: ctx.resolve(".")? })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The absolute path `path` names (relative to the root, or absolute), symlinks followed by
    /// the environment; refused when it lies outside the root.
    pub fn resolve(&self, ctx: &ToolContext, path: &str) -> Result<PathBuf, String> {
        let path = match path.trim() {
            "" => ".",
            path => path,
        };
        let resolved = ctx.env.resolve_path(&self.dir.join(path)).map_err(|e| e.to_string())?;
        if !resolved.starts_with(&self.dir) {
            return Err(format!(
                "{path} is outside the repository; give paths relative to its root ({})",
                self.dir.display()
            ));
        }
        Ok(resolved)
    }

    /// `path` relative to the root (`.` for the root itself).
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.dir) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".into(),
            Ok(relative) => relative.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}
