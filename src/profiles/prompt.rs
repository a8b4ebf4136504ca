//! The system prompt (spec §6.1, seed 003): each profile's prompt is a list of named sections
//! ([`ProfileKind::prompt_sections`]), each a minijinja template rendered with the same
//! variables (tools, environment, git, project docs, user instructions, mode flags), joined in
//! order with blank sections left out. A section's text comes from, highest first: the project's
//! `.agentls/prompts/<profile>/<section>.md`, the user's `<config dir>/agentls/prompts/…`, the
//! configuration (`[prompt.profiles.<profile>]`, then `[prompt.sections]`), the built-in file.
//!
//! Invariants:
//! - Building is pure (no I/O): overrides are read beforehand ([`PromptOverrides::load`]).
//! - An override that fails to render falls back to the built-in section; the failure, with its
//!   origin and line, is in [`RenderedPrompt::problems`]. The built-in sections always render.
//! - The built-in sections render exactly the text the layered builder produced before them
//!   (pinned by `tests/fixtures/prompts/golden`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::{Environment, UndefinedBehavior, Value, context};
use serde::Serialize;

use super::{EnvironmentInfo, ProfileKind, ProjectDocs};
use crate::config::{CodeLayer, PromptLayer, PromptSection};

/// A tool as the system prompt lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSummary {
    pub name: String,
    pub description: String,
}

/// Where a section's text came from.
#[derive(Debug, Clone, PartialEq)]
pub enum SectionSource {
    BuiltIn,
    /// A configuration key (`prompt.sections.tools`).
    Config(String),
    File(PathBuf),
}

impl std::fmt::Display for SectionSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BuiltIn => f.write_str("built-in"),
            Self::Config(key) => write!(f, "configuration `{key}`"),
            Self::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

/// A section's replacement template and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SectionOverride {
    pub template: String,
    pub source: SectionSource,
}

/// The user's replacements of one profile's sections, read once when a session starts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PromptOverrides {
    sections: BTreeMap<PromptSection, SectionOverride>,
    /// Files that could not be used (unreadable, or named after no section of the profile).
    pub problems: Vec<String>,
}

/// Folder of a profile's section files under a prompts folder.
fn profile_dir(prompts: &Path, profile: ProfileKind) -> PathBuf {
    prompts.join(profile.as_str())
}

/// The project's folder of prompt section files.
pub fn project_prompts_dir(root: &Path) -> PathBuf {
    root.join(".agentls").join("prompts")
}

impl PromptOverrides {
    /// The overrides of `profile`: configuration first, then the user's files, then the
    /// project's files (each later one wins).
    pub fn load(
        profile: ProfileKind,
        config: &PromptLayer,
        user_dir: Option<&Path>,
        project_root: &Path,
    ) -> Self {
        let mut overrides = Self::default();
        let known: Vec<PromptSection> =
            profile.prompt_sections().iter().chain(profile.message_sections()).copied().collect();
        for (section, template) in config.sections.iter().flatten() {
            if known.contains(section) {
                let source = SectionSource::Config(format!("prompt.sections.{section}"));
                overrides.sections.insert(*section, SectionOverride { template: template.clone(), source });
            }
        }
        let own = config.profiles.as_ref().and_then(|p| p.get(&profile));
        for (section, template) in own.into_iter().flatten() {
            let source = SectionSource::Config(format!("prompt.profiles.{profile}.{section}"));
            overrides.sections.insert(*section, SectionOverride { template: template.clone(), source });
        }
        let project = project_prompts_dir(project_root);
        for dir in user_dir.into_iter().chain([project.as_path()]) {
            overrides.read_dir(&profile_dir(dir, profile), profile, &known);
        }
        overrides
    }

