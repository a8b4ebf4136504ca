//! How the demo prints the session: streamed answer text as it arrives, one line per tool call
//! with its status, reviews as coloured diffs with the decision, the final file.
//!
//! Invariant: colours only when stdout is a terminal and `NO_COLOR` is unset or empty; the text
//! is the same either way, so the output can be checked by a test.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::lsp::protocol::ReviewFile;
use crate::session::{CallOutcome, CallStatus, ToolCallEnd};

/// Shell output lines shown under a tool line.
const OUTPUT_LINES: usize = 6;
/// The pause after each streamed delta on a terminal, so the stream can be seen arriving.
const TERMINAL_PACE: Duration = Duration::from_millis(30);

#[derive(Clone, Copy)]
enum Style {
    Bold,
    Dim,
    Red,
    Green,
    Cyan,
    Yellow,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Bold => "1",
            Style::Dim => "2",
            Style::Red => "31",
            Style::Green => "32",
            Style::Cyan => "36",
            Style::Yellow => "33",
        }
    }
}

pub struct Printer {
    out: std::io::Stdout,
    color: bool,
    terminal: bool,
    /// Inside a streamed answer (its prefix is printed, no newline yet).
    in_text: bool,
    /// The streamed answer is at the start of a line (indented when text follows).
    at_line_start: bool,
}

impl Printer {
    pub fn new() -> Self {
        let out = std::io::stdout();
        let terminal = out.is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self { out, color: terminal && !no_color, terminal, in_text: false, at_line_start: false }
    }

    fn paint(&self, style: Style, text: &str) -> String {
        if self.color { format!("\x1b[{}m{text}\x1b[0m", style.code()) } else { text.to_string() }
    }

    fn line(&mut self, text: &str) {
        self.end_text();
        let _ = writeln!(self.out, "{}", text.trim_end());
    }

    pub fn banner(&mut self, project: &str, files: &[&str]) {
        let title = self.paint(Style::Bold, "agentls demo");
        self.line(&format!(
            "{title}: a recorded session played through the real server and tools (no key, no network)"
        ));
        self.line(&format!("  project  {project}  ({})", files.join(", ")));
    }

    pub fn session(&mut self, session_id: &str, profile: &str, model: &str) {
        self.line(&format!(
            "  server   agentls serve --stdio, session {session_id} (profile {profile}, model {model})"
        ));
    }

    pub fn user(&mut self, text: &str) {
        self.line("");
        let who = self.paint(Style::Bold, "you ›");
        self.line(&format!("{who} {text}"));
    }

    /// One piece of the streamed answer.
    pub fn text_delta(&mut self, delta: &str) {
        if !self.in_text {
            let who = self.paint(Style::Bold, "agent ›");
            let _ = write!(self.out, "\n{who} ");
            self.in_text = true;
            self.at_line_start = false;
        }
        for (n, piece) in delta.split('\n').enumerate() {
            if n > 0 {
                let _ = writeln!(self.out);
                self.at_line_start = true;
            }
            if !piece.is_empty() {
                let indent = if std::mem::take(&mut self.at_line_start) { "        " } else { "" };
                let _ = write!(self.out, "{indent}{piece}");
            }
        }
        let _ = self.out.flush();
        if self.terminal {
            std::thread::sleep(TERMINAL_PACE);
        }
    }

    /// The end of one model answer.
    pub fn end_text(&mut self) {
        if std::mem::take(&mut self.in_text) {
            let _ = writeln!(self.out);
        }
    }

    pub fn tool(&mut self, call: &ToolCallEnd) {
        let (mark, style) = match call.status {
            CallStatus::Ok => ("✓", Style::Green),
            _ => ("✗", Style::Red),
        };
        let status = self.paint(style, &format!("{mark} {}", call.status.as_str()));
        self.line(&format!("  {status}  {}", call.summary));
        let shown = match &call.outcome {
            CallOutcome::Error { error } => Some(error),
            // The file the model read is not worth repeating; what other tools said is.
            CallOutcome::Output { output, .. } if call.tool_name != "read_file" => Some(output),
            CallOutcome::Output { .. } => None,
        };
        if let Some(text) = shown {
            let lines: Vec<&str> = text.lines().collect();
            for line in lines.iter().take(OUTPUT_LINES) {
                let line = self.paint(Style::Dim, line);
                self.line(&format!("        {line}"));
            }
            if lines.len() > OUTPUT_LINES {
                let more = self.paint(Style::Dim, &format!("… {} more lines", lines.len() - OUTPUT_LINES));
                self.line(&format!("        {more}"));
            }
        }
    }

    pub fn permission(&mut self, command: &str, cwd: &str) {
        let ask = self.paint(Style::Yellow, "? permission");
        self.line(&format!("  {ask}  the agent wants to run `{command}` in {cwd}"));
    }

    /// What the demo answered for the user.
    pub fn decision(&mut self, text: &str) {
        let arrow = self.paint(Style::Yellow, "→ you (played by the demo):");
        self.line(&format!("        {arrow} {text}"));
    }

    pub fn review(&mut self, file: &ReviewFile) {
        let ask = self.paint(Style::Yellow, "? review");
        let hunks = match file.hunks.len() {
            1 => "1 hunk".to_string(),
            n => format!("{n} hunks"),
        };
        let op = file.op.as_str();
        self.line(&format!("  {ask}  the agent proposes a change to {} ({op}, {hunks}):", file.path));
        for line in file.diff.lines() {
            let painted = match line.as_bytes().first() {
                _ if line.starts_with("+++") || line.starts_with("---") => self.paint(Style::Bold, line),
                Some(b'+') => self.paint(Style::Green, line),
                Some(b'-') => self.paint(Style::Red, line),
                Some(b'@') => self.paint(Style::Cyan, line),
                _ => line.to_string(),
            };
            self.line(&format!("        {painted}"));
        }
    }

    pub fn final_file(&mut self, path: &str, text: &str) {
        self.line("");
        let title = self.paint(Style::Bold, &format!("── {path} on disk after the session ──"));
        self.line(&title);
        for line in text.lines() {
            self.line(&format!("  {line}"));
        }
    }

    pub fn note(&mut self, text: &str) {
        self.line(text);
    }

    pub fn done(&mut self, text: &str) {
        self.line("");
        let done = self.paint(Style::Green, "demo finished:");
        self.line(&format!("{done} {text}"));
    }
}
