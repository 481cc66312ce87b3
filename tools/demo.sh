#!/usr/bin/env bash
# Installs what is missing, builds, packs the bundled treasury-yields data
# set, checks it and prints its report.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
sf_install_deps
sf_build "${BUILD:-build}"
sf="${BUILD:-build}/seqfeed"
out="${BUILD:-build}/demo"
mkdir -p "$out"

echo
"$sf" info
echo
"$sf" pack data/treasury-yields-daily.csv -o "$out/treasury.sfpack"
"$sf" verify "$out/treasury.sfpack"
echo
"$sf" inspect "$out/treasury.sfpack"
echo
echo "Training on this file arrives with the trainer; for now the demo shows the packed data."
