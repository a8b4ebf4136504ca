//! Code actions, the entry point for editors without the plugin: "agentls: fix this" on each
//! diagnostic, "agentls: explain" on the range, running an instruction written in a comment
//! (`// agent: handle the empty case`), and "agentls: cancel the running turn" while a turn of
//! a session in the file's folder runs; "agentls: undo the last turn" (and "redo the undone
//! turn") while an idle session of the file's folder has one.
//!
//! Invariant: an action only carries an `agentls.*` command; nothing
//! runs until the client executes it, and computing actions never awaits anything.

use std::sync::LazyLock;

use regex::Regex;
use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, Position, Range,
};

use super::convert;
use super::protocol::{
    Cancel, Prompt, PromptContext, PromptParams, RedoTurn, SessionParams, UndoTurn, UndoTurnParams,
    lsp_command,
};
use super::state::ServerState;
use crate::session::SessionState;

/// `// agent: …`, `# agent: …`, `-- agent: …`, `/* agent: … */`, `; agent: …`.
static INSTRUCTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?://+|#+|--|;+|/\*+|<!--)\s*agent:\s*(?P<text>.+?)\s*(?:\*/|-->)?\s*$")
        .expect("valid regex")
});

fn prompt(title: String, kind: CodeActionKind, text: String, uri: &str, range: Range) -> CodeActionOrCommand {
    CodeActionOrCommand::CodeAction(CodeAction {
        title: title.clone(),
        kind: Some(kind),
        command: Some(lsp_command::<Prompt>(
            title,
            &PromptParams {
                session_id: None,
                text,
                context: Some(PromptContext { uri: uri.to_string(), range: Some(range) }),
            },
        )),
        ..Default::default()
    })
}

/// The comment instructions on the lines of `range` in `text`: (line, instruction).
pub fn comment_instructions(text: &str, range: Range) -> Vec<(u32, String)> {
    text.lines()
        .enumerate()
        .skip(range.start.line as usize)
        .take((range.end.line.saturating_sub(range.start.line) + 1) as usize)
        .filter_map(|(i, line)| INSTRUCTION.captures(line).map(|c| (i as u32, c["text"].to_string())))
        .collect()
}

pub async fn actions(state: &ServerState, params: &CodeActionParams) -> Vec<CodeActionOrCommand> {
    let uri = params.text_document.uri.as_str().to_string();
    let Some(path) = convert::path_of(&params.text_document.uri) else { return Vec::new() };
    let display = state.shown_path(&path);
    let mut out = Vec::new();
    let running = state
        .sessions
        .all()
        .into_iter()
        .filter(|s| path.starts_with(&s.root) && matches!(s.handle.state(), SessionState::Processing));
    for session in running {
        let title = "agentls: cancel the running turn".to_string();
        out.push(CodeActionOrCommand::CodeAction(CodeAction {
            title: title.clone(),
            kind: Some(CodeActionKind::EMPTY),
            command: Some(lsp_command::<Cancel>(title, &SessionParams { session_id: session.id.clone() })),
            ..Default::default()
        }));
    }
    let idle = state
        .sessions
        .all()
        .into_iter()
        .filter(|s| path.starts_with(&s.root) && !matches!(s.handle.state(), SessionState::Processing));
    for session in idle {
        let Some(checkpoints) = session.handle.checkpoints() else { continue };
        let turns = checkpoints.turns();
        if turns.iter().any(|t| t.undone.is_none() && t.changed_files()) {
            let title = "agentls: undo the last turn".to_string();
            let params = UndoTurnParams { session_id: session.id.clone(), turn_id: None, rewind: false };
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: title.clone(),
                kind: Some(CodeActionKind::EMPTY),
                command: Some(lsp_command::<UndoTurn>(title, &params)),
                ..Default::default()
            }));
        }
        if turns.iter().any(|t| t.undone.is_some_and(|m| m.redoable)) {
            let title = "agentls: redo the undone turn".to_string();
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: title.clone(),
                kind: Some(CodeActionKind::EMPTY),
                command: Some(lsp_command::<RedoTurn>(
                    title,
                    &SessionParams { session_id: session.id.clone() },
                )),
                ..Default::default()
            }));
        }
    }
    for diagnostic in &params.context.diagnostics {
        let source = diagnostic.source.as_deref().map(|s| format!(" ({s})")).unwrap_or_default();
        out.push(prompt(
            format!("agentls: fix this — {}", first_line(&diagnostic.message)),
            CodeActionKind::QUICKFIX,
            format!(
                "Fix this problem in {display} at line {}: {}{source}",
                diagnostic.range.start.line + 1,
                diagnostic.message
            ),
            &uri,
            diagnostic.range,
        ));
    }
    let text = state.shown_text(&path).await;
    for (line, instruction) in comment_instructions(&text, params.range) {
        let line_range =
            Range { start: Position { line, character: 0 }, end: Position { line: line + 1, character: 0 } };
        out.push(prompt(
            format!("agentls: {}", first_line(&instruction)),
            CodeActionKind::QUICKFIX,
            format!(
                "In {display}, line {} has this instruction in a comment: \"{instruction}\". Do what it asks, \
                 then remove the `agent:` comment.",
                line + 1
            ),
            &uri,
            line_range,
        ));
    }
    out.push(prompt(
        "agentls: explain".into(),
        CodeActionKind::EMPTY,
        format!("Explain this code from {display}.", display = display),
        &uri,
        params.range,
    ));
    out
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_comment_instructions_in_several_languages() {
        let text = "fn a() {\n    // agent: handle the empty case\n}\n# agent: add logging\n/* agent: rename x */\nlet agent = 1;\n";
        let all =
            Range { start: Position { line: 0, character: 0 }, end: Position { line: 10, character: 0 } };
        assert_eq!(
            comment_instructions(text, all),
            vec![
                (1, "handle the empty case".to_string()),
                (3, "add logging".to_string()),
                (4, "rename x".to_string())
            ]
        );
        let one =
            Range { start: Position { line: 3, character: 2 }, end: Position { line: 3, character: 2 } };
        assert_eq!(comment_instructions(text, one), vec![(3, "add logging".to_string())]);
    }
}
