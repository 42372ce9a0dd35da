// fprof's own NVTX injection through the real NVTX v3 loader: this test program links the
// handlers as a static injection (InitializeInjectionNvtx2_fnptr), so every nvtx* call below goes
// the way it goes in a profiled program: NVTX's loader, the function table, fprof's handler,
// the TraceRecorder. What ends up recorded must be what the CUPTI callbacks recorded.
#include <cstdint>

// The NVTX loader's hook for statically linked injections (NvtxInitializeInjectionNvtxFunc_t),
// declared before NVTX's headers use it; defined below.
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(uint32_t));
#define NVTX_STATIC_INJECTION_IMPL
#include <nvtx3/nvToolsExt.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "trace/nvtx_injection.h"

namespace {

int initializeForTest(NvtxGetExportTableFunc_t get_export_table) {
  return fprof::collector::installNvtxHandlers(get_export_table) ? 1 : 0;
}

}  // namespace

extern "C" {
int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(uint32_t)) = &initializeForTest;
}

namespace fprof::collector {
namespace {

std::atomic<int64_t> g_clock{0};
int64_t fakeClock() { return g_clock += 10; }
bool g_active = true;
bool active() { return g_active; }

struct Harness {
  TraceRecorder recorder;
  Translator translator;
  std::vector<core::NvtxRangeRecord> ranges;
  TranslatedBatch batch;

  Harness() {
    unsetenv("NVTX_INJECTION64_PATH");  // before the first NVTX call: the static injection is used
    setNvtxTarget(NvtxTarget{&recorder, &fakeClock, &active});
  }
  ~Harness() { setNvtxTarget(NvtxTarget{}); }

  void launch(uint32_t correlation) {
    ASSERT_NE(recorder.enterLaunch(LaunchCall{correlation, "cuLaunchKernel", true, false}), nullptr);
    recorder.submitLaunch(nullptr, nullptr, nullptr);
    recorder.exitLaunch();
  }
  std::string pathOf(uint32_t correlation) {
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.correlationId = correlation;
    k.name = "_Z1kv";
    k.start = correlation * 100;
    k.end = k.start + 1;
    translator.translate(reinterpret_cast<const CUpti_Activity&>(k), batch);
    return batch.kernels.back().nvtx_path;
  }
  std::map<std::string, core::NvtxRangeRecord> rangesByMessage() const {
    std::map<std::string, core::NvtxRangeRecord> out;
    for (const auto& r : ranges) out[r.message] = r;
    return out;
  }
};

nvtxEventAttributes_t attributes(const char* message, uint64_t payload) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = payload;
  return a;
}

TEST(NvtxInjection, NvtxCallsReachTheRecorderThroughTheLoader) {
  Harness h;
  const nvtxDomainHandle_t domain = nvtxDomainCreateA("fprof");
  ASSERT_NE(domain, nullptr);
  EXPECT_EQ(nvtxDomainCreateA("fprof"), domain);  // one handle per name
  const nvtxEventAttributes_t outer = attributes("op=layer layer=0", 7);
  EXPECT_EQ(nvtxDomainRangePushEx(domain, &outer), 0);
  EXPECT_EQ(nvtxRangePushA("inner"), 1);
  h.launch(1);
  const nvtxRangeId_t phase = nvtxRangeStartA("phase");
  EXPECT_NE(phase, 0u);
  h.launch(2);
  EXPECT_EQ(nvtxRangePop(), 1);
  h.launch(3);
  nvtxRangeEnd(phase);
  EXPECT_EQ(nvtxDomainRangePop(domain), 0);

  nvtxEventAttributes_t registered{};
  registered.version = NVTX_VERSION;
  registered.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  registered.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  registered.message.registered = nvtxDomainRegisterStringA(domain, "op=registered");
  nvtxDomainRangePushEx(domain, &registered);
  nvtxRangePushW(L"wide");
  h.launch(4);
  nvtxRangePop();
  nvtxDomainRangePop(domain);
  const nvtxDomainHandle_t wide_domain = nvtxDomainCreateW(L"wide domain");
  ASSERT_NE(wide_domain, nullptr);
  const nvtxEventAttributes_t in_wide = attributes("x", 1);
  nvtxDomainRangePushEx(wide_domain, &in_wide);
  h.launch(5);
  nvtxDomainRangePop(wide_domain);
  EXPECT_EQ(nvtxRangePop(), -1);  // nothing open: NVTX's error value, and an unmatched pop

  h.recorder.collect(h.translator, h.ranges);
  EXPECT_EQ(h.pathOf(1), "fprof::op=layer layer=0/inner");
  EXPECT_EQ(h.pathOf(2), "phase/fprof::op=layer layer=0/inner");
  EXPECT_EQ(h.pathOf(3), "phase/fprof::op=layer layer=0");
  EXPECT_EQ(h.pathOf(4), "fprof::op=registered/wide");
  // As through CUPTI's callbacks: wide domain names are not recorded.
  EXPECT_EQ(h.pathOf(5), "<unknown domain>::x");
  EXPECT_EQ(h.recorder.unmatchedPops(), 1u);

  const auto byMessage = h.rangesByMessage();
  ASSERT_EQ(byMessage.size(), 6u);
  const core::NvtxRangeRecord& layer = byMessage.at("op=layer layer=0");
  EXPECT_EQ(layer.domain, "fprof");
  EXPECT_EQ(layer.payload, std::optional<uint64_t>(7));
  EXPECT_TRUE(layer.push_pop);
  EXPECT_TRUE(layer.end_ns.has_value());
  EXPECT_EQ(byMessage.at("inner").parent_key, std::optional<uint64_t>(layer.key));
  EXPECT_EQ(byMessage.at("inner").domain, "");
  const core::NvtxRangeRecord& p = byMessage.at("phase");
  EXPECT_FALSE(p.push_pop);
  EXPECT_TRUE(p.end_ns.has_value());
  EXPECT_LT(p.start_ns, *p.end_ns);
  EXPECT_EQ(byMessage.at("op=registered").domain, "fprof");
  EXPECT_EQ(byMessage.at("wide").depth, 1);
}

TEST(NvtxInjection, AfterCollectionStopsCallsAreAnsweredNotRecorded) {
  Harness h;
  g_active = false;
  EXPECT_EQ(nvtxRangePushA("unseen"), 0);
  const nvtxRangeId_t id = nvtxRangeStartA("unseen either");
  EXPECT_NE(id, 0u);
  nvtxRangeEnd(id);
  EXPECT_EQ(nvtxRangePop(), 0);
  EXPECT_NE(nvtxDomainCreateA("late domain"), nullptr);
  g_active = true;
  h.recorder.collect(h.translator, h.ranges);
  EXPECT_TRUE(h.ranges.empty());
}

TEST(NvtxInjection, ANewRecorderKnowsTheDomainsCreatedBefore) {
  const nvtxDomainHandle_t early = [] {
    Harness first;
    return nvtxDomainCreateA("created early");
  }();
  Harness h;
  const nvtxEventAttributes_t a = attributes("op=late", 0);
  nvtxDomainRangePushEx(early, &a);
  h.launch(9);
  nvtxDomainRangePop(early);
  h.recorder.collect(h.translator, h.ranges);
  EXPECT_EQ(h.pathOf(9), "created early::op=late");
}

}  // namespace
}  // namespace fprof::collector