    fn read_dir(&mut self, dir: &Path, profile: ProfileKind, known: &[PromptSection]) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let section = name.strip_suffix(".md").and_then(|stem| stem.parse::<PromptSection>().ok());
            let Some(section) = section.filter(|s| known.contains(s)) else {
                let names: Vec<&str> = known.iter().map(|s| s.as_str()).collect();
                self.problems.push(format!(
                    "{} is not used: the {profile} profile's sections are {} (one `<section>.md` file each)",
                    path.display(),
                    names.join(", ")
                ));
                continue;
            };
            match std::fs::read(&path).map(String::from_utf8) {
                Ok(Ok(template)) => {
                    self.sections
                        .insert(section, SectionOverride { template, source: SectionSource::File(path) });
                }
                Ok(Err(_)) => {
                    self.problems.push(format!("{} is not UTF-8 text; it is not used", path.display()))
                }
                Err(e) => self.problems.push(format!("cannot read {}: {e}; it is not used", path.display())),
            }
        }
    }

    pub fn get(&self, section: PromptSection) -> Option<&SectionOverride> {
        self.sections.get(&section)
    }

    /// Overrides only from the configuration (tests, hosts without files).
    pub fn from_config(profile: ProfileKind, config: &PromptLayer) -> Self {
        let mut overrides = Self::load(profile, config, None, Path::new(""));
        overrides.sections.retain(|_, o| matches!(o.source, SectionSource::Config(_)));
        overrides.problems.clear();
        overrides
    }
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
    /// Code mode's settings (tool calls or code blocks, return type, premise).
    pub code: &'a CodeLayer,
    pub overrides: &'a PromptOverrides,
}

/// One rendered section.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedSection {
    pub section: PromptSection,
    /// Where the text that was used came from (built-in after a failed override).
    pub source: SectionSource,
    pub text: String,
}

/// A rendered prompt with its parts.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedPrompt {
    pub text: String,
    pub sections: Vec<RenderedSection>,
    /// What the user should be told: overrides that failed and fell back, unusable files.
    pub problems: Vec<String>,
}

#[derive(Serialize)]
struct EnvironmentVars {
    working_directory: String,
    is_git_repository: bool,
    git_branch: Option<String>,
    platform: String,
    os_version: Option<String>,
    date: String,
    model: String,
    knowledge_cutoff: Option<&'static str>,
}

#[derive(Serialize)]
struct GitVars<'a> {
    branch: Option<&'a str>,
    modified: usize,
    untracked: usize,
    recent_commits: &'a [String],
}

#[derive(Serialize)]
struct ToolVars<'a> {
    name: &'a str,
    description: &'a str,
    /// The description's first line.
    summary: &'a str,
}

#[derive(Serialize)]
struct DocVars {
    path: String,
    content: String,
}

#[derive(Serialize)]
struct ProjectDocsVars {
    files: Vec<DocVars>,
    /// The files as the prompt shows them (within the budget).
    text: String,
    truncated: bool,
}

/// Every variable a section template sees (documented in docs/configuration.md).
#[derive(Serialize)]
struct Vars<'a> {
    profile: &'static str,
    environment: EnvironmentVars,
    git: Option<GitVars<'a>>,
    tools: Vec<ToolVars<'a>>,
    one_call_per_step: bool,
    project_docs: ProjectDocsVars,
    user_instructions: Option<&'a str>,
    uses_tool_calls: bool,
    return_type: &'a str,
    premise: Option<&'a str>,
    available_modules: &'static [&'static str],
}

/// The built-in template of `section` in `profile`'s prompt.
pub fn builtin_section(profile: ProfileKind, section: PromptSection) -> &'static str {
    use PromptSection::*;
    match section {
        Base => profile.base_prompt(),
        Environment => include_str!("prompts/sections/environment.md"),
        Git => include_str!("prompts/sections/git.md"),
        Tools => include_str!("prompts/sections/tools.md"),
        ProjectDocs => include_str!("prompts/sections/project_docs.md"),
        UserInstructions => include_str!("prompts/sections/user_instructions.md"),
        Starter => include_str!("prompts/code/starter.md"),
        Objectives => include_str!("prompts/code/objectives.md"),
        Workflow => include_str!("prompts/code/workflow.md"),
        Interactions => include_str!("prompts/code/interactions.md"),
        Output => include_str!("prompts/code/output.md"),
        Notes => include_str!("prompts/code/notes.md"),
        UserPrompt => include_str!("prompts/code/user_prompt.md"),
    }
}

