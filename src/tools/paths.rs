//! Path helpers shared by the read/search tools: resolving an optional directory argument and
//! showing paths relative to the working directory, so outputs stay short and stable.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ToolContext, ToolError};

/// Resolves an optional directory argument, defaulting to the working directory.
pub(crate) fn resolve_or_cwd(ctx: &ToolContext, path: Option<&str>) -> Result<PathBuf, ToolError> {
    match path.map(str::trim).filter(|p| !p.is_empty()) {
        Some(path) => ctx.resolve(path),
        None => ctx.resolve("."),
    }
}

/// `path` relative to the working directory when it is inside it, absolute otherwise.
pub(crate) fn display(ctx: &ToolContext, path: &Path) -> String {
    let base = ctx.env.resolve_path(&ctx.cwd).unwrap_or_else(|_| ctx.cwd.clone());
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
