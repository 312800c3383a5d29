// The layout of a checkpoint directory, shared by the servers that write and load partition
// files, the trainers that write their own files and the tools that read them.
//
// Layout of a checkpoint directory DIR:
//   DIR/tables/<table>/part-<p>.bin   partition p of a table (embedding/partition_file.h), written
//                                     by whichever server owned p; one file per partition, rows or
//                                     not, so a complete checkpoint has num_partitions per table
//   DIR/trainer-<rank>.bin            trainer `rank`'s step, data position, dense weights and (when
//                                     the dense weights are its own) their Adam state
//                                     (trainer/trainer_checkpoint.h); any file a caller adds before
//                                     WriteManifest is listed and checked like the others
//   DIR/MANIFEST                      written last, atomically: without it (or with a damaged one)
//                                     the directory is not a checkpoint
// The manifest is text: a "ember-checkpoint 1" line, then "step N", "servers N", "partitions P",
// "trainers T" (trainer files 0..T-1 belong to it; 0 for a checkpoint of the servers alone),
// one "table NAME DIM" line per table, one "file PATH BYTES CRC32" line per file (path relative
// to DIR, CRC32 as 8 hex digits), and last "crc CRC32" over every byte before that line.
//
// Restoring checks the manifest, then every file's size and checksum against it, and only then
// asks the servers to load; each server checks its files again (header, counts, checksum) before
// it changes any row. So a corrupt, truncated or missing file is reported, naming it, before any
// row changes.
//
// Thread-safety: the functions may run on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ember {

inline constexpr char kManifestName[] = "MANIFEST";

// What a server does with its share of a checkpoint directory.
enum class CheckpointAction : uint8_t { kWrite = 0, kRestore = 1, kVerify = 2 };


std::string PartitionFilePath(const std::string& dir, const std::string& table,
                              uint32_t partition);
std::string TrainerFilePath(const std::string& dir, uint32_t rank);

struct ManifestTable {
  std::string name;
  uint32_t dim = 0;
};
struct ManifestFile {
  std::string path;  // relative to the checkpoint directory
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};
struct Manifest {
  uint64_t step = 0;        // training steps completed when the checkpoint was cut
  uint32_t servers = 0;     // servers of the cluster that wrote it (any count can restore it)
  uint32_t partitions = 0;  // must equal the restoring cluster's
  uint32_t trainers = 0;    // trainer files trainer-0 .. trainer-(T-1) of the run
  std::vector<ManifestTable> tables;
  std::vector<ManifestFile> files;  // filled in by WriteManifest
};

// Lists every file under `dir` (but the manifest and temporary files) with its size and checksum
// into `manifest.files` and writes DIR/MANIFEST atomically.
Status WriteManifest(const std::string& dir, Manifest manifest);
// Reads DIR/MANIFEST and checks its own checksum only (not the files it lists).
Result<Manifest> ReadManifest(const std::string& dir);
// Reads DIR/MANIFEST and checks that every file it lists is there with its size and checksum, that
// every table has all its partition files and every trainer its file. DataLoss or NotFound naming
// the file otherwise.
Result<Manifest> ReadAndVerifyCheckpoint(const std::string& dir);

// `path` itself when it holds a MANIFEST, else the newest step-* directory under it that does
// (periodic checkpoints); NotFound naming `path` when there is none.
Result<std::string> FindCheckpoint(const std::string& path);
// Removes all but the newest `keep` checkpoint directories named step-* under `parent` (names sort
// by step), complete or not.
Status PruneCheckpoints(const std::string& parent, uint32_t keep);
}  // namespace ember
