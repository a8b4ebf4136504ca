//! How full the context window is (seed 004 §1.4): the token estimate of a request, calibrated
//! by what the provider reports. The context manager (`manager.rs`) keeps a session inside the
//! window with it: compaction (`compaction.rs`) first, pruning (`prune.rs`) as the fallback.
//!
//! Invariants:
//! - The raw estimate counts characters (Unicode scalar values, never bytes) of everything a
//!   request carries — system prompt, messages, tool calls and results, tool schemas — divided by
//!   the configured characters per token. An image counts as the tokens its pixel size costs
//!   (`llm::image`), in characters at the default characters per token.
//! - The calibration factor is an exponential moving average of `reported input tokens ÷ raw
//!   estimate` of the same request; the first observation seeds it. Calls without a usage report
//!   leave it unchanged. The estimate hosts see is `raw × factor`.

pub(super) mod compaction;
mod manager;
pub(super) mod prune;

use serde::{Deserialize, Serialize};

pub(super) use manager::{CallError, ContextManager, Conversation, Model};

use crate::llm::{ContentPart, Message, Request, ToolDefinition};

/// Characters per token when the configuration names none (the seed's runes ÷ 4).
pub const DEFAULT_CHARS_PER_TOKEN: u32 = 4;
/// The configurable range of characters per token (as the seed allows).
pub const CHARS_PER_TOKEN_RANGE: std::ops::RangeInclusive<u32> = 1..=32;
/// Weight of the newest observation in the moving average.
const EMA_WEIGHT: f64 = 0.3;
/// A ratio outside this range is a broken report (a cached-token quirk, a provider counting
/// something else), not a property of the tokenizer: it is clamped.
const RATIO_RANGE: (f64, f64) = (0.1, 10.0);

/// Turns character counts into token estimates and learns from the provider's counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    chars_per_token: u32,
    factor: f64,
    samples: u32,
}

impl Calibration {
    pub fn new(chars_per_token: u32) -> Self {
        Self { chars_per_token: chars_per_token.max(1), factor: 1.0, samples: 0 }
    }

    pub fn chars_per_token(&self) -> u32 {
        self.chars_per_token
    }

    /// The current correction: provider tokens per estimated token.
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// How many reports have been folded in.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// The uncalibrated estimate of `chars` characters.
    pub fn raw_tokens(&self, chars: usize) -> u64 {
        (chars as u64).div_ceil(u64::from(self.chars_per_token))
    }

    /// The calibrated estimate of `chars` characters.
    pub fn estimate(&self, chars: usize) -> u64 {
        (self.raw_tokens(chars) as f64 * self.factor).round() as u64
    }

    /// Folds in one call: `raw` is the raw estimate of the request sent, `reported` the input
    /// tokens the provider counted for it.
    pub fn observe(&mut self, raw: u64, reported: u64) {
        if raw == 0 || reported == 0 {
            return;
        }
        let ratio = (reported as f64 / raw as f64).clamp(RATIO_RANGE.0, RATIO_RANGE.1);
        self.factor =
            if self.samples == 0 { ratio } else { EMA_WEIGHT * ratio + (1.0 - EMA_WEIGHT) * self.factor };
        self.samples += 1;
    }
}

/// Characters of everything `request` sends the model.
pub fn request_chars(request: &Request) -> usize {
    message_chars(&request.messages) + tools_chars(&request.tools)
}

/// Characters of the messages of a request: text, reasoning, tool calls and results.
pub fn message_chars(messages: &[Message]) -> usize {
    let chars = |s: &str| s.chars().count();
    messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|part| match part {
            ContentPart::Text { text } | ContentPart::Thinking { text, .. } => chars(text),
            ContentPart::ToolCall(call) => chars(&call.name) + json_chars(&call.arguments),
            ContentPart::ToolResult(result) => chars(&result.content),
            ContentPart::Image(image) => {
                usize::try_from(image.estimated_tokens() * u64::from(DEFAULT_CHARS_PER_TOKEN))
                    .unwrap_or(usize::MAX)
            }
            // Encrypted reasoning is counted by the provider in ways characters cannot predict;
            // calibration absorbs it.
            ContentPart::RedactedThinking { .. } => 0,
        })
        .sum()
}

/// Characters of the tool definitions of a request: names, descriptions and schemas.
pub fn tools_chars(tools: &[ToolDefinition]) -> usize {
    tools
        .iter()
        .map(|t| t.name.chars().count() + t.description.chars().count() + json_chars(&t.parameters))
        .sum()
}

