//! The process's HTTP clients and their connections: one pooled `reqwest::Client` per network
//! setup (proxy, extra certificate authorities; in practice one per process), shared by every
//! session, subagent and search helper, and the connections it opens before a prompt needs them;
//! and the client of MCP's Streamable HTTP servers, built from the same setup.
//!
//! Invariants:
//! - Every model request goes through [`Setup::client`]; a setup's client is built once, its
//!   certificates read on the blocking pool, and every request with equal
//!   [`NetworkSettings`] shares its connections (HTTP/2 where the provider offers it).
//! - Routing has one decision: [`NetworkSettings::proxy_for`] (the HTTP clients ask it, and so
//!   do the error messages); trust has one list: [`trusted_roots`].
//! - MCP's client ([`Setup::mcp_client`]) is reqwest 0.13's, the version rmcp speaks: a client of
//!   its own (its own pool), with the same routing and the same trusted roots.
//! - A warm-up opens a connection without waiting for a prompt: one `HEAD` of the provider's
//!   `https://` base URL, with no key and no body. At most one is in flight per origin, none
//!   follows a request to that origin by less than [`FRESH`], and nothing runs on a timer: an
//!   idle server stays asleep. A request waits for its origin's warm-up in flight rather than
//!   opening a second connection beside it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use rustls::pki_types::pem::PemObject;

use super::error::LlmError;
use crate::config::NetworkSettings;

/// A connection that answered this recently is taken to be open: no warm-up for it. Short,
/// since a needless warm-up costs one round trip on an open connection and a missed one a
/// handshake; it only folds bursts (keystrokes, sessions starting together) into one.
pub const FRESH: Duration = Duration::from_secs(2);

/// One network setup: its HTTP client and what it knows of each origin's connection.
pub(crate) struct Setup {
    network: Arc<NetworkSettings>,
    client: tokio::sync::OnceCell<Result<reqwest::Client, LlmError>>,
    mcp_client: tokio::sync::OnceCell<Result<mcp_reqwest::Client, LlmError>>,
    origins: Mutex<HashMap<String, Origin>>,
}

#[derive(Default)]
struct Origin {
    /// When a request or warm-up to it last got an answer.
    answered: Option<Instant>,
    /// The warm-up in flight.
    warming: Option<Shared<BoxFuture<'static, ()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn setups() -> &'static Mutex<Vec<Arc<Setup>>> {
    static SETUPS: OnceLock<Mutex<Vec<Arc<Setup>>>> = OnceLock::new();
    SETUPS.get_or_init(Mutex::default)
}

/// The setup of `network`, shared with every client of equal settings.
pub(crate) fn setup(network: &NetworkSettings) -> Arc<Setup> {
    let mut all = lock(setups());
    if let Some(found) = all.iter().find(|s| *s.network == *network) {
        return found.clone();
    }
    let setup = Arc::new(Setup {
        network: Arc::new(network.clone()),
        client: tokio::sync::OnceCell::new(),
        mcp_client: tokio::sync::OnceCell::new(),
        origins: Mutex::default(),
    });
    all.push(setup.clone());
    setup
}

/// Warms every origin this process has talked to (the user started writing a prompt); false
/// when it has talked to none yet.
pub fn warm_known() -> bool {
    let all: Vec<Arc<Setup>> = lock(setups()).clone();
    let mut known = false;
    for setup in all {
        let origins: Vec<String> = lock(&setup.origins).keys().cloned().collect();
        known |= !origins.is_empty();
        for origin in origins {
            setup.warm(&origin);
        }
    }
    known
}

/// Warms the connection to the provider of `settings` (no session has used it yet).
pub fn warm(settings: &crate::config::ProviderSettings) {
    setup(&settings.network).warm(&settings.base_url);
}

/// `scheme://host:port` of a URL, the unit connections are pooled by.
pub(crate) fn origin_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    Some(parsed.origin().ascii_serialization())
}

impl Setup {
    pub(crate) fn network(&self) -> &NetworkSettings {
        &self.network
    }

    /// The HTTP client, built on the blocking pool the first time (it reads certificate files).
    pub(crate) async fn client(&self) -> Result<reqwest::Client, LlmError> {
        self.client.get_or_init(|| built_aside(self.network.clone(), build)).await.clone()
    }

    /// The client of MCP's Streamable HTTP transport, built like [`Setup::client`].
    pub(crate) async fn mcp_client(&self) -> Result<mcp_reqwest::Client, LlmError> {
        self.mcp_client.get_or_init(|| built_aside(self.network.clone(), build_mcp)).await.clone()
    }