fn engine() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env
}

/// The engine of the built-in sections, named `<profile>/<section>`: each is compiled the first
/// time it is rendered and kept for the life of the process, so a model request does not
/// compile the prompt again (overrides, which can change on disk, are compiled per render).
fn builtin_engine() -> &'static Environment<'static> {
    static ENGINE: std::sync::OnceLock<Environment<'static>> = std::sync::OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut env = engine();
        env.set_loader(|name| {
            let found = name.split_once('/').and_then(|(profile, section)| {
                let profile = ProfileKind::ALL.into_iter().find(|p| p.as_str() == profile)?;
                let section = PromptSection::ALL.into_iter().find(|s| s.as_str() == section)?;
                Some(builtin_section(profile, section).to_string())
            });
            Ok(found)
        });
        env
    })
}

/// Renders the built-in text of `section` (named by the section in errors).
fn render_builtin(profile: ProfileKind, section: PromptSection, vars: &Value) -> Result<String, String> {
    builtin_engine()
        .get_template(&format!("{}/{}", profile.as_str(), section.as_str()))
        .and_then(|t| t.render(vars))
        .map_err(|e| describe(section.as_str(), &e))
}

/// Renders `template` (named `name` in errors) with `vars`; a failure says where.
fn render(env: &Environment<'_>, name: &str, template: &str, vars: &Value) -> Result<String, String> {
    env.render_named_str(name, template, vars).map_err(|e| describe(name, &e))
}

/// A template error as `name, line N: what`.
fn describe(name: &str, e: &minijinja::Error) -> String {
    let line = e.line().map(|l| format!(", line {l}")).unwrap_or_default();
    let detail = e.detail().map(str::to_string).unwrap_or_else(|| e.kind().to_string());
    format!("{name}{line}: {detail}")
}

/// Renders one section: the override when there is one and it renders, else the built-in text.
/// An override sees the built-in rendering as `default`.
fn render_section(
    profile: ProfileKind,
    section: PromptSection,
    overrides: &PromptOverrides,
    vars: &Value,
    problems: &mut Vec<String>,
) -> (String, SectionSource) {
    // The built-ins are tested to render for every profile; should one fail, the section is left
    // out and said so rather than crashing a session.
    let builtin = render_builtin(profile, section, vars).unwrap_or_else(|e| {
        problems.push(format!("the built-in prompt section {e}"));
        String::new()
    });
    let Some(custom) = overrides.get(section) else { return (builtin, SectionSource::BuiltIn) };
    let name = match &custom.source {
        SectionSource::File(path) => path.display().to_string(),
        other => other.to_string(),
    };
    let with_default = context! { default => builtin.trim(), ..vars.clone() };
    match render(&engine(), &name, &custom.template, &with_default) {
        Ok(text) => (text, custom.source.clone()),
        Err(e) => {
            problems.push(format!(
                "prompt section `{section}` of the {profile} profile: template error in {e}; using the built-in section instead"
            ));
            (builtin, SectionSource::BuiltIn)
        }
    }
}

/// A rendered section as it is joined: surrounding blank lines and trailing spaces dropped.
fn tidy(text: &str) -> &str {
    text.trim_start_matches(['\n', '\r']).trim_end()
}

