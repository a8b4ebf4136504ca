//! Append-only JSONL transcripts: `<data dir>/sessions/<id>.jsonl`.
//!
//! Invariant: the first line is the [`TranscriptHeader`]; every later line is one [`Record`].
//! Writers only append; a partial last line (a crash mid-write) or a record of an unknown kind
//! is ignored when reading.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Record, StoreError};
use crate::session::Turn;

/// What a transcript says about its session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptHeader {
    pub session_id: String,
    /// The workspace root the session ran in.
    pub root: PathBuf,
    pub profile: String,
    pub model: String,
    /// RFC 3339 creation time.
    pub created: String,
    /// The transcript marks the end of every input (`turn_end` records), so turns after the last
    /// one belong to an input the server never finished. False for older transcripts.
    #[serde(default)]
    pub input_ends: bool,
}

/// A transcript read back from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub header: TranscriptHeader,
    pub records: Vec<Record>,
}

/// One line of `agentls sessions list`.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptSummary {
    pub header: TranscriptHeader,
    pub records: usize,
    /// The first user input, for a human to recognise the session.
    pub title: String,
}

/// The sessions directory.
#[derive(Debug, Clone)]
pub struct TranscriptStore {
    dir: PathBuf,
}

fn valid_id(id: &str) -> Result<(), StoreError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok { Ok(()) } else { Err(StoreError::BadId(id.to_string())) }
}

impl TranscriptStore {
    /// Transcripts under `<data_dir>/sessions`.
    pub fn new(data_dir: &Path) -> Self {
        Self { dir: data_dir.join("sessions") }
    }

    fn path(&self, id: &str) -> Result<PathBuf, StoreError> {
        valid_id(id)?;
        Ok(self.dir.join(format!("{id}.jsonl")))
    }

    /// Starts a new transcript; the header is written and flushed at once.
    pub fn create(&self, header: TranscriptHeader) -> Result<TranscriptWriter, StoreError> {
        let path = self.path(&header.session_id)?;
        std::fs::create_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        hold(&file, &path, &header.session_id)?;
        let mut writer = TranscriptWriter { path, out: BufWriter::new(file) };
        writer.write_line(&header)?;
        writer.flush()?;
        Ok(writer)
    }

    /// Reopens an existing transcript to append more turns to it (resume).
    pub fn reopen(&self, id: &str) -> Result<TranscriptWriter, StoreError> {
        let path = self.path(id)?;
        let mut file =
            OpenOptions::new().read(true).append(true).open(&path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => StoreError::NotFound(id.to_string()),
                _ => StoreError::io(&path, e),
            })?;
        hold(&file, &path, id)?;
        // A server that died mid-write left a torn last line: the next record starts on a line
        // of its own, so only the torn one is lost.
        if !ends_with_newline(&mut file).map_err(|e| StoreError::io(&path, e))? {
            file.write_all(b"\n").map_err(|e| StoreError::io(&path, e))?;
        }
        Ok(TranscriptWriter { path, out: BufWriter::new(file) })
    }

    pub fn load(&self, id: &str) -> Result<Transcript, StoreError> {
        let path = self.path(id)?;
        let file = File::open(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::NotFound(id.to_string()),
            _ => StoreError::io(&path, e),
        })?;
        read_transcript(&path, file)
    }

    /// Every stored session, newest first.
    pub fn list(&self) -> Result<Vec<TranscriptSummary>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&self.dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(id) = path.file_stem().and_then(|s| s.to_str()).map(str::to_string) else { continue };
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") || valid_id(&id).is_err() {
                continue;
            }
            match self.load(&id) {
                Ok(t) => out.push(TranscriptSummary {
                    title: first_user_text(&t.records).unwrap_or_default(),
                    records: t.records.len(),
                    header: t.header,
                }),
                Err(e) => tracing::warn!("skipping stored session {}: {e}", path.display()),
            }
        }
        out.sort_by(|a, b| b.header.created.cmp(&a.header.created));
        Ok(out)
    }

    /// Holds session `id` (as a writer does) while `work` runs: for changes from outside its
    /// session, such as `agentls sessions undo`. Fails with [`StoreError::Busy`] while another
    /// process has it open.
    pub fn while_held<T>(&self, id: &str, work: impl FnOnce() -> T) -> Result<T, StoreError> {
        let path = self.path(id)?;
        let file = File::open(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::NotFound(id.to_string()),
            _ => StoreError::io(&path, e),
        })?;
        hold(&file, &path, id)?;
        Ok(work())
    }

    /// Removes a stored session; refused while another process has it open.
    pub fn remove(&self, id: &str) -> Result<(), StoreError> {
        let path = self.path(id)?;
        self.while_held(id, || std::fs::remove_file(&path))?.map_err(|e| StoreError::io(&path, e))
    }
}

/// Takes the advisory lock of a session's transcript, or says who holds it.
fn hold(file: &File, path: &Path, id: &str) -> Result<(), StoreError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(crate::session::TranscriptBusy { id: id.to_string() }.into())
        }
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io(path, e)),
    }
}

