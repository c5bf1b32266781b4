// The perf binaries' command line (benchmarks/common/options.h): the input,
// cut at NUL bytes, is argv[1..]. Parsing runs twice per input (a second
// parse must not see the first's state), and an accepted sweep is walked.
#include <cstdio>
#include <string>
#include <vector>

#include "benchmarks/common/options.h"
#include "tests/fuzz/fuzz_common.h"

using namespace weft::bench;

namespace {

ParseResult parse(const std::vector<std::string>& words) {
  // Fresh copies each time: the parser must keep no pointer into them.
  std::vector<std::vector<char>> store;
  std::vector<char*> argv;
  store.push_back({'p', 'e', 'r', 'f', 0});
  for (const auto& w : words) store.emplace_back(w.c_str(), w.c_str() + w.size() + 1);
  for (auto& s : store) argv.push_back(s.data());
  argv.push_back(nullptr);
  return parseOptions(static_cast<int>(store.size()), argv.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words;
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  if (!cur.empty()) words.push_back(cur);
  if (words.size() > 64) words.resize(64);
  const ParseResult first = parse(words);
  const ParseResult second = parse(words);
  if (first.error != second.error) fprintf(stderr, "first: '%s', second: '%s'\n", first.error.c_str(), second.error.c_str());
  WEFT_FUZZ_CHECK(first.error == second.error);
  if (!first.error.empty() || first.options.help) return 0;
  const Options& o = first.options;
  WEFT_FUZZ_CHECK(o.minBytes <= o.maxBytes);
  const std::vector<size_t> sizes = sweepSizes(o);
  WEFT_FUZZ_CHECK(!sizes.empty() && sizes.front() == o.minBytes);
  for (size_t i = 1; i < sizes.size(); ++i) {
    WEFT_FUZZ_CHECK(sizes[i] > sizes[i - 1] && sizes[i] <= o.maxBytes);
    if (o.stepFactor > 1) WEFT_FUZZ_CHECK(sizes[i] / o.stepFactor == sizes[i - 1]);
  }
  return 0;
}
