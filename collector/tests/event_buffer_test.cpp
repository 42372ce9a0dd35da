// The per-thread event buffer: events come out whole and in order, across chunks, with one
// thread writing while another reads, and read chunks are reused instead of allocated.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "trace/event_buffer.h"

namespace fprof::collector {
namespace {

// Test events: [size][sequence number][filler...], sizes vary.
uint32_t sizeOf(uint64_t seq) { return 16 + static_cast<uint32_t>(seq % 7) * 8; }

bool write(EventBuffer& b, uint64_t seq, uint32_t bytes) {
  uint8_t* p = b.reserve(bytes);
  if (p == nullptr) return false;
  const uint64_t header[2] = {bytes, seq};
  std::memcpy(p, header, sizeof header);
  std::memset(p + 16, static_cast<int>(seq & 0xff), bytes - 16);
  b.commit(bytes);
  return true;
}

// Reads all committed events; checks each is whole and continues the sequence.
size_t readAll(EventBuffer& b, uint64_t& next_seq) {
  size_t events = 0;
  b.consume([&](const uint8_t* data, size_t bytes) {
    for (size_t at = 0; at < bytes;) {
      uint64_t header[2];
      std::memcpy(header, data + at, sizeof header);
      ASSERT_EQ(header[1], next_seq) << "out of order or lost";
      ASSERT_LE(at + header[0], bytes) << "an event split between two hand-outs";
      for (size_t i = 16; i < header[0]; ++i) ASSERT_EQ(data[at + i], static_cast<uint8_t>(header[1] & 0xff));
      at += header[0];
      ++next_seq;
      ++events;
    }
  });
  return events;
}

TEST(EventBuffer, EventsComeOutWholeAndInOrderAcrossChunks) {
  EventBuffer b;
  uint64_t next = 0;
  EXPECT_EQ(readAll(b, next), 0u);
  uint64_t seq = 0;
  // Several chunks' worth, then one event larger than a chunk, then more.
  for (; seq < 20000; ++seq) ASSERT_TRUE(write(b, seq, sizeOf(seq)));
  ASSERT_TRUE(write(b, seq++, EventBuffer::kChunkBytes + 4096));
  for (const uint64_t end = seq + 100; seq < end; ++seq) ASSERT_TRUE(write(b, seq, sizeOf(seq)));
  EXPECT_EQ(readAll(b, next), seq);
  EXPECT_EQ(next, seq);
  EXPECT_EQ(readAll(b, next), 0u);  // nothing new
  ASSERT_TRUE(write(b, seq++, 24));
  EXPECT_EQ(readAll(b, next), 1u);
}

TEST(EventBuffer, ReadChunksAreReused) {
  EventBuffer b;
  uint64_t seq = 0, next = 0;
  // Write and read about two chunks at a time, many times: the same few chunks go round.
  for (int round = 0; round < 200; ++round) {
    for (const uint64_t end = seq + 4000; seq < end; ++seq) ASSERT_TRUE(write(b, seq, sizeOf(seq)));
    readAll(b, next);
  }
  EXPECT_EQ(next, seq);
  EXPECT_LE(b.chunksAllocated(), 8u) << "about " << seq * 40 / EventBuffer::kChunkBytes << " chunks were written";
}

// Prefill hands the producer as many fresh chunks as it linked in the last period, and no more:
// a producer that then writes as much again allocates nothing itself.
TEST(EventBuffer, PrefillMatchesTheLastPeriodsUse) {
  EventBuffer b;
  uint64_t seq = 0, next = 0;
  auto writeChunks = [&](int chunks) {
    for (const uint64_t end = seq + uint64_t(chunks) * EventBuffer::kChunkBytes / 40; seq < end; ++seq) {
      ASSERT_TRUE(write(b, seq, sizeOf(seq)));
    }
  };
  writeChunks(30);  // more than the ring's 16 read chunks of before, fewer than its size now
  const uint64_t before = b.chunksAllocated();
  readAll(b, next);  // read chunks go to the ring
  b.prefill(EventBuffer::kSpares);
  const uint64_t prefilled = b.chunksAllocated() - before;
  EXPECT_LE(prefilled, 2u) << "the ring already held what the producer used";
  const uint64_t after_prefill = b.chunksAllocated();
  writeChunks(30);
  EXPECT_EQ(b.chunksAllocated(), after_prefill) << "the producer allocated although spares were ready";
  readAll(b, next);
  b.prefill(0);  // no spares wanted: nothing allocated
  EXPECT_EQ(b.chunksAllocated(), after_prefill);
  EXPECT_EQ(next, seq);
}

TEST(EventBuffer, OneThreadWritesWhileAnotherReads) {
  EventBuffer b;
  constexpr uint64_t kEvents = 400000;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (uint64_t seq = 0; seq < kEvents; ++seq) {
      if (!write(b, seq, sizeOf(seq))) break;
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t next = 0;
  while (!done.load(std::memory_order_acquire)) {
    readAll(b, next);
    if (testing::Test::HasFatalFailure()) break;
  }
  producer.join();
  readAll(b, next);
  EXPECT_EQ(next, kEvents);
}

}  // namespace
}  // namespace fprof::collector
