#!/usr/bin/env bash
# The GPU check (bench/gpu/run.py has the steps): bench/gpu/run.sh [--quick] [--out DIR] [--no-build] [--dry-run]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec "${PYTHON:-python3}" bench/gpu/run.py "$@"
