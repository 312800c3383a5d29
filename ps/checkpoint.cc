// Checkpoints of a cluster: manifest text and the server calls.
#include "ps/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/crc32.h"
#include "common/file_io.h"

namespace ember::ps {
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

}  // namespace

std::string PartitionFilePath(const std::string& dir, const std::string& table,
                              uint32_t partition) {
  return dir + "/tables/" + table + "/part-" + std::to_string(partition) + ".bin";
}

Status WriteManifest(const std::string& dir, Manifest manifest) {
  namespace fs = std::filesystem;
  manifest.files.clear();
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file()) continue;
    const std::string relative = fs::relative(it->path(), dir).generic_string();
    if (relative == kManifestName || it->path().extension() == ".tmp") continue;
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
  for (const ManifestTable& table : manifest.tables) {
    text += "table " + table.name + " " + std::to_string(table.dim) + "\n";
  }
  for (const ManifestFile& file : manifest.files) {
    text += "file " + file.path + " " + std::to_string(file.bytes) + " " + Hex(file.crc32) + "\n";
  }
  text += "crc " + Hex(Crc32(text.data(), text.size())) + "\n";
  return WriteFileAtomically(ManifestPath(dir), text);
}

Result<Manifest> ReadAndVerifyCheckpoint(const std::string& dir) {
  auto text = ReadWholeFile(ManifestPath(dir));
  if (!text.ok()) {
    return text.status().WithContext("'" + dir + "' is not a complete checkpoint");
  }
  ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(dir, *text));
  std::set<std::string> listed;
  for (const ManifestFile& file : manifest.files) {
    RETURN_IF_ERROR(VerifyFile(dir, file));
    listed.insert(file.path);
  }
  for (const ManifestTable& table : manifest.tables) {
    for (uint32_t p = 0; p < manifest.partitions; ++p) {
      const std::string path = PartitionFilePath("", table.name, p).substr(1);
      if (!listed.count(path)) {
        return DataLoss("checkpoint '" + dir + "' lacks '" + path + "' in its manifest");
      }
    }
  }
  return manifest;
}

Result<Manifest> CheckpointServers(Client& client, const std::string& dir, uint64_t step,
                                   Millis timeout) {
  const std::string absolute = std::filesystem::absolute(dir).lexically_normal().string();
  RETURN_IF_ERROR(MakeDirectories(absolute));
  RETURN_IF_ERROR(client.Checkpoint(
      wire::CheckpointRequest{absolute, wire::CheckpointAction::kWrite}, timeout));
  const RoutingTable routing = client.routing();
  Manifest manifest;
  manifest.step = step;
  manifest.servers = static_cast<uint32_t>(routing.servers.size());
  manifest.partitions = routing.num_partitions;
  for (const TableSpec& spec : client.tables()) manifest.tables.push_back({spec.name, spec.dim});
  return manifest;
}

Result<Manifest> RestoreServers(Client& client, const std::string& dir, Millis timeout) {
  const std::string absolute = std::filesystem::absolute(dir).lexically_normal().string();
  ASSIGN_OR_RETURN(Manifest manifest, ReadAndVerifyCheckpoint(absolute));
  const RoutingTable routing = client.routing();
  if (manifest.partitions != routing.num_partitions) {
    return FailedPrecondition("checkpoint '" + absolute + "' has " +
                              std::to_string(manifest.partitions) +
                              " partitions, the cluster " + std::to_string(routing.num_partitions));
  }
  for (const TableSpec& spec : client.tables()) {
    const bool present = std::any_of(
        manifest.tables.begin(), manifest.tables.end(),
        [&](const ManifestTable& t) { return t.name == spec.name && t.dim == spec.dim; });
    if (!present) {
      return FailedPrecondition("checkpoint '" + absolute + "' has no table '" + spec.name +
                                "' of dim " + std::to_string(spec.dim));
    }
  }
  // Every server checks its files before any loads, so no server changes a row unless all can.
  RETURN_IF_ERROR(client.Checkpoint(
      wire::CheckpointRequest{absolute, wire::CheckpointAction::kVerify}, timeout));
  RETURN_IF_ERROR(client.Checkpoint(
      wire::CheckpointRequest{absolute, wire::CheckpointAction::kRestore}, timeout));
  return manifest;
}

}  // namespace ember::ps
