#!/usr/bin/env bash
# Install FEAT and what it needs into the current Python (3.10+). Idempotent.
#   bash scripts/setup.sh            # engine + app + tests (the dev, dask and train extras)
#   EXTRAS=dev,dask,bench bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
EXTRAS="${EXTRAS:-dev,dask,train}"
# torch first, pinned: the CPU build of 2.13.0 lies on this machine's disk; an unpinned
# torch would pull a multi-GB CUDA build.
"$PY" -m pip install --disable-pip-version-check -q "torch==2.13.0"
"$PY" -m pip install --disable-pip-version-check -q -e ".[${EXTRAS}]"
