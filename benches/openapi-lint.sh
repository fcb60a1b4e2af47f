#!/usr/bin/env bash
# Lints schema/openapi.yaml with Redocly CLI (recommended rules plus the ones in
# benches/redocly.yaml). Needs npm and the npm registry (the CLI is installed once into
# $PREFIX); not part of CI for that reason. Exits non-zero on any error.
#   bash benches/openapi-lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null || { echo "npm is not installed; apt-get install -y npm" >&2; exit 2; }
PREFIX=${PREFIX:-/tmp/edgemail-redocly}
VERSION=${REDOCLY_VERSION:-2.77.0}
if [ ! -x "$PREFIX/node_modules/.bin/redocly" ]; then
  mkdir -p "$PREFIX"
  npm install --silent --no-audit --no-fund --prefix "$PREFIX" "@redocly/cli@$VERSION" >/dev/null
fi
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
  "$PREFIX/node_modules/.bin/redocly" lint --config benches/redocly.yaml schema/openapi.yaml "$@"
