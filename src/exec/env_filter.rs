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

/// A POSIX `sh` prelude that applies the same rule inside a shell whose environment this process
/// does not know (an ACP client's terminal inherits the editor's): it unsets every exported
/// variable whose name is secret, and under `core-only` / `none` the ones the policy drops. Names
/// are taken from `env` (a value's inner line that looks like `NAME=` only adds a harmless
/// `unset`); a read-only variable is left, as no shell can remove it.
pub fn shell_prelude(policy: EnvPolicy) -> String {
    const NAMES: &str = r"env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p'";
    let secrets: Vec<String> = SECRET_SUFFIXES.iter().map(|s| format!("{s}$")).collect();
    let secret = format!("{NAMES} | grep -i -E '{}'", secrets.join("|"));
    let dropped = match policy {
        EnvPolicy::InheritAll => secret,
        EnvPolicy::CoreOnly => {
            format!("{secret}; {NAMES} | grep -v -E '^({}|LC_[A-Za-z0-9_]*)$'", CORE_VARIABLES.join("|"))
        }
        EnvPolicy::None => NAMES.to_string(),
    };
    format!(
        "for agentls_name in $({dropped}); do (unset \"$agentls_name\") 2>/dev/null && unset \"$agentls_name\"; \
         done; unset agentls_name;"
    )
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

    /// The prelude run by a real `sh` over an environment with secrets: `env` after it shows
    /// exactly what [`filter_environment`] keeps.
    fn after_prelude(policy: EnvPolicy) -> Vec<String> {
        // `env -0`: a value's inner lines are not taken for variables here.
        let script = format!("{} command -p env -0", shell_prelude(policy));
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .env_clear()
            .envs(PARENT.iter().copied())
            .env("PATH", "/usr/bin:/bin")
            .env("MULTI", "first\nOPENAI_API_KEY=inside-a-value\nlast")
            .output()
            .expect("sh runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_string()))
            .filter(|k| k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .filter(|k| PARENT.iter().any(|(p, _)| p == k) || k == "MULTI")
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_shell_prelude_applies_the_same_rule_inside_a_shell() {
        assert_eq!(after_prelude(EnvPolicy::InheritAll), ["HOME", "LC_ALL", "MULTI", "PATH", "PROJECT_FLAG"]);
        assert_eq!(after_prelude(EnvPolicy::CoreOnly), ["HOME", "LC_ALL", "PATH"]);
        assert!(after_prelude(EnvPolicy::None).is_empty());
    }

    #[test]
    fn none_keeps_nothing() {
        assert!(names(EnvPolicy::None).is_empty());
    }
}
