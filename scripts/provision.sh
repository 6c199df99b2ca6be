#!/usr/bin/env bash
# Installs what the test suite needs on a fresh machine, idempotently:
#   * a Python venv (.venv) with the CUDA compiler wheels from PyPI: nvcc, ptxas,
#     cuobjdump, nvdisasm and CUDA 13.5's libnvrtc.so.13 (nvidia-cuda-nvrtc, in
#     .venv/lib/python3*/site-packages/nvidia/cu13/lib), and CUDA 12.9's libnvrtc.so.12
#     (nvidia-cuda-nvrtc-cu12, in .../nvidia/cuda_nvrtc/lib; env.sh points the tests at
#     it, the NVRTC search tests find the CUDA 13 one through VIRTUAL_ENV);
#   * Debian's non-free libcuda1 unpacked (not installed) into .deps/libcuda, a real
#     driver library that answers CUDA_ERROR_NO_DEVICE on a machine without a GPU.
#   * Debian's chromium, for the test that renders the HTML report headless.
# Prints the environment to source as its last lines (see scripts/env.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
deps="$root/.deps"
mkdir -p "$deps"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
want="nvidia-cuda-nvcc==13.5.37 nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37 nvidia-cuda-nvrtc==13.5.37 nvidia-cuda-nvrtc-cu12==12.9.86"
stamp="$venv/.ikp-cuda-wheels"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
  echo "$want" > "$stamp"
fi

# libcuda1 from Debian non-free: download and unpack, never install (no kernel module here).
if [ ! -e "$deps/libcuda/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1" ]; then
  if ! grep -rqsw "non-free" /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null; then
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    cat > /etc/apt/sources.list.d/ikp-non-free.sources <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: $codename
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  apt-get update -qq >/dev/null
  tmp=$(mktemp -d); chmod 755 "$tmp"
  (cd "$tmp" && apt-get download -qq libcuda1 >/dev/null)
  rm -rf "$deps/libcuda"
  dpkg -x "$tmp"/libcuda1_*.deb "$deps/libcuda"
  rm -rf "$tmp"
fi
# Headless Chromium renders the HTML report in its test (Debian's package, ~1.5 min cold).
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
echo "provisioned: $venv, $deps/libcuda, $(command -v chromium)"