    /// Opens a connection to `base_url`'s origin in the background, unless one is being opened
    /// or was used within [`FRESH`]. Only `https://` origins: a plain connection costs no
    /// handshake worth saving (and local servers and test doubles see no extra request); for
    /// those the HTTP client is still built ahead, so no request waits for it.
    pub(crate) fn warm(self: &Arc<Self>, base_url: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let Some(origin) = origin_of(base_url) else { return };
        if !origin.starts_with("https://") {
            if !self.client.initialized() {
                let setup = self.clone();
                runtime.spawn(async move { setup.client().await.map(drop) });
            }
            return;
        }
        let mut origins = lock(&self.origins);
        let state = origins.entry(origin.clone()).or_default();
        if state.warming.is_some() || state.answered.is_some_and(|t| t.elapsed() < FRESH) {
            return;
        }
        let setup = self.clone();
        let url = base_url.to_string();
        let key = origin.clone();
        let warming = async move {
            let answered = async {
                let client = setup.client().await.ok()?;
                let sent = client.head(&url).send();
                tokio::time::timeout(setup.network.connect_timeout(), sent).await.ok()?.ok()
            }
            .await;
            match &answered {
                Some(response) => {
                    tracing::debug!(%url, status = response.status().as_u16(), "connection warmed")
                }
                None => tracing::debug!(%url, "warming the connection failed"),
            }
            let mut origins = lock(&setup.origins);
            let state = origins.entry(key).or_default();
            state.warming = None;
            if answered.is_some() {
                state.answered = Some(Instant::now());
            }
        }
        .boxed()
        .shared();
        state.warming = Some(warming.clone());
        drop(origins);
        runtime.spawn(warming);
    }

    /// Waits for the warm-up of `url`'s origin when one is in flight (its connection is the one
    /// the request will take) and remembers the origin.
    pub(crate) async fn before_request(&self, url: &str) {
        let Some(origin) = origin_of(url) else { return };
        let warming = lock(&self.origins).entry(origin).or_default().warming.clone();
        if let Some(warming) = warming {
            warming.await;
        }
    }

    /// Notes that `url`'s origin answered: its connection is open.
    pub(crate) fn answered(&self, url: &str) {
        if let Some(origin) = origin_of(url) {
            lock(&self.origins).entry(origin).or_default().answered = Some(Instant::now());
        }
    }
}

/// Runs `build` (it reads certificate files) on the blocking pool.
async fn built_aside<C: Send + 'static>(
    network: Arc<NetworkSettings>,
    build: fn(&NetworkSettings) -> Result<C, LlmError>,
) -> Result<C, LlmError> {
    tokio::task::spawn_blocking(move || build(&network)).await.unwrap_or_else(|e| {
        Err(LlmError::Connection {
            url: String::new(),
            message: format!("setting up the HTTP client failed: {e}"),
        })
    })
}

fn unusable(message: String) -> LlmError {
    LlmError::Connection { url: String::new(), message }
}

/// The proxies of `network`, each checked, and whether any is set.
fn check_proxies(network: &NetworkSettings) -> Result<bool, LlmError> {
    for proxy in &network.proxies {
        proxy.url.check().map_err(|why| {
            unusable(format!("{} = {} is not a proxy agentls can use: {why}", proxy.source, proxy.url))
        })?;
    }
    Ok(!network.proxies.is_empty())
}

/// Builds the HTTP client of `network`: its proxy routing, and the bundled roots, the system's
/// store and the extra files as trusted authorities.
fn build(network: &NetworkSettings) -> Result<reqwest::Client, LlmError> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(network.connect_timeout())
        .user_agent(USER_AGENT)
        .use_rustls_tls()
        // The environment's proxy variables are read into `network`, which alone routes.
        .no_proxy();
    if check_proxies(network)? {
        let routes = network.clone();
        builder = builder.proxy(reqwest::Proxy::custom(move |url| {
            routes.proxy_for(url).map(|p| p.url.expose().to_string())
        }));
    }
    for der in trusted_roots(network)?.certificates {
        let root = reqwest::Certificate::from_der(&der)
            .map_err(|e| unusable(format!("a trusted certificate cannot be used: {e}")))?;
        builder = builder.add_root_certificate(root);
    }
    builder.build().map_err(|e| unusable(format!("the HTTP client cannot be set up: {e}")))
}

