//! The message loop between the editor and the LSP service (in place of `tower-lsp-server`'s
//! own `Server`, which framed and decoded every message a second time).
//!
//! Invariants:
//! - The service is called once per request or notification, in arrival order, before any
//!   handler future runs ([`text_sync`](super::text_sync) relies on it); up to
//!   [`MAX_CONCURRENCY`] handler futures run at once, and their responses go out as they finish.
//! - The editor's responses to the server's requests go back to the service's client socket.
//! - After `exit`, or when the input ends, nothing more is read; the responses of the handlers
//!   still running are written, the server's own requests and notifications no longer are.
//! - Everything for the editor goes through one bounded queue to [`write_output`], so a slow
//!   editor slows the producers instead of filling memory.
//!
//! [`write_output`]: super::transport::write_output

use futures::channel::mpsc as futures_mpsc;
use futures::{SinkExt, StreamExt};
use tokio::io::AsyncRead;
use tokio::sync::mpsc;
use tower_lsp_server::ClientSocket;
use tower_lsp_server::jsonrpc::{Request, Response};
use tower_service::Service;

use super::transport::{Incoming, MessageReader, Outgoing};

/// Handler futures that run at once (as `tower-lsp-server`'s own loop allowed).
pub const MAX_CONCURRENCY: usize = 4;
/// Requests read ahead of the handlers that will run them.
const TASK_QUEUE: usize = 100;

/// Serves `service` to the editor on `input` until `exit` or the end of the input; what the
/// editor must read goes to `output`.
pub async fn run<I, S>(input: I, mut service: S, socket: ClientSocket, output: mpsc::Sender<Outgoing>)
where
    I: AsyncRead + Unpin,
    S: Service<Request, Response = Option<Response>>,
    S::Error: std::fmt::Display,
{
    let (mut to_editor, mut editor_answers) = socket.split();
    let (mut tasks, queued) = futures_mpsc::channel(TASK_QUEUE);
    let mut reader = MessageReader::new(input, output.clone());

    let read = async {
        while let Some(message) = reader.next().await {
            match message {
                Incoming::Request(request) => {
                    if let Err(e) = std::future::poll_fn(|cx| service.poll_ready(cx)).await {
                        tracing::error!("the service stopped: {e}");
                        break;
                    }
                    let exit = request.method() == "exit";
                    if tasks.send(service.call(request)).await.is_err() || exit {
                        break;
                    }
                }
                Incoming::Response(response) => {
                    if editor_answers.send(response).await.is_err() {
                        tracing::error!("the service no longer takes the editor's answers");
                        break;
                    }
                }
            }
        }
        // No more handlers: the answering loop ends once the running ones are done.
        tasks.close_channel();
    };
    let answer = {
        let output = output.clone();
        queued.buffer_unordered(MAX_CONCURRENCY).for_each(move |result| {
            let output = output.clone();
            async move {
                match result {
                    Ok(Some(response)) => {
                        let _ = output.send(Outgoing::response(&response)).await;
                    }
                    Ok(None) => {}
                    Err(e) => tracing::error!("a handler failed: {e}"),
                }
            }
        })
    };
    let (forward, stop_forwarding) = futures::future::abortable(async move {
        while let Some(request) = to_editor.next().await {
            if output.send(Outgoing::request(&request)).await.is_err() {
                break;
            }
        }
    });
    let read = async {
        read.await;
        stop_forwarding.abort();
    };
    // The forwarding ends aborted (the input ended) or because nobody writes the output.
    let ((), (), _stopped) = futures::join!(read, answer, forward);
}
