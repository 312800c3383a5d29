// Request drivers: one client thread's way of making a request of the data-plane benchmark and
// waiting for its answer, against ember (a ps::Client) or straight against a table in this
// process (the lookups alone). A driver belongs to one thread. Private to bench/.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "embedding/embedding_table.h"
#include "ps/client/client.h"

namespace ember::bench {

// How long a benchmark request may take before the run fails.
inline constexpr Millis kRequestTimeout{60'000};

// One client thread's way of making a request and waiting for its answer.
class RequestDriver {
 public:
  virtual ~RequestDriver() = default;
  virtual Status Request(std::span<const uint64_t> keys) = 0;
};

class EmberPullDriver : public RequestDriver {
 public:
  EmberPullDriver(ps::Client* client, std::string table, uint32_t keys, uint32_t dim)
      : client_(client), table_(std::move(table)), dim_(dim), rows_(size_t{keys} * dim) {}
  Status Request(std::span<const uint64_t> keys) override {
    return client_->Pull(table_, keys, std::span<float>(rows_).first(keys.size() * dim_)).Wait();
  }

 private:
  ps::Client* client_;
  std::string table_;
  uint32_t dim_;
  std::vector<float> rows_;
};

class EmberPushDriver : public RequestDriver {
 public:
  EmberPushDriver(ps::Client* client, std::string table, uint32_t keys, uint32_t dim)
      : client_(client), table_(std::move(table)), gradients_(size_t{keys} * dim, 1e-3f) {}
  Status Request(std::span<const uint64_t> keys) override {
    return client_->Push(table_, keys, gradients_, clock_++).Wait();
  }

 private:
  ps::Client* client_;
  std::string table_;
  std::vector<float> gradients_;
  uint64_t clock_ = 0;
};

// The same requests straight against a table in this process.
class TablePullDriver : public RequestDriver {
 public:
  TablePullDriver(embedding::EmbeddingTable* table, uint32_t keys)
      : table_(table), rows_(size_t{keys} * table->dim()) {}
  Status Request(std::span<const uint64_t> keys) override {
    return table_->Pull(keys, std::span<float>(rows_).first(keys.size() * table_->dim()));
  }

 private:
  embedding::EmbeddingTable* table_;
  std::vector<float> rows_;
};

class TablePushDriver : public RequestDriver {
 public:
  TablePushDriver(embedding::EmbeddingTable* table, uint32_t keys)
      : table_(table), gradients_(size_t{keys} * table->dim(), 1e-3f) {}
  Status Request(std::span<const uint64_t> keys) override {
    return table_->Push(keys,
                        std::span<const float>(gradients_).first(keys.size() * table_->dim()));
  }

 private:
  embedding::EmbeddingTable* table_;
  std::vector<float> gradients_;
};

}  // namespace ember::bench
