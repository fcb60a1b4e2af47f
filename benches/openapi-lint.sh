#!/usr/bin/env bash
# Lints schema/openapi.yaml with Redocly CLI (recommended rules plus the ones in
# benches/redocly.yaml) and with Spectral (its `spectral:oas` rules, see benches/spectral.yaml).
# Needs npm and the npm registry (each CLI is installed once into its own prefix under /tmp);
# not part of CI for that reason. Exits non-zero on any error or warning of either.
#   bash benches/openapi-lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null || { echo "npm is not installed; apt-get install -y npm" >&2; exit 2; }
PREFIX=${PREFIX:-/tmp/edgemail-redocly}
VERSION=${REDOCLY_VERSION:-2.77.0}
LOG=$(mktemp /tmp/edgemail-redocly.XXXXXX)
trap 'rm -f "$LOG"' EXIT
if [ ! -x "$PREFIX/node_modules/.bin/redocly" ]; then
  mkdir -p "$PREFIX"
  npm install --silent --no-audit --no-fund --prefix "$PREFIX" "@redocly/cli@$VERSION" >/dev/null
fi
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
  "$PREFIX/node_modules/.bin/redocly" lint --max-problems 1000 --config benches/redocly.yaml \
  schema/openapi.yaml "$@" 2>&1 | tee "$LOG"
# Redocly exits 0 on warnings: they count as failures here.
grep -Eq "You have [0-9]+ warnings?" "$LOG" && { echo "redocly: warnings above" >&2; exit 1; }

SPECTRAL_PREFIX=${SPECTRAL_PREFIX:-/tmp/edgemail-spectral}
SPECTRAL_VERSION=${SPECTRAL_VERSION:-6.16.3}
if [ ! -x "$SPECTRAL_PREFIX/node_modules/.bin/spectral" ]; then
  mkdir -p "$SPECTRAL_PREFIX"
  npm install --silent --no-audit --no-fund --prefix "$SPECTRAL_PREFIX" \
    "@stoplight/spectral-cli@$SPECTRAL_VERSION" >/dev/null
fi
# --fail-severity=hint: any finding at all (error, warning, info or hint) fails the run.
"$SPECTRAL_PREFIX/node_modules/.bin/spectral" lint --ruleset benches/spectral.yaml \
  --fail-severity=hint schema/openapi.yaml
