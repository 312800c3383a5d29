// The insider suite: for each role's key (server, trainer, admin, reader) and for no key, every
// request kind the schema defines, with boundary values (0, 1, 2^31, 2^63, 2^64-1, empty and huge
// lists and data, other members' ids) in every field, sent to a live authenticated cluster on
// loopback: its scheduler and each of its servers. The requests are generated from the schema by
// Cap'n Proto's reflection, so a new request kind, or a new field, is covered without editing
// this test. Afterwards the rows are unchanged where the role may not change them, no partition
// changed hands, every process answers, and rows are still pulled and pushed.
#include <capnp/dynamic.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "common/ember.capnp.h"
#include "common/rpc_channel.h"
#include "common/wire_header.h"
#include "local/local_cluster.h"

namespace ember {
namespace {

namespace schema = ember::schema;
using capnp::DynamicStruct;

constexpr uint64_t kBoundaries[] = {0, 1, uint64_t{1} << 31, uint64_t{1} << 63, ~uint64_t{0}};
constexpr uint32_t kDim = 8;
constexpr uint32_t kKeys = 500;
constexpr int kMaxDepth = 3;

// How many elements (lists) or bytes (data, text) a field gets for a boundary value: empty, one,
// and larger ones up to "huge" (bounded so that a case stays a fast message).
size_t SizeFor(uint64_t value) {
  if (value == 0) return 0;
  if (value == 1) return 1;
  if (value == (uint64_t{1} << 31)) return 1000;
  if (value == (uint64_t{1} << 63)) return 17;
  return 100'000;
}

void FillStruct(DynamicStruct::Builder out, uint64_t value, int depth);

// A primitive of `type` holding `value` cut to its width (so 2^64-1 is every type's all-ones).
capnp::DynamicValue::Reader Primitive(capnp::Type type, uint64_t value) {
  switch (type.which()) {
    case capnp::schema::Type::BOOL: return (value & 1) != 0;
    case capnp::schema::Type::INT8: return static_cast<int8_t>(value);
    case capnp::schema::Type::INT16: return static_cast<int16_t>(value);
    case capnp::schema::Type::INT32: return static_cast<int32_t>(value);
    case capnp::schema::Type::INT64: return static_cast<int64_t>(value);
    case capnp::schema::Type::UINT8: return static_cast<uint8_t>(value);
    case capnp::schema::Type::UINT16: return static_cast<uint16_t>(value);
    case capnp::schema::Type::UINT32: return static_cast<uint32_t>(value);
    case capnp::schema::Type::UINT64: return value;
    case capnp::schema::Type::FLOAT32: return static_cast<float>(value);
    case capnp::schema::Type::FLOAT64: return static_cast<double>(value);
    case capnp::schema::Type::ENUM:
      return capnp::DynamicEnum(type.asEnum(), static_cast<uint16_t>(value));
    default: return capnp::VOID;
  }
}

bool IsPrimitive(capnp::Type type) {
  switch (type.which()) {
    case capnp::schema::Type::VOID:
    case capnp::schema::Type::TEXT:
    case capnp::schema::Type::DATA:
    case capnp::schema::Type::LIST:
    case capnp::schema::Type::STRUCT:
    case capnp::schema::Type::INTERFACE:
    case capnp::schema::Type::ANY_POINTER: return false;
    default: return true;
  }
}

// Bytes of `value` repeated: keys, gradients and ids all read from them.
std::string Bytes(uint64_t value, size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(value >> (8 * (i % 8)));
  return bytes;
}

void FillList(capnp::DynamicList::Builder list, uint64_t value, int depth) {
  const capnp::Type element = list.getSchema().getElementType();
  for (uint32_t i = 0; i < list.size(); ++i) {
    if (IsPrimitive(element)) {
      list.set(i, Primitive(element, value + i));  // distinct ids: other members' too
    } else if (element.isStruct() && depth < kMaxDepth) {
      FillStruct(list[i].as<DynamicStruct>(), value, depth + 1);
    } else if (element.isText()) {
      list.set(i, capnp::Text::Reader(""));
    }
  }
}

void FillField(DynamicStruct::Builder out, capnp::StructSchema::Field field, uint64_t value,
               int depth) {
  const capnp::Type type = field.getType();
  if (IsPrimitive(type)) {
    out.set(field, Primitive(type, value));
    return;
  }
  // Inside a member of a list of structs (depth 2 and more) everything is smaller, and so is a
  // list of structs, so that a case stays a fast message (a list of 4096 structs of 800 KB each
  // would be 3 GB).
  const size_t size = depth >= 2 ? std::min<size_t>(SizeFor(value), 1000) : SizeFor(value);
  const size_t list_limit = type.isList() && type.asList().getElementType().isStruct() ? 100 : 4096;
  switch (type.which()) {
    case capnp::schema::Type::VOID: out.set(field, capnp::VOID); return;
    case capnp::schema::Type::TEXT:
      out.set(field, capnp::Text::Reader(std::string(size, 'n')));
      return;
    case capnp::schema::Type::DATA: {
      const std::string bytes = Bytes(value, size * 8);
      out.set(field, capnp::Data::Reader(reinterpret_cast<const kj::byte*>(bytes.data()),
                                         bytes.size()));
      return;
    }
    case capnp::schema::Type::LIST:
      FillList(out.init(field, static_cast<uint32_t>(std::min(size, list_limit)))
                   .as<capnp::DynamicList>(),
               value, depth);
      return;
    case capnp::schema::Type::STRUCT:
      if (depth < kMaxDepth) FillStruct(out.init(field).as<DynamicStruct>(), value, depth + 1);
      return;
    default: return;
  }
}

// Every field of `out` (and one member of its union, chosen by the value) gets `value`.
void FillStruct(DynamicStruct::Builder out, uint64_t value, int depth) {
  const capnp::StructSchema schema = out.getSchema();
  for (auto field : schema.getNonUnionFields()) FillField(out, field, value, depth);
  const auto members = schema.getUnionFields();
  if (members.size() > 0) FillField(out, members[value % members.size()], value, depth);
}

// One request of each kind of the schema's Request union, with `value` everywhere.
struct Case {
  std::string kind;
  uint64_t value;
};
std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (auto kind : capnp::Schema::from<schema::Request>().getUnionFields()) {
    for (uint64_t value : kBoundaries) cases.push_back({kind.getProto().getName(), value});
  }
  return cases;
}

Frame Encode(const Case& c, uint64_t request_id) {
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<DynamicStruct>(capnp::Schema::from<schema::Request>());
  request.set("version", wire::kProtocolVersion);
  request.set("requestId", request_id);
  request.set("epoch", c.value);
  const auto kind = request.getSchema().getFieldByName(c.kind);
  FillField(request, kind, c.value, 0);
  const auto words = capnp::messageToFlatArray(message);
  return Frame(words.asBytes().begin(), words.asBytes().size());
}

bool kNone(const Case&) { return false; }  // skips no case

class InsiderSuiteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TableSpec spec;
    spec.name = "item";
    spec.dim = kDim;
    spec.seed = 11;
    local::LocalClusterOptions options;
    options.num_servers = 2;
    options.num_partitions = 16;
    options.authenticate = true;
    cluster_ = std::make_unique<local::LocalCluster>(std::vector<TableSpec>{spec}, options);
    ASSERT_TRUE(cluster_->status().ok()) << cluster_->status().ToString();
    auto client = cluster_->Connect("digest");
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
    keys_.resize(kKeys);
    std::iota(keys_.begin(), keys_.end(), 1);
    const std::vector<float> grads(keys_.size() * kDim, 0.25f);
    ASSERT_TRUE(client_->Push("item", keys_, grads).Wait().ok());
  }

  // The rows of keys_, read without changing them (lookups).
  std::vector<float> Rows() {
    std::vector<float> rows(keys_.size() * kDim);
    EXPECT_TRUE(client_->Lookup("item", keys_, rows).Wait().ok());
    return rows;
  }
  std::vector<uint32_t> Owned() {
    std::vector<uint32_t> owned;
    for (size_t i = 0; i < cluster_->num_servers(); ++i) {
      owned.push_back(cluster_->server(i).service().Stats().partitions_owned);
    }
    return owned;
  }
  // The processes' endpoints and public keys: the scheduler, then each server.
  std::vector<std::pair<std::string, std::string>> Targets() {
    std::vector<std::pair<std::string, std::string>> targets = {
        {cluster_->scheduler_endpoint(), cluster_->client_security().scheduler_key}};
    for (size_t i = 0; i < cluster_->num_servers(); ++i) {
      targets.push_back(
          {cluster_->server(i).endpoint(), cluster_->server_security().own.public_key});
    }
    return targets;
  }
  // Sends every case (but `skip`) from a context with `security`, to every process; the count
  // answered, and in *sent the count sent.
  int SendAll(const TransportSecurity& security, Millis timeout,
              const std::function<bool(const Case&)>& skip, int* sent) {
    *sent = 0;
    Context context(1, security);
    int answered = 0;
    for (const auto& [endpoint, key] : Targets()) {
      RpcChannel channel(context, endpoint, key);
      for (const Case& c : Cases()) {
        if (skip(c)) continue;
        const uint64_t id = channel.NextRequestId();
        ++*sent;
        answered += channel.Call(id, Encode(c, id), timeout).ok();
      }
    }
    return answered;
  }
  // Every process answers a ping, and rows are still pushed and pulled.
  void ExpectTheClusterStillWorks() {
    Context context(1, cluster_->client_security());
    for (const auto& [endpoint, key] : Targets()) {
      RpcChannel channel(context, endpoint, key);
      const uint64_t id = channel.NextRequestId();
      auto pong = channel.Call(id, wire::EncodePing({id, 0}), Millis(10'000));
      EXPECT_TRUE(pong.ok() && pong->status.ok()) << endpoint;
    }
    std::vector<uint64_t> fresh(100);
    std::iota(fresh.begin(), fresh.end(), uint64_t{1} << 40);
    std::vector<float> before(fresh.size() * kDim), after(before.size());
    ASSERT_TRUE(client_->Pull("item", fresh, before).Wait().ok());
    const std::vector<float> grads(before.size(), 1.0f);
    ASSERT_TRUE(client_->Push("item", fresh, grads).Wait().ok());
    ASSERT_TRUE(client_->Pull("item", fresh, after).Wait().ok());
    EXPECT_NE(after, before);
  }

  std::unique_ptr<local::LocalCluster> cluster_;
  std::unique_ptr<ps::Client> client_;
  std::vector<uint64_t> keys_;
};

TEST_F(InsiderSuiteTest, TheCasesCoverEveryRequestKindOfTheSchema) {
  const auto kinds = capnp::Schema::from<schema::Request>().getUnionFields();
  EXPECT_EQ(Cases().size(), kinds.size() * std::size(kBoundaries));
  EXPECT_GE(kinds.size(), 20u);
  for (const Case& c : Cases()) {
    auto decoded = wire::DecodeRequest(Encode(c, 1));  // well-formed, or refused by name
    if (!decoded.ok()) {
      EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << c.kind;
      EXPECT_FALSE(decoded.status().message().empty()) << c.kind;
    }
  }
}

TEST_F(InsiderSuiteTest, AServerKeyAndNoKeyChangeNothing) {
  const std::vector<float> rows = Rows();
  const std::vector<uint32_t> owned = Owned();
  // No key: no request gets through the handshake (one case per kind is enough to show it).
  TransportSecurity none;
  int sent = 0;
  EXPECT_EQ(SendAll(none, Millis(100), [](const Case& c) { return c.value != 1; }, &sent), 0);
  EXPECT_GT(sent, 0);
  // A server key: every request is answered (refused, or harmless), and changes nothing.
  EXPECT_EQ(SendAll(cluster_->server_security(), Millis(5000), kNone, &sent), sent);
  EXPECT_EQ(Rows(), rows);
  EXPECT_EQ(Owned(), owned);
  ExpectTheClusterStillWorks();
}

TEST_F(InsiderSuiteTest, AReaderKeyChangesNothing) {
  const std::vector<float> rows = Rows();
  const std::vector<uint32_t> owned = Owned();
  int sent = 0;
  EXPECT_EQ(SendAll(cluster_->reader_security(), Millis(5000), kNone, &sent), sent);
  EXPECT_EQ(Rows(), rows);
  EXPECT_EQ(Owned(), owned);
  ExpectTheClusterStillWorks();
}

TEST_F(InsiderSuiteTest, TrainerAndAdminKeysMoveNoPartitionAndBreakNothing) {
  const std::vector<uint32_t> owned = Owned();
  int sent = 0;
  EXPECT_EQ(SendAll(cluster_->trainer_security(), Millis(5000), kNone, &sent), sent);
  EXPECT_EQ(Owned(), owned);
  ExpectTheClusterStillWorks();
  // An admin may drain a server; everything else it sends leaves the partitions where they are.
  EXPECT_EQ(SendAll(cluster_->client_security(), Millis(5000),
                    [](const Case& c) { return c.kind == "drain"; }, &sent),
            sent);
  EXPECT_EQ(Owned(), owned);
  ExpectTheClusterStillWorks();
}

}  // namespace
}  // namespace ember
