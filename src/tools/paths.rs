//! Path helpers shared by the read/search tools: resolving a model-given path through the
//! workspace (roots enforced, symlinks resolved) and showing paths relative to the working
//! directory, so outputs stay short and stable.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ToolContext, ToolError};

/// Resolves `path` (relative to the working directory, or absolute) through the workspace.
pub(crate) fn resolve(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    ctx.workspace.resolve(&ctx.cwd, path).map_err(|e| ToolError::new(e.to_string()))
}

/// Resolves an optional directory argument, defaulting to the working directory.
pub(crate) fn resolve_or_cwd(ctx: &ToolContext, path: Option<&str>) -> Result<PathBuf, ToolError> {
    match path.map(str::trim).filter(|p| !p.is_empty()) {
        Some(path) => resolve(ctx, path),
        None => resolve(ctx, "."),
    }
}

/// `path` relative to the working directory when it is inside it, absolute otherwise.
pub(crate) fn display(ctx: &ToolContext, path: &Path) -> String {
    let base = ctx.workspace.resolve(&ctx.cwd, ".").unwrap_or_else(|_| ctx.cwd.clone());
    match path.strip_prefix(&base) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_string(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Deserializes validated arguments into the tool's argument struct.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::new(format!("Invalid arguments for tool {tool}: {e}")))
}
