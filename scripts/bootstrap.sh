#!/usr/bin/env bash
# Installs the Debian packages minidl needs to build and test, when they are missing. Idempotent;
# runs as root or through sudo. Sourced by the other scripts.
set -euo pipefail

minidl_need_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "minidl: installing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  # Refresh the package lists once per machine (they may be empty on a fresh one).
  if [ ! -f /tmp/.minidl-apt-updated ]; then
    $sudo apt-get update -qq && touch /tmp/.minidl-apt-updated
  fi
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

minidl_need_packages build-essential cmake libeigen3-dev catch2 zlib1g-dev pkg-config
# CLI11: minidl-train's flag parser (header-only). librsvg2-bin: rsvg-convert, with which a test renders
# the training curves SVG to PNG.
minidl_need_packages libcli11-dev librsvg2-bin
# Open MPI: the dist/ process group and its multi-rank tests (mpirun -np 2 on loopback).
minidl_need_packages libopenmpi-dev openmpi-bin
# oneDNN: the f32 CPU convolution (ops/cpu/conv_dnnl.cpp; optional at build time, MINIDL_DNNL).
minidl_need_packages libdnnl-dev

# The CUDA toolkit, where present, is found through nvcc on PATH.
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
