//! What the model receives of an MCP tool result: text as it is, images as image parts, embedded
//! resources as their text (or a note for binary ones), `structuredContent` as JSON when the
//! content does not already carry it; `isError` makes the whole an error result.

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::tools::{ToolImage, ToolOutput};

/// Images larger than this are described, not sent.
const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The tool output of `result`; `Err` carries the text of an `isError` result.
pub fn convert(result: CallToolResult) -> Result<ToolOutput, String> {
    let mut texts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(text) => texts.push(text.text),
            ContentBlock::Image(image) => match decode(&image.data) {
                Some(data) if data.len() <= MAX_IMAGE_BYTES => {
                    texts.push(format!("[image: {}, {} bytes]", image.mime_type, data.len()));
                    images.push(ToolImage { media_type: image.mime_type, data });
                }
                Some(data) => texts.push(format!(
                    "[image omitted: {}, {} bytes, too large]",
                    image.mime_type,
                    data.len()
                )),
                None => texts.push(format!("[image omitted: {}, not valid base64]", image.mime_type)),
            },
            ContentBlock::Audio(audio) => texts.push(format!(
                "[audio omitted: {}, {} base64 characters]",
                audio.mime_type,
                audio.data.len()
            )),
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    texts.push(format!("[resource {uri}]\n{text}"))
                }
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                    let mime = mime_type.unwrap_or_else(|| "application/octet-stream".into());
                    match decode(&blob) {
                        Some(data) if mime.starts_with("image/") && data.len() <= MAX_IMAGE_BYTES => {
                            texts.push(format!("[resource {uri}: image {mime}, {} bytes]", data.len()));
                            images.push(ToolImage { media_type: mime, data });
                        }
                        Some(data) => texts.push(format!(
                            "[resource {uri}: {mime}, {} bytes of binary data omitted]",
                            data.len()
                        )),
                        None => texts.push(format!("[resource {uri}: {mime}, not valid base64]")),
                    }
                }
                other => {
                    texts.push(format!("[a resource of a kind agentls does not know: {}]", kind_of(&other)))
                }
            },
            ContentBlock::ResourceLink(link) => {
                let about = link.description.map(|d| format!(": {d}")).unwrap_or_default();
                texts.push(format!("[resource link {} ({}){about}]", link.uri, link.name))
            }
            other => texts.push(format!("[content of a kind agentls does not know: {}]", kind_of(&other))),
        }
    }
    if let Some(structured) = result.structured_content {
        // Servers should repeat structured content as text; it is added when they did not.
        let repeated = texts
            .iter()
            .any(|t| serde_json::from_str::<serde_json::Value>(t).ok().as_ref() == Some(&structured));
        if !repeated {
            texts.push(serde_json::to_string_pretty(&structured).unwrap_or_default());
        }
    }
    let content =
        if texts.is_empty() { "(the tool returned no content)".to_string() } else { texts.join("\n") };
    if result.is_error == Some(true) {
        return Err(content);
    }
    Ok(ToolOutput { content, images, ends_task: None })
}

/// The `type` of content agentls does not convert, as the server sent it.
fn kind_of(content: &impl serde::Serialize) -> String {
    serde_json::to_value(content)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

fn decode(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(data.trim()).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn every_kind_of_content_is_converted() {
        let png = base64::engine::general_purpose::STANDARD.encode([137u8, 80, 78, 71]);
        let converted = convert(result(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAEC"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
            ],
            "structuredContent": {"sum": 3}
        })))
        .unwrap();
        assert_eq!(
            converted,
            ToolOutput {
                content: "hello\n[image: image/png, 4 bytes]\n[resource file:///a.txt]\ninside\n\
                          [resource file:///b.bin: application/octet-stream, 3 bytes of binary data omitted]\n\
                          [resource link file:///c (c)]\n[audio omitted: audio/wav, 4 base64 characters]\n\
                          {\n  \"sum\": 3\n}"
                    .into(),
                images: vec![ToolImage { media_type: "image/png".into(), data: vec![137, 80, 78, 71] }],
                ends_task: None,
            }
        );
    }

    #[test]
    fn structured_content_already_in_text_is_not_repeated_and_errors_are_errors() {
        let converted = convert(result(
            json!({"content": [{"type": "text", "text": "{\"sum\": 3}"}], "structuredContent": {"sum": 3}}),
        ))
        .unwrap();
        assert_eq!(converted.content, "{\"sum\": 3}");
        let error =
            convert(result(json!({"content": [{"type": "text", "text": "no such repo"}], "isError": true})));
        assert_eq!(error, Err("no such repo".to_string()));
        assert_eq!(
            convert(result(json!({"content": []}))).unwrap().content,
            "(the tool returned no content)"
        );
    }
}
