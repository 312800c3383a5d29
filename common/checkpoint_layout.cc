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

std::string Hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
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
  manifest.crc = stored;
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
    } else if (kind == "cut") {
      ok = static_cast<bool>(fields >> std::hex >> manifest.chain.cut) && manifest.chain.cut != 0;
    } else if (kind == "chain") {
      ok = static_cast<bool>(fields >> manifest.chain.sequence);
    } else if (kind == "previous") {
      ChainPlace& chain = manifest.chain;
      ok = static_cast<bool>(fields >> chain.previous >> std::hex >> chain.previous_cut >>
                             chain.previous_crc) &&
           chain.previous_cut != 0;
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
  // Sorted by path (as WriteManifest lists them), so that a file is found by binary search.
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  const ChainPlace& chain = manifest.chain;
  if (chain.cut == 0 && (chain.sequence != 0 || !chain.previous.empty())) {
    return BadManifest(dir, "a place in a chain without a cut id");
  }
  if ((chain.sequence == 0) != chain.previous.empty()) {
    return BadManifest(dir, chain.sequence == 0 ? "a base names a predecessor"
                                                : "an increment names no predecessor");
  }
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

std::string DeltaFilePath(const std::string& dir, const std::string& table, uint32_t partition) {
  return dir + "/tables/" + table + "/delta-" + std::to_string(partition) + ".bin";
}

bool IsDeltaFilePath(const std::string& path) {
  return std::filesystem::path(path).filename().string().rfind("delta-", 0) == 0;
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
  if (manifest.chain.cut != 0) {
    const ChainPlace& chain = manifest.chain;
    text += "cut " + Hex64(chain.cut) + "\n";
    text += "chain " + std::to_string(chain.sequence) + "\n";
    if (chain.sequence > 0) {
      text += "previous " + chain.previous + " " + Hex64(chain.previous_cut) + " " +
              Hex(chain.previous_crc) + "\n";
    }
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

namespace {

// DataLoss unless `manifest` lists the files a checkpoint of its kind needs: for every partition
// of every table its whole file or (in an increment only) its delta file, and every trainer's.
Status CheckListedFiles(const std::string& dir, const Manifest& manifest) {
  std::set<std::string> listed;
  for (const ManifestFile& file : manifest.files) listed.insert(file.path);
  auto has = [&](const std::string& path) { return listed.count(path.substr(1)) > 0; };
  const bool increment = manifest.chain.sequence > 0;
  for (const ManifestTable& table : manifest.tables) {
    for (uint32_t p = 0; p < manifest.partitions; ++p) {
      const bool whole = has(PartitionFilePath("", table.name, p));
      const bool delta = has(DeltaFilePath("", table.name, p));
      if (whole && delta) {
        return DataLoss("checkpoint '" + dir + "' lists both a whole and a delta file of partition " +
                        std::to_string(p) + " of table '" + table.name + "'");
      }
      if (delta && !increment) {
        return DataLoss("checkpoint '" + dir + "' is not an increment but lists '" +
                        DeltaFilePath("", table.name, p).substr(1) + "'");
      }
      if (!whole && !delta) {
        return DataLoss("checkpoint '" + dir + "' lacks '" +
                        PartitionFilePath("", table.name, p).substr(1) + "' in its manifest");
      }
    }
  }
  for (uint32_t rank = 0; rank < manifest.trainers; ++rank) {
    if (!has(TrainerFilePath("", rank))) {
      return DataLoss("checkpoint '" + dir + "' lacks '" + TrainerFilePath("", rank).substr(1) +
                      "' in its manifest");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Manifest> ReadAndVerifyCheckpoint(const std::string& dir) {
  ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(dir));
  RETURN_IF_ERROR(CheckListedFiles(dir, manifest));
  for (const ManifestFile& file : manifest.files) RETURN_IF_ERROR(VerifyFile(dir, file));
  return manifest;
}

namespace {

std::string NormalDir(const std::string& dir) {
  return std::filesystem::absolute(dir).lexically_normal().string();
}

// DataLoss unless `older` is the predecessor `link` names: same cut, manifest and shape, one place
// earlier in the chain.
Status CheckLink(const ChainLink& link, const ChainLink& older) {
  const ChainPlace& place = link.manifest.chain;
  const std::string named = "'" + link.dir + "' (increment " + std::to_string(place.sequence) +
                            ") follows '" + older.dir + "'";
  if (older.manifest.chain.cut != place.previous_cut) {
    return DataLoss("checkpoint chain broken: " + named + " of cut " + Hex64(place.previous_cut) +
                    ", but that directory holds cut " + Hex64(older.manifest.chain.cut) +
                    " (replaced, or a duplicate of another checkpoint)");
  }
  if (older.manifest.crc != place.previous_crc) {
    return DataLoss("checkpoint chain broken: " + named + ", whose manifest changed since (checksum " +
                    Hex(older.manifest.crc) + ", expected " + Hex(place.previous_crc) + ")");
  }
  if (older.manifest.chain.sequence + 1 != place.sequence) {
    return DataLoss("checkpoint chain out of order: " + named + ", which is in place " +
                    std::to_string(older.manifest.chain.sequence) + " of its chain, expected " +
                    std::to_string(place.sequence - 1));
  }
  if (older.manifest.partitions != link.manifest.partitions) {
    return DataLoss("checkpoint chain broken: " + named + ", which has " +
                    std::to_string(older.manifest.partitions) + " partitions, not " +
                    std::to_string(link.manifest.partitions));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ChainLink>> ReadCheckpointChain(const std::string& dir, VerifyFiles verify) {
  std::vector<ChainLink> chain;
  std::string at = NormalDir(dir);
  while (true) {
    Result<Manifest> manifest = verify == VerifyFiles::kYes ? ReadAndVerifyCheckpoint(at)
                                                            : ReadManifest(at);
    if (verify == VerifyFiles::kNo && manifest.ok()) {
      if (Status listed = CheckListedFiles(at, *manifest); !listed.ok()) manifest = listed;
    }
    if (!manifest.ok()) {
      if (chain.empty()) return manifest.status();
      return manifest.status().WithContext(
          "checkpoint chain broken: '" + chain.back().dir + "' (increment " +
          std::to_string(chain.back().manifest.chain.sequence) + ") follows '" + at + "'");
    }
    ChainLink link{at, std::move(*manifest)};
    if (!chain.empty()) RETURN_IF_ERROR(CheckLink(chain.back(), link));
    const bool base = link.manifest.chain.sequence == 0;
    const std::string previous = link.manifest.chain.previous;
    chain.push_back(std::move(link));
    if (base) break;
    at = (std::filesystem::path(at) / previous).lexically_normal().string();
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

Result<std::vector<std::string>> PartitionChainFiles(const std::vector<ChainLink>& chain,
                                                     const std::string& table,
                                                     uint32_t partition) {
  std::vector<std::string> files;
  const std::string whole = PartitionFilePath("", table, partition).substr(1);
  const std::string delta = DeltaFilePath("", table, partition).substr(1);
  for (auto link = chain.rbegin(); link != chain.rend(); ++link) {
    const auto& listed = link->manifest.files;
    auto lists = [&](const std::string& path) {
      auto at = std::lower_bound(
          listed.begin(), listed.end(), path,
          [](const ManifestFile& file, const std::string& wanted) { return file.path < wanted; });
      return at != listed.end() && at->path == path;
    };
    if (lists(whole)) {
      files.push_back(link->dir + "/" + whole);
      std::reverse(files.begin(), files.end());
      return files;
    }
    if (!lists(delta)) {
      return DataLoss("checkpoint '" + link->dir + "' has no file of partition " +
                      std::to_string(partition) + " of table '" + table + "'");
    }
    files.push_back(link->dir + "/" + delta);
  }
  return DataLoss("checkpoint chain ending at '" + chain.back().dir + "' has no whole file of " +
                  "partition " + std::to_string(partition) + " of table '" + table + "'");
}

Result<std::optional<ChainLink>> ChainPredecessor(const std::string& dir, uint32_t max_length,
                                                  uint32_t partitions) {
  const std::string parent = std::filesystem::path(NormalDir(dir)).parent_path().string();
  ASSIGN_OR_RETURN(auto steps, StepDirectories(parent));
  const std::string name = std::filesystem::path(NormalDir(dir)).filename().string();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    // Only checkpoints of earlier steps: a run resumed from an earlier step cuts later steps again.
    if (it->filename().string() >= name) continue;
    if (!std::filesystem::exists(ManifestPath(it->string()))) continue;
    ASSIGN_OR_RETURN(Manifest newest, ReadManifest(it->string()));
    if (newest.chain.cut == 0 || newest.chain.sequence + 1 >= max_length ||
        newest.partitions != partitions) {
      return std::optional<ChainLink>();
    }
    return std::optional<ChainLink>(ChainLink{it->string(), std::move(newest)});
  }
  return std::optional<ChainLink>();
}

ChainPlace NextChainPlace(const std::string& dir, uint64_t cut,
                          const std::optional<ChainLink>& predecessor) {
  ChainPlace place;
  place.cut = cut;
  if (!predecessor.has_value()) return place;
  place.sequence = predecessor->manifest.chain.sequence + 1;
  place.previous = std::filesystem::path(predecessor->dir)
                       .lexically_relative(NormalDir(dir))
                       .generic_string();
  place.previous_cut = predecessor->manifest.chain.cut;
  place.previous_crc = predecessor->manifest.crc;
  return place;
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
  // The kept checkpoints' chains stay whole; a link that cannot be read ends its walk.
  std::set<std::string> needed;
  for (size_t i = steps.size() > keep ? steps.size() - keep : 0; i < steps.size(); ++i) {
    std::string at = NormalDir(steps[i].string());
    for (size_t hops = 0; hops <= steps.size() && needed.insert(at).second; ++hops) {
      Result<Manifest> manifest = ReadManifest(at);
      if (!manifest.ok() || manifest->chain.sequence == 0) break;
      at = (fs::path(at) / manifest->chain.previous).lexically_normal().string();
    }
  }
  std::error_code error;
  for (size_t i = 0; i + keep < steps.size(); ++i) {
    if (needed.count(NormalDir(steps[i].string()))) continue;
    fs::remove_all(steps[i], error);
    if (error) {
      return Unavailable("cannot remove old checkpoint '" + steps[i].string() +
                         "': " + error.message());
    }
  }
  return Status::Ok();
}

}  // namespace ember
