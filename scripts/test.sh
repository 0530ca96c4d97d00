#!/usr/bin/env bash
# Installs everything the tests need (Debian packages and the Python project with its test extras)
# and runs the whole test suite. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# Two workers, tests handed out one at a time as workers free up (the slowest take about a minute each); the
# report ends with the 25 slowest, so a CI log shows where the suite's time goes.
exec .venv/bin/python -m pytest -n 2 --dist worksteal --durations=25 "$@"
