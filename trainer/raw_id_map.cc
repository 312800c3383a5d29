// Raw-id maps of interaction data: built from the dataset's ids and slot-0 keys, written and read
// as TSV.
#include "trainer/raw_id_map.h"

#include <charconv>
#include <string_view>

#include "common/file_io.h"
#include "common/quote_for_error.h"

namespace ember::trainer {
namespace {

// The map of `table` from every entity's id (id_of) and its slot-0 key.
template <typename IdOf>
RawIdMap MapOf(const std::string& table, size_t count, const EntityKeys& keys, IdOf&& id_of) {
  RawIdMap map;
  map.table = table;
  map.ids.reserve(count);
  map.keys.reserve(count);
  for (uint32_t entity = 0; entity < count; ++entity) {
    map.ids.push_back(id_of(entity));
    map.keys.push_back(keys.keys(entity, 0).front());
  }
  return map;
}

}  // namespace

std::vector<RawIdMap> RawIdMaps(const InteractionDataset& data, const TrainOptions& train) {
  std::vector<RawIdMap> maps;
  if (!train.user_tables.empty()) {
    maps.push_back(MapOf(train.user_tables.front(), data.num_users(), data.users(),
                         [&](uint32_t user) { return data.user_id(user); }));
  }
  if (!train.item_tables.empty()) {
    maps.push_back(MapOf(train.item_tables.front(), data.num_items(), data.items(),
                         [&](uint32_t item) { return data.item_id(item); }));
  }
  return maps;
}

std::string RawIdMapPath(const std::string& out_dir, const std::string& table) {
  return out_dir + "/" + table + ".ids.tsv";
}

Status WriteRawIdMap(const RawIdMap& map, const std::string& out_dir) {
  std::string text;
  for (size_t i = 0; i < map.ids.size(); ++i) {
    const std::string& id = map.ids[i];
    if (id.find_first_of("\t\r\n") != std::string::npos) {
      return InvalidArgument("table '" + map.table + "': the id '" + id +
                             "' holds a tab or a line break and cannot be written to its raw-id "
                             "map");
    }
    text += id;
    text += '\t';
    text += std::to_string(map.keys[i]);
    text += '\n';
  }
  return WriteFileAtomically(RawIdMapPath(out_dir, map.table), text);
}

Result<RawIdMap> ReadRawIdMap(const std::string& path, const std::string& table) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  RawIdMap map;
  map.table = table;
  size_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_number;
    const size_t tab = line.find('\t');
    const std::string_view digits =
        tab == std::string_view::npos ? std::string_view() : line.substr(tab + 1);
    uint64_t key = 0;
    if (digits.empty() || std::from_chars(digits.data(), digits.data() + digits.size(), key).ptr !=
                              digits.data() + digits.size()) {
      return InvalidArgument("raw-id map '" + path + "' line " + std::to_string(line_number) +
                             ": " + QuoteForError(line) + " is not raw_id<TAB>key");
    }
    map.ids.emplace_back(line.substr(0, tab));
    map.keys.push_back(key);
  }
  return map;
}

}  // namespace ember::trainer
