// Loading libibverbs: the dma-buf entry point is optional (an rdma-core
// older than v34 lacks it: GPUDirect then cannot use dma-buf, nothing
// crashes), the others are required. Uses stand-in libraries (fake_verbs.c).
#include <gtest/gtest.h>

#include "transports/ib/verbs_loader.h"

using namespace weft::ib;

TEST(VerbsLoader, CurrentLibraryHasDmaBuf) {
  VerbsLoad l = loadVerbsFrom(FAKE_VERBS_DMABUF);
  ASSERT_TRUE(l.ok) << l.why;
  EXPECT_NE(l.verbs.regDmabufMr, nullptr);
  EXPECT_NE(l.verbs.regMr, nullptr);
  int n = -1;
  EXPECT_EQ(l.verbs.getDeviceList(&n), nullptr);
  EXPECT_EQ(n, 0);
}

TEST(VerbsLoader, OldLibraryLoadsWithoutDmaBuf) {
  VerbsLoad l = loadVerbsFrom(FAKE_VERBS_OLD);
  ASSERT_TRUE(l.ok) << l.why;
  EXPECT_EQ(l.verbs.regDmabufMr, nullptr);
  EXPECT_NE(l.verbs.regMr, nullptr);
}

TEST(VerbsLoader, MissingRequiredSymbolIsNamed) {
  VerbsLoad l = loadVerbsFrom(FAKE_VERBS_BROKEN);
  EXPECT_FALSE(l.ok);
  EXPECT_NE(l.why.find("lacks ibv_modify_qp"), std::string::npos) << l.why;
}

TEST(VerbsLoader, MissingLibraryIsAReasonNotACrash) {
  VerbsLoad l = loadVerbsFrom("libweft-no-such-verbs.so.1");
  EXPECT_FALSE(l.ok);
  EXPECT_FALSE(l.why.empty());
}
