#!/usr/bin/env bash
# Generates a Python client from schema/openapi.yaml with openapi-python-client, installs it and
# imports every generated module: a client generator must accept the document as it is. The only
# warnings allowed are for bodies that are not JSON (the tracking pixel, the metrics, the YAML
# document), which the generator leaves to the caller. Needs PyPI once (the generator goes into a venv), so this
# is a bench script and not part of CI.
#   bash benches/openapi-python-client.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-/tmp/edgemail-openapi-client-venv}
if [ ! -x "$VENV/bin/openapi-python-client" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet openapi-python-client ruff
fi
OUT=$(mktemp -d /tmp/edgemail-python-client.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
export PATH="$VENV/bin:$PATH"
(cd "$OUT" && "$VENV/bin/openapi-python-client" generate --path "$OLDPWD/schema/openapi.yaml" \
  --output-path client --meta setup) 2>&1 | tee "$OUT/generate.log"
python3 - "$OUT/generate.log" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
blocks = re.split(r"(?m)^WARNING parsing ", log)[1:]
bad = [b.splitlines()[0] for b in blocks if "Unsupported content_type" not in b]
if bad or re.search(r"(?mi)^error", log):
    sys.exit("the generator refused parts of the document: " + "; ".join(bad))
print(f"generated; {len(blocks)} operations with a non-JSON body left to the caller")
PY
"$VENV/bin/pip" install --quiet "$OUT/client"
PKG=$(basename "$(find "$OUT/client" -maxdepth 2 -name client.py -printf '%h')")
"$VENV/bin/python" - "$PKG" <<'PY'
import importlib, pkgutil, sys
pkg = importlib.import_module(sys.argv[1])
names = [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
for name in names:
    importlib.import_module(name)
api = [n for n in names if ".api." in n and n.count(".") == 3]
print(f"generated package {pkg.__name__}: {len(names)} modules import, {len(api)} operations")
PY
