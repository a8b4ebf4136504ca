//! The workspace's files as a session's checkpoints keep them between commands: each directory
//! the ignore rules leave in, with the stamps of its files, brought up to date before and after
//! each command instead of walked again.
//!
//! On Linux every directory kept is watched (inotify, one instance per session). Bringing the
//! tree up to date reads the queued events without waiting and lists again only the
//! directories they name (one `readdir` and a `stat` per file of those); new directories are
//! walked, gone ones dropped. Elsewhere, or when watching fails (no inotify instance or watch
//! left, a queue overflow), it is the full walk of [`scan`](super::scan) each time, compared
//! with the kept one.
//!
//! Invariants:
//! - After [`Tree::refresh`] the kept stamps are those of the disk at some point after the
//!   refresh began: the kernel queues an event in the call that makes the change, so a change
//!   made before the refresh drained the queue is among the events it read, and one made after
//!   it leaves an event the next refresh reads (the directory is listed again).
//! - A directory is watched before its entries are stat'ed; an entry created between its
//!   listing and its watch is found by listing again every directory whose mtime is not older
//!   than the walk (a second before it, for coarse file-system clocks).
//! - A path a watched directory's event names is reported changed even when its stamp is the
//!   same (a rewrite within one tick of the file-system clock); its kept text is dropped.
//! - A change of an ignore file (`.gitignore`, `.ignore`), an overflow or the root's own move
//!   or removal makes the next refresh a full walk: what is ignored may have changed anywhere.
//! - Each command's changes are the paths changed between its [`Tree::begin`] and its
//!   [`Tree::end`], whoever changed them (as the scans of the same two points would find).

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::Side;
use super::scan::{self, MAX_SCANNED, Stamp};

/// The files directly in one directory, by name.
type Listing = HashMap<OsString, Stamp>;

/// Bytes of file text kept between commands (the prior texts of the candidates).
const MAX_KEPT_TEXT: usize = 32 * 1024 * 1024;

/// The kept tree of a workspace.
pub struct Tree {
    root: PathBuf,
    skip: PathBuf,
    dirs: HashMap<PathBuf, Listing>,
    /// False when the workspace has more than [`MAX_SCANNED`] files: commands are not recorded,
    /// and the tree is not walked again.
    complete: bool,
    watch: Option<watch::Watch>,
    /// The next refresh walks everything.
    stale: bool,
    /// Watching failed once: every refresh walks everything.
    unwatchable: bool,
    /// The paths changed since the earliest open command began, each with its first stamp.
    log: Vec<(PathBuf, Option<Stamp>)>,
    /// The open commands: ticket and where their part of `log` starts.
    open: Vec<(u64, usize)>,
    next_ticket: u64,
    /// Texts read before a command, by path, with the stamp they were read at.
    texts: HashMap<PathBuf, (Stamp, Side)>,
    text_bytes: usize,
}

/// A command between [`Tree::begin`] and [`Tree::end`].
#[derive(Debug)]
pub struct Ticket(u64);

/// A path a command changed: its stamp before and after (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub before: Option<Stamp>,
    pub after: Option<Stamp>,
}

/// One walk's directories and whether it stopped at [`MAX_SCANNED`] files.
pub(super) struct Walked {
    pub dirs: HashMap<PathBuf, Listing>,
    pub complete: bool,
}

/// Whether a directory entry is left out whatever the ignore rules say.
fn left_out(entry: &ignore::DirEntry, skip: &Path) -> bool {
    entry.file_name() == ".git" || entry.path() == skip
}

fn builder(start: &Path, skip: &Path) -> ignore::WalkBuilder {
    let skip = skip.to_path_buf();
    let mut builder = ignore::WalkBuilder::new(start);
    builder
        .hidden(false)
        .require_git(false)
        .git_global(false)
        .filter_entry(move |entry| !left_out(entry, &skip));
    builder
}

