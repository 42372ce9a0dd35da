// The matmul epilogues, shared by the WMMA/SIMT kernels (gemm.cu) and the Hopper wgmma kernel
// (gemm_sm90.cu): acc + bias[col], then ReLU, tanh-GELU or SiLU, in fp32.
#pragma once

#include "kernels.cuh"

namespace fprof::refk {

__device__ __forceinline__ float geluTanhF(float v) {
  const float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  return 0.5f * v * (1.0f + tanhf(inner));
}

template <Epilogue E>
__device__ __forceinline__ float activate(float acc) {
  if constexpr (E == Epilogue::Relu || E == Epilogue::BiasRelu) return acc > 0.0f ? acc : 0.0f;
  else if constexpr (E == Epilogue::BiasGelu) return geluTanhF(acc);
  else if constexpr (E == Epilogue::BiasSilu) return acc / (1.0f + __expf(-acc));
  else return acc;
}

template <Epilogue E, class T>
__device__ __forceinline__ float epilogue(float acc, const T* __restrict__ bias, int col) {
  if constexpr (E == Epilogue::Bias || E == Epilogue::BiasRelu || E == Epilogue::BiasGelu ||
                E == Epilogue::BiasSilu) {
    acc += toFloat(bias[col]);
  }
  return activate<E>(acc);
}

}  // namespace fprof::refk
