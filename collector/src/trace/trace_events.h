// The raw events an application thread writes into its EventBuffer for the writer thread: fixed
// layouts, 8-byte aligned, each starting with its kind and size. Only what is known at the
// moment of the callback is written; names, paths and pairing are resolved on the writer.
#pragma once

#include <cstdint>

#include "trace/launch_info.h"

namespace fprof::collector {

enum class EventKind : uint16_t {
  kLaunchBegin = 1,   // outermost launch ENTER: the NVTX context of the launch is "now"
  kLaunchSubmit = 2,  // the launch is queued: nested correlation id, function facts, arguments
  kPush = 3,          // NVTX push (its message follows the fixed part)
  kPop = 4,           // NVTX pop
  kStartEndState = 5  // the open start/end ranges changed since this thread's last launch
};

struct EventHeader {
  EventKind kind;
  uint16_t flags;
  uint32_t bytes;  // the whole event, a multiple of 8
};

struct LaunchBeginEvent {
  static constexpr uint16_t kGraphLaunch = 1;
  EventHeader header;
  uint32_t correlation_id;
  uint32_t unused;
  const char* launch_api;  // static string
};

struct LaunchSubmitEvent {
  static constexpr uint16_t kProgrammatic = 1;  // programmatic stream serialization
  EventHeader header;
  uint32_t nested_correlation_id;
  uint32_t arg_count;  // LaunchArg values follow
  int64_t local_bytes_per_thread;
};

struct PushEvent {
  static constexpr uint16_t kHasPayload = 1;
  EventHeader header;
  uint32_t message_bytes;  // characters follow (without a terminator); 0 with `registered`
  uint32_t unused;
  const void* domain;
  const void* registered;  // nvtxStringHandle_t, or null
  uint64_t key;
  uint64_t payload;
  int64_t timestamp_ns;
};

struct PopEvent {
  EventHeader header;
  const void* domain;
  int64_t timestamp_ns;
};

struct StartEndStateEvent {
  EventHeader header;
  void* state;  // a heap std::shared_ptr<const StartEndState> the reader takes over
};

constexpr uint32_t eventBytes(uint32_t fixed_bytes, uint32_t tail_bytes) { return (fixed_bytes + tail_bytes + 7) / 8 * 8; }

}  // namespace fprof::collector
