//! The layered system prompt (spec §6.1): base instructions, environment block, git snapshot,
//! tool descriptions, project instructions, user override — in that order, later wins.
//!
//! Invariant: building is pure (no I/O): everything it needs was captured before.

use super::{EnvironmentInfo, ProfileKind, ProjectDocs};

/// Seed 002's constraint, stated where it overrides the base prompt's advice to batch calls.
pub const ONE_CALL_PER_STEP: &str = "\n\nUse at most one tool call per step: only the first tool call \
of a response is executed, whatever the instructions above say about calling tools together.";

/// A tool as the system prompt lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSummary {
    pub name: String,
    pub description: String,
}

/// The inputs of one system prompt.
#[derive(Debug, Clone)]
pub struct SystemPrompt<'a> {
    pub profile: ProfileKind,
    pub environment: &'a EnvironmentInfo,
    pub tools: &'a [ToolSummary],
    pub project_docs: &'a ProjectDocs,
    /// The user's own instructions (config `instructions`), appended last.
    pub user_instructions: Option<&'a str>,
    /// When true, only one tool call per response is executed (seed 002).
    pub one_call_per_step: bool,
}

impl SystemPrompt<'_> {
    pub fn build(&self) -> String {
        let mut sections = vec![self.profile.base_prompt().trim_end().to_string()];
        sections.push(self.environment.render());
        if let Some(git) = &self.environment.git {
            sections.push(git.render());
        }
        if !self.tools.is_empty() {
            let mut tools = String::from("# Available tools\n");
            for t in self.tools {
                let first = t.description.lines().next().unwrap_or_default();
                tools.push_str(&format!("\n- `{}`: {}", t.name, first));
            }
            if self.one_call_per_step {
                tools.push_str(ONE_CALL_PER_STEP);
            }
            sections.push(tools);
        }
        if !self.project_docs.is_empty() {
            sections.push(format!(
                "# Project instructions\n\nThese files were found in the project; deeper files take \
                 precedence over those above them.\n\n{}",
                self.project_docs.render()
            ));
        }
        if let Some(text) = self.user_instructions.map(str::trim).filter(|t| !t.is_empty()) {
            sections.push(format!(
                "# User instructions\n\nThese take precedence over everything above.\n\n{text}"
            ));
        }
        sections.join("\n\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::project_docs::ProjectDoc;

    #[tokio::test]
    async fn layers_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let env = EnvironmentInfo::capture(tmp.path(), "gemini-2.5-pro").await;
        let docs = ProjectDocs {
            docs: vec![ProjectDoc { path: tmp.path().join("GEMINI.md"), content: "use tabs".into() }],
            truncated: false,
        };
        let tools = [ToolSummary { name: "read_file".into(), description: "Reads a file.\nMore.".into() }];
        let text = SystemPrompt {
            profile: ProfileKind::Gemini,
            environment: &env,
            tools: &tools,
            project_docs: &docs,
            user_instructions: Some("answer in French"),
            one_call_per_step: false,
        }
        .build();
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle:?} missing"));
        assert!(text.starts_with(ProfileKind::Gemini.base_prompt().trim_end()));
        assert!(at("<environment>") < at("# Available tools"));
        assert!(at("- `read_file`: Reads a file.") < at("use tabs"));
        assert!(at("use tabs") < at("answer in French"));
        assert!(!text.contains("More."));
    }
}
