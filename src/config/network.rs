//! How model requests reach the network: through which proxy, trusting which extra certificate
//! authorities, connecting for how long at most. Resolved from `[network] proxy`, `ca_file` and
//! `connect_timeout_ms` and from the environment
//! (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, each also in lower case;
//! `SSL_CERT_FILE`).
//!
//! Invariants: a proxy URL's user and password never show (`ProxyUrl` prints without them);
//! `[network] proxy` wins over the proxy variables, and `NO_PROXY` applies to either; the system
//! store and the bundled roots are always trusted, the files named here add to them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Config, Env};

/// How long connecting (TCP, a proxy's tunnel, TLS) may take unless `network.connect_timeout_ms`
/// says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A proxy URL as given, credentials included. `Display` and `Debug` leave the credentials out.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ProxyUrl(String);

impl ProxyUrl {
    /// A URL as the user wrote it; one without a scheme is `http://` (as curl reads it).
    pub fn new(url: &str) -> Self {
        let url = url.trim();
        Self(if url.contains("://") { url.to_string() } else { format!("http://{url}") })
    }

    /// The URL with its credentials, for the HTTP client only. Never show what this returns.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether it parses as a proxy agentls can use (`http://` or `https://`, with a host).
    pub fn check(&self) -> Result<(), String> {
        let parsed = url::Url::parse(&self.0).map_err(|e| format!("not a URL ({e})"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!(
                "the {} scheme is not supported: give an HTTP proxy (http://host:port or https://host:port)",
                parsed.scheme()
            ));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err("it names no host".into());
        }
        Ok(())
    }
}

impl std::fmt::Display for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match url::Url::parse(&self.0) {
            Ok(mut parsed) => {
                if !parsed.username().is_empty() || parsed.password().is_some() {
                    let _ = parsed.set_username("");
                    let _ = parsed.set_password(None);
                    // What was there is still worth a hint: "the proxy wants credentials".
                    return write!(f, "{} (with credentials)", parsed.as_str().trim_end_matches('/'));
                }
                f.write_str(parsed.as_str().trim_end_matches('/'))
            }
            // Not a URL: show only what precedes any `@`.
            Err(_) => f.write_str(self.0.rsplit('@').next().unwrap_or_default()),
        }
    }
}

impl std::fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProxyUrl({self})")
    }
}

/// Which requests a proxy carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProxyScope {
    /// `https://` requests (`HTTPS_PROXY`).
    Https,
    /// `http://` requests (`HTTP_PROXY`).
    Http,
    /// Both (`[network] proxy`, `ALL_PROXY`).
    All,
}

/// One proxy and where it was set.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProxySetting {
    pub url: ProxyUrl,
    pub scope: ProxyScope,
    /// `[network] proxy`, or the variable's name.
    pub source: String,
}

/// A file of extra certificate authorities and where it was named.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CaFile {
    pub path: PathBuf,
    /// `[network] ca_file` or `SSL_CERT_FILE`.
    pub source: String,
}

/// The network a provider is reached through. Requests with equal settings share one HTTP
/// client, so its connections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NetworkSettings {
    /// The proxies, most specific first.
    pub proxies: Vec<ProxySetting>,
    /// Hosts reached directly (`NO_PROXY`: names, `.domain` suffixes, IPs, CIDR ranges, `*`).
    pub no_proxy: Option<String>,
    /// Certificate authorities trusted beyond the system's store and the bundled roots.
    pub ca_files: Vec<CaFile>,
    /// `network.connect_timeout_ms`; [`NetworkSettings::connect_timeout`] reads it.
    pub connect_timeout: Option<Duration>,
}

/// The key of the configuration file.
pub const PROXY_KEY: &str = "[network] proxy";
/// The key of the configuration file.
pub const CA_FILE_KEY: &str = "[network] ca_file";

