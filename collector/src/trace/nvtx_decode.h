// NVTX arguments into the recorder's terms: a message (ASCII, wide or registered) and an integer
// payload, the same for CUPTI's NVTX callbacks and for fprof's own NVTX handlers.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cwchar>
#include <optional>
#include <string_view>

#include "trace/trace_recorder.h"

namespace fprof::collector {

// A wide message in the locale's multibyte encoding, written to `text` (cut to its size).
inline std::string_view wideText(const wchar_t* w, char (&text)[512]) {
  if (w == nullptr) return {};
  std::mbstate_t state{};
  const size_t n = std::wcsrtombs(text, &w, sizeof text - 1, &state);
  if (n == static_cast<size_t>(-1)) return "<non-convertible unicode message>";
  text[n] = '\0';
  return std::string_view(text, n);
}

inline NvtxText asciiText(const char* m) { return NvtxText{m != nullptr ? std::string_view(m) : std::string_view()}; }

// The message and integer payload of event attributes; `text` holds a converted wide message.
inline NvtxText eventText(const nvtxEventAttributes_t* a, std::optional<uint64_t>& payload, char (&text)[512]) {
  if (a == nullptr) return {};
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: payload = a->payload.ullValue; break;
    case NVTX_PAYLOAD_TYPE_INT64: payload = static_cast<uint64_t>(a->payload.llValue); break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: payload = a->payload.uiValue; break;
    case NVTX_PAYLOAD_TYPE_INT32: payload = static_cast<uint64_t>(static_cast<int64_t>(a->payload.iValue)); break;
    default: break;
  }
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return asciiText(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return NvtxText{wideText(a->message.unicode, text)};
    case NVTX_MESSAGE_TYPE_REGISTERED: return NvtxText{{}, a->message.registered};
    default: return {};
  }
}

}  // namespace fprof::collector
