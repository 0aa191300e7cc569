#!/usr/bin/env bash
# The main job: installs what is missing, prepares the data sets, builds, and trains the default
# model with minidl-train (the small demo where a build has no train program). Extra arguments go to
# the program.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
if [ -x build/apps/minidl-train ]; then
  bash scripts/setup_data.sh
  exec build/apps/minidl-train "$@"
fi
exec build/apps/minidl-demo "$@"
