#!/usr/bin/env bash
# Set up (once) and start the FEAT app on http://localhost:8501 with the shipped checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" -m streamlit run app/main.py "$@"
