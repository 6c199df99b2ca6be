#!/usr/bin/env bash
# Installs what the test suite needs on a fresh machine, idempotently. Each item is skipped
# when what it provides is already there:
#   * a Python venv (.venv, in the checkout) with the CUDA compiler wheels from PyPI: nvcc,
#     ptxas, cuobjdump, nvdisasm and CUDA 13.5's libnvrtc.so.13 (nvidia-cuda-nvrtc, in
#     .venv/lib/python3*/site-packages/nvidia/cu13/lib), and CUDA 12.9's libnvrtc.so.12
#     (nvidia-cuda-nvrtc-cu12, in .../nvidia/cuda_nvrtc/lib; env.sh points the tests at
#     it, the NVRTC search tests find the CUDA 13 one through VIRTUAL_ENV). Skipped when
#     .venv/.ikp-cuda-wheels lists the same pins.
#   * CUDA 13.0's NVRTC (PyPI nvidia-cuda-nvrtc==13.0.88), whose libnvrtc.so.13 has no
#     RPATH and so finds its builtins library only through ikp's loader (the test in
#     host/tests/host/nvrtc_compile.rs). pip cannot hold two versions of nvidia-cuda-nvrtc in
#     one venv, so the wheel is downloaded (pip download --no-deps) and unpacked, not
#     installed, into .deps/nvrtc-13.0.88/ (the library in nvidia/cu13/lib; env.sh names
#     it IKP_NVRTC_13_0_LIB). Skipped when libnvrtc.so.13 and libnvrtc-builtins.so.13.0
#     are there.
#   * the peers' decoders the comparison tests run (host/tests/peer_decoders.rs): warpscope
#     (PyPI, pure Python, with numpy) in .venv, skipped when .venv/.ikp-peer-decoders lists
#     the same pins; and FlashInfer's Python exporter, the one file
#     flashinfer/profiler/__init__.py taken from the pinned flashinfer-python wheel (a
#     62 MB download, nothing installed) into .deps/flashinfer-python-<version>/, skipped
#     when that file is there.
#   * DuckDB (PyPI duckdb, a self-contained wheel) in .venv, which reads the Parquet tables
#     back in host/tests/parquet.rs; skipped when .venv/.ikp-parquet-reader lists the same
#     pin.
#   * maturin (PyPI) in .venv, the build backend of the Python package (python/), and zig
#     (PyPI ziglang), the linker maturin builds its manylinux_2_28 wheel with
#     (scripts/build-wheel.sh); skipped when .venv/.ikp-python-tools lists the same pins.
#   * a real driver library, libcuda.so.1, that answers CUDA_ERROR_NO_DEVICE on a machine
#     without a GPU: Debian's non-free libcuda1, downloaded with apt and unpacked (not
#     installed) into .deps/libcuda. This adds the non-free component to the apt sources
#     (/etc/apt/sources.list.d/ikp-non-free.sources) when no source has it, and runs
#     apt-get update: both system-wide. Skipped when .deps/libcuda holds it already, or
#     when IKP_LIBCUDA_DIR names a directory holding a libcuda.so.1 (env.sh keeps it).
#   * Debian's chromium, for the tests that render the HTML report headless: installed
#     system-wide with apt-get install. Skipped when `chromium` is on PATH or
#     /usr/bin/chromium exists.
# (cargo-fuzz is installed by scripts/fuzz.sh, into ~/.cargo/bin, when it is missing.)
#
# IKP_NO_SYSTEM_INSTALL=1: install nothing outside the checkout. The venv is still made
# (it lives in the checkout); a missing libcuda or chromium stops the run with a message
# naming each and how to provide it, instead of touching apt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
deps="$root/.deps"
case "${IKP_NO_SYSTEM_INSTALL:-}" in ""|0) local_only=false ;; *) local_only=true ;; esac
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

