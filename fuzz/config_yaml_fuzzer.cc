// Fuzzes the YAML configs: a whole job config through local::LoadClusterConfig (every section:
// cluster, tables, model, data, train), or a bare list of tables through
// embedding::TableSpecsFromYaml. The first byte picks which (even: job config, odd: tables).
// Corpus: fuzz/corpus/config_yaml/.
#include <cstddef>
#include <cstdint>

#include "common/yaml_util.h"
#include "embedding/table_config.h"
#include "fuzz/fuzz_support.h"
#include "local/cluster_config.h"

namespace ember::fuzz {
namespace {

void Load(uint8_t mode, std::string_view text) {
  const std::string path = WriteScratchFile("config.yaml", text);
  if (mode % 2 == 0) {
    (void)local::LoadClusterConfig(path, ScratchDir());
    return;
  }
  auto yaml = config::LoadYamlFile(path);
  if (yaml.ok()) (void)embedding::TableSpecsFromYaml(*yaml, "tables");
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET_WITH_MODE(ember::fuzz::Load)
