// Byte layouts of the unique id and of the bootstrap's TCP messages.
//
// Both ends are the same library version on machines of the same byte order
// (a communicator never mixes architectures), so structs travel as raw bytes;
// the magic and version fields catch a stray or mismatched peer. Every
// connection opens with the mutual handshake of handshake.h (the secret
// itself never travels); the hello after it and every later message carry a
// MAC from the session's key.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "src/bootstrap/bootstrap.h"
#include "src/util/socket.h"

namespace weft::bootstrap_wire {

constexpr uint64_t kIdMagic = 0x5746544944303031ull;  // "WFTID001"
constexpr uint32_t kVersion = 2;
constexpr uint32_t kRootHelloMagic = 0x57465248;  // "WFRH"
constexpr uint32_t kRootReplyMagic = 0x57465252;  // "WFRR"
constexpr uint32_t kPeerHelloMagic = 0x57465048;  // "WFPH"

// Flag in UniqueIdLayout::flags: the id names a WEFT_COMM_ID address, and
// rank 0's join starts the root there unless this process already runs it.
constexpr uint32_t kRootAtRank0 = 1u << 0;

struct UniqueIdLayout {
  uint64_t magic;
  uint32_t version;
  uint32_t flags;
  SocketAddress root;
  uint8_t secret[16];
};
static_assert(sizeof(UniqueIdLayout) <= WEFT_UNIQUE_ID_BYTES);
static_assert(std::is_trivially_copyable_v<UniqueIdLayout>);

// Rank -> root after the handshake, followed by its MAC.
struct RootHello {
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  int32_t nranks;
  SocketAddress listen;  // where this rank accepts peer connections
};

enum RootStatus : int32_t {
  kRootOk = 0,
  kRootNranksMismatch = 1,
  kRootDuplicateRank = 2,
  kRootTimedOut = 3,
  // The root's process ran out of descriptors or threads while ranks joined.
  kRootOutOfResources = 4,
};

// The root refuses hellos that claim more ranks (its table would be huge).
constexpr int32_t kMaxRanks = 1 << 20;

// Root -> rank; followed by nranks SocketAddress when status is kRootOk, then
// a MAC over both.
struct RootReply {
  uint32_t magic;
  int32_t status;
  int32_t nranks;
  int32_t jobNonce;  // kRootOk: random per set-up, part of the ranks' peer key
};

// Rank -> rank after the handshake, followed by its MAC.
struct PeerHello {
  uint32_t magic;
  uint32_t version;
  int32_t fromRank;
  int32_t nranks;
};

// Every message after the hello: this header, then `bytes` payload bytes.
// The MAC covers tag, bytes and the payload (handshake::StreamMac).
struct FrameHeader {
  uint64_t tag;
  uint64_t bytes;
  uint8_t mac[16];
};
constexpr size_t kFrameSignedBytes = 2 * sizeof(uint64_t);  // the header's part under the MAC

// Tags from here up are the bootstrap's own (goodbye, all-gather, barrier).
constexpr uint64_t kFirstReservedTag = 0xFFFFFFFFFFFFFF00ull;
constexpr uint64_t kGoodbyeTag = 0xFFFFFFFFFFFFFFFFull;
constexpr uint64_t kAllGatherTag = 0xFFFFFFFFFFFFFFFEull;
constexpr uint64_t kBarrierTag = 0xFFFFFFFFFFFFFFFDull;
// A query (Bootstrap::query) and its reply; both payloads start with the
// query's number, so a late reply to an earlier query is told apart. The
// reader thread answers a query itself; replies go to the mailbox.
constexpr uint64_t kQueryTag = 0xFFFFFFFFFFFFFFFCull;
constexpr uint64_t kQueryReplyTag = 0xFFFFFFFFFFFFFFFBull;

// The sender retires this connection (its cache of open connections is
// full): the receiver closes it after the frames before it, and the sender
// waits for that close before it opens another, so frames stay in order.
constexpr uint64_t kCloseTag = 0xFFFFFFFFFFFFFFFAull;

// The one byte a receiver writes back on a connection into it when it holds
// as many as it may (WEFT_BOOTSTRAP_MAX_INCOMING): please retire this one.
// The sender's inbox thread answers with a close frame, as for a retirement
// of its own. Unauthenticated: a forged one costs a reconnect, nothing more.
constexpr char kRetireRequest = 'R';

// How long a query's reply may take to send.
constexpr int64_t kQueryReplyMs = 1000;

// Bigger frames are taken for garbage: the bootstrap carries small messages.
// A frame's buffer grows as its bytes arrive, so a header that claims much
// and sends little costs little.
constexpr uint64_t kMaxFrameBytes = 1ull << 30;

// How long an accepted connection may take to send its hello.
constexpr int64_t kHelloTimeoutMs = 5000;

// The checks of what a peer sent, apart from the I/O that reads it (so they
// can be tested and fuzzed on their own). Each returns an empty string when
// the message is acceptable, else what is wrong with it.

// A unique id handed in by the application: magic, version, root address.
// The key ranks prove to each other: the secret, bound to one set-up by the
// root's random nonce and table of every rank's listening address. A process
// that holds the secret but was not admitted by the root (a stale or second
// launch, a process scanning ports) cannot connect to a rank as a rank.
Secret derivePeerKey(const Secret& secret, int32_t jobNonce, const std::vector<SocketAddress>& table);

std::string uniqueIdProblem(const UniqueIdLayout& l);
// A rank's hello at the root.
std::string rootHelloProblem(const RootHello& h);
// A rank's hello at rank `self` of `nranks`.
std::string peerHelloProblem(const PeerHello& h, int self, int nranks);
// A frame header (before its payload is read).
std::string frameHeaderProblem(const FrameHeader& h);
// How many SocketAddress entries follow the root's reply on the wire.
size_t rootReplyTableEntries(const RootReply& r, int nranks);
// The root's reply to rank `rank` of `nranks`, once its MAC checked out:
// throws weft::Error naming what is wrong (a refusal, a wrong rank count).
void checkRootReply(const RootReply& r, int rank, int nranks, const std::string& rootName);

}  // namespace weft::bootstrap_wire
