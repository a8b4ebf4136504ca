//! The `agentls` binary: parses the command line and hands off to the library.

fn main() -> std::process::ExitCode {
    agentls::cli::main()
}