/// Walks `start` and everything under it in parallel (the `ignore` crate's walker, one thread
/// per core), watching each directory as it is reached when `watches` is given.
pub(super) fn walk(start: &Path, skip: &Path, watches: Option<&watch::Adder>) -> Walked {
    let found = std::sync::Mutex::new(Vec::new());
    let seen = std::sync::atomic::AtomicUsize::new(0);
    builder(start, skip).build_parallel().run(|| {
        let mut mine = Local { entries: Vec::new(), into: &found };
        let (seen, watches) = (&seen, watches.cloned());
        Box::new(move |entry| {
            let Ok(entry) = entry else { return ignore::WalkState::Continue };
            let Some(kind) = entry.file_type() else { return ignore::WalkState::Continue };
            if kind.is_dir() {
                if let Some(watches) = &watches {
                    watches.add(entry.path());
                }
                mine.entries.push(Found::Dir(entry.into_path()));
            } else if kind.is_file() {
                if seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= MAX_SCANNED {
                    return ignore::WalkState::Quit;
                }
                if let Ok(metadata) = entry.metadata() {
                    mine.entries.push(Found::File(entry.into_path(), Stamp::of(&metadata)));
                }
            }
            ignore::WalkState::Continue
        })
    });
    let complete = seen.into_inner() <= MAX_SCANNED;
    let mut dirs: HashMap<PathBuf, Listing> = HashMap::new();
    for found in found.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten() {
        match found {
            Found::Dir(path) => {
                dirs.entry(path).or_default();
            }
            Found::File(path, stamp) => {
                let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { continue };
                match dirs.get_mut(parent) {
                    Some(listing) => listing.insert(name.to_os_string(), stamp),
                    None => dirs.entry(parent.to_path_buf()).or_default().insert(name.to_os_string(), stamp),
                };
            }
        }
    }
    Walked { dirs, complete }
}

enum Found {
    Dir(PathBuf),
    File(PathBuf, Stamp),
}

/// One walker thread's entries, handed over when the thread is done with them.
struct Local<'a> {
    entries: Vec<Found>,
    into: &'a std::sync::Mutex<Vec<Vec<Found>>>,
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        let mine = std::mem::take(&mut self.entries);
        self.into.lock().unwrap_or_else(|e| e.into_inner()).push(mine);
    }
}

/// The files and subdirectories directly in `dir` (`None`: it is gone or unreadable).
fn list(dir: &Path, skip: &Path) -> Option<(Listing, Vec<PathBuf>)> {
    let mut walk = builder(dir, skip).max_depth(Some(1)).build();
    // The first entry is `dir` itself.
    match walk.next()? {
        Ok(entry) if entry.file_type().is_some_and(|t| t.is_dir()) => {}
        _ => return None,
    }
    let (mut files, mut subdirs) = (Listing::new(), Vec::new());
    for entry in walk.flatten() {
        let Some(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            subdirs.push(entry.into_path());
        } else if kind.is_file()
            && let Ok(metadata) = entry.metadata()
        {
            files.insert(entry.file_name().to_os_string(), Stamp::of(&metadata));
        }
    }
    Some((files, subdirs))
}

/// The files of `dir` whose stamps differ between two listings, each with its stamp before.
fn differing(dir: &Path, old: Option<&Listing>, new: Option<&Listing>) -> Vec<(PathBuf, Option<Stamp>)> {
    let empty = Listing::new();
    let (old, new) = (old.unwrap_or(&empty), new.unwrap_or(&empty));
    new.iter()
        .filter(|(name, stamp)| old.get(*name) != Some(*stamp))
        .map(|(name, _)| (dir.join(name), old.get(name).copied()))
        .chain(
            old.iter()
                .filter(|(name, _)| !new.contains_key(*name))
                .map(|(name, s)| (dir.join(name), Some(*s))),
        )
        .collect()
}

fn is_ignore_file(name: &OsStr) -> bool {
    name == ".gitignore" || name == ".ignore"
}

