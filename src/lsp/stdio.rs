//! The process's stdin and stdout as the server's wire, read and written on the server's own
//! thread.
//!
//! Invariant: when stdin or stdout is a pipe (as when an editor starts the server), it is used in
//! non-blocking mode through the runtime's reactor: a write of a notification is one `write(2)`
//! on the thread that produced it, and a read is one `read(2)` when epoll says data is there.
//! `tokio::io::stdin`/`stdout` instead hand every read and write to a blocking-pool thread and
//! back: two thread wake-ups per streamed delta, which is most of the server's CPU when a model
//! streams fast. Anything else (a terminal, a file, a socket) falls back to tokio's blocking
//! stdio, which works for every kind of descriptor.
//!
//! The non-blocking flag is set on the open file descriptions the editor gave us, which only
//! this process uses (commands get their own stdio), and it stays set until the process ends.

use std::os::fd::AsFd;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// The server's input: stdin.
pub type Input = Box<dyn AsyncRead + Unpin + Send>;
/// The server's output: stdout.
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// stdin and stdout, through the reactor when they are pipes. Must be called inside a runtime.
pub fn stdio() -> (Input, Output) {
    let input: Input = match std::io::stdin().as_fd().try_clone_to_owned().map(pipe::Receiver::from_owned_fd)
    {
        Ok(Ok(pipe)) => Box::new(pipe),
        _ => Box::new(tokio::io::stdin()),
    };
    let output: Output = match std::io::stdout().as_fd().try_clone_to_owned().map(pipe::Sender::from_owned_fd)
    {
        Ok(Ok(pipe)) => Box::new(pipe),
        _ => Box::new(tokio::io::stdout()),
    };
    (input, output)
}