/// Characters of `value` written as compact JSON, counted as it is written (no string is built:
/// the estimate runs before every model call, over every tool schema).
fn json_chars(value: &serde_json::Value) -> usize {
    struct Chars(usize);
    impl std::io::Write for Chars {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            // UTF-8: every byte but a continuation byte (0b10xx_xxxx) starts a character.
            self.0 += bytes.iter().filter(|&&b| (b as i8) >= -0x40).count();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Chars(0);
    // Writing a `Value` into a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// What a host shows of a session's context use (`agentls.listSessions`, the editor status).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ContextStats {
    /// Calibrated estimate of the next request's input tokens.
    pub estimate_tokens: u64,
    /// Provider tokens per raw estimated token (1.0 until the first report).
    pub calibration: f64,
    pub context_window: u64,
}

impl ContextStats {
    /// Share of the window the estimate fills, in percent.
    pub fn percent(&self) -> u64 {
        (self.estimate_tokens * 100).checked_div(self.context_window).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Role;
    use serde_json::json;

    #[test]
    fn json_characters_are_counted_as_written() {
        let value = json!({"type": "object", "properties": {"é😀": {"description": "naïve \"quoted\" 日本"}}, "n": [1, 2.5, null]});
        assert_eq!(json_chars(&value), value.to_string().chars().count());
        assert_eq!(json_chars(&json!({})), 2);
    }

    #[test]
    fn counts_characters_not_bytes_of_every_part_of_a_request() {
        let mut request = Request::new("m", vec![Message::system("日本語"), Message::user("😀€éa")]);
        assert_eq!(request_chars(&request), 7);
        request.tools.push(ToolDefinition {
            name: "t".into(),
            description: "dé".into(),
            parameters: json!({}).into(),
        });
        assert_eq!(request_chars(&request), 7 + 1 + 2 + 2);
        let calibration = Calibration::new(4);
        assert_eq!(calibration.raw_tokens(8), 2);
        assert_eq!(calibration.raw_tokens(9), 3, "a partial token counts");
        assert_eq!(Calibration::new(2).raw_tokens(9), 5);
    }

    #[test]
    fn an_image_counts_as_the_tokens_of_its_pixels_not_zero() {
        let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        png.extend(1000u32.to_be_bytes());
        png.extend(1000u32.to_be_bytes());
        let image = crate::llm::Image { media_type: "image/png".into(), data: png };
        let message = Message::new(
            Role::User,
            vec![ContentPart::Text { text: "see".into() }, ContentPart::Image(image)],
        );
        // 1,000,000 px ÷ 750 = 1,334 tokens, at 4 characters each.
        assert_eq!(message_chars(&[message]), 3 + 1334 * 4);
    }

    /// A fake provider whose tokenizer counts 1.3 tokens for every estimated one: after a few
    /// calls of growing size the calibrated estimate matches what it reports.
    #[test]
    fn converges_on_a_provider_that_reports_more_than_the_estimate() {
        let provider_count =
            |chars: usize, c: &Calibration| (c.raw_tokens(chars) as f64 * 1.3).round() as u64;
        let mut calibration = Calibration::new(4);
        assert_eq!(calibration.factor(), 1.0);
        let mut errors = Vec::new();
        for call in 1..=12usize {
            let chars = 4_000 * call + 17 * call * call;
            let estimate = calibration.estimate(chars);
            let reported = provider_count(chars, &calibration);
            errors.push((estimate as f64 - reported as f64).abs() / reported as f64);
            calibration.observe(calibration.raw_tokens(chars), reported);
        }
        assert!((calibration.factor() - 1.3).abs() < 0.01, "factor {}", calibration.factor());
        assert!(errors[0] > 0.2, "uncalibrated, the first estimate is 1.3x off: {errors:?}");
        assert!(errors[11] < 0.01, "calibrated, the estimate matches the report: {errors:?}");
        assert_eq!(calibration.samples(), 12);
    }

    #[test]
    fn the_average_moves_gradually_and_ignores_calls_without_a_report() {
        let mut calibration = Calibration::new(4);
        calibration.observe(1000, 2000);
        assert_eq!(calibration.factor(), 2.0, "the first report seeds the average");
        calibration.observe(1000, 1000);
        assert!((calibration.factor() - (0.3 + 0.7 * 2.0)).abs() < 1e-9);
        let before = calibration.clone();
        calibration.observe(1000, 0);
        calibration.observe(0, 500);
        assert_eq!(calibration, before);
        calibration.observe(1, 1_000_000);
        assert!(calibration.factor() < 5.0, "an absurd ratio is clamped: {}", calibration.factor());
    }
}
