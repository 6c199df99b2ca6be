// Host-only stand-in for the CUDA runtime: device memory is host memory.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#define __host__
#define __device__
#define __forceinline__ inline
typedef int cudaError_t;
enum { cudaSuccess = 0 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
inline const char* cudaGetErrorString(cudaError_t) { return "stub"; }
template <class T> inline cudaError_t cudaMalloc(T** p, size_t n) {
  *p = static_cast<T*>(std::malloc(n));
  unsigned char* b = reinterpret_cast<unsigned char*>(*p);
  for (size_t i = 0; i < n; ++i) b[i] = (unsigned char)(i * 131 + 7);  // junk, never cleared
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaMemset(void* p, int v, size_t n) { std::memset(p, v, n); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { std::memcpy(d, s, n); return cudaSuccess; }
