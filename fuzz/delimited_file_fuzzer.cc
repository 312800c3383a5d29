// Fuzzes the readers of delimited data files (trainer/delimited_reader.h) and the interaction
// data set built on them (trainer/interaction_dataset.h: user, item, rating and timestamp
// columns). The first byte picks the format: its delimiter (tab, comma or "::", bits 0-1),
// whether the first line is a header (bit 2), whether the file is also loaded as interactions
// (bit 3), quoting off (bit 4, else '"' quotes fields), '#' comment lines (bit 5), and whether
// the interactions also take the same file as item side features (bit 6: column 2 multi-valued,
// split at '|', and column 3 single-valued).
// Corpus: fuzz/corpus/delimited_file/.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"
#include "trainer/delimited_reader.h"
#include "trainer/interaction_dataset.h"

namespace ember::fuzz {
namespace {

void Read(uint8_t format, std::string_view text) {
  constexpr std::string_view kDelimiters[] = {"\t", ",", "::"};
  trainer::DelimitedOptions options;
  options.delimiter = std::string(kDelimiters[format % std::size(kDelimiters)]);
  options.header = (format & 4) != 0;
  options.quote = (format & 16) != 0 ? '\0' : '"';
  if ((format & 32) != 0) options.comment = "#";
  const std::string path = WriteScratchFile("data.txt", text);

  auto reader = trainer::DelimitedReader::Open(path, options);
  if (reader.ok()) {
    while (true) {
      auto more = (*reader)->Next();
      if (!more.ok() || !*more) break;
      (void)(*reader)->Field(2, "third column");
    }
  }
  auto table = trainer::ReadDelimited(path, options);
  if (table.ok()) {
    (void)trainer::ResolveColumn(*table, trainer::ColumnRef(1), "second column");
    (void)trainer::ResolveColumn(*table, trainer::ColumnRef("rating"), "rating column");
  }
  if ((format & 8) != 0) {
    trainer::InteractionOptions interactions;
    interactions.path = path;
    interactions.format = options;
    interactions.negatives = 3;
    interactions.max_eval_users = 4;
    if ((format & 64) != 0) {
      trainer::SideFeatureFile items;
      items.path = path;
      items.format = options;
      items.id = trainer::ColumnRef(1);
      items.features = {{{trainer::ColumnRef(2)}, "|"}, {{trainer::ColumnRef(3)}}};
      interactions.item_features = items;
    }
    (void)trainer::InteractionDataset::Load(interactions);
  }
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET_WITH_MODE(ember::fuzz::Read)
