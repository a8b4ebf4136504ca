//! The wire guard between the editor's byte stream and `tower-lsp-server`.
//!
//! Invariant: only well-formed JSON-RPC messages reach the framework. The framework's reader
//! stops for good at the first undecodable message, so every malformed frame (bad header, bad
//! UTF-8, bad JSON, not a JSON-RPC message, oversized body) is answered here with a JSON-RPC
//! error and dropped, and the server keeps serving. Frames are forwarded verbatim and in order.

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Request, Response};

/// The largest message body accepted (bigger ones are skipped and answered with an error).
pub const MAX_BODY: usize = 64 << 20;
/// The largest header section accepted before the stream is considered garbage.
const MAX_HEADER_LINE: usize = 8 << 10;

/// One unit read from the wire.
#[derive(Debug, PartialEq)]
pub enum Frame {
    Body(Vec<u8>),
    /// Something that is not a frame; the text says what, for the error reply.
    Malformed(String),
}

/// Reads one header line, bounded; `None` at end of input.
async fn header_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() { None } else { Some(line) });
        }
        let take = match available.iter().position(|b| *b == b'\n') {
            Some(i) => i + 1,
            None => available.len(),
        };
        let room = MAX_HEADER_LINE.saturating_sub(line.len());
        line.extend_from_slice(&available[..take.min(room)]);
        reader.consume(take);
        if line.ends_with(b"\n") || line.len() >= MAX_HEADER_LINE {
            return Ok(Some(line));
        }
    }
}

/// Reads the next frame; `None` at end of input.
pub async fn read_frame<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Option<Frame>> {
    let mut length: Option<usize> = None;
    let mut bad_header = None;
    let mut saw_header = false;
    loop {
        let Some(line) = header_line(reader).await? else { return Ok(None) };
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if saw_header {
                break;
            }
            continue;
        }
        saw_header = true;
        match text.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => bad_header = Some(format!("bad Content-Length `{}`", value.trim())),
                }
            }
            Some(_) => {}
            None => bad_header = Some(format!("not a header line: `{}`", truncate(text, 80))),
        }
    }
    if let Some(problem) = bad_header {
        return Ok(Some(Frame::Malformed(problem)));
    }
    let Some(length) = length else {
        return Ok(Some(Frame::Malformed("missing Content-Length header".into())));
    };
    if length > MAX_BODY {
        let skipped =
            tokio::io::copy(&mut (&mut *reader).take(length as u64), &mut tokio::io::sink()).await?;
        if skipped < length as u64 {
            return Ok(None);
        }
        return Ok(Some(Frame::Malformed(format!(
            "message of {length} bytes exceeds the {MAX_BODY}-byte limit"
        ))));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    Ok(Some(Frame::Body(body)))
}

fn truncate(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Checks a body the way the framework will decode it; `Err(reply)` is the error to send back.
fn check_body(body: &[u8]) -> Result<(), Value> {
    let error = |id: Value, code: i64, message: String| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let text = std::str::from_utf8(body)
        .map_err(|e| error(Value::Null, -32700, format!("the message is not UTF-8: {e}")))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| error(Value::Null, -32700, format!("the message is not JSON: {e}")))?;
    if serde_json::from_value::<Response>(value.clone()).is_ok()
        || serde_json::from_value::<Request>(value.clone()).is_ok()
    {
        return Ok(());
    }
    let id = value.get("id").filter(|id| id.is_number() || id.is_string()).cloned().unwrap_or(Value::Null);
    Err(error(id, -32600, "not a JSON-RPC 2.0 request, notification or response".into()))
}

/// Forwards well-formed frames from `input` to `to_server`; malformed ones become replies on
/// `replies`.
pub async fn guard_input<I, W>(input: I, mut to_server: W, replies: mpsc::UnboundedSender<Vec<u8>>)
where
    I: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 << 10, input);
    loop {
        match read_frame(&mut reader).await {
            Ok(None) => break,
            Err(e) => {
                tracing::info!("input closed: {e}");
                break;
            }
            Ok(Some(Frame::Body(body))) => match check_body(&body) {
                Ok(()) => {
                    if to_server.write_all(&frame(&body)).await.is_err() || to_server.flush().await.is_err() {
                        break;
                    }
                }
                Err(reply) => {
                    tracing::warn!("dropping a malformed message: {}", reply["error"]["message"]);
                    let _ = replies.send(frame(reply.to_string().as_bytes()));
                }
            },
            Ok(Some(Frame::Malformed(problem))) => {
                tracing::warn!("dropping a malformed frame: {problem}");
                let reply =
                    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": problem}});
                let _ = replies.send(frame(reply.to_string().as_bytes()));
            }
        }
    }
    let _ = to_server.shutdown().await;
}

/// Writes the server's frames and the guard's replies to `output`, whole frames at a time.
pub async fn merge_output<S, O>(from_server: S, mut replies: mpsc::UnboundedReceiver<Vec<u8>>, mut output: O)
where
    S: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 << 10, from_server);
    let mut replies_open = true;
    loop {
        let bytes = tokio::select! {
            biased;
            frame = read_frame(&mut reader) => match frame {
                Ok(Some(Frame::Body(body))) => frame_bytes(body),
                Ok(Some(Frame::Malformed(problem))) => {
                    tracing::error!("the framework wrote a malformed frame: {problem}");
                    continue;
                }
                Ok(None) | Err(_) => break,
            },
            reply = replies.recv(), if replies_open => match reply {
                Some(bytes) => bytes,
                None => {
                    replies_open = false;
                    continue;
                }
            },
        };
        if output.write_all(&bytes).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
    while let Ok(bytes) = replies.try_recv() {
        let _ = output.write_all(&bytes).await;
    }
    let _ = output.flush().await;
}

fn frame_bytes(body: Vec<u8>) -> Vec<u8> {
    frame(&body)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = BufReader::new(input);
        let mut out = Vec::new();
        while let Some(frame) = read_frame(&mut reader).await.expect("in-memory read") {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn frames_survive_garbage() {
        let input = b"Content-Length: 2\r\n\r\n{}garbage line\r\n\r\nContent-Length: x\r\n\r\nContent-Length: 3\r\nContent-Type: a\r\n\r\n[1]";
        assert_eq!(
            frames(input).await,
            vec![
                Frame::Body(b"{}".to_vec()),
                Frame::Malformed("not a header line: `garbage line`".into()),
                Frame::Malformed("bad Content-Length `x`".into()),
                Frame::Body(b"[1]".to_vec()),
            ]
        );
    }

    #[test]
    fn bodies_are_checked_like_the_framework_decodes_them() {
        assert!(check_body(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#).is_ok());
        assert!(check_body(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).is_ok());
        assert_eq!(check_body(b"{").unwrap_err()["error"]["code"], -32700);
        assert_eq!(check_body(b"\xff").unwrap_err()["error"]["code"], -32700);
        let wrong = check_body(br#"{"jsonrpc":"1.0","id":4,"method":"x"}"#).unwrap_err();
        assert_eq!((wrong["id"].clone(), wrong["error"]["code"].clone()), (json!(4), json!(-32600)));
        assert!(check_body(b"[1,2]").is_err());
    }
}
