//! The results as rows (measure, target, agentls, peer or floor, met?) and their Markdown, spliced
//! into docs/benchmarks.md between two markers; everything outside the markers is kept. The ACP
//! comparison (`scripts/bench --only acp`) has markers of its own, so it is written by itself.

use std::fmt::Write as _;
use std::path::Path;

pub const BEGIN: &str = "<!-- BEGIN scripts/bench: generated, do not edit by hand -->";
pub const END: &str = "<!-- END scripts/bench -->";
pub const ACP_BEGIN: &str = "<!-- BEGIN scripts/bench --only acp: generated, do not edit by hand -->";
pub const ACP_END: &str = "<!-- END scripts/bench --only acp -->";

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
    markdown_between(BEGIN, END, "Results of `scripts/bench` (generated)", header, sections)
}

/// A generated part between `begin` and `end`, under the heading `title`.
pub fn markdown_between(
    begin: &str,
    end: &str,
    title: &str,
    header: &[String],
    sections: &[Section],
) -> String {
    let mut out = String::new();
    out.push_str(begin);
    let _ = write!(out, "\n\n## {title}\n\n");
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
    out.push_str(end);
    out.push('\n');
    out
}

/// `doc` with the part from `begin` to `end` replaced by `generated`, if it has both markers.
fn replace_between(doc: &str, generated: &str, begin: &str, end: &str) -> Option<String> {
    let (Some(at), Some(until)) = (doc.find(begin), doc.find(end)) else { return None };
    if at >= until {
        return None;
    }
    let until = until + end.len();
    let rest = doc[until..].strip_prefix('\n').unwrap_or(&doc[until..]);
    Some(format!("{}{}{}", &doc[..at], generated, rest))
}

/// Replaces the generated part of `doc` (or inserts it after the first heading's paragraph
/// block when there is none yet).
pub fn splice(doc: &str, generated: &str) -> String {
    if let Some(doc) = replace_between(doc, generated, BEGIN, END) {
        return doc;
    }
    // After the title and the paragraphs that follow it, before the first `## ` section.
    let at = doc.find("\n## ").map_or(doc.len(), |i| i + 1);
    format!("{}{}\n{}", &doc[..at], generated, &doc[at..])
}

/// Replaces the ACP part of `doc` (or appends it when there is none yet).
pub fn splice_acp(doc: &str, generated: &str) -> String {
    replace_between(doc, generated, ACP_BEGIN, ACP_END)
        .unwrap_or_else(|| format!("{}\n\n{generated}", doc.trim_end()))
}

pub fn write_doc(path: &Path, generated: &str) -> std::io::Result<()> {
    let doc = std::fs::read_to_string(path).unwrap_or_else(|_| "# Benchmarks\n".into());
    std::fs::write(path, splice(&doc, generated))
}

pub fn write_acp_doc(path: &Path, generated: &str) -> std::io::Result<()> {
    let doc = std::fs::read_to_string(path).unwrap_or_else(|_| "# Benchmarks\n".into());
    std::fs::write(path, splice_acp(&doc, generated))
}
