#!/usr/bin/env bash
# Prints the path of a Chromium binary on stdout (and nothing else), for the web console's browser test.
# If none is found and we are root with apt-get, installs Debian's `chromium` package quietly; otherwise
# exits 1 with a one-line hint on stderr.
# Idempotent, and fast (no apt call at all) once a binary is present.
# CHROMIUM_BIN=/path/to/chromium overrides the lookup.
set -euo pipefail

found() { printf '%s\n' "$1"; exit 0; }

if [[ -n "${CHROMIUM_BIN:-}" && -x "${CHROMIUM_BIN}" ]]; then found "$CHROMIUM_BIN"; fi
for p in /usr/bin/chromium /usr/bin/chromium-browser; do
  [[ -x "$p" ]] && found "$p"
done
if p="$(command -v chromium 2>/dev/null)"; then found "$p"; fi

if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium not found: install it (Debian/Ubuntu: sudo apt-get install -y chromium) or set CHROMIUM_BIN" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# Test files run in parallel: serialise installs, and re-check once we hold the lock.
if command -v flock >/dev/null 2>&1; then
  exec 9>/tmp/.ldbox-ensure-chromium.lock
  flock -w 900 9 || true
  [[ -x /usr/bin/chromium ]] && found /usr/bin/chromium
fi
apt_opts=(-y -q -o DPkg::Lock::Timeout=300)
# Try the install from the current lists first; `apt-get update` only if that fails
# (fresh image with empty lists, or stale lists pointing at a removed version).
if ! apt-get install "${apt_opts[@]}" chromium >"$log" 2>&1; then
  if ! { apt-get update -q -o DPkg::Lock::Timeout=300 && apt-get install "${apt_opts[@]}" chromium; } >"$log" 2>&1; then
    echo "chromium: apt-get install failed (see below)" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
fi

[[ -x /usr/bin/chromium ]] && found /usr/bin/chromium
if p="$(command -v chromium 2>/dev/null)"; then found "$p"; fi
echo "chromium: package installed but no binary found" >&2
exit 1
