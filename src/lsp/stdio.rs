//! The process's stdin and stdout as the server's wire, read and written on the server's own
//! thread.
//!
//! Invariant: when stdin or stdout is a pipe or a socket (editors start servers with one or the
//! other: Neovim and Emacs with pipes, Node-based editors like VS Code with socket pairs), it is
//! used in non-blocking mode through the runtime's reactor: a write of a notification is one
//! `write(2)` on the thread that produced it, and a read is one `read(2)` when epoll says data
//! is there. `tokio::io::stdin`/`stdout` instead hand every read and write to a blocking-pool
//! thread and back: two thread wake-ups per streamed delta, which is most of the server's CPU
//! when a model streams fast. Anything else (a terminal, a file) falls back to tokio's blocking
//! stdio, which works for every kind of descriptor.
//!
//! The non-blocking flag is set on the open file descriptions the editor gave us, which only
//! this process uses (commands get their own stdio), and it stays set until the process ends.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// The server's input: stdin.
pub type Input = Box<dyn AsyncRead + Unpin + Send>;
/// The server's output: stdout.
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// stdin and stdout, through the reactor when they are pipes or sockets. Must be called inside
/// a runtime.
pub fn stdio() -> (Input, Output) {
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok();
    let input: Input = match stdin.map(Endpoint::of) {
        Some(Endpoint::Pipe(fd)) => match pipe::Receiver::from_owned_fd(fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        },
        Some(Endpoint::Socket(fd)) => match socket(fd) {
            Some(stream) => Box::new(stream),
            None => Box::new(tokio::io::stdin()),
        },
        _ => Box::new(tokio::io::stdin()),
    };
    let stdout = std::io::stdout().as_fd().try_clone_to_owned().ok();
    let output: Output = match stdout.map(Endpoint::of) {
        Some(Endpoint::Pipe(fd)) => match pipe::Sender::from_owned_fd(fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdout()),
        },
        Some(Endpoint::Socket(fd)) => match socket(fd) {
            Some(stream) => Box::new(stream),
            None => Box::new(tokio::io::stdout()),
        },
        _ => Box::new(tokio::io::stdout()),
    };
    (input, output)
}

/// What kind of descriptor a standard stream is.
enum Endpoint {
    Pipe(OwnedFd),
    Socket(OwnedFd),
    Other,
}

impl Endpoint {
    fn of(fd: OwnedFd) -> Self {
        let file = File::from(fd);
        match file.metadata().map(|m| m.file_type()) {
            Ok(kind) if kind.is_fifo() => Self::Pipe(file.into()),
            Ok(kind) if kind.is_socket() => Self::Socket(file.into()),
            _ => Self::Other,
        }
    }
}

/// A stream socket on the reactor (one direction of it is used).
fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(stream).ok()
}
