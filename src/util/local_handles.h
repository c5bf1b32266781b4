// Memory that threads of one process hand each other through the bootstrap.
//
// Such a peer is sent a random token, never an address: a token names
// memory only if this process published it, so a peer that merely claims
// to share the process (its PeerInfo says so) cannot make this one
// dereference an address of its choosing. The registry holds a reference
// until the peer takes it, so memory published by a rank that finishes (and
// destroys its communicator) before its peer connects stays valid for that
// peer; the peer's connection then owns it with the publisher's.
#pragma once

#include <cstdint>
#include <memory>

namespace weft::local_handles {

// A fresh, non-zero token for p, valid until taken or withdrawn.
uint64_t publish(std::shared_ptr<void> p);
// What `token` names in this process, removed from the registry; nullptr
// when it names nothing here (never published, or already taken).
std::shared_ptr<void> take(uint64_t token);
// Drops a token nobody took (a peer that never came).
void withdraw(uint64_t token);

}  // namespace weft::local_handles
