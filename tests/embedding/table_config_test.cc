// Tests for the table YAML loader and TableSpec validation.
#include "embedding/table_config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "common/hash.h"

namespace ember::embedding {
namespace {

Result<std::vector<TableSpec>> Parse(const std::string& yaml) {
  return TableSpecsFromYaml(YAML::Load(yaml), "tables");
}

// The error message of a parse expected to fail ("" when it succeeded).
std::string ParseError(const std::string& yaml) {
  auto specs = Parse(yaml);
  if (specs.ok()) return "";
  EXPECT_EQ(specs.status().code(), StatusCode::kInvalidArgument);
  return std::string(specs.status().message());
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TableConfigTest, ParsesTheFullExample) {
  auto specs = Parse(R"(
- name: user_id
  dim: 64
  seed: 11
  initializer: {kind: normal, mean: 0, stddev: 0.01}
  optimizer: {kind: adagrad, learning_rate: 0.05, initial_accumulator: 0.0, epsilon: 1e-10}
- name: item_id
  dim: 32
  initializer: {kind: uniform, low: -0.5, high: 0.5}
  optimizer: {kind: adam, learning_rate: 0.001, beta1: 0.8, beta2: 0.99, epsilon: 1e-8,
              weight_decay: 0.0001}
- name: ctr_wide
  dim: 1
  initializer: {kind: zeros}
  optimizer: {kind: ftrl, learning_rate: 0.1, ftrl_beta: 1.5, l1: 0.01, l2: 0.02}
)");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->size(), 3u);

  const TableSpec& user = (*specs)[0];
  EXPECT_EQ(user.name, "user_id");
  EXPECT_EQ(user.dim, 64u);
  EXPECT_EQ(user.seed, 11u);
  EXPECT_EQ(user.initializer.kind, InitializerKind::kNormal);
  EXPECT_FLOAT_EQ(user.initializer.stddev, 0.01f);
  EXPECT_EQ(user.optimizer.kind, OptimizerKind::kAdagrad);
  EXPECT_FLOAT_EQ(user.optimizer.learning_rate, 0.05f);
  EXPECT_FLOAT_EQ(user.optimizer.epsilon, 1e-10f);

  const TableSpec& item = (*specs)[1];
  EXPECT_EQ(item.seed, HashName("item_id"));
  EXPECT_EQ(item.initializer.kind, InitializerKind::kUniform);
  EXPECT_FLOAT_EQ(item.initializer.low, -0.5f);
  EXPECT_FLOAT_EQ(item.initializer.high, 0.5f);
  EXPECT_EQ(item.optimizer.kind, OptimizerKind::kAdam);
  EXPECT_FLOAT_EQ(item.optimizer.beta1, 0.8f);
  EXPECT_FLOAT_EQ(item.optimizer.beta2, 0.99f);
  EXPECT_FLOAT_EQ(item.optimizer.epsilon, 1e-8f);
  EXPECT_FLOAT_EQ(item.optimizer.weight_decay, 1e-4f);
  EXPECT_EQ(user.optimizer.weight_decay, 0.0f);

  const TableSpec& wide = (*specs)[2];
  EXPECT_EQ(wide.initializer.kind, InitializerKind::kZeros);
  EXPECT_EQ(wide.optimizer.kind, OptimizerKind::kFtrl);
  EXPECT_FLOAT_EQ(wide.optimizer.learning_rate, 0.1f);
  EXPECT_FLOAT_EQ(wide.optimizer.ftrl_beta, 1.5f);
  EXPECT_FLOAT_EQ(wide.optimizer.l1, 0.01f);
  EXPECT_FLOAT_EQ(wide.optimizer.l2, 0.02f);
}

TEST(TableConfigTest, OnlyNameAndDimAreRequired) {
  auto spec = TableSpecFromYaml(YAML::Load("{name: clicks, dim: 16}"), "tables[0]");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const TableSpec defaults;
  EXPECT_EQ(spec->name, "clicks");
  EXPECT_EQ(spec->dim, 16u);
  EXPECT_EQ(spec->seed, HashName("clicks"));
  EXPECT_EQ(spec->optimizer.kind, defaults.optimizer.kind);
  EXPECT_EQ(spec->optimizer.learning_rate, defaults.optimizer.learning_rate);
  EXPECT_EQ(spec->initializer.kind, defaults.initializer.kind);
  EXPECT_EQ(spec->initializer.stddev, defaults.initializer.stddev);
}

TEST(TableConfigTest, KindShorthandsAndPartialSections) {
  auto spec = TableSpecFromYaml(
      YAML::Load("{name: a, dim: 2, optimizer: adam, initializer: {stddev: 0.5}, seed: 0}"), "t");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->optimizer.kind, OptimizerKind::kAdam);
  EXPECT_EQ(spec->initializer.kind, InitializerKind::kNormal);
  EXPECT_FLOAT_EQ(spec->initializer.stddev, 0.5f);
  EXPECT_EQ(spec->seed, 0u);
}

TEST(TableConfigTest, AdmissionAndExpiryAreOffByDefaultAndChecked) {
  auto plain = TableSpecFromYaml(YAML::Load("{name: a, dim: 2}"), "t");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->admit_after, 0u);
  EXPECT_EQ(plain->ttl_seconds, 0u);
  auto spec = TableSpecFromYaml(YAML::Load("{name: a, dim: 2, admit_after: 5, ttl_seconds: 3600}"),
                                "t");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->admit_after, 5u);
  EXPECT_EQ(spec->ttl_seconds, 3600u);
  auto too_many = TableSpecFromYaml(YAML::Load("{name: a, dim: 2, admit_after: 300}"), "t");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("admit_after"), std::string::npos)
      << too_many.status().ToString();
}

