// ItemIndex: a catalogue's item vectors (the item tower's L2-normalised outputs), searched by inner
// product for a user vector: approximately, with FAISS's HNSW graph, and exactly, with one matrix
// product over every item (what the approximate search's recall is measured against).
//
// Thread-safety: Search and ExactSearch may be called from many threads at once (the index is
// not changed after Build); build a new index to change it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"

namespace ember::trainer {

struct IndexOptions {
  uint32_t hnsw_neighbours = 32;  // HNSW's M: links per node
  uint32_t ef_construction = 200;
  uint32_t ef_search = 128;       // candidates a search keeps: recall against speed
};

// The best items for a query, best first.
struct ItemHits {
  std::vector<uint32_t> items;  // dense item indices
  std::vector<float> scores;    // inner products
};

class ItemIndex {
 public:
  // `vectors` holds items x dim floats, item i's at i * dim.
  static Result<std::unique_ptr<ItemIndex>> Build(std::vector<float> vectors, uint32_t dim,
                                                  const IndexOptions& options);
  ~ItemIndex();
  ItemIndex(const ItemIndex&) = delete;
  ItemIndex& operator=(const ItemIndex&) = delete;

  size_t size() const { return vectors_.size() / dim_; }
  uint32_t dim() const { return dim_; }
  std::span<const float> vectors() const { return vectors_; }

  // The `k` items of highest inner product with `query` (dim floats) but those in `excluded`
  // (ascending), approximately (Search) or exactly (ExactSearch).
  ItemHits Search(std::span<const float> query, uint32_t k,
                  std::span<const uint32_t> excluded = {}) const;
  ItemHits ExactSearch(std::span<const float> query, uint32_t k,
                       std::span<const uint32_t> excluded = {}) const;

 private:
  struct Hnsw;  // FAISS's index, private to item_index.cc
  ItemIndex(std::vector<float> vectors, uint32_t dim, const IndexOptions& options);

  const std::vector<float> vectors_;
  const uint32_t dim_;
  const IndexOptions options_;
  std::unique_ptr<Hnsw> hnsw_;
};

}  // namespace ember::trainer
