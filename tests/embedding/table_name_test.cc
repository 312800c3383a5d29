// Table names are limited to a safe alphabet: configs and TableSpecs with any other name are
// refused with an error naming it.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "embedding/table_config.h"

namespace ember::embedding {
namespace {

TableSpec Spec(const std::string& name) {
  TableSpec spec;
  spec.name = name;
  spec.dim = 4;
  return spec;
}

TEST(TableNameTest, UnsafeNamesAreRefused) {
  for (const std::string& name : std::vector<std::string>{"../x", "a/b", ".hidden", "", std::string(200, 'a'), "a b",
                                 "x\\y", "ta\nble", "é"}) {
    Status status = ValidateTableSpec(Spec(name));
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(status.message().find("table '" + name + "'"), std::string::npos)
        << status.ToString();
  }
}

TEST(TableNameTest, SafeNamesAreAccepted) {
  for (const std::string& name : std::vector<std::string>{"item_id", "user-1.v2", "a", "A.b_c-9", std::string(128, 'z')}) {
    EXPECT_TRUE(ValidateTableSpec(Spec(name)).ok()) << name;
  }
}

TEST(TableNameTest, ConfigWithAnUnsafeNameIsRefused) {
  auto specs = TableSpecsFromYaml(YAML::Load("[{name: ../x, dim: 4}]"), "tables");
  ASSERT_FALSE(specs.ok());
  EXPECT_EQ(specs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(specs.status().message().find("../x"), std::string::npos) << specs.status().ToString();
  EXPECT_NE(specs.status().message().find("tables[0]"), std::string::npos);
}

}  // namespace
}  // namespace ember::embedding
