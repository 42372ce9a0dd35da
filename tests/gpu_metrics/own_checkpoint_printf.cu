// A kernel in a module of its own that calls printf (own_checkpoint_target.cu): the printf buffer
// is outside the memory fprof's own checkpoint saves, so its duplicate takes CUPTI's.
#include <cstdio>

__global__ void printingBump(int n, float* p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.0f;
  if (i == n) printf("printingBump: %d elements\n", n);
}

void launchPrintingBump(int n, float* p) { printingBump<<<1, n + 1>>>(n, p); }
