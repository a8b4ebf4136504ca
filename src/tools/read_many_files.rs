//! `read_many_files` (gemini-cli): the contents of several files named by paths, directories or
//! glob patterns, concatenated with `--- path ---` separators. Text is read through the
//! workspace (open buffers first) and recorded as read; binary files are skipped and listed.

use std::collections::BTreeSet;
use std::path::PathBuf;

use async_trait::async_trait;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::{display, parse_args, resolve_or_cwd};
use super::read_file::{MAX_IMAGE_BYTES, image_media_type};
use super::summary::CallArgs;
use super::{Tool, ToolContext, ToolError, ToolImage, ToolOutput};
use crate::exec::FileKind;

/// Most files read in one call.
pub const MAX_FILES: usize = 500;

/// Skipped unless `useDefaultExcludes` is false.
const DEFAULT_EXCLUDES: &[&str] = &[
    "**/node_modules/**",
    "**/.git/**",
    "**/target/**",
    "**/dist/**",
    "**/build/**",
    "**/__pycache__/**",
    "**/.venv/**",
    "**/*.min.js",
    "**/*.lock",
    "**/*.{exe,dll,so,dylib,o,a,class,jar,zip,gz,tar,7z,pdf,wasm,bin}",
];

pub struct ReadManyFilesTool;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Args {
    paths: Vec<String>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    recursive: Option<bool>,
    use_default_excludes: Option<bool>,
}

fn glob_set(patterns: impl IntoIterator<Item = String>) -> Result<GlobSet, ToolError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob =
            Glob::new(&pattern).map_err(|e| ToolError::new(format!("invalid glob `{pattern}`: {e}")))?;
        builder.add(glob);
    }
    builder.build().map_err(|e| ToolError::new(format!("invalid glob patterns: {e}")))
}

fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

#[async_trait]
impl Tool for ReadManyFilesTool {
    fn name(&self) -> &str {
        "read_many_files"
    }

    fn description(&self) -> &str {
        "Reads the content of several files at once. `paths` takes file paths, directories and glob \
         patterns relative to the working directory (e.g. [\"src/**/*.ts\", \"README.md\", \"docs/\"]). \
         Text files are concatenated, each introduced by a `--- path ---` separator. Images are \
         returned only when named explicitly. Binary files, files ignored by .gitignore and common \
         build/dependency folders are skipped. Use it to get an overview of related files."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "paths": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "description": "File paths, directories or glob patterns, relative to the working directory."},
                "include": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "More glob patterns to include (merged with paths)."},
                "exclude": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "Glob patterns of files to leave out, e.g. [\"**/*.log\"]."},
                "recursive": {"type": "boolean", "description": "Search directories recursively (default true)."},
                "useDefaultExcludes": {"type": "boolean", "description": "Skip node_modules, .git, build output and similar (default true)."}
            },
            "required": ["paths"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn summary(&self, call: &CallArgs<'_>) -> String {
        let paths = call.value("paths").and_then(Value::as_array).map(|paths| {
            paths.iter().filter_map(Value::as_str).map(|p| call.shown(p)).collect::<Vec<_>>().join(", ")
        });
        format!("read_many_files {}", paths.unwrap_or_default())
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let cwd = resolve_or_cwd(ctx, None)?;
        let mut excludes: Vec<String> = args.exclude.clone();
        if args.use_default_excludes.unwrap_or(true) {
            excludes.extend(DEFAULT_EXCLUDES.iter().map(|s| s.to_string()));
        }
        let excludes = glob_set(excludes)?;
        let recursive = args.recursive.unwrap_or(true);

        // (path, named explicitly)
        let mut files: BTreeSet<(PathBuf, bool)> = BTreeSet::new();
        let mut problems = Vec::new();
        for spec in args.paths.iter().chain(&args.include) {
            if is_glob(spec) {
                match ctx.env.glob(spec, &cwd).await {
                    Ok(found) => files.extend(found.into_iter().map(|p| (p, false))),
                    Err(e) => problems.push(format!("{spec}: {e}")),
                }
                continue;
            }
            let path = ctx.resolve(spec)?;
            let is_dir =
                matches!(ctx.env.stat(&path).await, Ok(Some(stat)) if stat.kind == FileKind::Directory);
            if is_dir {
                let pattern = if recursive { "**/*" } else { "*" };
                match ctx.env.glob(pattern, &path).await {
                    Ok(found) => files.extend(
                        found
                            .into_iter()
                            .filter(|p| recursive || p.parent() == Some(path.as_path()))
                            .map(|p| (p, false)),
                    ),
                    Err(e) => problems.push(format!("{spec}: {e}")),
                }
            } else if ctx.workspace.exists(&*ctx.env, &path).await {
                files.insert((path, true));
            } else {
                problems.push(format!("{spec}: no such file or directory"));
            }
        }

        let mut out = String::new();
        let mut images = Vec::new();
        let mut skipped = Vec::new();
        let mut seen = BTreeSet::new();
        let mut read = 0;
        for (path, explicit) in files {
            if !seen.insert(path.clone()) {
                continue;
            }
            let shown = display(ctx, &path);
            let relative = path.strip_prefix(&cwd).unwrap_or(&path);
            if !explicit && excludes.is_match(relative) {
                continue;
            }
            if read >= MAX_FILES {
                skipped.push(format!("{shown} (more than {MAX_FILES} files)"));
                continue;
            }
            if let Some(media_type) = image_media_type(&path) {
                if explicit {
                    match ctx.env.read_bytes(&path, MAX_IMAGE_BYTES).await {
                        Ok(data) => {
                            out.push_str(&format!("--- {shown} ---\n\n[image attached: {media_type}]\n\n"));
                            images
                                .push(ToolImage { media_type: media_type.to_string(), data: data.to_vec() });
                            read += 1;
                        }
                        Err(e) => skipped.push(format!("{shown} ({e})")),
                    }
                } else {
                    skipped.push(format!("{shown} (image; name it explicitly to read it)"));
                }
                continue;
            }
            match ctx.workspace.read(&*ctx.env, &path).await {
                Ok(snapshot) => {
                    ctx.reads.record_read(&snapshot);
                    out.push_str(&format!("--- {shown} ---\n\n{}", snapshot.text));
                    if !snapshot.text.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push('\n');
                    read += 1;
                }
                Err(e) => skipped.push(format!("{shown} ({e})")),
            }
        }
        if read == 0 && skipped.is_empty() {
            let mut message = String::from("No files matched the given paths or patterns.");
            if !problems.is_empty() {
                message.push_str(&format!(" Problems: {}.", problems.join("; ")));
            }
            return Err(ToolError::new(message));
        }
        out.push_str("--- End of content ---\n");
        if !skipped.is_empty() {
            out.push_str(&format!("\n[Skipped {} files: {}]\n", skipped.len(), skipped.join("; ")));
        }
        if !problems.is_empty() {
            out.push_str(&format!("\n[Not found: {}]\n", problems.join("; ")));
        }
        Ok(ToolOutput { content: out, images, ends_task: None })
    }
}
