#!/usr/bin/env bash
# Installs what is missing, builds, and runs the test suite (without the
# 'slow' suite; `meson test -C build --setup full` runs everything).
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
sf_install_deps chromium  # the report test renders HTML in headless Chromium
sf_build "${BUILD:-build}"
meson test -C "${BUILD:-build}" --print-errorlogs "$@"
