// The PTX of the cache sweeps (l2_sweep.h): built here, JIT-compiled by the driver where the build
// made no cubin for the device (sweep_cubins.h), and compiled ahead by ptxas at build time from the
// same text (collector/tools/sweep_ptx_main.cpp).
#include "cupti/sweep_ptx.h"

namespace fprof::collector {

// Each thread reads 16-byte vectors with ld.global.cg (cached in L2, not L1) in a grid-stride loop
// and folds them into one word, stored only if it equals a constant, so the loads are not removed.
// With `discard` set it instead invalidates each 128-byte line of the buffer (discard.global.L2:
// no write-back), leaving the L2 empty as ncu's flush does; run after the reads have finished.
std::string l2SweepPtx() {
  return R"(
.version 7.4
.target sm_80
.address_size 64

.visible .entry fprof_l2_sweep(.param .u64 buf, .param .u64 vectors, .param .u64 sink, .param .u32 discard)
{
  .reg .pred %p, %q;
  .reg .b32 %a, %b, %c, %d, %acc, %t0, %t1, %t2, %mode;
  .reg .b64 %base, %n, %out, %i, %stride, %addr, %off;
  ld.param.u64 %base, [buf];
  ld.param.u64 %n, [vectors];
  ld.param.u64 %out, [sink];
  ld.param.u32 %mode, [discard];
  cvta.to.global.u64 %base, %base;
  cvta.to.global.u64 %out, %out;
  setp.ne.u32 %q, %mode, 0;
  mov.u32 %t0, %ctaid.x;
  mov.u32 %t1, %ntid.x;
  mov.u32 %t2, %tid.x;
  mul.wide.u32 %i, %t0, %t1;
  cvt.u64.u32 %off, %t2;
  add.u64 %i, %i, %off;
  mov.u32 %t0, %nctaid.x;
  mul.wide.u32 %stride, %t0, %t1;
  mov.u32 %acc, 0;
LOOP:
  setp.ge.u64 %p, %i, %n;
  @%p bra DONE;
  shl.b64 %off, %i, 4;
  add.u64 %addr, %base, %off;
  @%q bra DISCARD;
  ld.global.cg.v4.u32 {%a, %b, %c, %d}, [%addr];
  xor.b32 %acc, %acc, %a;
  xor.b32 %acc, %acc, %b;
  xor.b32 %acc, %acc, %c;
  xor.b32 %acc, %acc, %d;
  bra NEXT;
DISCARD:
  and.b64 %off, %off, 127;
  setp.ne.u64 %p, %off, 0;
  @%p bra NEXT;
  discard.global.L2 [%addr], 128;
NEXT:
  add.u64 %i, %i, %stride;
  bra LOOP;
DONE:
  setp.ne.u32 %p, %acc, 2142422993;
  @%p bra END;
  st.global.u32 [%out], %acc;
END:
  ret;
}
)";
}

// The code sweep: kCodeSweepInstructions dependent FMAs in a straight line (16 bytes of SASS each
// on sm_90: 512 KiB of code), run by one warp on every SM before the L2 sweep, so each SM's and
// each GPC's instruction caches hold the sweep's code instead of the program's, as after ncu's
// cache flush, which invalidates them too. Without it, a kernel profiled again found its code
// still cached: a kernel of 128 KiB of code read 1.0 MB less L2 (8 GPCs x its code) and 130 KB
// less DRAM than ncu counts with --cache-control all (bench/RESULTS.md).
constexpr int kCodeSweepInstructions = 32768;

std::string codeSweepPtx() {
  std::string ptx = R"(
.version 7.4
.target sm_80
.address_size 64
.visible .entry fprof_code_sweep(.param .u64 sink, .param .f32 seed)
{
  .reg .pred %p;
  .reg .f32 %a, %b;
  .reg .b64 %out;
  ld.param.f32 %a, [seed];
  mov.f32 %b, %a;
)";
  ptx.reserve(ptx.size() + kCodeSweepInstructions * 40 + 256);
  for (int i = 0; i < kCodeSweepInstructions / 2; ++i) {
    ptx += "  fma.rn.f32 %a, %a, %b, 0f3F800000;\n  fma.rn.f32 %b, %b, %a, 0fBF800000;\n";
  }
  ptx += R"(  setp.neu.f32 %p, %a, 0f7F7FFFFF;
  @%p bra END;
  ld.param.u64 %out, [sink];
  cvta.to.global.u64 %out, %out;
  st.global.f32 [%out], %b;
END:
  ret;
}
)";
  return ptx;
}

}  // namespace fprof::collector