TEST(TableConfigTest, UnknownKeysAreNamedByPath) {
  EXPECT_TRUE(Contains(ParseError(R"(
- name: user_id
  dim: 8
  optimizer: {kind: sgd, learing_rate: 0.1}
)"),
                       "tables[0].optimizer.learing_rate"));
  EXPECT_TRUE(Contains(ParseError("[{name: a, dim: 2}, {name: b, dim: 2, dims: 3}]"),
                       "tables[1].dims"));
  EXPECT_TRUE(Contains(ParseError("[{name: a, dim: 2, initializer: {kind: zeros, mean: 1}}]"),
                       "tables[0].initializer.mean"));
}

TEST(TableConfigTest, FieldsTheKindDoesNotUseAreRejected) {
  EXPECT_TRUE(Contains(ParseError("[{name: a, dim: 2, optimizer: {kind: sgd, beta1: 0.5}}]"),
                       "tables[0].optimizer.beta1"));
  EXPECT_TRUE(Contains(ParseError("[{name: a, dim: 2, optimizer: {kind: adagrad, l1: 0.5}}]"),
                       "tables[0].optimizer.l1"));
  EXPECT_TRUE(
      Contains(ParseError("[{name: a, dim: 2, optimizer: {kind: ftrl, weight_decay: 0.1}}]"),
               "tables[0].optimizer.weight_decay"));
  EXPECT_TRUE(
      Contains(ParseError("[{name: a, dim: 2, initializer: {kind: uniform, stddev: 1}}]"),
               "tables[0].initializer.stddev"));
}

TEST(TableConfigTest, BadKindsAreRejected) {
  const std::string optimizer = ParseError("[{name: a, dim: 2, optimizer: {kind: adamw}}]");
  EXPECT_TRUE(Contains(optimizer, "tables[0].optimizer.kind")) << optimizer;
  EXPECT_TRUE(Contains(optimizer, "adamw")) << optimizer;
  const std::string initializer = ParseError("[{name: a, dim: 2, initializer: gaussian}]");
  EXPECT_TRUE(Contains(initializer, "tables[0].initializer")) << initializer;
  EXPECT_TRUE(Contains(initializer, "gaussian")) << initializer;
}

TEST(TableConfigTest, DimMustBeInRange) {
  EXPECT_TRUE(Contains(ParseError("[{name: a, dim: 0}]"), "tables[0].dim"));
  EXPECT_TRUE(Contains(ParseError("[{name: a, dim: -3}]"), "tables[0].dim"));
  EXPECT_TRUE(Contains(ParseError("[{name: a, dim: 4097}]"), "tables[0].dim"));
  EXPECT_TRUE(Contains(ParseError("[{name: a, dim: many}]"), "tables[0].dim"));
  EXPECT_EQ(ParseError("[{name: a, dim: 4096}]"), "");
}