impl NetworkSettings {
    /// What the configuration and the environment say.
    pub fn resolve(config: &Config, env: &Env) -> Self {
        let network = config.network();
        let var = |name: &str| {
            [name.to_string(), name.to_ascii_lowercase()]
                .into_iter()
                .find_map(|n| env.get(&n).map(|v| (n, v.to_string())))
        };
        let mut proxies = Vec::new();
        match network.proxy.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
            Some(url) => proxies.push(ProxySetting {
                url: ProxyUrl::new(url),
                scope: ProxyScope::All,
                source: PROXY_KEY.into(),
            }),
            None => {
                for (name, scope) in [
                    ("HTTPS_PROXY", ProxyScope::Https),
                    ("HTTP_PROXY", ProxyScope::Http),
                    ("ALL_PROXY", ProxyScope::All),
                ] {
                    if let Some((source, url)) = var(name) {
                        proxies.push(ProxySetting { url: ProxyUrl::new(&url), scope, source });
                    }
                }
            }
        }
        let mut ca_files = Vec::new();
        if let Some(path) = env.get("SSL_CERT_FILE") {
            ca_files.push(CaFile { path: PathBuf::from(path), source: "SSL_CERT_FILE".into() });
        }
        if let Some(path) = &network.ca_file {
            ca_files.push(CaFile { path: expand_home(path), source: CA_FILE_KEY.into() });
        }
        Self {
            proxies,
            no_proxy: var("NO_PROXY").map(|(_, v)| v),
            ca_files,
            connect_timeout: network.connect_timeout_ms.map(|ms| Duration::from_millis(ms.max(1))),
        }
    }

    /// How long connecting (TCP, a proxy's tunnel, TLS) may take.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }

    /// The proxy a request to `url` goes through; `None` when it goes directly (no proxy for its
    /// scheme, or its host is in `NO_PROXY`).
    pub fn proxy_for(&self, url: &url::Url) -> Option<&ProxySetting> {
        let scope = match url.scheme() {
            "https" => ProxyScope::Https,
            "http" => ProxyScope::Http,
            _ => return None,
        };
        let proxy = self
            .proxies
            .iter()
            .find(|p| p.scope == scope)
            .or_else(|| self.proxies.iter().find(|p| p.scope == ProxyScope::All))?;
        let host = url.host_str()?;
        let bypassed = self.no_proxy.as_deref().is_some_and(|list| no_proxy_matches(list, host));
        (!bypassed).then_some(proxy)
    }
}

/// Whether `host` is in a `NO_PROXY` list, as curl reads one: `*` matches every host; an entry
/// matches the host itself and its subdomains (a leading `.` or `*.` is ignored); an IP address
/// or CIDR range matches addresses in it.
fn no_proxy_matches(list: &str, host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let address: Option<std::net::IpAddr> = host.parse().ok();
    list.split(',').map(str::trim).filter(|e| !e.is_empty()).any(|entry| {
        if entry == "*" {
            return true;
        }
        if let Some(address) = address {
            return match entry.split_once('/') {
                Some((net, bits)) => in_range(address, net, bits),
                None => entry.trim_start_matches('[').trim_end_matches(']').parse() == Ok(address),
            };
        }
        let entry = entry.trim_start_matches("*.").trim_start_matches('.').to_ascii_lowercase();
        // An entry with a port names that host on any port here: requests name no other.
        let entry = entry.split(':').next().unwrap_or_default();
        host == entry || host.ends_with(&format!(".{entry}"))
    })
}

