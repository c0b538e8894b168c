#!/usr/bin/env bash
# On a machine with network, before the GPU run: fetch what the GPU image may lack into bench/gpu/wheels/
# (not committed; carried to the GPU machine with the working tree). All pure-Python wheels, any Python 3:
# cmeel + cmeel-eigen (the Eigen headers the build needs) and click (a fastnips dependency).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p wheels
"${PYTHON:-python3}" -m pip download -q --no-deps --only-binary=:all: -d wheels cmeel cmeel-eigen click
ls -l wheels
