#!/usr/bin/env bash
# Installs everything the tests need (Debian packages and the Python project with its test extras)
# and runs the whole test suite. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
exec .venv/bin/python -m pytest "$@"