impl Tree {
    /// The tree of `root`, leaving out `skip` (the data directory, when it is inside); walked now.
    pub fn new(root: &Path, skip: &Path) -> Self {
        let mut tree = Self {
            root: root.to_path_buf(),
            skip: skip.to_path_buf(),
            dirs: HashMap::new(),
            complete: true,
            watch: None,
            stale: true,
            unwatchable: false,
            log: Vec::new(),
            open: Vec::new(),
            next_ticket: 0,
            texts: HashMap::new(),
            text_bytes: 0,
        };
        tree.refresh();
        tree
    }

    /// Whether the workspace is small enough to be recorded ([`MAX_SCANNED`] files at most).
    pub fn complete(&self) -> bool {
        self.complete
    }

    /// Whether changes are found through watches (false: every refresh walks everything).
    #[cfg(test)]
    pub fn watched(&self) -> bool {
        self.watch.is_some()
    }

    /// The stamp kept for `path`.
    pub fn stamp(&self, path: &Path) -> Option<Stamp> {
        self.dirs.get(path.parent()?)?.get(path.file_name()?).copied()
    }

    /// Every kept file's path.
    pub fn paths(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.dirs.iter().flat_map(|(dir, listing)| listing.keys().map(|name| dir.join(name)))
    }

    /// The kept files under `dir`.
    pub fn paths_under<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = PathBuf> + 'a {
        self.dirs
            .iter()
            .filter(move |(d, _)| d.starts_with(dir))
            .flat_map(|(d, listing)| listing.keys().map(|name| d.join(name)))
    }

    /// Brings the tree up to date; notes what changed in the log while a command is open.
    pub fn refresh(&mut self) {
        if !self.complete {
            return;
        }
        let drained = match (&mut self.watch, self.stale) {
            (Some(watch), false) => watch.drain(&self.root),
            _ => watch::Drained::everything(),
        };
        if drained.everything {
            return self.rewalk();
        }
        for path in &drained.touched {
            self.forget_text(path);
            if !self.open.is_empty() {
                self.log.push((path.clone(), self.stamp(path)));
            }
        }
        // Parents first: a directory a listing drops needs no listing of its own.
        let mut dirty: Vec<PathBuf> = drained.dirty.into_iter().collect();
        dirty.sort();
        for dir in dirty {
            if self.dirs.contains_key(&dir) {
                self.relist(&dir);
            }
        }
    }

    /// Walks everything again (watching anew) and compares the result with the kept tree.
    fn rewalk(&mut self) {
        let started = SystemTime::now();
        self.watch = if self.unwatchable { None } else { watch::Watch::new() };
        self.unwatchable = self.watch.is_none();
        let adder = self.watch.as_ref().map(|w| w.adder());
        let walked = walk(&self.root, &self.skip, adder.as_ref());
        self.stale = false;
        if !walked.complete {
            tracing::warn!(
                "{} has more than {MAX_SCANNED} files: commands' changes are not recorded (no undo for them)",
                self.root.display()
            );
            self.complete = false;
            self.watch = None;
            self.dirs.clear();
            self.texts.clear();
            return;
        }
        let old = std::mem::replace(&mut self.dirs, walked.dirs);
        if !self.open.is_empty() || !self.texts.is_empty() {
            let mut changed = Vec::new();
            for (dir, listing) in &old {
                changed.extend(differing(dir, Some(listing), self.dirs.get(dir)));
            }
            for (dir, listing) in self.dirs.iter().filter(|(d, _)| !old.contains_key(*d)) {
                changed.extend(differing(dir, None, Some(listing)));
            }
            self.note(changed);
        }
        let all: Vec<PathBuf> = self.dirs.keys().cloned().collect();
        self.settle(started, all);
    }

    /// After a walk that watched as it went: watch failures make the next refresh a full walk;
    /// directories changed since the walk began are listed again (see the invariants).
    fn settle(&mut self, started: SystemTime, walked: Vec<PathBuf>) {
        let Some(watch) = &mut self.watch else {
            self.stale = true;
            return;
        };
        if !watch.take_failures().is_empty() {
            tracing::info!(
                "{}: not every directory could be watched; every command walks it",
                self.root.display()
            );
            self.watch = None;
            self.unwatchable = true;
            self.stale = true;
            return;
        }
        let since = started.checked_sub(Duration::from_secs(1)).unwrap_or(started);
        let recent: Vec<PathBuf> = walked
            .into_iter()
            .filter(|dir| std::fs::metadata(dir).and_then(|m| m.modified()).is_ok_and(|t| t >= since))
            .collect();
        for dir in recent {
            if self.dirs.contains_key(&dir) {
                self.relist(&dir);
            }
        }
    }

    /// Lists `dir` again: its files compared, new subdirectories walked, gone ones dropped.
    fn relist(&mut self, dir: &Path) {
        let Some((files, subdirs)) = list(dir, &self.skip) else {
            self.drop_under(dir);
            return;
        };
        let changed = differing(dir, self.dirs.get(dir), Some(&files));
        self.dirs.insert(dir.to_path_buf(), files);
        self.note(changed);
        let gone: Vec<PathBuf> =
            self.dirs.keys().filter(|d| d.parent() == Some(dir) && !subdirs.contains(d)).cloned().collect();
        for sub in gone {
            self.drop_under(&sub);
        }
        for sub in subdirs {
            if !self.dirs.contains_key(&sub) {
                self.add_under(&sub);
            }
        }
    }

    /// Walks a directory new to the tree (watching it) and adds what it holds.
    fn add_under(&mut self, dir: &Path) {
        let started = SystemTime::now();
        let adder = self.watch.as_ref().map(|w| w.adder());
        let walked = walk(dir, &self.skip, adder.as_ref());
        let mut added = Vec::new();
        for (sub, listing) in walked.dirs {
            let changed = differing(&sub, self.dirs.get(&sub), Some(&listing));
            self.note(changed);
            self.dirs.insert(sub.clone(), listing);
            added.push(sub);
        }
        if !walked.complete {
            self.stale = true;
        }
        self.settle(started, added);
    }

    /// Drops `dir` and everything under it (deleted, moved away).
    fn drop_under(&mut self, dir: &Path) {
        let gone: Vec<PathBuf> = self.dirs.keys().filter(|d| d.starts_with(dir)).cloned().collect();
        for sub in gone {
            if let Some(listing) = self.dirs.remove(&sub) {
                self.note(differing(&sub, Some(&listing), None));
            }
            if let Some(watch) = &mut self.watch {
                watch.forget(&sub);
            }
        }
    }

    /// Notes changed paths (each with its stamp before) while a command is open; their kept
    /// texts are dropped.
    fn note(&mut self, changed: Vec<(PathBuf, Option<Stamp>)>) {
        for (path, before) in changed {
            self.forget_text(&path);
            if !self.open.is_empty() {
                self.log.push((path, before));
            }
        }
    }

    /// Begins a command: the tree brought up to date, its changes noted from now on.
    pub fn begin(&mut self) -> Ticket {
        self.refresh();
        self.next_ticket += 1;
        self.open.push((self.next_ticket, self.log.len()));
        Ticket(self.next_ticket)
    }

    /// Ends a command: the paths changed since its [`Tree::begin`], sorted.
    pub fn end(&mut self, ticket: Ticket) -> Vec<Change> {
        self.refresh();
        let Some(at) = self.open.iter().position(|(t, _)| *t == ticket.0) else { return Vec::new() };
        let (_, start) = self.open.remove(at);
        let mut first: HashMap<&Path, Option<Stamp>> = HashMap::new();
        for (path, before) in &self.log[start.min(self.log.len())..] {
            first.entry(path.as_path()).or_insert(*before);
        }
        let mut changes: Vec<Change> = first
            .into_iter()
            .map(|(path, before)| Change { path: path.to_path_buf(), before, after: self.stamp(path) })
            .filter(|c| c.before.is_some() || c.after.is_some())
            .collect();
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        if self.open.is_empty() {
            self.log.clear();
        }
        changes
    }

    /// The text `path` holds now as a checkpoint keeps it, read once per stamp.
    pub fn text(&mut self, path: &Path) -> Option<Side> {
        let stamp = self.stamp(path)?;
        if let Some((kept, side)) = self.texts.get(path)
            && *kept == stamp
        {
            return Some(side.clone());
        }
        let side = scan::read_side(path, stamp.len);
        let bytes = match &side {
            Side::Text(text) => text.len(),
            _ => 0,
        };
        if self.text_bytes + bytes <= MAX_KEPT_TEXT {
            self.forget_text(path);
            self.text_bytes += bytes;
            self.texts.insert(path.to_path_buf(), (stamp, side.clone()));
        }
        Some(side)
    }

    fn forget_text(&mut self, path: &Path) {
        if let Some((_, Side::Text(text))) = self.texts.remove(path) {
            self.text_bytes -= text.len();
        }
    }
}

