// Per-thread event chunks; see event_buffer.h.
#include "trace/event_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace fprof::collector {

EventBuffer::Chunk* EventBuffer::allocate(uint32_t capacity) {
  capacity = (capacity + 63) / 64 * 64;  // aligned_alloc wants a multiple of the alignment
  void* memory = std::aligned_alloc(64, kHeaderBytes + capacity);
  if (memory == nullptr) return nullptr;
  Chunk* c = new (memory) Chunk();
  c->capacity = capacity;
  return c;
}

void EventBuffer::release(Chunk* c) {
  c->~Chunk();
  std::free(c);
}

EventBuffer::EventBuffer() {
  tail_ = allocate(kChunkBytes);
  if (tail_ == nullptr) throw std::bad_alloc();  // at thread registration, before any callback work
  chunks_allocated_.store(1, std::memory_order_relaxed);
  tail_data_ = dataOf(tail_);
  tail_capacity_ = tail_->capacity;
  head_ = tail_;
}

EventBuffer::~EventBuffer() {
  for (Chunk* c = head_; c != nullptr;) {
    Chunk* next = c->next.load(std::memory_order_relaxed);
    release(c);
    c = next;
  }
  for (uint32_t i = spare_read_.load(); i != spare_write_.load(); ++i) release(spares_[i % kSpares].load());
}

void EventBuffer::commit(uint32_t bytes) {
  tail_used_ += bytes;
  tail_->committed.store(tail_used_, std::memory_order_release);
}

bool EventBuffer::linkChunk(uint32_t bytes) {
  Chunk* c = nullptr;
  if (bytes <= kChunkBytes) {
    const uint32_t read = spare_read_.load(std::memory_order_relaxed);
    if (read != spare_write_.load(std::memory_order_acquire)) {
      c = spares_[read % kSpares].load(std::memory_order_relaxed);
      spare_read_.store(read + 1, std::memory_order_release);
      c->next.store(nullptr, std::memory_order_relaxed);
      c->committed.store(0, std::memory_order_relaxed);
    }
  }
  if (c == nullptr) {
    c = allocate(std::max(bytes, kChunkBytes));
    if (c == nullptr) return false;
    chunks_allocated_.fetch_add(1, std::memory_order_relaxed);
  }
  chunks_linked_.fetch_add(1, std::memory_order_relaxed);
  // The old tail is complete: everything in it was committed before the link is published.
  Chunk* old = tail_;
  tail_ = c;
  tail_data_ = dataOf(c);
  tail_used_ = 0;
  tail_capacity_ = c->capacity;
  old->next.store(c, std::memory_order_release);
  return true;
}

void EventBuffer::prefill(uint32_t max_spares) {
  const uint64_t linked = chunks_linked_.load(std::memory_order_relaxed);
  const uint64_t used = linked - linked_seen_;
  linked_seen_ = linked;
  const uint32_t target = static_cast<uint32_t>(std::min<uint64_t>({used, max_spares, kSpares}));
  for (;;) {
    const uint32_t write = spare_write_.load(std::memory_order_relaxed);
    if (write - spare_read_.load(std::memory_order_acquire) >= target) return;
    Chunk* c = allocate(kChunkBytes);
    if (c == nullptr) return;
    std::memset(dataOf(c), 0, c->capacity);  // the page faults happen here, not on the producer
    chunks_allocated_.fetch_add(1, std::memory_order_relaxed);
    spares_[write % kSpares].store(c, std::memory_order_relaxed);
    spare_write_.store(write + 1, std::memory_order_release);
  }
}

void EventBuffer::recycle(Chunk* c) {
  const uint32_t write = spare_write_.load(std::memory_order_relaxed);
  if (c->capacity == kChunkBytes && write - spare_read_.load(std::memory_order_acquire) < kSpares) {
    spares_[write % kSpares].store(c, std::memory_order_relaxed);
    spare_write_.store(write + 1, std::memory_order_release);
    return;
  }
  release(c);
}

}  // namespace fprof::collector
