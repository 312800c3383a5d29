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
//   DIR/tables/<table>/delta-<p>.bin  in an increment (below), instead of part-<p>.bin: the rows
//                                     of p changed since the predecessor and the keys deleted since
//   DIR/MANIFEST                      written last, atomically: without it (or with a damaged one)
//                                     the directory is not a checkpoint
// The manifest is text: a "ember-checkpoint 1" line, then "step N", "servers N", "partitions P",
// "trainers T" (trainer files 0..T-1 belong to it; 0 for a checkpoint of the servers alone),
// one "table NAME DIM" line per table, one "file PATH BYTES CRC32" line per file (path relative
// to DIR, CRC32 as 8 hex digits), and last "crc CRC32" over every byte before that line.
//
// Incremental checkpoints form chains. Each checkpoint of a chain has a cut id ("cut ID", 16 hex
// digits), which the servers track their changes from, and a place in its chain ("chain N"): 0 is
// a base, whose partition files are all whole; increment N names its predecessor, increment N-1
// (or the base), by directory relative to its own, cut id and manifest checksum ("previous PATH ID
// CRC32"), and holds for each partition either its whole file or a delta file. Restoring walks the
// chain back to its base and checks every link before any row changes: a predecessor that is
// missing, replaced or damaged (another cut id or checksum) or out of order (another place) is
// refused, naming it. A checkpoint without these lines is a full one outside any chain.//
// Restoring checks the manifest, then every file's size and checksum against it, and only then
// asks the servers to load; each server checks its files again (header, counts, checksum) before
// it changes any row. So a corrupt, truncated or missing file is reported, naming it, before any
// row changes.
//
// Thread-safety: the functions may run on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ember {

inline constexpr char kManifestName[] = "MANIFEST";

// What a server does with its share of a checkpoint directory.
enum class CheckpointAction : uint8_t { kWrite = 0, kRestore = 1, kVerify = 2 };

// How servers write a cut (CheckpointAction::kWrite): its id (0: a full checkpoint outside any
// chain), the id of the cut it follows (0: none; partitions whose changes since that cut a server
// tracked are written as deltas) and whether to track changes from this cut on.
struct CutWrite {
  uint64_t cut = 0;
  uint64_t previous_cut = 0;
  bool track = false;
};


std::string PartitionFilePath(const std::string& dir, const std::string& table,
                              uint32_t partition);
std::string DeltaFilePath(const std::string& dir, const std::string& table, uint32_t partition);
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
// Where a checkpoint stands in a chain of incremental checkpoints.
struct ChainPlace {
  uint64_t cut = 0;             // the cut's id; 0: a full checkpoint outside any chain
  uint32_t sequence = 0;        // 0: a base; N: the Nth increment after it
  std::string previous;         // increments: the predecessor's directory, relative to this one
  uint64_t previous_cut = 0;    // increments: the predecessor's cut id
  uint32_t previous_crc = 0;    // increments: the checksum of the predecessor's manifest
};

struct Manifest {
  uint64_t step = 0;        // training steps completed when the checkpoint was cut
  uint32_t servers = 0;     // servers of the cluster that wrote it (any count can restore it)
  uint32_t partitions = 0;  // must equal the restoring cluster's
  uint32_t trainers = 0;    // trainer files trainer-0 .. trainer-(T-1) of the run
  std::vector<ManifestTable> tables;
  ChainPlace chain;
  std::vector<ManifestFile> files;  // filled in by WriteManifest; read back sorted by path
  uint32_t crc = 0;                 // the manifest's own checksum (read back; set by reading)
};

// One checkpoint of a chain: its directory (absolute, normal form) and manifest.
struct ChainLink {
  std::string dir;
  Manifest manifest;
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

// Whether to read every file of every checkpoint of a chain (ReadAndVerifyCheckpoint) or only the
// manifests.
enum class VerifyFiles : uint8_t { kNo, kYes };
// The chain that ends at the checkpoint in `dir`, base first (just `dir` for a full checkpoint
// outside any chain), with every link checked (see above); DataLoss or NotFound naming the link.
Result<std::vector<ChainLink>> ReadCheckpointChain(const std::string& dir, VerifyFiles verify);
// The files that restore partition `partition` of `table` from `chain`, in order: the newest whole
// file, then the delta files after it. DataLoss when a link lacks both.
Result<std::vector<std::string>> PartitionChainFiles(const std::vector<ChainLink>& chain,
                                                     const std::string& table,
                                                     uint32_t partition);
// Whether `path` is a delta file (delta-<p>.bin) rather than a whole partition file.
bool IsDeltaFilePath(const std::string& path);

// The checkpoint a new cut into `dir` (a step-* directory) extends when chains may hold
// `max_length` checkpoints (base included): the newest complete step-* checkpoint in dir's parent
// whose name sorts before dir's (an earlier step), when it belongs to a chain with room left and
// has `partitions` partitions; nullopt: the cut starts a new base.
Result<std::optional<ChainLink>> ChainPredecessor(const std::string& dir, uint32_t max_length,
                                                  uint32_t partitions);
// The chain place of a checkpoint with cut id `cut` in `dir` that follows `predecessor` (nullopt:
// a new base).
ChainPlace NextChainPlace(const std::string& dir, uint64_t cut,
                          const std::optional<ChainLink>& predecessor);

// `path` itself when it holds a MANIFEST, else the newest step-* directory under it that does
// (periodic checkpoints); NotFound naming `path` when there is none.
Result<std::string> FindCheckpoint(const std::string& path);
// Removes all but the newest `keep` checkpoint directories named step-* under `parent` (names sort
// by step), complete or not, and the checkpoints of their chains.
Status PruneCheckpoints(const std::string& parent, uint32_t keep);
}  // namespace ember
