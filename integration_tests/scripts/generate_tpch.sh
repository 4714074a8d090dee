#!/usr/bin/env bash
# Generate TPC-H at a scale factor as Parquet folders (one per table) with tpchgen-cli.
# Usage: generate_tpch.sh SCALE OUTPUT_DIR   (skips work when OUTPUT_DIR is already complete)
set -euo pipefail
scale=${1:-0.1}
out=${2:?output folder}
if [ -f "$out/.complete" ]; then echo "TPC-H SF $scale already in $out"; exit 0; fi
rm -rf "$out"; mkdir -p "$out"
tpchgen-cli parquet -s "$scale" --parts=1 --output-dir="$out"
touch "$out/.complete"
echo "TPC-H SF $scale generated in $out"