impl SystemPrompt<'_> {
    fn vars(&self) -> Value {
        let env = self.environment;
        let git = env.git.as_ref();
        let vars = Vars {
            profile: self.profile.as_str(),
            environment: EnvironmentVars {
                working_directory: env.working_directory.display().to_string(),
                is_git_repository: git.is_some(),
                git_branch: git.and_then(|g| g.branch.clone()),
                platform: env.platform.clone(),
                os_version: env.os_version.clone(),
                date: env.date.format("%Y-%m-%d").to_string(),
                model: env.model.clone(),
                knowledge_cutoff: env.knowledge_cutoff,
            },
            git: git.map(|g| GitVars {
                branch: g.branch.as_deref(),
                modified: g.modified,
                untracked: g.untracked,
                recent_commits: &g.recent_commits,
            }),
            tools: self
                .tools
                .iter()
                .map(|t| ToolVars {
                    name: &t.name,
                    description: &t.description,
                    summary: t.description.lines().next().unwrap_or_default(),
                })
                .collect(),
            one_call_per_step: self.one_call_per_step,
            project_docs: ProjectDocsVars {
                files: self
                    .project_docs
                    .docs
                    .iter()
                    .map(|d| DocVars { path: d.path.display().to_string(), content: d.content.clone() })
                    .collect(),
                text: if self.project_docs.is_empty() { String::new() } else { self.project_docs.render() },
                truncated: self.project_docs.truncated,
            },
            user_instructions: self.user_instructions.map(str::trim).filter(|t| !t.is_empty()),
            uses_tool_calls: self.code.uses_tool_calls(),
            return_type: self.code.return_type(),
            premise: self.code.premise.as_deref().map(str::trim).filter(|p| !p.is_empty()),
            available_modules: crate::tools::python::PRELOADED_MODULES,
        };
        Value::from_serialize(&vars)
    }

    /// The prompt with its sections and where each came from.
    pub fn render(&self) -> RenderedPrompt {
        let vars = self.vars();
        let mut problems = self.overrides.problems.clone();
        let mut sections = Vec::new();
        for &section in self.profile.prompt_sections() {
            let (text, source) = render_section(self.profile, section, self.overrides, &vars, &mut problems);
            sections.push(RenderedSection { section, source, text: tidy(&text).to_string() });
        }
        let text = sections
            .iter()
            .map(|s| s.text.as_str())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        RenderedPrompt { text, sections, problems }
    }

    pub fn build(&self) -> String {
        self.render().text
    }

    /// The message a task is sent as, for profiles that frame it (code mode's `user_prompt`);
    /// `None` sends the task as it is. Problems are those of [`SystemPrompt::render`].
    pub fn task_message(&self, task: &str) -> Option<(String, Vec<String>)> {
        let &section = self.profile.message_sections().first()?;
        let vars = context! { task => task.trim(), resources => "", ..self.vars() };
        let mut problems = Vec::new();
        let (text, _) = render_section(self.profile, section, self.overrides, &vars, &mut problems);
        Some((tidy(&text).to_string(), problems))
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
            code: &CodeLayer::default(),
            overrides: &PromptOverrides::default(),
        }
        .build();
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle:?} missing"));
        assert!(text.starts_with(ProfileKind::Gemini.base_prompt().trim_end()));
        assert!(at("<environment>") < at("# Available tools"));
        assert!(at("- `read_file`: Reads a file.") < at("use tabs"));
        assert!(at("use tabs") < at("answer in French"));
        assert!(!text.contains("More."));
    }

    /// Code mode's prompt names only what its REPL offers: the `python` tool and its
    /// parameters, the helpers the driver defines, the modules it imports, and the execution
    /// message's real first line.
    #[tokio::test]
    async fn the_code_prompt_names_only_what_the_repl_offers() {
        use crate::tools::python::{EXECUTION_HEADER, PRELOADED_MODULES};
        let tool = &ProfileKind::Code.tools()[0];
        let parameters = tool.parameters();
        let declared: Vec<&str> =
            parameters["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        let driver = include_str!("../tools/python/driver.py");
        let tmp = tempfile::tempdir().unwrap();
        let env = EnvironmentInfo::capture(tmp.path(), "claude-sonnet-4-5").await;
        for tool_calls in [true, false] {
            let code = CodeLayer { tool_calls: Some(tool_calls), ..CodeLayer::default() };
            let text = SystemPrompt {
                profile: ProfileKind::Code,
                environment: &env,
                tools: &[],
                project_docs: &ProjectDocs::default(),
                user_instructions: None,
                one_call_per_step: false,
                code: &code,
                overrides: &PromptOverrides::default(),
            }
            .build();
            // The fenced-block format is named once, in the code-block variant.
            let block = "```python … ```";
            assert_eq!(text.contains(block), !tool_calls);
            let text = text.replace(block, "");
            for span in text.split('`').skip(1).step_by(2) {
                let name = span.split(['(', ' ']).next().unwrap_or_default();
                let known = name == tool.name()
                    || declared.contains(&name)
                    || PRELOADED_MODULES.contains(&name)
                    || ["str", "return", "await", "inspect", "raise", "git"].contains(&name)
                    || span == EXECUTION_HEADER
                    || span.starts_with("raise AgentError(")
                    || (["show_definition", "AgentError"].contains(&name)
                        && driver.contains(&format!("{name}(")));
                assert!(
                    known,
                    "tool_calls={tool_calls}: the code prompt names `{span}`, which the REPL does not offer"
                );
            }
            assert_eq!(text.contains("call the `python` tool"), tool_calls);
            assert_eq!(text.contains(EXECUTION_HEADER), !tool_calls, "the interactions section");
        }
    }
}