/// Scans `root` (see the module's rules), leaving out `skip` (the data directory, when it is
/// inside the workspace): the walk of [`Tree`], flattened.
pub fn scan(root: &Path, skip: &Path) -> scan::Scan {
    let walked = walk(root, skip, None);
    let files = walked
        .dirs
        .into_iter()
        .flat_map(|(dir, listing)| listing.into_iter().map(move |(name, stamp)| (dir.join(name), stamp)))
        .collect();
    scan::Scan { files, complete: walked.complete }
}

impl scan::Files for Tree {
    fn contains(&self, path: &Path) -> bool {
        self.stamp(path).is_some()
    }

    fn under(&self, dir: &Path) -> Vec<PathBuf> {
        self.paths_under(dir).take(scan::MAX_NAMED).collect()
    }

    fn matching(&self, matcher: &globset::GlobMatcher) -> Vec<PathBuf> {
        self.paths().filter(|p| matcher.is_match(p)).take(scan::MAX_NAMED).collect()
    }
}

/// What a drain of the queued events asks of the refresh.
mod watch {
    use super::*;

    #[derive(Default)]
    pub struct Drained {
        /// Walk everything (an overflow, an ignore file changed, the root moved, no watch).
        pub everything: bool,
        /// Directories to list again.
        pub dirty: HashSet<PathBuf>,
        /// Files an event named.
        pub touched: HashSet<PathBuf>,
    }

