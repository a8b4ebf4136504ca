//! What a session sends the model besides its history: the system prompt, rendered from the
//! profile, the environment captured at start, the instruction files, the prompt overrides and
//! the settings it reads, and kept until one of them changes; and the request that carries it.
//!
//! Invariants:
//! - The system prompt is rendered again only when its key changes (the model, the user's
//!   instructions, one-call-per-step, code mode's settings, or the instruction files); every
//!   model call and every context estimate reuses it otherwise.
//! - A prompt override that cannot be used is told once (a `warning`), however often it is met.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

use super::events::{Emitter, EventData, Warning};
use super::history::History;
use super::turn::to_messages;
use super::{SessionConfig, lock};
use crate::config::CodeLayer;
use crate::llm::{Message, Request, ToolChoice, ToolDefinition};
use crate::profiles::{
    EnvironmentInfo, ProfileKind, ProjectDocs, PromptOverrides, SystemPrompt, ToolSummary,
    discover_project_docs,
};

/// What a rendered system prompt depends on besides what is fixed for the session's life (the
/// profile, its tools, the environment captured at start, the prompt overrides read at start).
#[derive(Debug, Clone, PartialEq)]
struct PromptKey {
    model: String,
    instructions: Option<String>,
    one_call_per_step: bool,
    code: CodeLayer,
    docs_generation: u64,
    tools_generation: u64,
}

/// The system prompt of one session and the requests that carry it.
pub(super) struct PromptCache {
    profile: ProfileKind,
    environment: EnvironmentInfo,
    project_docs: ProjectDocs,
    /// Bumped whenever `project_docs` changes (a key of the cache).
    docs_generation: u64,
    /// Bumped whenever the tools change (a tool source's came or went; a key of the cache).
    tools_generation: u64,
    /// The user's prompt section overrides, read at session start.
    overrides: PromptOverrides,
    /// Prompt problems already told.
    problems_told: Mutex<HashSet<String>>,
    /// The last rendered system prompt and what it was rendered from.
    rendered: Mutex<Option<(PromptKey, String)>>,
    events: Emitter,
}

impl PromptCache {
    pub(super) fn new(
        profile: ProfileKind,
        environment: EnvironmentInfo,
        project_docs: ProjectDocs,
        overrides: PromptOverrides,
        events: Emitter,
    ) -> Self {
        Self {
            profile,
            environment,
            project_docs,
            docs_generation: 0,
            tools_generation: 0,
            overrides,
            problems_told: Mutex::default(),
            rendered: Mutex::default(),
            events,
        }
    }

    /// The tools changed: the prompt, which lists them, is rendered again.
    pub(super) fn tools_changed(&mut self) {
        self.tools_generation += 1;
    }

    /// Reads the instruction files of `cwd` again (one changed); the prompt is rendered again
    /// only if they differ.
    pub(super) fn reload_docs(&mut self, cwd: &Path) {
        let docs = discover_project_docs(cwd, self.profile);
        if docs != self.project_docs {
            self.project_docs = docs;
            self.docs_generation += 1;
        }
    }

