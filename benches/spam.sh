#!/usr/bin/env bash
# The junk classifier's quality and speed on the development split of the SpamAssassin public
# corpus (../shared/corpus/spamassassin-dev.tar.gz: ham/ 2,625, spam/ 500). Unpacks it into a
# temporary directory and runs `benches/spam.rs`: about 70% of each class (by a hash of the file
# name, the same every run) trains a model in memory, the rest is scored at the default
# threshold (5.0). Prints spam caught %, ham flagged %, and classifications per second on one
# and on two threads. When `spamassassin` is installed (`apt-get install spamassassin`; not
# installed by this script), it also scores a small sample of the held-out part with its local
# rules, as a reference rate; otherwise it says it was skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS="${SPAM_CORPUS:-../shared/corpus/spamassassin-dev.tar.gz}"
[ -f "$CORPUS" ] || CORPUS=/work/shared/corpus/spamassassin-dev.tar.gz
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
tar xzf "$CORPUS" -C "$WORK"
DIR="$WORK/spamassassin-dev"
cargo bench --bench spam -- "$DIR"

if ! command -v spamassassin >/dev/null; then
  echo "spamassassin: not installed, reference run skipped (apt-get install spamassassin)"
  exit 0
fi
# A sample of 40 files per class (every 10th name), local tests only, no Bayes: the reference
# rate and its speed, not a quality comparison on equal terms.
for class in spam ham; do
  files=$(ls "$DIR/$class" | awk 'NR % 10 == 0' | head -40)
  n=0; hit=0; start=$(date +%s.%N)
  for f in $files; do
    n=$((n + 1))
    if spamassassin -L -e < "$DIR/$class/$f" >/dev/null 2>&1; then :; else hit=$((hit + 1)); fi
  done
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  echo "spamassassin on $n $class: $hit marked spam ($(echo "scale=2; $n / $secs" | bc) msg/s)"
done
