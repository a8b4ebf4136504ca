//! Which environment variables a child process sees: a policy (inherit all / core only / none)
//! over the parent's variables, with secret-looking names always removed.

use crate::config::EnvPolicy;

/// Variables kept by the core-only policy: what shells and language toolchains need to work.
pub const CORE_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TMPDIR",
    "TMP",
    "TEMP",
    "TZ",
    "PWD",
    "EDITOR",
    "GOPATH",
    "GOROOT",
    "GOMODCACHE",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "NVM_DIR",
    "NODE_PATH",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "JAVA_HOME",
    "GEM_HOME",
    "GEM_PATH",
    "DENO_DIR",
    "BUN_INSTALL",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Name suffixes that mark a secret (compared case-insensitively).
const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_APIKEY",
    "_SECRET",
    "_SECRET_KEY",
    "_SECRET_ACCESS_KEY",
    "_ACCESS_KEY",
    "_PRIVATE_KEY",
    "_TOKEN",
    "_PASSWORD",
    "_PASSWD",
    "_CREDENTIAL",
    "_CREDENTIALS",
];

/// Whether a variable name looks like it holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
}

fn is_core(name: &str) -> bool {
    CORE_VARIABLES.contains(&name) || name.starts_with("LC_")
}

/// The variables a child inherits from `parent` under `policy`; secrets never pass.
pub fn filter_environment<'a>(
    policy: EnvPolicy,
    parent: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(String, String)> {
    parent
        .into_iter()
        .filter(|(name, _)| !is_secret_name(name))
        .filter(|(name, _)| match policy {
            EnvPolicy::InheritAll => true,
            EnvPolicy::CoreOnly => is_core(name),
            EnvPolicy::None => false,
        })
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &[(&str, &str)] = &[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("LC_ALL", "C"),
        ("OPENAI_API_KEY", "sk-1"),
        ("github_token", "gh"),
        ("DB_PASSWORD", "pw"),
        ("AWS_SECRET_ACCESS_KEY", "aws"),
        ("GCP_CREDENTIAL", "c"),
        ("MY_SECRET", "s"),
        ("PROJECT_FLAG", "1"),
    ];

    fn names(policy: EnvPolicy) -> Vec<String> {
        filter_environment(policy, PARENT.iter().copied()).into_iter().map(|(k, _)| k).collect()
    }

    #[test]
    fn inherit_all_drops_only_secrets() {
        assert_eq!(names(EnvPolicy::InheritAll), ["PATH", "HOME", "LC_ALL", "PROJECT_FLAG"]);
    }

    #[test]
    fn core_only_keeps_core_and_locale() {
        assert_eq!(names(EnvPolicy::CoreOnly), ["PATH", "HOME", "LC_ALL"]);
    }

    #[test]
    fn none_keeps_nothing() {
        assert!(names(EnvPolicy::None).is_empty());
    }
}
