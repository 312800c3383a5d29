// ShardTables: the tables a parameter server holds, by name. Filled as the server is created and
// fixed after; each table locks its own rows.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "embedding/embedding_table.h"

namespace ember::ps {

using ShardTables = std::map<std::string, std::unique_ptr<embedding::EmbeddingTable>, std::less<>>;

}  // namespace ember::ps