#[cfg(test)]
mod golden {
    //! Today's default prompt, pinned: the rendered default of every profile must stay the text
    //! the layered builder produced before prompts became templates.
    //! A change of a base prompt's own text (`prompts/<profile>.md`) is regenerated with
    //! `AGENTLS_WRITE_GOLDEN=1`; its diff must show that text and nothing else.
    use super::*;
    use crate::profiles::project_docs::ProjectDoc;

    fn environment(git: bool) -> EnvironmentInfo {
        EnvironmentInfo {
            working_directory: "/work/project".into(),
            platform: "linux".into(),
            os_version: Some("Debian GNU/Linux 12 (bookworm)".into()),
            date: chrono::NaiveDate::from_ymd_opt(2026, 1, 2).unwrap(),
            model: "some-model".into(),
            knowledge_cutoff: None,
            git: git.then(|| crate::profiles::GitSnapshot {
                branch: Some("main".into()),
                modified: 2,
                untracked: 1,
                recent_commits: vec!["abc123 first".into(), "def456 second".into()],
            }),
        }
    }

    /// Every combination the layers switch on, one prompt each, separated by a marker line.
    pub(crate) fn cases(profile: ProfileKind, build: impl Fn(&SystemPrompt<'_>) -> String) -> String {
        let tools = [
            ToolSummary { name: "read_file".into(), description: "Reads a file.\nMore.".into() },
            ToolSummary { name: "shell".into(), description: "Runs a command.".into() },
        ];
        let docs = ProjectDocs {
            docs: vec![ProjectDoc { path: "/work/project/AGENTS.md".into(), content: "use tabs\n".into() }],
            truncated: true,
        };
        let none = ProjectDocs::default();
        let mut out = String::new();
        for (git, with_tools, with_docs, instructions, one_call) in [
            (false, false, false, None, false),
            (true, true, true, Some("answer in French"), false),
            (true, true, false, Some("  "), true),
        ] {
            let env = environment(git);
            let prompt = SystemPrompt {
                profile,
                environment: &env,
                tools: if with_tools { &tools } else { &[] },
                project_docs: if with_docs { &docs } else { &none },
                user_instructions: instructions,
                one_call_per_step: one_call,
                code: &CodeLayer::default(),
                overrides: &PromptOverrides::default(),
            };
            out.push_str(&build(&prompt));
            out.push_str("\n=====\n");
        }
        out
    }

    #[test]
    fn default_prompts_are_unchanged() {
        for profile in ProfileKind::CODING {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("tests/fixtures/prompts/golden/{profile}.txt"));
            let text = cases(profile, |p| p.build());
            if std::env::var_os("AGENTLS_WRITE_GOLDEN").is_some() {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &text).unwrap();
            }
            let golden = std::fs::read_to_string(&path).unwrap();
            pretty_assertions::assert_eq!(text, golden, "{profile}");
        }
    }
}