    impl Drained {
        pub fn everything() -> Self {
            Self { everything: true, ..Self::default() }
        }
    }

    #[cfg(target_os = "linux")]
    pub use linux::{Adder, Watch};

    #[cfg(target_os = "linux")]
    mod linux {
        use std::sync::{Arc, Mutex};

        use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

        use super::*;

        /// The session's inotify instance and the directory of each of its watches.
        pub struct Watch {
            inotify: Inotify,
            watched: Arc<Mutex<Watched>>,
            buffer: Vec<u8>,
        }

        #[derive(Default)]
        struct Watched {
            dir_of: HashMap<WatchDescriptor, PathBuf>,
            wd_of: HashMap<PathBuf, WatchDescriptor>,
            failures: Vec<PathBuf>,
        }

        /// Adds watches from the walker's threads.
        #[derive(Clone)]
        pub struct Adder {
            watches: Watches,
            watched: Arc<Mutex<Watched>>,
        }

        fn lock(m: &Mutex<Watched>) -> std::sync::MutexGuard<'_, Watched> {
            m.lock().unwrap_or_else(|e| e.into_inner())
        }

        impl Adder {
            pub fn add(&self, dir: &Path) {
                let mask = WatchMask::MODIFY
                    | WatchMask::ATTRIB
                    | WatchMask::CLOSE_WRITE
                    | WatchMask::CREATE
                    | WatchMask::DELETE
                    | WatchMask::MOVED_FROM
                    | WatchMask::MOVED_TO
                    | WatchMask::DELETE_SELF
                    | WatchMask::MOVE_SELF
                    | WatchMask::ONLYDIR
                    | WatchMask::DONT_FOLLOW
                    | WatchMask::EXCL_UNLINK;
                let added = self.watches.clone().add(dir, mask);
                let mut watched = lock(&self.watched);
                match added {
                    Ok(wd) => {
                        // One watch per directory inode: a moved directory's watch is its new path's.
                        if let Some(old) = watched.dir_of.insert(wd.clone(), dir.to_path_buf()) {
                            watched.wd_of.remove(&old);
                        }
                        watched.wd_of.insert(dir.to_path_buf(), wd);
                    }
                    Err(_) => watched.failures.push(dir.to_path_buf()),
                }
            }
        }