/// Builds MCP's client of `network` (reqwest 0.13): the same routing and trusted roots as
/// [`build`]'s, beside the platform's verifier (the system store).
fn build_mcp(network: &NetworkSettings) -> Result<mcp_reqwest::Client, LlmError> {
    // rmcp's reqwest brings rustls without a provider: ring, as our own client uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = mcp_reqwest::Client::builder()
        .connect_timeout(network.connect_timeout())
        .user_agent(USER_AGENT)
        .no_proxy();
    if check_proxies(network)? {
        let routes = network.clone();
        builder = builder.proxy(mcp_reqwest::Proxy::custom(move |url| {
            routes.proxy_for(url).map(|p| p.url.expose().to_string())
        }));
    }
    for der in trusted_roots(network)?.certificates {
        let root = mcp_reqwest::Certificate::from_der(&der)
            .map_err(|e| unusable(format!("a trusted certificate cannot be used: {e}")))?;
        builder = builder.add_root_certificate(root);
    }
    builder.build().map_err(|e| unusable(format!("the MCP HTTP client cannot be set up: {e}")))
}

const USER_AGENT: &str = concat!("agentls/", env!("CARGO_PKG_VERSION"));

/// Certificate authorities trusted beyond the bundled roots, and where they came from.
pub(crate) struct TrustedRoots {
    certificates: Vec<rustls::pki_types::CertificateDer<'static>>,
    /// How many came from the system's store.
    pub system: usize,
    /// Each extra file and how many certificates it held.
    pub files: Vec<(crate::config::network::CaFile, usize)>,
}

/// The system's store (certificates that cannot serve as roots are skipped, as browsers do)
/// and every file of `network.ca_files`, which must hold at least one certificate.
pub(crate) fn trusted_roots(network: &NetworkSettings) -> Result<TrustedRoots, LlmError> {
    let mut certificates = Vec::new();
    let mut system = 0;
    for der in system_store() {
        if rustls::RootCertStore::empty().add(der.clone()).is_ok() {
            certificates.push(der);
            system += 1;
        }
    }
    let mut files = Vec::new();
    for file in &network.ca_files {
        let unusable = |why: String| LlmError::Connection {
            url: String::new(),
            message: format!("{} = {} cannot be used: {why}", file.source, file.path.display()),
        };
        let pem = std::fs::read(&file.path).map_err(|e| unusable(e.to_string()))?;
        let ders: Vec<_> = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .map_err(|e| unusable(format!("it is not a PEM file of certificates ({e:?})")))?;
        if ders.is_empty() {
            return Err(unusable("it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into()));
        }
        for der in &ders {
            rustls::RootCertStore::empty()
                .add(der.clone())
                .map_err(|e| unusable(format!("a certificate in it cannot be a root: {e}")))?;
        }
        files.push((file.clone(), ders.len()));
        certificates.extend(ders);
    }
    Ok(TrustedRoots { certificates, system, files })
}

/// The certificates of the platform's store. `rustls-native-certs` reads `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` in its place when they are set (OpenSSL's rule); the system's folders are
/// then read too, so those variables add to the store rather than replace it.
fn system_store() -> Vec<rustls::pki_types::CertificateDer<'static>> {
    let mut found = rustls_native_certs::load_native_certs();
    #[cfg(all(unix, not(target_os = "macos")))]
    if std::env::var_os("SSL_CERT_FILE").is_some() || std::env::var_os("SSL_CERT_DIR").is_some() {
        for dir in openssl_probe::candidate_cert_dirs() {
            found.certs.extend(rustls_native_certs::load_certs_from_paths(None, Some(dir)).certs);
        }
    }
    for error in &found.errors {
        tracing::debug!("reading the system's certificate store: {error}");
    }
    found.certs.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
    found.certs.dedup();
    found.certs
}

/// A failure found anywhere in `error`'s causes that the user can act on (an untrusted or
/// invalid certificate, a refused connection, a name that does not resolve, a proxy wanting
/// credentials or refusing a tunnel), said so that they know what to do; `None` for others.
/// Any client's error (MCP's too) is read this way.
pub(crate) fn recognize(
    url: &str,
    network: &NetworkSettings,
    error: &(dyn std::error::Error + 'static),
) -> Option<LlmError> {
    let parsed = url::Url::parse(url).ok();
    let host = parsed.as_ref().and_then(|u| u.host_str()).unwrap_or("the provider").to_string();
    let proxy = parsed.as_ref().and_then(|u| network.proxy_for(u));
    let through = proxy.map(|p| format!(" through the proxy {} ({})", p.url, p.source)).unwrap_or_default();
    let connection = |message: String| LlmError::Connection { url: url.to_string(), message };
    let network_error = |message: String| LlmError::Network { url: url.to_string(), message };

    let causes = causes(error);
    if let Some(tls) = causes.iter().find_map(|c| c.downcast_ref::<rustls::Error>()) {
        use rustls::CertificateError as Cert;
        return Some(match tls {
            rustls::Error::InvalidCertificate(Cert::UnknownIssuer) => connection(format!(
                "the certificate {host} presented{through} is signed by an authority agentls does not \
                 trust (unknown issuer). If a proxy or company CA re-signs TLS: set SSL_CERT_FILE or \
                 [network] ca_file to that CA's certificate (a PEM file)"
            )),
            rustls::Error::InvalidCertificate(
                Cert::NotValidForName | Cert::NotValidForNameContext { .. },
            ) => connection(format!(
                "the certificate {host} presented{through} is not valid for {host}: check the base URL \
                     (and, if a proxy re-signs TLS, that it signs for this host)"
            )),
            rustls::Error::InvalidCertificate(
                Cert::Expired
                | Cert::ExpiredContext { .. }
                | Cert::NotValidYet
                | Cert::NotValidYetContext { .. },
            ) => connection(format!(
                "the certificate {host} presented{through} has expired or is not valid yet: check this \
                 machine's clock"
            )),
            rustls::Error::InvalidCertificate(other) => {
                connection(format!("the certificate {host} presented{through} was refused: {other:?}"))
            }
            other => network_error(format!("the TLS handshake with {host}{through} failed: {other}")),
        });
    }
    let said = |text: &str| causes.iter().any(|c| c.to_string().contains(text));
    let refused = causes.iter().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
    });
    if refused {
        return Some(network_error(match proxy {
            Some(p) => format!(
                "the proxy {} ({}) refused the connection: check that it runs and that {} names it",
                p.url, p.source, p.source
            ),
            None => format!(
                "{host} refused the connection: check the base URL and that the server runs (behind a proxy, \
                 set HTTPS_PROXY)"
            ),
        }));
    }
    if said("dns error") || said("failed to lookup address") {
        return Some(network_error(match proxy {
            Some(p) => format!(
                "the name of the proxy {} ({}) does not resolve (DNS): check {} and your network",
                p.url, p.source, p.source
            ),
            None => format!(
                "the name {host} does not resolve (DNS): check the base URL and your network (where only a \
                 proxy reaches the internet, set HTTPS_PROXY)"
            ),
        }));
    }
    if let Some(proxy) = proxy {
        if said("proxy authorization required") {
            return Some(proxy_wants_credentials(url, proxy));
        }
        if said("tunnel error") {
            return Some(network_error(format!(
                "the proxy {} ({}) would not open a connection to {host}: check that it lets this host through, \
                 or add the host to NO_PROXY if it is reached directly",
                proxy.url, proxy.source
            )));
        }
    }
    None
}

