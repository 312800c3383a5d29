// CorpusWriter: the seed corpora of the fuzz targets (fuzz/corpus/<target>/), written with
// ember's own encoders and writers so that every seed is a valid input of today's formats, plus a
// few edge cases: wire messages and conversations with the handlers (corpus_messages.cc), files
// and texts (corpus_files.cc). scripts/fuzz.sh --write-corpus runs them (corpus_writer.cc).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/check.h"
#include "common/frame.h"

namespace ember::fuzz {

class CorpusWriter {
 public:
  explicit CorpusWriter(std::filesystem::path root) : root_(std::move(root)) {}

  void Write(const std::string& target, const std::string& name, std::string_view bytes) {
    const std::filesystem::path dir = root_ / target;
    std::filesystem::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EMBER_CHECK(out.good(), "cannot write", (dir / name).string());
    ++written_;
  }
  // A seed that starts with a mode byte.
  void Write(const std::string& target, const std::string& name, uint8_t mode,
             std::string_view bytes) {
    Write(target, name, std::string(1, static_cast<char>(mode)) + std::string(bytes));
  }
  int written() const { return written_; }

 private:
  std::filesystem::path root_;
  int written_ = 0;
};

inline std::string Bytes(const Frame& frame) { return std::string(frame.view()); }

// Gradient rows of `keys` keys of `dim`: small, varied, some negative.
inline std::vector<float> Gradients(size_t keys, uint32_t dim) {
  std::vector<float> grads(keys * dim);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.01f * static_cast<float>(i % 7) - 0.03f;
  return grads;
}

// corpus_messages.cc
void WriteWireRequests(CorpusWriter& out);
void WriteWireResponses(CorpusWriter& out);
void WriteServerConversations(CorpusWriter& out);
void WriteSchedulerConversations(CorpusWriter& out);
// corpus_files.cc
void WritePartitionFiles(CorpusWriter& out, const std::string& scratch);
void WriteTrainerCheckpoints(CorpusWriter& out, const std::string& scratch);
void WriteManifests(CorpusWriter& out, const std::string& scratch);
void WriteConfigs(CorpusWriter& out, const std::filesystem::path& source);
void WriteKeyFiles(CorpusWriter& out, const std::string& dir);
void WriteKeyLists(CorpusWriter& out);
void WriteMetricsRequests(CorpusWriter& out);
void WritePushLogs(CorpusWriter& out, const std::string& dir);
void WriteSchedulerStates(CorpusWriter& out, const std::string& scratch);
void WriteDelimited(CorpusWriter& out);

}  // namespace ember::fuzz
