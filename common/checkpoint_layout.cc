// Checkpoint directory layout: paths, the manifest's text and its checks, finding and pruning
// periodic checkpoints.
#include "common/checkpoint_layout.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/crc32.h"
#include "common/file_io.h"

namespace ember {
namespace {
constexpr char kManifestHeader[] = "ember-checkpoint 1";

std::string Hex(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", value);
  return text;
}

std::string ManifestPath(const std::string& dir) { return dir + "/" + kManifestName; }

Status BadManifest(const std::string& dir, const std::string& what) {
  return DataLoss("checkpoint manifest '" + ManifestPath(dir) + "' is damaged: " + what);
}

Result<Manifest> ParseManifest(const std::string& dir, const std::string& text) {
  const size_t crc_line = text.rfind("crc ");
  if (crc_line == std::string::npos || (crc_line > 0 && text[crc_line - 1] != '\n')) {
    return BadManifest(dir, "no checksum line (truncated?)");
  }
  uint32_t stored = 0;
  if (std::sscanf(text.c_str() + crc_line, "crc %8x", &stored) != 1 ||
      stored != Crc32(text.data(), crc_line)) {
    return BadManifest(dir, "checksum mismatch");
  }
  std::istringstream lines(text.substr(0, crc_line));
  std::string line;
  if (!std::getline(lines, line) || line != kManifestHeader) {
    return BadManifest(dir, "first line is not '" + std::string(kManifestHeader) + "'");
  }
  Manifest manifest;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    bool ok = true;
    if (kind == "step") {
      ok = static_cast<bool>(fields >> manifest.step);
    } else if (kind == "servers") {
      ok = static_cast<bool>(fields >> manifest.servers);
    } else if (kind == "partitions") {
      ok = static_cast<bool>(fields >> manifest.partitions);
    } else if (kind == "trainers") {
      ok = static_cast<bool>(fields >> manifest.trainers);
    } else if (kind == "table") {
      ManifestTable table;
      ok = static_cast<bool>(fields >> table.name >> table.dim);
      manifest.tables.push_back(std::move(table));
    } else if (kind == "file") {
      ManifestFile file;
      ok = static_cast<bool>(fields >> file.path >> file.bytes >> std::hex >> file.crc32);
      manifest.files.push_back(std::move(file));
    } else {
      ok = false;
    }
    if (!ok) return BadManifest(dir, "cannot read line '" + line + "'");
  }
  if (manifest.partitions == 0) return BadManifest(dir, "no partition count");
  return manifest;
}

Status VerifyFile(const std::string& dir, const ManifestFile& file) {
  ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(dir + "/" + file.path));
  if (bytes.size() != file.bytes) {
    return DataLoss("checkpoint file '" + dir + "/" + file.path + "' has " +
                    std::to_string(bytes.size()) + " bytes, the manifest says " +
                    std::to_string(file.bytes));
  }
  if (Crc32(bytes.data(), bytes.size()) != file.crc32) {
    return DataLoss("checkpoint file '" + dir + "/" + file.path +
                    "' does not match the manifest's checksum");
  }
  return Status::Ok();
}


// The step-* directories under `parent`, oldest first (their names sort by step).
Result<std::vector<std::filesystem::path>> StepDirectories(const std::string& parent) {
  namespace fs = std::filesystem;
  std::vector<fs::path> steps;
  std::error_code error;
  for (auto it = fs::directory_iterator(parent, error);
       !error && it != fs::directory_iterator(); it.increment(error)) {
    if (it->is_directory() && it->path().filename().string().rfind("step-", 0) == 0) {
      steps.push_back(it->path());
    }
  }
  if (error) return Unavailable("cannot list '" + parent + "': " + error.message());
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

std::string PartitionFilePath(const std::string& dir, const std::string& table,
                              uint32_t partition) {
  return dir + "/tables/" + table + "/part-" + std::to_string(partition) + ".bin";
}

std::string TrainerFilePath(const std::string& dir, uint32_t rank) {
  return dir + "/trainer-" + std::to_string(rank) + ".bin";
}

Status WriteManifest(const std::string& dir, Manifest manifest) {
  namespace fs = std::filesystem;
  manifest.files.clear();
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file()) continue;
    const std::string relative = fs::relative(it->path(), dir).generic_string();
    if (relative == kManifestName || IsTemporaryFileName(it->path().filename().string())) {
      continue;
    }
    ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(it->path().string()));
    manifest.files.push_back({relative, bytes.size(), Crc32(bytes.data(), bytes.size())});
  }
  if (error) return Unavailable("cannot list checkpoint directory '" + dir + "': " + error.message());
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  std::string text = std::string(kManifestHeader) + "\n";
  text += "step " + std::to_string(manifest.step) + "\n";
  text += "servers " + std::to_string(manifest.servers) + "\n";
  text += "partitions " + std::to_string(manifest.partitions) + "\n";
  text += "trainers " + std::to_string(manifest.trainers) + "\n";
  for (const ManifestTable& table : manifest.tables) {
    text += "table " + table.name + " " + std::to_string(table.dim) + "\n";
  }
  for (const ManifestFile& file : manifest.files) {
    text += "file " + file.path + " " + std::to_string(file.bytes) + " " + Hex(file.crc32) + "\n";
  }
  text += "crc " + Hex(Crc32(text.data(), text.size())) + "\n";
  return WriteFileAtomically(ManifestPath(dir), text);
}

Result<Manifest> ReadManifest(const std::string& dir) {
  auto text = ReadWholeFile(ManifestPath(dir));
  if (!text.ok()) {
    return text.status().WithContext("'" + dir + "' is not a complete checkpoint");
  }
  return ParseManifest(dir, *text);
}

Result<Manifest> ReadAndVerifyCheckpoint(const std::string& dir) {
  ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dir));
  std::set<std::string> listed;
  for (const ManifestFile& file : manifest.files) {
    RETURN_IF_ERROR(VerifyFile(dir, file));
    listed.insert(file.path);
  }
  auto require = [&](const std::string& path) {
    return listed.count(path) ? Status::Ok()
                              : DataLoss("checkpoint '" + dir + "' lacks '" + path +
                                         "' in its manifest");
  };
  for (const ManifestTable& table : manifest.tables) {
    for (uint32_t p = 0; p < manifest.partitions; ++p) {
      RETURN_IF_ERROR(require(PartitionFilePath("", table.name, p).substr(1)));
    }
  }
  for (uint32_t rank = 0; rank < manifest.trainers; ++rank) {
    RETURN_IF_ERROR(require(TrainerFilePath("", rank).substr(1)));
  }
  return manifest;
}

Result<std::string> FindCheckpoint(const std::string& path) {
  if (std::filesystem::exists(ManifestPath(path))) return path;
  ASSIGN_OR_RETURN(auto steps, StepDirectories(path));
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (std::filesystem::exists(ManifestPath(it->string()))) return it->string();
  }
  return NotFound("'" + path + "' is not a checkpoint and holds no complete step-* checkpoint");
}

Status PruneCheckpoints(const std::string& parent, uint32_t keep) {
  namespace fs = std::filesystem;
  ASSIGN_OR_RETURN(std::vector<fs::path> steps, StepDirectories(parent));
  std::error_code error;
  for (size_t i = 0; i + keep < steps.size(); ++i) {
    fs::remove_all(steps[i], error);
    if (error) {
      return Unavailable("cannot remove old checkpoint '" + steps[i].string() +
                         "': " + error.message());
    }
  }
  return Status::Ok();
}

}  // namespace ember
