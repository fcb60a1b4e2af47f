#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs what the tests drive, once (each step is
# skipped when its tool is already there), then runs `cargo test --release` (extra arguments are
# passed on, e.g. `scripts/test.sh --test it -- imap`). `.ci/run` calls this same script.
#
# The tests drive real peers: msmtp, mbsync and neomutt (mail clients; docs/mail-clients.md),
# dnsmasq (a local DNS for docs/offline.md), Chromium through chromedriver (the
# dashboard), imaptest (Dovecot's IMAP compliance suite, built from ../shared/peers), Pebble (an ACME CA,
# tests/it/acme.rs), curl (the README's and docs' commands), openssl, PostgreSQL's initdb and pg_ctl (a
# throwaway cluster on 127.0.0.1), and a Python client generated from schema/openapi.yaml (a venv
# with openapi-python-client), and dkimpy (python3-dkim: verifies the ARC seal of forwarded mail,
# tests/it/routing.rs). Everything runs on 127.0.0.1; only these installs need a network.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
need() { command -v "$1" >/dev/null 2>&1 || missing+=("${@:2}"); }
need msmtp msmtp
need mbsync isync
need neomutt neomutt
need dnsmasq dnsmasq-base
need chromedriver chromium chromium-driver
need curl curl
need openssl openssl
need sieve-connect sieve-connect
need python3 python3 python3-venv
# Pebble, Let's Encrypt's ACME test server (tests/it/acme.rs).
need pebble pebble
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
# imaptest (Dovecot's IMAP compliance suite, tests/it/imaptest.rs) builds against libdovecot;
# Dovecot's IMAP server is the old provider of tests/it/import_imap.rs.
for pkg in dovecot-core dovecot-dev dovecot-imapd autoconf automake libtool pkg-config make gcc libssl-dev \
  zlib1g-dev python3-dkim; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "scripts/test.sh: installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# The OpenAPI client generator, pinned, in the venv tests/it/python_client.rs looks for.
venv=/tmp/edgemail-openapi-client-venv
if ! [ -x "$venv/bin/openapi-python-client" ] || ! [ -x "$venv/bin/ruff" ]; then
  # Debian's python3 needs python3-venv for ensurepip; without it the venv comes out broken.
  python3 -m venv "$venv" || {
    rm -rf "$venv"
    "${sudo[@]}" apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  }
  "$venv/bin/pip" install --quiet openapi-python-client==0.29.1 ruff==0.17.6
fi

# imaptest from the source kept beside the workspace (IMAPTEST_PEERS overrides where); it
# builds once into ~/.cache/imaptest.
peers=${IMAPTEST_PEERS:-$(cd .. && pwd)/shared/peers}
[ -d "$peers" ] || peers=/work/shared/peers
"$peers/imaptest/build.sh" >/dev/null

# The binary as `cargo run --release` builds it (without the test-only features cargo unifies
# into `cargo test`'s build): the README's and the docs' `cargo run --release -- demo` blocks,
# run by tests/it/readme.rs, then start at once instead of compiling inside a test.
cargo build --release
cargo test --release "$@"
