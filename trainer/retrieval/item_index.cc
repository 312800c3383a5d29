// ItemIndex: FAISS's HNSW over the item vectors, and the exact search beside it.
#include "trainer/retrieval/item_index.h"

#include <cblas.h>
#include <faiss/IndexHNSW.h>

#include <algorithm>
#include <numeric>

namespace ember::trainer {
namespace {

bool IsExcluded(std::span<const uint32_t> excluded, uint32_t item) {
  return std::binary_search(excluded.begin(), excluded.end(), item);
}

}  // namespace

struct ItemIndex::Hnsw {
  explicit Hnsw(uint32_t dim, uint32_t neighbours)
      : index(static_cast<int>(dim), static_cast<int>(neighbours), faiss::METRIC_INNER_PRODUCT) {}
  faiss::IndexHNSWFlat index;
};

ItemIndex::ItemIndex(std::vector<float> vectors, uint32_t dim, const IndexOptions& options)
    : vectors_(std::move(vectors)), dim_(dim), options_(options) {}

ItemIndex::~ItemIndex() = default;

Result<std::unique_ptr<ItemIndex>> ItemIndex::Build(std::vector<float> vectors, uint32_t dim,
                                                    const IndexOptions& options) {
  if (dim == 0 || vectors.empty() || vectors.size() % dim != 0) {
    return InvalidArgument("item index: " + std::to_string(vectors.size()) +
                           " floats are not whole vectors of dim " + std::to_string(dim));
  }
  if (options.hnsw_neighbours < 2 || options.ef_construction == 0 || options.ef_search == 0) {
    return InvalidArgument("item index: HNSW needs at least 2 neighbours and efConstruction and "
                           "efSearch of at least 1");
  }
  std::unique_ptr<ItemIndex> index(new ItemIndex(std::move(vectors), dim, options));
  index->hnsw_ = std::make_unique<Hnsw>(dim, options.hnsw_neighbours);
  faiss::IndexHNSWFlat& hnsw = index->hnsw_->index;
  hnsw.hnsw.efConstruction = static_cast<int>(options.ef_construction);
  hnsw.hnsw.efSearch = static_cast<int>(options.ef_search);
  try {
    hnsw.add(static_cast<faiss::Index::idx_t>(index->size()), index->vectors_.data());
  } catch (const std::exception& e) {
    return Internal(std::string("item index: FAISS could not build the index: ") + e.what());
  }
  return index;
}

ItemHits ItemIndex::Search(std::span<const float> query, uint32_t k,
                           std::span<const uint32_t> excluded) const {
  const size_t wanted = std::min<size_t>(size(), size_t{k} + excluded.size());
  std::vector<float> scores(wanted);
  std::vector<faiss::Index::idx_t> labels(wanted);
  hnsw_->index.search(1, query.data(), static_cast<faiss::Index::idx_t>(wanted), scores.data(),
                      labels.data());
  ItemHits hits;
  for (size_t i = 0; i < wanted && hits.items.size() < k; ++i) {
    if (labels[i] < 0) break;  // fewer results than asked for
    const auto item = static_cast<uint32_t>(labels[i]);
    if (IsExcluded(excluded, item)) continue;
    hits.items.push_back(item);
    hits.scores.push_back(scores[i]);
  }
  return hits;
}

ItemHits ItemIndex::ExactSearch(std::span<const float> query, uint32_t k,
                                std::span<const uint32_t> excluded) const {
  const size_t items = size();
  std::vector<float> scores(items);
  cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(items), static_cast<int>(dim_), 1.0f,
              vectors_.data(), static_cast<int>(dim_), query.data(), 1, 0.0f, scores.data(), 1);
  std::vector<uint32_t> order;
  order.reserve(items);
  for (uint32_t item = 0; item < items; ++item) {
    if (!IsExcluded(excluded, item)) order.push_back(item);
  }
  const size_t top = std::min<size_t>(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    [&](uint32_t a, uint32_t b) {
                      return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
                    });
  ItemHits hits;
  for (size_t i = 0; i < top; ++i) {
    hits.items.push_back(order[i]);
    hits.scores.push_back(scores[order[i]]);
  }
  return hits;
}

}  // namespace ember::trainer