TEST(TableConfigTest, RequiredFieldsAndShapes) {
  EXPECT_TRUE(Contains(ParseError("[{dim: 4}]"), "tables[0].name"));
  EXPECT_TRUE(Contains(ParseError("[{name: a}]"), "tables[0].dim"));
  EXPECT_TRUE(Contains(ParseError("[{name: '', dim: 4}]"), "name must not be empty"));
  EXPECT_TRUE(Contains(ParseError("{name: a, dim: 4}"), "tables: expected a sequence"));
  EXPECT_TRUE(Contains(ParseError("[user_id]"), "tables[0]: expected a mapping"));
  auto empty = Parse("[]");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(TableConfigTest, DuplicateNamesAreRejected) {
  const std::string error = ParseError(R"(
- {name: user_id, dim: 8}
- {name: item_id, dim: 8}
- {name: user_id, dim: 16}
)");
  EXPECT_TRUE(Contains(error, "tables[2].name")) << error;
  EXPECT_TRUE(Contains(error, "user_id")) << error;
  EXPECT_TRUE(Contains(error, "tables[0]")) << error;
}

TEST(TableConfigTest, OutOfRangeValuesNameTableAndField) {
  const std::string error =
      ParseError("[{name: user_id, dim: 4, optimizer: {kind: sgd, learning_rate: -1}}]");
  EXPECT_TRUE(Contains(error, "tables[0]")) << error;
  EXPECT_TRUE(Contains(error, "user_id")) << error;
  EXPECT_TRUE(Contains(error, "optimizer.learning_rate")) << error;
}

TEST(TableConfigTest, ValidateTableSpecChecksEveryRule) {
  TableSpec good;
  good.name = "user_id";
  good.dim = 8;
  EXPECT_TRUE(ValidateTableSpec(good).ok());

  struct Case {
    const char* field;
    void (*breaks)(TableSpec&);
  };
  const Case cases[] = {
      {"name", [](TableSpec& s) { s.name.clear(); }},
      {"dim", [](TableSpec& s) { s.dim = 0; }},
      {"dim", [](TableSpec& s) { s.dim = kMaxTableDim + 1; }},
      {"optimizer.learning_rate", [](TableSpec& s) { s.optimizer.learning_rate = 0; }},
      {"optimizer.learning_rate", [](TableSpec& s) { s.optimizer.learning_rate = NAN; }},
      {"optimizer.beta1", [](TableSpec& s) { s.optimizer.beta1 = 1.0f; }},
      {"optimizer.beta1", [](TableSpec& s) { s.optimizer.beta1 = -0.1f; }},
      {"optimizer.beta2", [](TableSpec& s) { s.optimizer.beta2 = 1.5f; }},
      {"optimizer.epsilon", [](TableSpec& s) { s.optimizer.epsilon = 0; }},
      {"optimizer.l1", [](TableSpec& s) { s.optimizer.l1 = -1; }},
      {"optimizer.l2", [](TableSpec& s) { s.optimizer.l2 = -1; }},
      {"optimizer.initial_accumulator",
       [](TableSpec& s) { s.optimizer.initial_accumulator = -1; }},
      {"optimizer.ftrl_beta", [](TableSpec& s) { s.optimizer.ftrl_beta = -1; }},
      {"optimizer.weight_decay", [](TableSpec& s) { s.optimizer.weight_decay = -0.1f; }},
      {"optimizer.weight_decay", [](TableSpec& s) {
         s.optimizer.kind = OptimizerKind::kFtrl;
         s.optimizer.weight_decay = 0.1f;
       }},
      {"optimizer.kind", [](TableSpec& s) { s.optimizer.kind = static_cast<OptimizerKind>(9); }},
      {"initializer.stddev", [](TableSpec& s) { s.initializer.stddev = -0.1f; }},
      {"initializer.low", [](TableSpec& s) { s.initializer.low = 1.0f; }},
      {"initializer.kind",
       [](TableSpec& s) { s.initializer.kind = static_cast<InitializerKind>(9); }},
  };
  for (const Case& c : cases) {
    TableSpec spec = good;
    c.breaks(spec);
    Status status = ValidateTableSpec(spec);
    ASSERT_FALSE(status.ok()) << c.field;
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    const std::string message(status.message());
    EXPECT_TRUE(Contains(message, c.field)) << message;
    if (!spec.name.empty()) {
      EXPECT_TRUE(Contains(message, "'user_id'")) << message;
    }
  }
}

TEST(TableConfigTest, KindNamesRoundTrip) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdagrad, OptimizerKind::kAdam,
                             OptimizerKind::kFtrl}) {
    auto parsed = OptimizerKindFromName(OptimizerKindName(kind));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
  for (InitializerKind kind :
       {InitializerKind::kZeros, InitializerKind::kNormal, InitializerKind::kUniform}) {
    auto parsed = InitializerKindFromName(InitializerKindName(kind));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_EQ(OptimizerKindName(OptimizerKind::kFtrl), "ftrl");
  EXPECT_EQ(InitializerKindName(InitializerKind::kUniform), "uniform");
  EXPECT_FALSE(OptimizerKindFromName("SGD").ok());
  EXPECT_FALSE(InitializerKindFromName("").ok());
}

}  // namespace
}  // namespace ember::embedding
