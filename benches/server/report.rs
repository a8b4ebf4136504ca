//! The results as rows (measure, target, agentls, peer or floor, met?) and their Markdown, spliced
//! into docs/benchmarks.md between two markers; everything outside the markers is kept.

use std::fmt::Write as _;
use std::path::Path;

pub const BEGIN: &str = "<!-- BEGIN scripts/bench: generated, do not edit by hand -->";
pub const END: &str = "<!-- END scripts/bench -->";

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Met {
    Yes,
    No,
    /// The issue sets no target for this row: reported only.
    NoTarget,
    /// It could not be measured in this run (the note says why).
    NotMeasured,
}

impl Met {
    pub fn from(ok: bool) -> Self {
        if ok { Self::Yes } else { Self::No }
    }

    fn cell(self) -> &'static str {
        match self {
            Self::Yes => "**met**",
            Self::No => "**not met**",
            Self::NoTarget => "(no target)",
            Self::NotMeasured => "not measured",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Row {
    pub what: String,
    pub target: String,
    pub agentls: String,
    pub reference: String,
    pub met: Met,
}

impl Row {
    pub fn new(
        what: impl Into<String>,
        target: impl Into<String>,
        agentls: impl Into<String>,
        reference: impl Into<String>,
        met: Met,
    ) -> Self {
        Self {
            what: what.into(),
            target: target.into(),
            agentls: agentls.into(),
            reference: reference.into(),
            met,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Section {
    pub title: String,
    /// What is measured and how, one paragraph.
    pub method: String,
    pub rows: Vec<Row>,
    /// Further measurements and observations, one bullet each.
    pub notes: Vec<String>,
}

impl Section {
    pub fn new(title: &str, method: &str) -> Self {
        Self { title: title.into(), method: method.into(), ..Self::default() }
    }

    /// The section for a measurement that failed: the error is the note.
    pub fn failed(title: &str, method: &str, error: &str) -> Self {
        let mut section = Self::new(title, method);
        section.rows.push(Row::new("(this measurement failed)", "—", "—", "—", Met::NotMeasured));
        section.notes.push(format!("Error: {error}"));
        section
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The generated part: the header (command, machine, date), the summary of every row, then each
/// section with its method and notes.
pub fn markdown(header: &[String], sections: &[Section]) -> String {
    let mut out = String::new();
    out.push_str(BEGIN);
    out.push_str("\n\n## Results of `scripts/bench` (generated)\n\n");
    for line in header {
        let _ = writeln!(out, "{line}");
    }
    for section in sections {
        let _ = write!(out, "\n### {}\n\n{}\n\n", section.title, section.method);
        out.push_str(
            "| measure | target | agentls | peer / floor (same run) | met? |\n|---|---|---|---|---|\n",
        );
        for row in &section.rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(&row.what),
                cell(&row.target),
                cell(&row.agentls),
                cell(&row.reference),
                row.met.cell()
            );
        }
        if !section.notes.is_empty() {
            out.push('\n');
            for note in &section.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
    }
    out.push('\n');
    out.push_str(END);
    out.push('\n');
    out
}

/// Replaces the generated part of `doc` (or inserts it after the first heading's paragraph
/// block when there is none yet).
pub fn splice(doc: &str, generated: &str) -> String {
    if let (Some(begin), Some(end)) = (doc.find(BEGIN), doc.find(END))
        && begin < end
    {
        let end = end + END.len();
        let rest = doc[end..].strip_prefix('\n').unwrap_or(&doc[end..]);
        return format!("{}{}{}", &doc[..begin], generated, rest);
    }
    // After the title and the paragraphs that follow it, before the first `## ` section.
    let at = doc.find("\n## ").map_or(doc.len(), |i| i + 1);
    format!("{}{}\n{}", &doc[..at], generated, &doc[at..])
}

pub fn write_doc(path: &Path, generated: &str) -> std::io::Result<()> {
    let doc = std::fs::read_to_string(path).unwrap_or_else(|_| "# Benchmarks\n".into());
    std::fs::write(path, splice(&doc, generated))
}
