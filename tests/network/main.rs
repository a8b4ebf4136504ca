//! Integration tests, one binary per group (docs/ARCHITECTURE.md, "Testing"): the network path to
//! the provider: TLS and custom CAs, HTTP proxies (mitmproxy), a slow link. Each module is one
//! former test file; `tests/support` is the one support module.

#[path = "../support/mod.rs"]
mod support;

mod proxy;
mod slow_link;
mod tls;
