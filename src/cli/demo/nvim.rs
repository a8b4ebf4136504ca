//! `agentls demo --nvim`: the same recorded session, opened in Neovim with the agentls plugin.
//! A temporary init puts the plugin on the runtimepath, points it at this executable with the
//! demo's server settings, opens the sample file and sends the demo prompt; the user then sees
//! the answer stream into the chat and reviews the change in the plugin's review tab.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde_json::Value;

use super::USER_PROMPT;
use super::project::{EDITED, Project};

/// Shown when the session starts: the review is the user's to make.
const HINT: &str = "agentls demo: a recorded session. Allow the command it asks for; in the review, \
    `ga`/`gr` accept or reject the hunk under the cursor (reject the greeting change and give a \
    reason: the agent's last answer takes it up).";

/// Where the plugin may be, in order: this binary's source checkout, then the places plugin
/// managers install to.
fn plugin_candidates() -> Vec<PathBuf> {
    let mut candidates = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/nvim")];
    if let Some(data) = dirs::data_dir() {
        let nvim = data.join("nvim");
        candidates.push(nvim.join("lazy/agentls"));
        candidates.push(nvim.join("lazy/agentls.nvim"));
        for kind in ["start", "opt"] {
            for pack in ["agentls", "plugins"] {
                candidates.push(nvim.join(format!("site/pack/{pack}/{kind}/agentls")));
                candidates.push(nvim.join(format!("site/pack/{pack}/{kind}/agentls.nvim")));
            }
        }
    }
    candidates
}

fn find_plugin() -> Option<PathBuf> {
    plugin_candidates().into_iter().find(|dir| dir.join("lua/agentls/init.lua").is_file())
}

fn find_nvim() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("nvim")).find(|p| p.is_file())
}

/// Fails with what is missing before anything is created.
pub fn check_available() -> Result<(), String> {
    if find_nvim().is_none() {
        return Err("`--nvim` needs `nvim` on PATH (Neovim 0.10 or newer); it was not found".into());
    }
    if find_plugin().is_none() {
        let looked: Vec<String> = plugin_candidates().iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "`--nvim` needs the agentls Neovim plugin (editors/nvim); it is in none of: {}",
            looked.join(", ")
        ));
    }
    Ok(())
}

pub fn run(project: &Project) -> Result<ExitCode, String> {
    let (Some(nvim), Some(plugin)) = (find_nvim(), find_plugin()) else {
        return check_available().map(|()| ExitCode::FAILURE);
    };
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the agentls executable: {e}"))?;
    let init = project.marker().join("init.lua");
    std::fs::write(&init, init_lua(&plugin, &exe, project))
        .map_err(|e| format!("cannot write {}: {e}", init.display()))?;
    let mut command = Command::new(&nvim);
    command.arg("-u").arg(&init).arg(project.root.join(EDITED)).current_dir(&project.root);
    // The server inherits Neovim's environment: the demo's own settings, none of the user's keys.
    for (name, value) in project.server_env() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let status = command.status().map_err(|e| format!("cannot start {}: {e}", nvim.display()))?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A Lua string literal (JSON escapes are valid Lua escapes for these texts).
fn lua(value: impl Into<Value>) -> String {
    value.into().to_string()
}

fn init_lua(plugin: &Path, exe: &Path, project: &Project) -> String {
    let settings = lua_table(&project.initialization_options());
    format!(
        r#"-- Made by `agentls demo --nvim`: the agentls plugin with the demo's recorded session.
vim.opt.runtimepath:prepend({plugin})
require("agentls").setup({{
  cmd = {{ {exe}, "serve", "--stdio" }},
  settings = {settings},
}})
vim.api.nvim_create_autocmd("LspAttach", {{
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if not (client and client.name == "agentls") then
      return
    end
    vim.schedule(function()
      vim.notify({hint}, vim.log.levels.INFO)
      require("agentls.commands").prompt({prompt})
    end)
    return true -- once
  end,
}})
"#,
        plugin = lua(plugin.display().to_string()),
        exe = lua(exe.display().to_string()),
        prompt = lua(USER_PROMPT),
        hint = lua(HINT),
    )
}

/// A JSON object as a Lua table constructor.
fn lua_table(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let fields: Vec<String> =
                map.iter().map(|(k, v)| format!("[{}] = {}", lua(k.as_str()), lua_table(v))).collect();
            format!("{{ {} }}", fields.join(", "))
        }
        Value::Array(items) => {
            format!("{{ {} }}", items.iter().map(lua_table).collect::<Vec<_>>().join(", "))
        }
        Value::Null => "nil".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_become_a_lua_table() {
        let table = lua_table(&json!({"provider": "replay", "shell": {"permission": "ask"}}));
        assert_eq!(table, r#"{ ["provider"] = "replay", ["shell"] = { ["permission"] = "ask" } }"#);
    }
}
