#include <gtest/gtest.h>

#include <vector>

#include "src/util/error.h"
#include "transports/ib/mr_cache.h"

using namespace weft::ib;

namespace {

struct FakeHca {
  std::vector<std::pair<uintptr_t, size_t>> live;
  std::vector<uint32_t> liveKeys;
  uint32_t nextKey = 100;
  MrCache::RegisterFn reg() {
    return [this](uintptr_t base, size_t bytes) {
      live.push_back({base, bytes});
      liveKeys.push_back(nextKey);
      MrKeys k;
      k.handle = reinterpret_cast<void*>(uintptr_t(nextKey));
      k.lkey = nextKey;
      k.rkey = nextKey + 1;
      nextKey += 2;
      return k;
    };
  }
  MrCache::DeregisterFn dereg() {
    return [this](const MrKeys& k) {
      for (size_t i = 0; i < liveKeys.size(); ++i) {
        if (liveKeys[i] != k.lkey) continue;
        liveKeys.erase(liveKeys.begin() + static_cast<long>(i));
        live.erase(live.begin() + static_cast<long>(i));
        return;
      }
      ADD_FAILURE() << "deregistered an unknown key " << k.lkey;
    };
  }
};

}  // namespace

TEST(IbMrCache, ReusesContainingRegionAndCountsReferences) {
  FakeHca hca;
  alignas(4096) static char buf[4 * 4096];
  {
    MrCache cache(hca.reg(), hca.dereg());
    MrKeys a = cache.acquire(buf + 100, 5000);
    ASSERT_EQ(hca.live.size(), 1u);
    EXPECT_EQ(hca.live[0].first, reinterpret_cast<uintptr_t>(buf));  // page aligned down
    EXPECT_EQ(hca.live[0].second, 8192u);                            // and up
    MrKeys b = cache.acquire(buf + 4096, 100);  // inside the first registration
    EXPECT_EQ(b.lkey, a.lkey);
    EXPECT_EQ(cache.registrations(), 1u);
    MrKeys c = cache.acquire(buf + 8192, 4096);  // outside: a new one
    EXPECT_NE(c.lkey, a.lkey);
    EXPECT_EQ(cache.regions(), 2u);
    cache.release(c);
    EXPECT_EQ(cache.regions(), 1u);
    cache.release(a);
    EXPECT_EQ(cache.regions(), 1u) << "b still holds it";
    cache.release(b);
    EXPECT_EQ(cache.regions(), 0u);
    EXPECT_TRUE(hca.live.empty());
    EXPECT_THROW(cache.release(a), weft::Error);
    EXPECT_THROW(cache.acquire(buf, 0), weft::Error);
    cache.acquire(buf, 1);
  }
  EXPECT_TRUE(hca.live.empty()) << "the destructor deregisters what is left";
}
