// Published test vectors: FIPS 180-4 examples for SHA-256, RFC 4231 for HMAC.
#include "src/util/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace weft {
namespace {

std::string hex(const Digest256& d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::string sha(const std::string& text) {
  Sha256 h;
  h.update(text.data(), text.size());
  return hex(h.finish());
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesHashLikeTheWhole) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += static_cast<char>(i * 31 + 7);
  for (size_t cut : {0, 1, 55, 56, 63, 64, 65, 128, 299}) {
    Sha256 h;
    h.update(text.data(), cut);
    h.update(text.data() + cut, text.size() - cut);
    EXPECT_EQ(hex(h.finish()), sha(text)) << "cut at " << cut;
  }
}

std::string hmac(const std::string& key, const std::string& msg) {
  HmacSha256 h(key.data(), key.size());
  return hex(h.update(msg.data(), msg.size()).finish());
}

TEST(HmacSha256, Rfc4231Vectors) {
  EXPECT_EQ(hmac(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than a block is hashed first (test case 6).
  EXPECT_EQ(hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(ConstantTimeEqual, ComparesEveryByte) {
  uint8_t a[16] = {}, b[16] = {};
  EXPECT_TRUE(constantTimeEqual(a, b, 16));
  b[15] = 1;
  EXPECT_FALSE(constantTimeEqual(a, b, 16));
  EXPECT_TRUE(constantTimeEqual(a, b, 15));
}

}  // namespace
}  // namespace weft
