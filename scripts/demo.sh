#!/usr/bin/env bash
# Installs Castellan Referee and scores a sample castle: a rendered sample photo when the vision
# pipeline is installed and the samples are there, and its ground-truth castle otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
sample="${1:-examples/finished_2p.json}"
exec .venv/bin/castellan score "$sample"
