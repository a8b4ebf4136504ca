//! Fuzzes the wire reader (`lsp::transport::MessageReader`) with any bytes from the editor,
//! followed by one well-formed request. Whatever came before, the reader must not panic, must
//! deliver only well-formed JSON-RPC messages, must answer malformed input with JSON-RPC errors,
//! and must still deliver the request that follows: the server keeps serving.
#![no_main]

use agentls::lsp::transport::{Frame, FrameReader, Incoming, MessageReader, frame};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const PROBE: &[u8] = br#"{"jsonrpc":"2.0","id":"fuzz-probe","method":"workspace/executeCommand","params":{"command":"agentls.listSessions","arguments":[{}]}}"#;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
    })
}

/// Every frame of `bytes`, read strictly: the reader's replies are whole frames.
async fn frames(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut reader = FrameReader::new(bytes);
    let mut out = Vec::new();
    while let Some(frame) = reader.next().await.expect("in-memory read") {
        match frame {
            Frame::Body(body) => out.push(body),
            other => panic!("the reader wrote a malformed frame: {other:?}"),
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut input = data.to_vec();
    input.extend(frame(PROBE));
    runtime().block_on(async {
        // Room for every reply: one per malformed frame at most.
        let (replies_tx, mut replies_rx) = tokio::sync::mpsc::channel(input.len() + 1);
        let mut reader = MessageReader::new(&input[..], replies_tx);
        let mut last = None;
        while let Some(message) = reader.next().await {
            last = Some(message);
        }
        match last {
            Some(Incoming::Request(request)) => {
                assert_eq!(request.method(), "workspace/executeCommand", "the request after the garbage is served");
            }
            other => panic!("the request after the garbage is served, not {other:?}"),
        }
        while let Ok(reply) = replies_rx.try_recv() {
            let replies = frames(reply.bytes()).await;
            assert_eq!(replies.len(), 1, "one frame per reply");
            let reply: Value = serde_json::from_slice(&replies[0]).expect("a reply is JSON");
            assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
            assert!(reply["error"]["code"].is_i64() && reply["error"]["message"].is_string(), "{reply}");
        }
    });
});
