#!/usr/bin/env bash
# Set up (once) and run the whole test suite: engine, estimators, app (AppTest) and the
# browser end-to-end test (needs Debian's chromium; .ci/run installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" -m pytest -q "$@"
