// TableSpec: what a table is (name, row width, initialiser, server-side optimizer).
//
// Shared by the scheduler (which loads it from the config and hands it out), the servers (which
// build tables from it), the trainers (which check row widths) and the wire codec. The YAML
// loader and validation live in embedding/table_config.h.
#pragma once

#include <cstdint>
#include <string>

namespace ember {

enum class OptimizerKind { kSgd = 0, kAdagrad = 1, kAdam = 2, kFtrl = 3 };

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;       // step size; FTRL: alpha
  float initial_accumulator = 0.0f;  // Adagrad: starting squared-gradient sum
  float epsilon = 1e-10f;            // Adagrad and Adam: denominator guard
  float beta1 = 0.9f;                // Adam: first-moment decay
  float beta2 = 0.999f;              // Adam: second-moment decay
  float l1 = 0.0f;                   // FTRL: L1 strength
  float l2 = 0.0f;                   // FTRL: L2 strength
  float ftrl_beta = 1.0f;            // FTRL: beta of the per-coordinate learning rate
  // SGD, Adagrad and Adam: L2 penalty on the rows a push updates, weight_decay * row added to
  // each gradient (FTRL has l2 for this). Rows that are not pushed do not decay.
  float weight_decay = 0.0f;
};

enum class InitializerKind { kZeros = 0, kNormal = 1, kUniform = 2 };

struct InitializerSpec {
  InitializerKind kind = InitializerKind::kNormal;
  float mean = 0.0f;     // normal
  float stddev = 0.01f;  // normal
  float low = -0.01f;    // uniform
  float high = 0.01f;    // uniform
};

struct TableSpec {
  std::string name;      // unique in a cluster; HashName(name) is the table id
  uint32_t dim = 0;      // floats per row
  uint64_t seed = 0;     // initialiser seed: a row's first value is init(seed, key)
  OptimizerSpec optimizer;
  InitializerSpec initializer;
  // Feature admission: a key gets a stored row only once it occurred in this many requests; until
  // then it reads its initial row and its updates are dropped. 0 or 1: every key is stored.
  uint32_t admit_after = 0;
  // Expiry: a row not updated (created, pushed or restored) for this many seconds is deleted by
  // the server's periodic sweep. 0: rows never expire.
  uint32_t ttl_seconds = 0;
};

}  // namespace ember
