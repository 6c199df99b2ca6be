// The persistent_stream example launched from C++ (main.rs is the same launch from Rust):
// ikp_host.hpp's HostLayout lays out the stream buffer in mapped pinned host memory and
// ikp::StreamDrain empties the lanes' rings into OUT_DIR/persistent_stream_cpp.ikps while
// kernel.cu runs, one block per SM, TILES_PER_SM tiles each (8 records a tile), lanes waiting
// for room rather than dropping (Overflow::StreamWait). Every ikp command reads the file.
//
//   ikp header -o include                        # ikp.cuh and ikp_host.hpp
//   nvcc -std=c++17 -O2 -arch=native -I include launcher.cu -o persistent_stream_cpp
//   ./persistent_stream_cpp OUT_DIR [TILES_PER_SM]
//   ikp decode OUT_DIR/persistent_stream_cpp.ikps --perfetto run.trace
//
// The GPU bundle compiles and runs it (`example/persistent_stream_cpp`).
#include "ikp_host.hpp"
#include "kernel.cu"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// As main.rs: REGIONS (the kernel's region ids), THREADS, TILES_PER_SM, ITERS, RING.
const std::vector<std::string> kRegions = {"tile", "load", "compute", "store"};
constexpr unsigned kThreads = 128u;
constexpr unsigned kTilesPerSm = 20000u;
constexpr unsigned kIters = 5000u;
constexpr std::uint32_t kRing = 512u;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "persistent_stream_cpp: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string out_dir = argc > 1 ? argv[1] : "ikp-out";
  const unsigned tiles_per_sm = argc > 2 ? static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)) : kTilesPerSm;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");

  ikp::HostLayout layout;
  layout.grid = {static_cast<std::uint32_t>(sms), 1u, 1u};
  layout.records_per_lane = kRing;
  layout.regions = kRegions;
  layout.overflow = ikp::Overflow::StreamWait;
  if (const std::string err = layout.validate(); !err.empty()) {
    std::fprintf(stderr, "persistent_stream_cpp: %s\n", err.c_str());
    return 1;
  }
  // The stream buffer: mapped pinned host memory, zeroed, the header at its start.
  std::uint64_t* host = nullptr;
  check(cudaHostAlloc(reinterpret_cast<void**>(&host), layout.buffer_bytes(), cudaHostAllocMapped),
        "cudaHostAlloc (stream buffer)");
  std::fill(host, host + layout.buffer_words(), std::uint64_t{0});
  const std::vector<std::uint64_t> header = layout.header_words();
  std::copy(header.begin(), header.end(), host);
  void* device = nullptr;
  check(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");

  const std::size_t n = 64u * kThreads;
  float* in = nullptr;
  float* out = nullptr;
  check(cudaMalloc(&in, n * sizeof(float)), "cudaMalloc (input)");
  check(cudaMalloc(&out, n * sizeof(float)), "cudaMalloc (output)");
  const std::vector<float> ones(n, 1.0f);
  check(cudaMemcpy(in, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy (input)");
  check(cudaMemset(out, 0, n * sizeof(float)), "cudaMemset (output)");

  const std::string path = out_dir + "/persistent_stream_cpp.ikps";
  ikp::StreamDrain drain;
  if (const std::string err = drain.start(layout, host, path); !err.empty()) {
    std::fprintf(stderr, "persistent_stream_cpp: %s\n", err.c_str());
    return 1;
  }
  const unsigned tiles = static_cast<unsigned>(sms) * tiles_per_sm;
  persistent_stream<<<static_cast<unsigned>(sms), kThreads>>>(out, in, tiles, kIters, layout.kernel_arg(device));
  check(cudaGetLastError(), "launch");
  // Once the kernel has ended its writes to the buffer are visible: finish the file.
  const cudaError_t ran = cudaDeviceSynchronize();
  ikp::DrainStats stats;
  const std::string err = drain.finish(&stats);
  check(ran, "cudaDeviceSynchronize (the kernel)");
  if (!err.empty()) {
    std::fprintf(stderr, "persistent_stream_cpp: %s\n", err.c_str());
    return 1;
  }
  std::printf("persistent_stream_cpp: drained %llu records in %llu polls (%.1f ms), at most %llu waiting in one ring\n",
              static_cast<unsigned long long>(stats.records), static_cast<unsigned long long>(stats.polls),
              static_cast<double>(stats.wall_ns) / 1e6, static_cast<unsigned long long>(stats.max_backlog));
  std::printf("stream file: %s (ikp decode reads it)\n", path.c_str());
  cudaFree(in);
  cudaFree(out);
  cudaFreeHost(host);
  return 0;
}
