#!/usr/bin/env bash
# Prints the path of a nats-server binary on stdout (and nothing else).
# If none is found and we are root with apt-get, installs Debian's `nats-server` package
# (2.9.10 on bookworm) quietly; otherwise exits 1 with a one-line hint on stderr.
# Idempotent, and fast (no apt call at all) once a binary is present.
# NATS_SERVER_BIN=/path/to/nats-server overrides the lookup.
set -euo pipefail

found() { printf '%s\n' "$1"; exit 0; }

if [[ -n "${NATS_SERVER_BIN:-}" && -x "${NATS_SERVER_BIN}" ]]; then found "$NATS_SERVER_BIN"; fi
if p="$(command -v nats-server 2>/dev/null)"; then found "$p"; fi
for p in /usr/bin/nats-server /usr/sbin/nats-server /usr/local/bin/nats-server; do
  [[ -x "$p" ]] && found "$p"
done

if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "nats-server not found: install it (Debian/Ubuntu: sudo apt-get install -y nats-server) or set NATS_SERVER_BIN" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# Test files run in parallel: serialise installs, and re-check once we hold the lock.
if command -v flock >/dev/null 2>&1; then
  exec 9>/tmp/.ldbox-ensure-nats-server.lock
  flock -w 600 9 || true
  if p="$(command -v nats-server 2>/dev/null)"; then found "$p"; fi
  [[ -x /usr/sbin/nats-server ]] && found /usr/sbin/nats-server
fi
apt_opts=(-y -q -o DPkg::Lock::Timeout=300)
# Try the install from the current lists first; `apt-get update` only if that fails
# (fresh image with empty lists, or stale lists pointing at a removed version).
if ! apt-get install "${apt_opts[@]}" nats-server >"$log" 2>&1; then
  if ! { apt-get update -q -o DPkg::Lock::Timeout=300 && apt-get install "${apt_opts[@]}" nats-server; } >"$log" 2>&1; then
    echo "nats-server: apt-get install failed (see below)" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
fi

if p="$(command -v nats-server 2>/dev/null)"; then found "$p"; fi
[[ -x /usr/sbin/nats-server ]] && found /usr/sbin/nats-server
echo "nats-server: package installed but no binary found on PATH" >&2
exit 1
