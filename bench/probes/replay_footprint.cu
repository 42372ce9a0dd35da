// Issue 15: does the cost of one profiled kernel under kernel replay grow with the device memory
// the program holds (replay saves and restores it)? Allocates BALLAST_GB of touched device memory,
// then launches LAUNCHES axpy kernels on 16 MiB vectors, each with a different scalar (distinct
// launch signatures: fprof profiles every one). bench/probes/replay_footprint.sh times it.
#include <cstdio>
#include <cstdlib>
#include <vector>
__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
int main(int argc, char** argv) {
  const double gb = argc > 1 ? atof(argv[1]) : 0;
  const int launches = argc > 2 ? atoi(argv[2]) : 20;
  std::vector<void*> ballast;
  size_t left = static_cast<size_t>(gb * (1ull << 30));
  while (left > 0) {
    const size_t chunk = left < (1ull << 30) ? left : (1ull << 30);
    void* p = nullptr;
    if (cudaMalloc(&p, chunk) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); return 1; }
    cudaMemset(p, 1, chunk);
    ballast.push_back(p);
    left -= chunk;
  }
  const int n = 4 << 20;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  cudaMemset(y, 0, n * sizeof(float));
  for (int i = 0; i < launches; ++i) axpy<<<(n + 255) / 256, 256>>>(1.0f + i, x, y, n);
  cudaDeviceSynchronize();
  printf("ballast %.1f GB, %d launches: %s\n", gb, launches, cudaGetErrorString(cudaGetLastError()));
  return 0;
}
