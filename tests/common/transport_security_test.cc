// Authentication in the transport: key files, CurveZMQ sockets admitting only trusted keys (and
// telling the receiver who sent each message) over every transport another process can reach
// (tcp and ipc), messages without an identity in a keyed process, and the refusal to bind beyond
// loopback without keys. Every socket here is on 127.0.0.1 or an ipc file in a test folder.
#include "common/transport_security.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "common/transport.h"
#include "tests/test_util.h"

namespace ember {
namespace {

TEST(KeyFilesTest, WrittenPairReadsBackAndIsNeverOverwritten) {
  testing::TempDir dir;
  auto pair = WriteKeyFiles(dir.path(), "server-0");
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_TRUE(CheckKey(pair->public_key, "public").ok());
  EXPECT_NE(pair->public_key, pair->secret_key);

  auto read = ReadKeyPairFile(dir.path() + "/server-0.key");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->public_key, pair->public_key);
  EXPECT_EQ(read->secret_key, pair->secret_key);
  auto pub = ReadPublicKeyFile(dir.path() + "/server-0.pub");
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_EQ(*pub, pair->public_key);

  struct stat info {};
  ASSERT_EQ(::stat((dir.path() + "/server-0.key").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);

  const std::string before = testing::ReadFile(dir.path() + "/server-0.key");
  auto again = WriteKeyFiles(dir.path(), "server-0");
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("never overwrites"), std::string::npos)
      << again.status().ToString();
  EXPECT_EQ(testing::ReadFile(dir.path() + "/server-0.key"), before);
}

TEST(KeyFilesTest, BadKeyFilesAreRefusedNamingTheFile) {
  testing::TempDir dir;
  auto a = WriteKeyFiles(dir.path(), "a");
  auto b = WriteKeyFiles(dir.path(), "b");
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string garbage = dir.path() + "/garbage.key";
  std::ofstream(garbage) << "public-key = not a key\nsecret-key = neither\n";
  // A pair whose public key is not the secret key's.
  const std::string mismatched = dir.path() + "/mismatched.key";
  std::ofstream(mismatched) << "public-key = " << a->public_key << "\nsecret-key = "
                            << b->secret_key << "\n";
  for (const std::string& path : {garbage, mismatched, dir.path() + "/missing.key"}) {
    auto read = ReadKeyPairFile(path);
    ASSERT_FALSE(read.ok()) << path;
    EXPECT_NE(read.status().message().find(path), std::string::npos) << read.status().ToString();
  }
  EXPECT_FALSE(ReadPublicKeyFile(garbage).ok());
}

TEST(KeyFilesTest, ValidationNamesTheBadEntry) {
  TransportSecurity security;
  auto own = GenerateKeyPair();
  ASSERT_TRUE(own.ok());
  security.own = *own;
  security.trusted.push_back(TrustedKey{"alice", own->public_key, PeerRole::kAdmin});
  security.trusted.push_back(TrustedKey{"bob", "short", PeerRole::kTrainer});
  Status status = ValidateSecurity(security);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("bob"), std::string::npos) << status.ToString();
}

// A ROUTER that trusts `trainer` (as a trainer) and `admin` (as an admin), bound at `bind`.
class CurveServer {
 public:
  CurveServer(const KeyPair& trainer, const KeyPair& admin,
              const std::string& bind = "tcp://127.0.0.1:*")
      : keys_(*GenerateKeyPair()),
        context_(1, TransportSecurity{keys_, "",
                                      {{"trainer", trainer.public_key, PeerRole::kTrainer},
                                       {"admin", admin.public_key, PeerRole::kAdmin}},
                                      false}) {
    auto made = MakeSocket(context_, SocketKind::kRouter);
    EXPECT_TRUE(made.ok());
    socket_ = std::move(made).value();
    auto bound = BindSocket(socket_, bind);
    EXPECT_TRUE(bound.ok()) << bound.status().ToString();
    endpoint_ = bound.ok() ? *bound : "";
  }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& public_key() const { return keys_.public_key; }
  Context& context() { return context_; }
  Result<ReceivedMessage> Receive(Millis timeout) { return ReceiveMessage(socket_, timeout); }

 private:
  KeyPair keys_;
  Context context_;
  Socket socket_;
  std::string endpoint_;
};

// Sends "hello" from a DEALER of a context with `own` keys (none: plain ZeroMQ).
Status SendHello(Context& context, const std::string& endpoint, const std::string& server_key,
                 Socket* socket) {
  ASSIGN_OR_RETURN(*socket, MakeSocket(context, SocketKind::kDealer));
  RETURN_IF_ERROR(ConnectSocket(*socket, endpoint, server_key));
  std::vector<Frame> frames;
  frames.emplace_back(std::string_view("hello"));
  return SendFrames(*socket, frames);
}

// Each transport another process can reach: tcp on loopback, and ipc (a socket file).
class CurveTransportKindTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string Bind() const {
    return GetParam() == "tcp" ? "tcp://127.0.0.1:*" : "ipc://" + dir_.path() + "/ember.sock";
  }
  testing::TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Transports, CurveTransportKindTest, ::testing::Values("tcp", "ipc"));

