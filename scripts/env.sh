# Source after scripts/provision.sh: puts the CUDA wheel tools on PATH and tells the
# tests where they are. Sourcing twice is harmless.
_ikp_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_ikp_site=$(echo "$_ikp_root"/.venv/lib/python3*/site-packages)
export IKP_CUDA_BIN="$_ikp_site/nvidia/cu13/bin"
export IKP_NVRTC_LIB="$_ikp_site/nvidia/cuda_nvrtc/lib"
# CUDA 13.0's NVRTC (no RPATH), unpacked from its wheel by provision.sh.
export IKP_NVRTC_13_0_LIB="$_ikp_root/.deps/nvrtc-13.0.88/nvidia/cu13/lib"
# A libcuda.so.1 directory given by the caller (see provision.sh) is kept.
export IKP_LIBCUDA_DIR="${IKP_LIBCUDA_DIR:-$_ikp_root/.deps/libcuda/usr/lib/x86_64-linux-gnu/nvidia/current}"
case ":$PATH:" in *":$IKP_CUDA_BIN:"*) ;; *) export PATH="$IKP_CUDA_BIN:$PATH" ;; esac
case ":${LD_LIBRARY_PATH:-}:" in *":$IKP_NVRTC_LIB:"*) ;; *) export LD_LIBRARY_PATH="$IKP_NVRTC_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;; esac
unset _ikp_root _ikp_site
