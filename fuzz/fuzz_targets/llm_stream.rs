//! Fuzzes the four providers' stream decoders as the client feeds them
//! (`llm::client::decode_streamed_body`: bytes → SSE events → decoder, or a plain JSON body).
//! Input: byte 0 picks the provider (bits 0-1) and SSE or JSON (bit 2); byte 1 sets the read
//! sizes the body arrives in; the rest is the body. No input may panic; a stream that ends
//! without an error must end with exactly one final response, and what was streamed must be what
//! the response holds: the text deltas join into its text, the reasoning deltas into its
//! reasoning, and every tool call it holds was announced, with the arguments it holds. Its tool
//! calls have ids, distinct within the response (a history with an empty or repeated call id is
//! rejected by every provider, so one bad answer would break the session for good).
#![no_main]

use std::collections::HashSet;

use agentls::config::{ProviderKind, ProviderSettings, Secret};
use agentls::llm::client::decode_streamed_body;
use agentls::llm::{ContentPart, StreamEvent};
use libfuzzer_sys::fuzz_target;

const KINDS: [ProviderKind; 4] =
    [ProviderKind::Anthropic, ProviderKind::OpenAi, ProviderKind::OpenAiChat, ProviderKind::Gemini];

fuzz_target!(|data: &[u8]| {
    let [mode, split, body @ ..] = data else { return };
    let kind = KINDS[usize::from(mode & 3)];
    let json = mode & 4 != 0;
    let settings = ProviderSettings {
        kind,
        model: "fuzz-model".into(),
        base_url: "http://127.0.0.1:9".into(),
        api_key: Some(Secret::new("sk-fuzz-secret")),
        api_key_var: Some("FUZZ_API_KEY".into()),
        chosen_by: "fuzz".into(),
    };
    // Reads of 1..=16 bytes cycling, or one read for the whole body.
    let chunks: Vec<bytes::Bytes> = if *split == 0 {
        vec![bytes::Bytes::copy_from_slice(body)]
    } else {
        let mut chunks = Vec::new();
        let mut rest = body;
        let mut size = usize::from(*split % 16) + 1;
        while !rest.is_empty() {
            let (head, tail) = rest.split_at(size.min(rest.len()));
            chunks.push(bytes::Bytes::copy_from_slice(head));
            rest = tail;
            size = size % 16 + 1;
        }
        chunks
    };
    let (events, error) = decode_streamed_body(&settings, json, chunks);
    if let Some(error) = &error {
        assert!(!error.to_string().contains("sk-fuzz-secret"), "{error}");
        return;
    }
    let finishes = events.iter().filter(|e| matches!(e, StreamEvent::Finish(_))).count();
    assert_eq!(finishes, 1, "one final response: {events:?}");
    let Some(StreamEvent::Finish(response)) = events.last() else {
        panic!("the final response comes last: {events:?}");
    };
    let (mut text, mut thinking) = (String::new(), String::new());
    let mut ended = Vec::new();
    for event in &events {
        match event {
            StreamEvent::TextDelta(delta) => text.push_str(delta),
            StreamEvent::ThinkingDelta(delta) => thinking.push_str(delta),
            StreamEvent::ToolCallEnd { id, name, arguments } => ended.push((id, name, arguments)),
            _ => {}
        }
    }
    assert_eq!(text, response.text(), "text deltas = the response's text");
    let reasoning: String = response
        .content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Thinking { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, reasoning, "reasoning deltas = the response's reasoning");
    let mut ids = HashSet::new();
    for call in response.tool_calls() {
        assert!(!call.id.is_empty(), "a tool call without an id: {response:?}");
        assert!(ids.insert(call.id.as_str()), "two tool calls with id {}: {response:?}", call.id);
        assert!(
            ended.iter().any(|(id, name, arguments)| **id == call.id
                && **name == call.name
                && **arguments == call.arguments),
            "tool call {call:?} was not streamed as such: {events:?}"
        );
    }
});
