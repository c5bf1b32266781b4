#include "src/util/local_handles.h"

#include <mutex>
#include <unordered_map>

#include "src/util/socket.h"

namespace weft::local_handles {

namespace {
struct Registry {
  std::mutex mu;
  std::unordered_map<uint64_t, std::shared_ptr<void>> byToken;
};
// Never destroyed: communicators may be torn down during process exit.
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}
}  // namespace

uint64_t publish(std::shared_ptr<void> p) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  uint64_t token = 0;
  while (token == 0 || r.byToken.count(token)) randomBytes(&token, sizeof(token));
  r.byToken[token] = std::move(p);
  return token;
}

std::shared_ptr<void> take(uint64_t token) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.byToken.find(token);
  if (it == r.byToken.end()) return nullptr;
  std::shared_ptr<void> p = std::move(it->second);
  r.byToken.erase(it);
  return p;
}

void withdraw(uint64_t token) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.byToken.erase(token);
}

}  // namespace weft::local_handles