    /// The system prompt's inputs other than the tools and environment.
    fn inputs<'a>(
        &'a self,
        config: &'a SessionConfig,
        environment: &'a EnvironmentInfo,
        tools: &'a [ToolSummary],
    ) -> SystemPrompt<'a> {
        SystemPrompt {
            profile: self.profile,
            environment,
            tools,
            project_docs: &self.project_docs,
            user_instructions: config.instructions.as_deref(),
            one_call_per_step: config.one_call_per_step,
            code: &config.code,
            overrides: &self.overrides,
        }
    }

    /// Tells the user, once each, about prompt overrides that could not be used.
    fn tell_problems(&self, problems: Vec<String>) {
        for message in problems {
            if lock(&self.problems_told).insert(message.clone()) {
                self.events.emit(EventData::Warning(Warning { message, ..Warning::default() }));
            }
        }
    }

    /// The message an input is sent as: code mode frames it as a task (`user_prompt`).
    pub(super) fn task_message(&self, config: &SessionConfig, input: &str) -> String {
        match self.inputs(config, &self.environment, &[]).task_message(input) {
            Some((message, problems)) => {
                self.tell_problems(problems);
                message
            }
            None => input.to_string(),
        }
    }

    /// The system prompt of the next request, rendered again only when its inputs changed.
    pub(super) fn system_prompt(&self, config: &SessionConfig, definitions: &[ToolDefinition]) -> String {
        let key = PromptKey {
            model: config.model.clone(),
            instructions: config.instructions.clone(),
            one_call_per_step: config.one_call_per_step,
            code: config.code.clone(),
            docs_generation: self.docs_generation,
            tools_generation: self.tools_generation,
        };
        let mut rendered = lock(&self.rendered);
        if let Some((cached, text)) = rendered.as_ref()
            && *cached == key
        {
            return text.clone();
        }
        let summaries: Vec<ToolSummary> = definitions
            .iter()
            .map(|d| ToolSummary { name: d.name.clone(), description: d.description.clone() })
            .collect();
        let mut environment = self.environment.clone();
        environment.model = config.model.clone();
        environment.knowledge_cutoff = crate::profiles::environment::knowledge_cutoff(&config.model);
        let prompt = self.inputs(config, &environment, &summaries).render();
        self.tell_problems(prompt.problems);
        *rendered = Some((key, prompt.text.clone()));
        prompt.text
    }

    /// The next request: the system prompt, the history, and `tools` (the session offers all
    /// its tools or none).
    pub(super) fn request(
        &self,
        config: &SessionConfig,
        tools: Vec<ToolDefinition>,
        history: &History,
    ) -> Request {
        let mut messages = vec![Message::system(self.system_prompt(config, &tools))];
        history.read(|turns| messages.extend(to_messages(turns)));
        Request {
            model: config.model.clone(),
            messages,
            tool_choice: ToolChoice::Auto,
            reasoning_effort: config.reasoning_effort,
            parallel_tool_calls: (config.one_call_per_step && !tools.is_empty()).then_some(false),
            tools,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc;

    use super::*;
    use crate::config::{PromptLayer, PromptSection};
    use crate::session::Event;
    use crate::session::turn::Turn;

    fn cache(overrides: PromptOverrides) -> (PromptCache, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let environment = EnvironmentInfo {
            working_directory: "/w".into(),
            platform: "linux".into(),
            os_version: None,
            date: chrono::NaiveDate::from_ymd_opt(2026, 1, 2).expect("a date"),
            model: "m1".into(),
            knowledge_cutoff: None,
            git: None,
        };
        let cache = PromptCache::new(
            ProfileKind::OpenAi,
            environment,
            ProjectDocs::default(),
            overrides,
            Emitter::new("s".into(), tx),
        );
        (cache, rx)
    }

    fn warnings(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .filter_map(|e| match e.data {
                EventData::Warning(w) => Some(w.message),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_prompt_is_rendered_again_only_when_what_it_reads_changed() {
        let (mut cache, _events) = cache(PromptOverrides::default());
        let config = SessionConfig { model: "m1".into(), ..SessionConfig::default() };
        let first = cache.system_prompt(&config, &[]);
        assert!(first.contains("Model: m1"), "{first}");
        // A stale entry proves the cache answers: the same key gives it back unrendered.
        lock(&cache.rendered).as_mut().expect("rendered").1 = "cached".into();
        assert_eq!(cache.system_prompt(&config, &[]), "cached");
        let other_model = SessionConfig { model: "m2".into(), ..config.clone() };
        assert!(cache.system_prompt(&other_model, &[]).contains("Model: m2"), "a new model renders again");
        lock(&cache.rendered).as_mut().expect("rendered").1 = "cached".into();
        cache.docs_generation += 1;
        assert_ne!(
            cache.system_prompt(&other_model, &[]),
            "cached",
            "changed instruction files render it again"
        );
    }

    #[test]
    fn a_broken_override_is_told_once() {
        let layer = PromptLayer {
            sections: Some([(PromptSection::Tools, "{{ unclosed".to_string())].into()),
            profiles: None,
        };
        let (cache, mut events) = cache(PromptOverrides::from_config(ProfileKind::OpenAi, &layer));
        let config = SessionConfig { model: "m1".into(), ..SessionConfig::default() };
        cache.system_prompt(&config, &[]);
        cache.system_prompt(&SessionConfig { model: "m2".into(), ..config }, &[]);
        let told = warnings(&mut events);
        assert_eq!(told.len(), 1, "{told:?}");
    }

    #[test]
    fn a_request_carries_the_prompt_the_history_and_the_tools() {
        let (cache, _events) = cache(PromptOverrides::default());
        let history = History::new(vec![Turn::user("hi")], None);
        let config =
            SessionConfig { model: "m1".into(), one_call_per_step: true, ..SessionConfig::default() };
        let tool = ToolDefinition {
            name: "t".into(),
            description: "d".into(),
            parameters: serde_json::json!({}).into(),
        };
        let request = cache.request(&config, vec![tool], &history);
        assert_eq!((request.model.as_str(), request.messages.len(), request.tools.len()), ("m1", 2, 1));
        assert_eq!(request.parallel_tool_calls, Some(false), "one call per step asks for one");
        assert_eq!(
            cache.request(&config, Vec::new(), &history).parallel_tool_calls,
            None,
            "no tools, no ask"
        );
    }
}
