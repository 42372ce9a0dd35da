// One application thread's events on their way to the writer thread: a chain of chunks the
// thread appends to and the writer reads behind it. One producer, one consumer, no lock: the
// producer publishes with a release store of the chunk's committed size, and links a new chunk
// only after the last one is complete. Chunks the writer has read go back to the producer through
// a ring, so a steady run allocates nothing; and the writer puts new chunks there, their pages
// already touched, as many as the thread used in the last period (prefill), so a thread whose
// backlog grows does not take the page faults of fresh memory itself (about 100 us a chunk on
// the development machine's VM).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace fprof::collector {

class EventBuffer {
 public:
  static constexpr uint32_t kChunkBytes = 64 * 1024;

  EventBuffer();
  ~EventBuffer();
  EventBuffer(const EventBuffer&) = delete;
  EventBuffer& operator=(const EventBuffer&) = delete;

  // Producer. Room for `bytes` (a multiple of 8) in one piece, valid until commit(); an event
  // larger than a chunk gets a chunk of its own. nullptr only when memory ran out (the caller
  // drops the event: the collector never throws into the target).
  uint8_t* reserve(uint32_t bytes) {
    if (tail_used_ + bytes > tail_capacity_ && !linkChunk(bytes)) return nullptr;
    return tail_data_ + tail_used_;
  }
  // Publishes the `bytes` written at the last reserve() (at most what was reserved).
  void commit(uint32_t bytes);

  // Consumer. Calls fn(data, bytes) for each stretch of whole events committed since the last
  // call, in order; returns the bytes handed out.
  template <class Fn>
  size_t consume(Fn&& fn) {
    size_t total = 0;
    for (;;) {
      // `next` before `committed`: once a next chunk is linked, this one's size is final.
      Chunk* next = head_->next.load(std::memory_order_acquire);
      const uint32_t end = head_->committed.load(std::memory_order_acquire);
      if (end > head_read_) {
        fn(static_cast<const uint8_t*>(dataOf(head_)) + head_read_, end - head_read_);
        total += end - head_read_;
        head_read_ = end;
      }
      if (next == nullptr) return total;
      Chunk* done = head_;
      head_ = next;
      head_read_ = 0;
      recycle(done);
    }
  }

  // Consumer. Tops the ring of spare chunks up to as many as the producer linked since the last
  // call (at most `max_spares` and the ring's size), allocating them and touching their pages here.
  void prefill(uint32_t max_spares);

  // Chunks allocated (not reused) so far, by either side; for the self-timing report.
  uint64_t chunksAllocated() const { return chunks_allocated_.load(std::memory_order_relaxed); }

 private:
  struct Chunk {
    std::atomic<Chunk*> next{nullptr};
    std::atomic<uint32_t> committed{0};
    uint32_t capacity = 0;
  };
  static constexpr size_t kHeaderBytes = (sizeof(Chunk) + 63) / 64 * 64;
  static uint8_t* dataOf(Chunk* c) { return reinterpret_cast<uint8_t*>(c) + kHeaderBytes; }
  static Chunk* allocate(uint32_t capacity);
  static void release(Chunk* c);

  bool linkChunk(uint32_t bytes);
  void recycle(Chunk* c);

  // Producer side.
  Chunk* tail_ = nullptr;
  uint8_t* tail_data_ = nullptr;
  uint32_t tail_used_ = 0;
  uint32_t tail_capacity_ = 0;
  std::atomic<uint64_t> chunks_allocated_{0};
  std::atomic<uint64_t> chunks_linked_{0};

  // Consumer side, on its own cache line.
  alignas(64) Chunk* head_ = nullptr;
  uint32_t head_read_ = 0;
  uint64_t linked_seen_ = 0;  // chunks_linked_ at the last prefill

 public:
  // Read and prefilled chunks handed to the producer: a single-producer single-consumer ring
  // (up to 16 MiB of spare chunks a thread, for threads that used that many in one period).
  static constexpr uint32_t kSpares = 256;

 private:
  alignas(64) std::atomic<uint32_t> spare_write_{0};  // written by the consumer
  alignas(64) std::atomic<uint32_t> spare_read_{0};   // written by the producer
  std::atomic<Chunk*> spares_[kSpares] = {};
};

}  // namespace fprof::collector