/// What failed while reaching `url` (`network` routed it), said so that the user knows what to
/// do. A failure a retry cannot mend (an untrusted certificate, a proxy that wants credentials)
/// is a [`LlmError::Connection`]; the rest are [`LlmError::Network`], retried.
pub(crate) fn describe(url: &str, network: &NetworkSettings, error: &reqwest::Error) -> LlmError {
    if let Some(known) = recognize(url, network, error) {
        return known;
    }
    let parsed = url::Url::parse(url).ok();
    let host = parsed.as_ref().and_then(|u| u.host_str()).unwrap_or("the provider").to_string();
    let proxy = parsed.as_ref().and_then(|u| network.proxy_for(u));
    let through = proxy.map(|p| format!(" through the proxy {} ({})", p.url, p.source)).unwrap_or_default();
    let network_error = |message: String| LlmError::Network { url: url.to_string(), message };
    if error.is_timeout() {
        return network_error(format!(
            "no connection to {host}{through} within {} ms (network.connect_timeout_ms): check your \
             network{}, or raise network.connect_timeout_ms on a slow link",
            network.connect_timeout().as_millis(),
            if proxy.is_some() { " and the proxy" } else { " (behind a proxy, set HTTPS_PROXY)" }
        ));
    }
    let kind = if error.is_connect() { "connection failed" } else { "request failed" };
    let innermost = causes(error).last().map(|c| c.to_string()).unwrap_or_else(|| error.to_string());
    network_error(format!("{kind}{through}: {innermost}; check the base URL and your network"))
}

/// The error of a proxy that answered 407 (it wants credentials).
pub(crate) fn proxy_wants_credentials(url: &str, proxy: &crate::config::network::ProxySetting) -> LlmError {
    LlmError::Connection {
        url: url.to_string(),
        message: format!(
            "the proxy {} ({}) asks for credentials (HTTP 407 Proxy Authentication Required): give them in \
             {}'s URL, as http://user:password@host:port",
            proxy.url, proxy.source, proxy.source
        ),
    }
}

/// Every cause of `error`, outermost first, looking inside `io::Error`s (whose `source` skips
/// the error they wrap).
fn causes<'a>(error: &'a (dyn std::error::Error + 'static)) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut found = Vec::new();
    let mut next = Some(error);
    while let Some(cause) = next {
        found.push(cause);
        next = match cause.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => cause.source(),
        };
    }
    found
}
