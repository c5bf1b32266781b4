// Memory that threads of one process hand each other through the bootstrap.
//
// Such a peer is sent a random token, never an address: a token names
// memory only if this process registered it, so a peer that merely claims
// to share the process (its PeerInfo says so) cannot make this one
// dereference an address of its choosing.
#pragma once

#include <cstdint>

namespace weft::local_handles {

// A fresh, non-zero token for p, valid until withdrawn.
uint64_t publish(void* p);
// What `token` names in this process, or nullptr when it names nothing here.
void* find(uint64_t token);
void withdraw(uint64_t token);

}  // namespace weft::local_handles
