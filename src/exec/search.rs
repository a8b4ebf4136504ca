//! In-process search with the ripgrep crates: regex grep over a parallel, gitignore-aware walk
//! (an editor's buffers searched in place of their files), glob matching, and directory listing. Results are deterministic (sorted) whatever the thread
//! schedule.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::{WalkBuilder, WalkState};

use super::{DirEntry, ExecError, GrepFile, GrepLine, GrepMode, GrepOptions, GrepResult};

/// Results kept before sorting; protects memory on patterns that match everything.
const HARD_CAP: usize = 200_000;
/// Longest line text kept in grep output.
const MAX_LINE_CHARS: usize = 1_000;

fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder.hidden(true).require_git(false).git_global(false).parents(true);
    builder
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

pub(crate) fn grep(pattern: &str, root: &Path, options: &GrepOptions) -> Result<GrepResult, ExecError> {
    let mut builder = RegexMatcherBuilder::new();
    builder.case_insensitive(options.case_insensitive).multi_line(true);
    if options.multiline {
        builder.dot_matches_new_line(true);
    } else {
        builder.line_terminator(Some(b'\n'));
    }
    let matcher = builder
        .build(pattern)
        .map_err(|e| ExecError::InvalidInput(format!("invalid regex `{pattern}`: {e}")))?;
    let context = if options.mode == GrepMode::Content { options } else { &GrepOptions::default() };
    let searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .multi_line(options.multiline)
        .before_context(context.context_before)
        .after_context(context.context_after)
        .build();

    let found = Mutex::new(Vec::new());
    let is_file = options.buffers.contains_key(root)
        || std::fs::metadata(root).map_err(|e| ExecError::io(root, e))?.is_file();
    if is_file {
        let mut searcher = searcher;
        if let Some(file) = search_file(&mut searcher, &matcher, root, options) {
            found.lock().unwrap_or_else(|e| e.into_inner()).push(file);
        }
    } else {
        let mut builder = walker(root);
        let overrides = glob_overrides(root, options.glob.as_deref())?;
        if let Some(overrides) = &overrides {
            builder.overrides(overrides.clone());
        }
        let total = std::sync::atomic::AtomicUsize::new(0);
        builder.build_parallel().run(|| {
            let mut searcher = searcher.clone();
            let matcher = matcher.clone();
            let found = &found;
            let total = &total;
            Box::new(move |entry| {
                let Ok(entry) = entry else { return WalkState::Continue };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                if let Some(file) = search_file(&mut searcher, &matcher, entry.path(), options) {
                    let lines = file.lines.len().max(1);
                    found.lock().unwrap_or_else(|e| e.into_inner()).push(file);
                    let seen = total.fetch_add(lines, std::sync::atomic::Ordering::Relaxed) + lines;
                    if seen >= HARD_CAP {
                        return WalkState::Quit;
                    }
                }
                WalkState::Continue
            })
        });
        // Buffers of files not on disk yet: the walk cannot see them.
        let mut searcher = searcher;
        let unsaved = options.buffers.keys().filter(|path| {
            path.starts_with(root)
                && !path.exists()
                && overrides.as_ref().is_none_or(|o| o.matched(path, false).is_whitelist())
        });
        for path in unsaved {
            if let Some(file) = search_file(&mut searcher, &matcher, path, options) {
                found.lock().unwrap_or_else(|e| e.into_inner()).push(file);
            }
        }
    }

    let mut files = found.into_inner().unwrap_or_else(|e| e.into_inner());
    if options.mode == GrepMode::FilesWithMatches {
        files.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.path.cmp(&b.path)));
    } else {
        files.sort_by(|a, b| a.path.cmp(&b.path));
    }
    let limit_reached = apply_limit(&mut files, options);
    Ok(GrepResult { files, limit_reached })
}

/// ripgrep's `--glob` semantics for the walk: only files the globs whitelist are searched.
fn glob_overrides(root: &Path, glob: Option<&str>) -> Result<Option<Override>, ExecError> {
    let Some(glob) = glob.filter(|g| !g.trim().is_empty()) else { return Ok(None) };
    let invalid = |e: ignore::Error| ExecError::InvalidInput(format!("invalid glob `{glob}`: {e}"));
    let mut overrides = OverrideBuilder::new(root);
    for part in split_glob_list(glob) {
        overrides.add(&part).map_err(invalid)?;
    }
    overrides.build().map(Some).map_err(invalid)
}

/// `a,b` and `{a,b}` both name several globs; braces are kept for globset to expand.
fn split_glob_list(glob: &str) -> Vec<String> {
    if glob.contains('{') {
        return vec![glob.trim().to_string()];
    }
    glob.split([',', ' ']).map(str::trim).filter(|g| !g.is_empty()).map(str::to_string).collect()
}