fn in_range(address: std::net::IpAddr, net: &str, bits: &str) -> bool {
    use std::net::IpAddr;
    let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u32>()) else { return false };
    match (address, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// `~/x` is `x` in the home folder.
fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), dirs::home_dir()) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::config::{ConfigLayer, NetworkLayer};

    fn config(network: NetworkLayer) -> Config {
        Config { layer: ConfigLayer { network: Some(network), ..Default::default() }, ..Config::defaults() }
    }

    fn url(text: &str) -> url::Url {
        url::Url::parse(text).unwrap()
    }

    #[test]
    fn the_proxy_variables_route_by_scheme_and_no_proxy_bypasses() {
        let env = Env::from_pairs([
            ("HTTPS_PROXY", "http://user:secret@proxy.corp:3128"),
            ("http_proxy", "proxy.corp:8080"),
            ("NO_PROXY", "localhost,.internal.corp,10.0.0.0/8,::1"),
            ("SSL_CERT_FILE", "/etc/corp/ca.pem"),
        ]);
        let settings = NetworkSettings::resolve(&Config::defaults(), &env);
        assert_eq!(
            settings.proxies,
            [
                ProxySetting {
                    url: ProxyUrl::new("http://user:secret@proxy.corp:3128"),
                    scope: ProxyScope::Https,
                    source: "HTTPS_PROXY".into(),
                },
                ProxySetting {
                    url: ProxyUrl::new("http://proxy.corp:8080"),
                    scope: ProxyScope::Http,
                    source: "http_proxy".into(),
                },
            ]
        );
        assert_eq!(
            settings.ca_files,
            [CaFile { path: "/etc/corp/ca.pem".into(), source: "SSL_CERT_FILE".into() }]
        );
        let via = |u: &str| settings.proxy_for(&url(u)).map(|p| p.source.as_str());
        assert_eq!(via("https://api.anthropic.com/v1"), Some("HTTPS_PROXY"));
        assert_eq!(via("http://llm.example:11434/v1"), Some("http_proxy"));
        assert_eq!(via("http://localhost:11434/v1"), None);
        assert_eq!(via("https://models.internal.corp"), None, "a subdomain of a .domain entry");
        assert_eq!(via("https://internal.corp"), None, "the domain itself");
        assert_eq!(via("https://notinternal.corp"), Some("HTTPS_PROXY"));
        assert_eq!(via("http://10.1.2.3:8000"), None, "in the CIDR range");
        assert_eq!(via("http://[::1]:8000"), None);
        assert_eq!(via("http://11.1.2.3:8000"), Some("http_proxy"));
    }

    #[test]
    fn the_configured_proxy_wins_over_the_variables_and_the_ca_file_adds_to_ssl_cert_file() {
        let env = Env::from_pairs([("HTTPS_PROXY", "http://env-proxy:1"), ("SSL_CERT_FILE", "/a.pem")]);
        let settings = NetworkSettings::resolve(
            &config(NetworkLayer {
                proxy: Some("http://config-proxy:2".into()),
                ca_file: Some("/b.pem".into()),
                ..Default::default()
            }),
            &env,
        );
        assert_eq!(
            settings.proxies,
            [ProxySetting {
                url: ProxyUrl::new("http://config-proxy:2"),
                scope: ProxyScope::All,
                source: PROXY_KEY.into()
            }]
        );
        assert_eq!(settings.proxy_for(&url("http://x")).unwrap().source, PROXY_KEY);
        let paths: Vec<&Path> = settings.ca_files.iter().map(|c| c.path.as_path()).collect();
        assert_eq!(paths, [Path::new("/a.pem"), Path::new("/b.pem")]);
    }

    #[test]
    fn the_connect_timeout_is_thirty_seconds_unless_configured() {
        let settings = NetworkSettings::resolve(&Config::defaults(), &Env::default());
        assert_eq!(settings.connect_timeout(), Duration::from_secs(30));
        let configured = config(NetworkLayer { connect_timeout_ms: Some(250), ..Default::default() });
        let settings = NetworkSettings::resolve(&configured, &Env::default());
        assert_eq!(settings.connect_timeout(), Duration::from_millis(250));
        assert_ne!(settings, NetworkSettings::default(), "a client of its own: the timeout is the client's");
    }

    #[test]
    fn a_project_file_routes_and_trusts_nothing_until_its_folder_is_trusted() {
        use crate::config::{LoadOptions, PROJECT_FILE, TrustStore};
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(PROJECT_FILE),
            "[network]\nproxy = \"http://u:pw@collector.example:8080\"\nca_file = \"/tmp/their-ca.pem\"\nread_timeout_ms = 5000\n",
        )
        .unwrap();
        let store = TrustStore::at(dir.path().join("trust.toml"));
        let load = || {
            Config::load(
                &Env::default(),
                LoadOptions {
                    project_root: Some(dir.path().into()),
                    user_file: Some(dir.path().join("no-user.toml")),
                    trust: Some(store.clone()),
                    ..Default::default()
                },
            )
            .unwrap()
        };
        let config = load();
        assert_eq!(config.network(), NetworkLayer { read_timeout_ms: Some(5000), ..Default::default() });
        assert_eq!(NetworkSettings::resolve(&config, &Env::default()), NetworkSettings::default());
        let trust = config.trust.unwrap();
        let ignored: Vec<(&str, &str)> =
            trust.ignored.iter().map(|k| (k.key.as_str(), k.reason.as_str())).collect();
        assert_eq!(
            ignored,
            [
                (
                    "network.proxy",
                    "would send your requests, and your API keys, through the proxy http://collector.example:8080 (with credentials)"
                ),
                (
                    "network.ca_file",
                    "would trust the certificate authorities in /tmp/their-ca.pem, which could then pose as your provider and read your API keys"
                ),
            ]
        );

        store.trust(dir.path()).unwrap();
        let settings = NetworkSettings::resolve(&load(), &Env::default());
        assert_eq!(settings.proxies[0].url.expose(), "http://u:pw@collector.example:8080");
        assert_eq!(settings.ca_files[0].path, Path::new("/tmp/their-ca.pem"));
    }

    #[test]
    fn bad_network_keys_are_refused_with_what_is_expected() {
        let origin = Path::new("config.toml");
        let error = ConfigLayer::parse_toml("[network]\nproxy = \"socks5://p:1080\"\n", origin).unwrap_err();
        assert!(error.to_string().contains("`network.proxy`: an HTTP proxy URL"), "{error}");
        let error = ConfigLayer::parse_toml("[network]\nca_file = \"ca.pem\"\n", origin).unwrap_err();
        assert!(error.to_string().contains("`network.ca_file`: an absolute path"), "{error}");
    }

    #[test]
    fn a_proxy_never_shows_its_credentials() {
        let proxy = ProxyUrl::new("http://alice:s3cret@proxy.corp:3128");
        assert_eq!(proxy.to_string(), "http://proxy.corp:3128 (with credentials)");
        assert!(!format!("{proxy:?}").contains("s3cret"));
        assert_eq!(proxy.expose(), "http://alice:s3cret@proxy.corp:3128");
        assert_eq!(ProxyUrl::new("proxy.corp:3128").to_string(), "http://proxy.corp:3128");
        assert!(ProxyUrl::new("socks5://proxy:1080").check().unwrap_err().contains("socks5"));
        assert!(ProxyUrl::new("http://proxy.corp:3128").check().is_ok());
    }
}
