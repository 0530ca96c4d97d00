#!/usr/bin/env bash
# Installs Castellan Referee and serves the web app on http://127.0.0.1:8000/ with its embedded
# SQLite database (instance/castellan.sqlite3). Open it, upload a photo from sample_photos/ (or take
# one on a phone on the same network: HOST=0.0.0.0 scripts/demo.sh), or enter a castle by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p instance
exec .venv/bin/castellan serve --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}" \
  --database "sqlite:///$PWD/instance/castellan.sqlite3"