peers="warpscope==0.1.0"
pstamp="$venv/.ikp-peer-decoders"
if [ ! -f "$pstamp" ] || [ "$(cat "$pstamp")" != "$peers" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check $peers
  echo "$peers" > "$pstamp"
fi
readers="duckdb==2.0.1"
rstamp="$venv/.ikp-parquet-reader"
if [ ! -f "$rstamp" ] || [ "$(cat "$rstamp")" != "$readers" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check $readers
  echo "$readers" > "$rstamp"
fi
# The Python package's build backend (python/pyproject.toml) and the linker of its
# manylinux wheel, run by scripts/build-wheel.sh.
pytools="maturin==1.16.0 ziglang==0.17.1"
tstamp="$venv/.ikp-python-tools"
if [ ! -f "$tstamp" ] || [ "$(cat "$tstamp")" != "$pytools" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check $pytools
  echo "$pytools" > "$tstamp"
fi
fi_version=0.7.2.post1
fi_file="$deps/flashinfer-python-$fi_version/flashinfer/profiler/__init__.py"
if [ ! -f "$fi_file" ]; then
  tmp=$(mktemp -d)
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$tmp" \
    "flashinfer-python==$fi_version"
  "$venv/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
    "$tmp"/flashinfer_python-*.whl flashinfer/profiler/__init__.py "$deps/flashinfer-python-$fi_version"
  rm -rf "$tmp"
fi

# CUDA 13.0's NVRTC, unpacked beside the venv (which holds 13.5's): into a temporary
# directory on the same file system, then renamed into place, so a half-done run leaves
# nothing that looks provisioned.
nvrtc130_version=13.0.88
nvrtc130="$deps/nvrtc-$nvrtc130_version"
if [ ! -f "$nvrtc130/nvidia/cu13/lib/libnvrtc.so.13" ] ||
   [ ! -f "$nvrtc130/nvidia/cu13/lib/libnvrtc-builtins.so.13.0" ]; then
  tmp=$(mktemp -d "$deps/.nvrtc-$nvrtc130_version.XXXXXX")
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$tmp" \
    "nvidia-cuda-nvrtc==$nvrtc130_version"
  "$venv/bin/python" -m zipfile -e "$tmp"/nvidia_cuda_nvrtc-*.whl "$tmp/unpacked"
  rm -rf "$nvrtc130"
  mv "$tmp/unpacked" "$nvrtc130"
  rm -rf "$tmp"
fi

missing=()

# libcuda1 from Debian non-free: download and unpack, never install (no kernel module here).
unpacked="$deps/libcuda/usr/lib/x86_64-linux-gnu/nvidia/current"
if [ -n "${IKP_LIBCUDA_DIR:-}" ]; then
  if [ ! -e "$IKP_LIBCUDA_DIR/libcuda.so.1" ]; then
    echo "provision: IKP_LIBCUDA_DIR=$IKP_LIBCUDA_DIR holds no libcuda.so.1;" \
      "point it at a directory that does, or unset it" >&2
    exit 1
  fi
  libcuda_dir=$IKP_LIBCUDA_DIR
elif [ -e "$unpacked/libcuda.so.1" ]; then
  libcuda_dir=$unpacked
elif $local_only; then
  missing+=("libcuda.so.1 (the driver library the no-GPU tests load). Either set
    IKP_LIBCUDA_DIR to a directory holding a libcuda.so.1 (a driver's, e.g.
    /usr/lib/x86_64-linux-gnu; where the system has a driver, the test that simulates a
    machine without one skips), or unpack Debian's libcuda1 without installing it (needs
    the non-free component in the apt sources):
      (cd \"\$(mktemp -d)\" && apt-get download libcuda1 && dpkg -x libcuda1_*.deb $deps/libcuda)")
  libcuda_dir=
else
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
  libcuda_dir=$unpacked
fi

# Headless Chromium renders the HTML report in its tests (Debian's package, ~1.5 min cold).
# The tests run `chromium`, else /usr/bin/chromium.
chromium_path() { command -v chromium 2>/dev/null || { [ -x /usr/bin/chromium ] && echo /usr/bin/chromium; }; }
if ! chromium_path >/dev/null; then
  if $local_only; then
    missing+=("chromium (the report tests run it headless). Install it (Debian:
    apt-get install chromium), or put a Chromium or Chrome binary on PATH under the name
    chromium, e.g. ln -s \"\$(command -v google-chrome)\" ~/.local/bin/chromium")
  else
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "provision: IKP_NO_SYSTEM_INSTALL=$IKP_NO_SYSTEM_INSTALL: nothing is installed outside the checkout, and the tests need:"
    for m in "${missing[@]}"; do echo "  - $m"; done
    echo "Provide them and run again, or run without IKP_NO_SYSTEM_INSTALL to let this script install them (docs/install.md)."
  } >&2
  exit 1
fi
echo "provisioned: $venv, $libcuda_dir, $(chromium_path)"
