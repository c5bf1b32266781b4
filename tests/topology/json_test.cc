#include <gtest/gtest.h>

#include "src/topology/json.h"
#include "src/util/error.h"

namespace weft::topo {
namespace {

TEST(TopoJson, ParsesNestedDocument) {
  Json j = Json::parse(R"({"a": [1, 2.5, -3e2], "b": {"c": "x\"y\u0041"}, "t": true, "n": null})");
  ASSERT_TRUE(j.isObject());
  const auto& a = j.find("a")->asArray("a");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[1].asNumber("a1"), 2.5);
  EXPECT_EQ(a[2].asInt("a2"), -300);
  EXPECT_EQ(j.find("b")->find("c")->asString("c"), "x\"yA");
  EXPECT_TRUE(j.find("t")->asBool("t"));
  EXPECT_TRUE(j.find("n")->isNull());
  EXPECT_EQ(j.find("missing"), nullptr);
}

TEST(TopoJson, DoublesRoundTripExactly) {
  Json::Array values{Json(0.1), Json(12.5), Json(1e-300), Json(20.6 * 18), Json(1.0 / 3)};
  Json back = Json::parse(Json(values).dump());
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(back.asArray("v")[i].asNumber("v"), values[i].asNumber("v"));
}

TEST(TopoJson, ErrorsNameLineAndColumn) {
  try {
    Json::parse("{\n  \"a\": 1,\n  \"b\" 2\n}");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Json::parse("[1, 2"), Error);
  EXPECT_THROW(Json::parse("{} x"), Error);
  EXPECT_THROW(Json::parse("\"abc"), Error);
  EXPECT_THROW(Json::parse(std::string(200, '[')), Error);  // depth bound
  EXPECT_THROW(Json::parse("1").asString("x"), Error);
}

}  // namespace
}  // namespace weft::topo
