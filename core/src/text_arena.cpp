// TextArena::keepOnly (model.h): the kept texts moved down, in place, over the ones let go.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "fprof/core/model.h"

namespace fprof::core {

namespace {

// Where a held text lies: its block and offset.
struct Place {
  size_t block = 0;
  size_t offset = 0;
  PackedText* text = nullptr;
};

}  // namespace

void TextArena::keepOnly(const std::vector<PackedText*>& texts) {
  // The blocks by address, to find each text's.
  std::vector<std::pair<const char*, size_t>> by_address;
  for (size_t b = 0; b < blocks_.size(); ++b) by_address.emplace_back(blocks_[b].bytes_.get(), b);
  std::sort(by_address.begin(), by_address.end());
  std::vector<Place> places;
  for (PackedText* t : texts) {
    if (t->bits_ == 0 || (t->bits_ & PackedText::kBorrowed) == 0) continue;
    const char* at = t->block();
    auto after = std::upper_bound(by_address.begin(), by_address.end(), std::make_pair(at, SIZE_MAX));
    if (after == by_address.begin()) continue;
    const auto& [base, b] = *std::prev(after);
    if (at >= base + blocks_[b].used_) continue;  // not one of this arena's
    places.push_back({b, static_cast<size_t>(at - base), t});
  }
  // In the order held, each text moves to the first room left by those before it: never past
  // its own place, so it overwrites only texts already moved or let go.
  std::sort(places.begin(), places.end(), [](const Place& x, const Place& y) {
    return x.block != y.block ? x.block < y.block : x.offset < y.offset;
  });
  size_t block = 0, used = 0;
  for (const Place& pl : places) {
    const size_t need = TextBlock::bytesFor(pl.text->view());
    // At worst it stays in its own block, where it fits from its offset on.
    while (need > blocks_[block].capacity_ - used) {
      blocks_[block].used_ = used;
      ++block;
      used = 0;
    }
    char* to = blocks_[block].bytes_.get() + used;
    std::memmove(to, pl.text->block(), need);
    pl.text->bits_ = reinterpret_cast<uintptr_t>(to) | PackedText::kBorrowed;
    used += need;
  }
  if (places.empty()) {
    blocks_.clear();
    return;
  }
  blocks_[block].used_ = used;
  blocks_.resize(block + 1);
}

}  // namespace fprof::core