TEST_P(CurveTransportKindTest, TrustedKeysGetThroughWithTheirRole) {
  auto trainer = GenerateKeyPair(), admin = GenerateKeyPair();
  ASSERT_TRUE(trainer.ok() && admin.ok());
  CurveServer server(*trainer, *admin, Bind());
  ASSERT_EQ(server.endpoint().rfind(GetParam() + "://", 0), 0u) << server.endpoint();
  for (const auto& [keys, role] :
       {std::pair{*trainer, PeerRole::kTrainer}, std::pair{*admin, PeerRole::kAdmin}}) {
    Context context(1, TransportSecurity{keys, server.public_key(), {}, false});
    Socket socket;
    ASSERT_TRUE(SendHello(context, server.endpoint(), server.public_key(), &socket).ok());
    auto message = server.Receive(Millis(10'000));
    ASSERT_TRUE(message.ok()) << message.status().ToString();
    ASSERT_EQ(message->frames.size(), 2u);  // identity, payload
    EXPECT_EQ(message->frames[1].view(), "hello");
    EXPECT_EQ(message->peer.role, role);
    EXPECT_EQ(message->peer.public_key, keys.public_key);
  }
}

TEST_P(CurveTransportKindTest, UnknownKeysAndPlainPeersAreRefused) {
  auto trainer = GenerateKeyPair(), admin = GenerateKeyPair(), stranger = GenerateKeyPair();
  ASSERT_TRUE(trainer.ok() && admin.ok() && stranger.ok());
  CurveServer server(*trainer, *admin, Bind());
  {
    Context context(1, TransportSecurity{*stranger, server.public_key(), {}, false});
    Socket socket;
    ASSERT_TRUE(SendHello(context, server.endpoint(), server.public_key(), &socket).ok());
    EXPECT_EQ(server.Receive(Millis(500)).status().code(), StatusCode::kDeadlineExceeded);
  }
  {
    Context plain;
    Socket socket;
    ASSERT_TRUE(SendHello(plain, server.endpoint(), "", &socket).ok());
    EXPECT_EQ(server.Receive(Millis(500)).status().code(), StatusCode::kDeadlineExceeded);
  }
  // A trusted key still gets through afterwards: refusals changed nothing.
  Context context(1, TransportSecurity{*trainer, server.public_key(), {}, false});
  Socket socket;
  ASSERT_TRUE(SendHello(context, server.endpoint(), server.public_key(), &socket).ok());
  auto message = server.Receive(Millis(10'000));
  ASSERT_TRUE(message.ok()) << message.status().ToString();
  EXPECT_EQ(message->peer.role, PeerRole::kTrainer);
}

TEST(CurveTransportTest, AMessageWithoutAnIdentityInAKeyedProcessIsUnauthenticated) {
  auto trainer = GenerateKeyPair(), admin = GenerateKeyPair();
  ASSERT_TRUE(trainer.ok() && admin.ok());
  CurveServer server(*trainer, *admin, "inproc://ember-test-unauthenticated");
  Socket socket;
  ASSERT_TRUE(SendHello(server.context(), server.endpoint(), "", &socket).ok());
  auto message = server.Receive(Millis(10'000));
  ASSERT_TRUE(message.ok()) << message.status().ToString();
  EXPECT_EQ(message->peer.role, PeerRole::kUnauthenticated);
  EXPECT_TRUE(message->peer.public_key.empty());
  for (PeerRoles senders : {kTrainers, kServers, kAdmins, kAnyRole}) {
    EXPECT_FALSE(message->peer.MaySend(senders)) << int(senders);
  }
  EXPECT_FALSE(message->peer.Acts(PeerRole::kTrainer));
}

TEST(CurveTransportTest, AKeyedProcessRefusesTransportsItCannotAuthenticate) {
  auto own = GenerateKeyPair();
  ASSERT_TRUE(own.ok());
  Context context(1, TransportSecurity{*own, "", {}, false});
  auto socket = MakeSocket(context, SocketKind::kRouter);
  ASSERT_TRUE(socket.ok());
  auto bound = BindSocket(*socket, "ws://127.0.0.1:*");
  ASSERT_EQ(bound.status().code(), StatusCode::kFailedPrecondition) << bound.status().ToString();
  EXPECT_NE(bound.status().message().find("ws://127.0.0.1:*"), std::string::npos);
  Status connected = ConnectSocket(*socket, "udp://127.0.0.1:5", own->public_key);
  EXPECT_EQ(connected.code(), StatusCode::kFailedPrecondition) << connected.ToString();
}

TEST(CurveTransportTest, AConnectionWithKeysMustNameTheServersKey) {
  auto own = GenerateKeyPair();
  ASSERT_TRUE(own.ok());
  Context context(1, TransportSecurity{*own, "", {}, false});
  auto socket = MakeSocket(context, SocketKind::kDealer);
  ASSERT_TRUE(socket.ok());
  for (const char* endpoint : {"tcp://127.0.0.1:5", "ipc:///tmp/ember-none.sock"}) {
    Status connected = ConnectSocket(*socket, endpoint);
    EXPECT_EQ(connected.code(), StatusCode::kFailedPrecondition) << connected.ToString();
  }
}

TEST(CurveTransportTest, BindingBeyondLoopbackWithoutKeysIsRefused) {
  Context plain;
  auto socket = MakeSocket(plain, SocketKind::kRouter);
  ASSERT_TRUE(socket.ok());
  // Refused before anything is bound: no port opens on any interface.
  auto bound = BindSocket(*socket, "tcp://0.0.0.0:*");
  ASSERT_EQ(bound.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bound.status().message().find("ember keygen"), std::string::npos);
  EXPECT_NE(bound.status().message().find("--insecure"), std::string::npos);
  EXPECT_TRUE(BindSocket(*socket, "tcp://127.0.0.1:*").ok());
  EXPECT_TRUE(IsLoopbackEndpoint("tcp://127.0.0.1:5"));
  EXPECT_TRUE(IsLoopbackEndpoint("inproc://x"));
  EXPECT_FALSE(IsLoopbackEndpoint("tcp://10.0.0.1:5"));
  EXPECT_FALSE(IsLoopbackEndpoint("tcp://*:5"));
}

}  // namespace
}  // namespace ember
