// Config overrides: path parsing and setting keys in a YAML tree.
#include "common/config_override.h"

#include <charconv>
#include <vector>

namespace ember::config {
namespace {

std::string_view Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> segments;
  size_t start = 0;
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
    segments.push_back(path.substr(start, dot - start));
    start = dot + 1;
  }
  segments.push_back(path.substr(start));
  return segments;
}

// The value as a tree of its own, built node by node rather than kept from the parser, so that
// loaders do not point at a line of some file for it. Scalars and sequences only.
Result<YAML::Node> ParseValue(const Override& override_) {
  YAML::Node parsed;
  try {
    parsed = YAML::Load(override_.value);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("override " + override_.ToString() + ": the value is not YAML (" +
                           e.msg + ")");
  }
  if (parsed.IsMap()) {
    return InvalidArgument("override " + override_.ToString() +
                           ": the value is a mapping; override its keys one by one");
  }
  if (parsed.IsNull()) return YAML::Node(YAML::NodeType::Null);
  if (parsed.IsScalar()) return YAML::Node(parsed.Scalar());
  YAML::Node sequence(YAML::NodeType::Sequence);
  for (const YAML::Node& item : parsed) {
    if (!item.IsScalar() && !item.IsNull()) {
      return InvalidArgument("override " + override_.ToString() +
                             ": a sequence value may hold scalars only");
    }
    sequence.push_back(item.IsNull() ? YAML::Node(YAML::NodeType::Null)
                                     : YAML::Node(item.Scalar()));
  }
  return sequence;
}

// The entry of `sequence` that `segment` names: its index, or the entry whose `name` it is.
Result<YAML::Node> SequenceEntry(const YAML::Node& sequence, const std::string& segment,
                                 const std::string& where) {
  size_t index = 0;
  const char* end = segment.data() + segment.size();
  if (auto [at, error] = std::from_chars(segment.data(), end, index);
      error == std::errc() && at == end) {
    if (index >= sequence.size()) {
      return InvalidArgument(where + " has " + std::to_string(sequence.size()) +
                             " entries; there is no entry " + segment);
    }
    return sequence[index];
  }
  for (const YAML::Node& entry : sequence) {
    if (entry.IsMap() && entry["name"].IsScalar() && entry["name"].Scalar() == segment) {
      return entry;
    }
  }
  return InvalidArgument(where + " has no entry named '" + segment + "'");
}

// Sets segments[i..] under `node` (a handle into the tree; passed by value, as assigning one
// handle to another would copy the tree's contents instead of moving the handle).
Status SetPath(YAML::Node node, const std::vector<std::string>& segments, size_t i,
               const YAML::Node& value) {
  std::string where;
  for (size_t s = 0; s < i; ++s) where += (s ? "." : "") + segments[s];
  const std::string& segment = segments[i];
  YAML::Node child;  // rebound with reset(), which moves the handle and leaves the tree alone
  if (node.IsSequence() && segment == "*") {
    if (i + 1 == segments.size()) {
      return InvalidArgument(where + ".*: name a key of the entries to set in each of them");
    }
    if (node.size() == 0) return InvalidArgument(where + ".*: " + where + " has no entries");
    for (size_t e = 0; e < node.size(); ++e) {
      child.reset(node[e]);
      RETURN_IF_ERROR(SetPath(child, segments, i + 1, value));
    }
    return Status::Ok();
  }
  if (node.IsSequence()) {
    ASSIGN_OR_RETURN(YAML::Node entry, SequenceEntry(node, segment, where));
    child.reset(entry);
  } else if (node.IsMap() || node.IsNull() || !node.IsDefined()) {
    child.reset(node[segment]);  // created when the file leaves it out
  } else {
    return InvalidArgument(where + " is a value, not a section with keys");
  }
  if (i + 1 < segments.size()) return SetPath(child, segments, i + 1, value);
  if (child.IsMap()) {
    return InvalidArgument(where + (where.empty() ? "" : ".") + segment +
                           " is a section; override one of its keys");
  }
  if (node.IsSequence()) {
    child = value;  // an existing entry: assigning through its handle replaces it in place
  } else {
    node[segment] = value;
  }
  return Status::Ok();
}

}  // namespace

Result<Override> ParseOverride(std::string_view text) {
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return InvalidArgument("override '" + std::string(text) +
                           "': expected KEY=VALUE, e.g. cluster.servers=3");
  }
  Override parsed{std::string(Trim(text.substr(0, equals))),
                  std::string(Trim(text.substr(equals + 1)))};
  for (const std::string& segment : Segments(parsed.path)) {
    if (segment.empty()) {
      return InvalidArgument("override '" + std::string(text) +
                             "': the key must be dotted names, e.g. cluster.servers");
    }
  }
  if (parsed.value.empty()) {
    return InvalidArgument("override '" + std::string(text) +
                           "': no value (null sets the key back to its default)");
  }
  RETURN_IF_ERROR(ParseValue(parsed).status());
  return parsed;
}

Status ApplyOverrides(YAML::Node root, std::span<const Override> overrides) {
  for (const Override& override_ : overrides) {
    ASSIGN_OR_RETURN(YAML::Node value, ParseValue(override_));
    RETURN_IF_ERROR_CTX(SetPath(root, Segments(override_.path), 0, value),
                        "override " + override_.ToString());
  }
  return Status::Ok();
}

Status BlameOverride(const Status& error, std::span<const Override> overrides) {
  const std::string_view message = error.message();
  auto names = [&](const Override& override_) {
    if (message.find(override_.path) != std::string_view::npos) return true;
    // A misspelt section: RejectUnknownKeys (common/yaml_util.h) names the first unknown key.
    for (size_t dot = override_.path.find('.'); dot != std::string::npos;
         dot = override_.path.find('.', dot + 1)) {
      if (message.find(override_.path.substr(0, dot) + ": unknown field") !=
          std::string_view::npos) {
        return true;
      }
    }
    return false;
  };
  // The last override of a key is the one that took effect.
  for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
    if (names(*it)) return error.WithContext("overriding " + it->ToString());
  }
  return error;
}

}  // namespace ember::config