        impl Watch {
            /// A new instance (`None` when none is left).
            pub fn new() -> Option<Self> {
                let inotify = Inotify::init()
                    .map_err(|e| tracing::info!("no inotify instance for the checkpoints: {e}"))
                    .ok()?;
                Some(Self { inotify, watched: Arc::default(), buffer: vec![0; 64 * 1024] })
            }

            pub fn adder(&self) -> Adder {
                Adder { watches: self.inotify.watches(), watched: self.watched.clone() }
            }

            pub fn take_failures(&mut self) -> Vec<PathBuf> {
                std::mem::take(&mut lock(&self.watched).failures)
            }

            /// Stops watching `dir` (unless its watch now belongs to another path).
            pub fn forget(&mut self, dir: &Path) {
                let mut watched = lock(&self.watched);
                if let Some(wd) = watched.wd_of.remove(dir) {
                    watched.dir_of.remove(&wd);
                    let _ = self.inotify.watches().remove(wd);
                }
            }

            /// Reads every queued event without waiting.
            pub fn drain(&mut self, root: &Path) -> Drained {
                let mut drained = Drained::default();
                let watched = lock(&self.watched);
                loop {
                    let events = match self.inotify.read_events(&mut self.buffer) {
                        Ok(events) => events,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) => {
                            tracing::info!("the checkpoints' watch failed ({e}): walking again");
                            return Drained::everything();
                        }
                    };
                    for event in events {
                        if event.mask.contains(EventMask::Q_OVERFLOW) {
                            return Drained::everything();
                        }
                        let Some(dir) = watched.dir_of.get(&event.wd) else { continue };
                        if event
                            .mask
                            .intersects(EventMask::IGNORED | EventMask::DELETE_SELF | EventMask::MOVE_SELF)
                        {
                            // The directory itself went: its parent's listing says where.
                            match dir.parent() {
                                Some(parent) if dir != root => drained.dirty.insert(parent.to_path_buf()),
                                _ => return Drained::everything(),
                            };
                            continue;
                        }
                        drained.dirty.insert(dir.clone());
                        if let Some(name) = event.name {
                            if is_ignore_file(name) {
                                return Drained::everything();
                            }
                            if !event.mask.contains(EventMask::ISDIR) {
                                drained.touched.insert(dir.join(name));
                            }
                        }
                    }
                }
                drained
            }
        }
    }

    /// Without inotify every refresh walks everything.
    #[cfg(not(target_os = "linux"))]
    mod other {
        use super::*;

        pub struct Watch;
        #[derive(Clone)]
        pub struct Adder;

        impl Adder {
            pub fn add(&self, _dir: &Path) {}
        }

        impl Watch {
            pub fn new() -> Option<Self> {
                None
            }
            pub fn adder(&self) -> Adder {
                Adder
            }
            pub fn take_failures(&mut self) -> Vec<PathBuf> {
                Vec::new()
            }
            pub fn forget(&mut self, _dir: &Path) {}
            pub fn drain(&mut self, _root: &Path) -> Drained {
                Drained::everything()
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub use other::{Adder, Watch};
}
