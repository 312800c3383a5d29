// Config overrides: "section.key=value" settings applied to a config's YAML tree after it is read
// from its file and before the typed loaders turn it into Options structs, so that one mechanism
// lets any key be changed without editing the file (`ember cluster --set cluster.servers=3`, or a
// search over config values that loads the same file once per setting).
//
// A path names mapping keys separated by dots ("train.batch_size"); inside a sequence a segment
// is an index or, for a sequence of mappings with a `name` key, that name ("tables.item_id.dim"
// and "tables.3.dim" are the same key of tt-bench.yaml), or "*" for every entry
// ("tables.*.optimizer.learning_rate" sets it in each table). Keys and sections the file leaves out are
// created, so that a default can be overridden; whether a key exists at all is for the loaders to
// say (each rejects unknown keys, naming them). A value is YAML text: a scalar ("3", "bsp",
// "1.0e-3", "null" for the default) or a flow sequence ("[256, 128]").
//
// Errors are InvalidArgument naming the override and what was wrong. Reentrant.
#pragma once

#include <yaml-cpp/yaml.h>

#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ember::config {

struct Override {
  std::string path;   // "cluster.servers"
  std::string value;  // YAML text of the value: "3"

  std::string ToString() const { return path + "=" + value; }
};

// Splits "path=value" (at the first '='; spaces around either side are dropped) and checks that
// the path has no empty segment and the value is a YAML scalar or sequence.
Result<Override> ParseOverride(std::string_view text);

// Sets each override's key in `root`, in order (a later override of the same key wins). `root` is
// a handle: the tree it refers to changes. Fails on a path that runs into a scalar, an index or
// name a sequence does not have, or a value that would replace a whole section.
Status ApplyOverrides(YAML::Node root, std::span<const Override> overrides);

// For the error of a loader that ran on an overridden tree: when it is about an overridden key
// (its message names the key's path, or names a section of the path as an unknown field), returns
// it prefixed with "overriding PATH=VALUE", so the reader knows the value came from an override
// and not from the file; otherwise returns it as is.
Status BlameOverride(const Status& error, std::span<const Override> overrides);

}  // namespace ember::config