/// Cuts results to `max_results` (matching lines, or files in files mode).
fn apply_limit(files: &mut Vec<GrepFile>, options: &GrepOptions) -> bool {
    if options.max_results == 0 {
        return false;
    }
    if options.mode == GrepMode::FilesWithMatches {
        let cut = files.len() > options.max_results;
        files.truncate(options.max_results);
        return cut;
    }
    let mut remaining = options.max_results as u64;
    let mut keep = 0;
    let mut cut = false;
    for file in files.iter_mut() {
        if remaining == 0 {
            cut = true;
            break;
        }
        if file.match_count > remaining {
            cut = true;
            file.match_count = remaining;
            let mut matches = 0;
            file.lines.retain(|line| {
                if !line.is_context {
                    matches += 1;
                }
                matches <= remaining
            });
        }
        remaining -= file.match_count;
        keep += 1;
    }
    files.truncate(keep);
    cut
}

/// Searches the editor's buffer for `path` when there is one, the file on disk otherwise.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    options: &GrepOptions,
) -> Option<GrepFile> {
    let mode = options.mode;
    let buffer = options.buffers.get(path);
    let mut sink = Collect { mode, lines: Vec::new(), match_count: 0 };
    let searched = match buffer {
        Some(text) => searcher.search_slice(matcher, text.as_bytes(), &mut sink),
        None => searcher.search_path(matcher, path, &mut sink),
    };
    if let Err(error) = searched {
        tracing::debug!(path = %path.display(), %error, "grep skipped a file");
        return None;
    }
    // A buffer not on disk yet is the newest file there is.
    let modified = || modified(path).or_else(|| buffer.map(|_| SystemTime::now()));
    (sink.match_count > 0).then(|| GrepFile {
        path: path.to_path_buf(),
        lines: sink.lines,
        match_count: sink.match_count,
        modified: if mode == GrepMode::FilesWithMatches { modified() } else { None },
    })
}

struct Collect {
    mode: GrepMode,
    lines: Vec<GrepLine>,
    match_count: u64,
}

fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{} [... line truncated]", &text[..cut]),
        None => text.into_owned(),
    }
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = m.line_number().unwrap_or(0);
        let mut lines = 0;
        for (i, line) in m.lines().enumerate() {
            lines += 1;
            if self.mode == GrepMode::Content {
                self.lines.push(GrepLine {
                    line_number: first + i as u64,
                    text: line_text(line),
                    is_context: false,
                });
            }
        }
        self.match_count += lines.max(1);
        Ok(self.mode != GrepMode::FilesWithMatches)
    }

    fn context(&mut self, _searcher: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.mode == GrepMode::Content {
            self.lines.push(GrepLine {
                line_number: c.line_number().unwrap_or(0),
                text: line_text(c.bytes()),
                is_context: true,
            });
        }
        Ok(true)
    }
}

/// Compiles a glob the way ripgrep's `--glob` reads it: without a `/` it matches file names at
/// any depth, otherwise paths relative to the root.
fn compile_glob(pattern: &str) -> Result<(GlobMatcher, bool), ExecError> {
    let pattern = pattern.trim().trim_start_matches("./");
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ExecError::InvalidInput(format!("invalid glob pattern `{pattern}`: {e}")))?;
    Ok((glob.compile_matcher(), !pattern.contains('/')))
}

pub(crate) fn glob(pattern: &str, root: &Path) -> Result<Vec<PathBuf>, ExecError> {
    let (matcher, by_name) = compile_glob(pattern)?;
    let metadata = std::fs::metadata(root).map_err(|e| ExecError::io(root, e))?;
    if !metadata.is_dir() {
        return Err(ExecError::InvalidInput(format!("{} is not a directory", root.display())));
    }
    let found = Mutex::new(Vec::new());
    walker(root).build_parallel().run(|| {
        let matcher = matcher.clone();
        let found = &found;
        Box::new(move |entry| {
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Ok(relative) = entry.path().strip_prefix(root) else { return WalkState::Continue };
            let hit = if by_name {
                entry.path().file_name().is_some_and(|name| matcher.is_match(name))
                    || matcher.is_match(relative)
            } else {
                matcher.is_match(relative)
            };
            if hit {
                // The stat runs on this walker thread, outside the lock.
                let stamp = modified(entry.path());
                let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
                found.push((stamp, entry.into_path()));
                if found.len() >= HARD_CAP {
                    return WalkState::Quit;
                }
            }
            WalkState::Continue
        })
    });
    let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(found.into_iter().map(|(_, path)| path).collect())
}

pub(crate) fn list_directory(root: &Path, depth: usize) -> Result<Vec<DirEntry>, ExecError> {
    let metadata = std::fs::metadata(root).map_err(|e| ExecError::io(root, e))?;
    if !metadata.is_dir() {
        return Err(ExecError::InvalidInput(format!("{} is not a directory", root.display())));
    }
    let mut entries = Vec::new();
    let walk = walker(root)
        .hidden(false)
        .max_depth(Some(depth.max(1)))
        .filter_entry(|e| e.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    for entry in walk.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else { continue };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let size = if is_dir { None } else { entry.metadata().ok().map(|m| m.len()) };
        entries.push(DirEntry {
            name: relative.to_string_lossy().replace('\\', "/"),
            is_dir,
            size,
            depth: entry.depth() - 1,
        });
    }
    Ok(entries)
}