fn read_transcript(path: &Path, file: File) -> Result<Transcript, StoreError> {
    let corrupt = |message: String| StoreError::Corrupt { path: path.display().to_string(), message };
    let mut lines = BufReader::new(file).lines();
    let header_line = match lines.next() {
        Some(Ok(line)) => line,
        Some(Err(e)) => return Err(StoreError::io(path, e)),
        None => return Err(corrupt("the file is empty".into())),
    };
    let header: TranscriptHeader =
        serde_json::from_str(&header_line).map_err(|e| corrupt(format!("bad header: {e}")))?;
    let mut records = Vec::new();
    for line in lines {
        let line = line.map_err(|e| StoreError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(&line) {
            Ok(record) => records.push(record),
            // A torn line from a crash mid-write (everything before it is intact), or a record
            // of a later version.
            Err(e) => tracing::warn!("ignoring an unreadable line in {}: {e}", path.display()),
        }
    }
    Ok(Transcript { header, records })
}

/// Whether a file is empty or ends with a newline.
fn ends_with_newline(file: &mut File) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    if file.metadata()?.len() == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// The first user message of the stored history.
fn first_user_text(records: &[Record]) -> Option<String> {
    super::record::history(records).into_iter().find_map(|turn| match turn {
        Turn::User(text) => Some(text.content),
        _ => None,
    })
}

/// Appends records to one transcript.
#[derive(Debug)]
pub struct TranscriptWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl TranscriptWriter {
    /// Buffers one record; [`TranscriptWriter::flush`] makes it durable.
    pub fn append(&mut self, record: &Record) -> Result<(), StoreError> {
        self.write_line(record)
    }

    fn write_line(&mut self, value: &impl Serialize) -> Result<(), StoreError> {
        let mut line = serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        line.push('\n');
        self.out.write_all(line.as_bytes()).map_err(|e| StoreError::io(&self.path, e))
    }

    /// Called at the end of each turn.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        self.out.flush().map_err(|e| StoreError::io(&self.path, e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TranscriptWriter {
    fn drop(&mut self) {
        if let Err(e) = self.out.flush() {
            tracing::warn!("cannot flush transcript {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(id: &str, created: &str) -> TranscriptHeader {
        TranscriptHeader {
            session_id: id.into(),
            root: "/w".into(),
            profile: "anthropic".into(),
            model: "m".into(),
            created: created.into(),
            input_ends: true,
        }
    }

    #[test]
    fn one_writer_holds_a_session_until_it_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = TranscriptStore::new(dir.path());
        let writer = store.create(header("h", "2026-01-01T00:00:00Z")).expect("create");
        let busy = |e: StoreError| matches!(e, StoreError::Busy(b) if b.id == "h");
        assert!(store.reopen("h").err().is_some_and(busy), "a second writer is refused");
        assert!(store.while_held("h", || ()).err().is_some_and(busy), "so is a change from outside");
        assert!(store.remove("h").err().is_some_and(busy));
        assert!(store.load("h").is_ok(), "reading is not writing");
        let said = store.reopen("h").unwrap_err().to_string();
        assert!(
            said.contains("open in another agentls process") && said.contains("close it there"),
            "{said}"
        );
        drop(writer);
        let again = store.reopen("h").expect("free once its writer is gone");
        drop(again);
        assert_eq!(store.while_held("h", || 7).expect("held"), 7);
        store.remove("h").expect("removed");
        assert!(matches!(store.load("h"), Err(StoreError::NotFound(_))));
    }

    #[test]
    fn round_trip_list_and_remove() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = TranscriptStore::new(dir.path());
        let mut w = store.create(header("a1", "2026-01-01T00:00:00Z")).expect("create");
        let ask = Record::Turn { turn: Turn::user("add a flag") };
        w.append(&ask).expect("append");
        w.flush().expect("flush");
        drop(w);
        store.create(header("b2", "2026-01-02T00:00:00Z")).expect("create");
        let mut again = store.reopen("a1").expect("reopen");
        let steer = Record::Turn { turn: Turn::steering("done") };
        again.append(&steer).expect("append");
        drop(again);

        let t = store.load("a1").expect("load");
        assert_eq!(t, Transcript { header: header("a1", "2026-01-01T00:00:00Z"), records: vec![ask, steer] });
        let list = store.list().expect("list");
        assert_eq!(list.iter().map(|s| s.header.session_id.as_str()).collect::<Vec<_>>(), ["b2", "a1"]);
        assert_eq!(list[1].title, "add a flag");
        store.remove("a1").expect("rm");
        assert!(matches!(store.load("a1"), Err(StoreError::NotFound(_))));
        assert!(matches!(store.remove("a1"), Err(StoreError::NotFound(_))));
    }

    #[test]
    fn torn_last_line_is_ignored_and_ids_are_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = TranscriptStore::new(dir.path());
        let w = store.create(header("s", "t")).expect("create");
        let path = w.path().to_path_buf();
        drop(w);
        let mut f = OpenOptions::new().append(true).open(&path).expect("open");
        let ok = Record::Turn { turn: Turn::user("ok") };
        let line = serde_json::to_string(&ok).expect("json");
        f.write_all(format!("{line}\n{{\"type\":\"later_kind\"}}\n{{\"type\":\"tu").as_bytes())
            .expect("write");
        assert_eq!(store.load("s").expect("load").records, vec![ok.clone()]);
        drop(f);
        // Reopened after the crash, a new record gets a line of its own.
        let next = Record::Turn { turn: Turn::user("after") };
        let mut w = store.reopen("s").expect("reopen");
        w.append(&next).expect("append");
        w.flush().expect("flush");
        assert_eq!(store.load("s").expect("load").records, vec![ok, next]);
        assert!(matches!(store.load("../etc/passwd"), Err(StoreError::BadId(_))));
        assert!(matches!(store.remove(""), Err(StoreError::BadId(_))));
    }
}
