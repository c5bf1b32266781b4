// A stand-alone driver for the fuzz targets in the ordinary (gcc) build: it
// replays every file of the seed corpus, then a fixed number of seeded
// random mutations of them, through LLVMFuzzerTestOneInput. No coverage
// feedback: this is the CI smoke (a crash, an escaped exception or a hang
// fails the test); the coverage-guided runs are tools/fuzz.sh's.
//
//   fuzz_<target> [--mutations=N] [--seed=S] [--max-seconds=T] <corpus dir or file>...
//
// A failing input is written to ./fuzz-<target>-failure before it runs, so
// it survives the crash and can be added to the corpus.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Input = std::vector<uint8_t>;

struct Args {
  long mutations = 2000;
  unsigned long seed = 1;
  double maxSeconds = 10;
  std::vector<std::string> paths;
};

bool readFile(const std::filesystem::path& p, Input* out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

std::vector<Input> loadCorpus(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> files;
  for (const auto& p : paths) {
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.emplace_back(p);
    }
  }
  std::sort(files.begin(), files.end());  // the same order, so the same mutations, every run
  std::vector<Input> corpus;
  for (const auto& f : files) {
    Input in;
    if (readFile(f, &in)) corpus.push_back(std::move(in));
    else fprintf(stderr, "cannot read %s\n", f.c_str());
  }
  return corpus;
}

// One of a few libFuzzer-like edits: flip a bit, set a byte to a boundary
// value, insert or erase a run, copy a run from elsewhere, cut the tail.
void mutate(Input* in, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; };
  static const uint8_t kInteresting[] = {0, 1, 0x7f, 0x80, 0xff, 0xfe, 0x10, 0x40};
  switch (rng() % 7) {
    case 0:
      if (!in->empty()) (*in)[pick(in->size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 1:
      if (!in->empty()) (*in)[pick(in->size())] = kInteresting[rng() % sizeof(kInteresting)];
      break;
    case 2: {
      const size_t at = pick(in->size() + 1), n = 1 + pick(8);
      Input run(n);
      for (auto& b : run) b = static_cast<uint8_t>(rng());
      in->insert(in->begin() + static_cast<long>(at), run.begin(), run.end());
      break;
    }
    case 3:
      if (!in->empty()) {
        const size_t at = pick(in->size()), n = 1 + pick(std::min<size_t>(8, in->size() - at));
        in->erase(in->begin() + static_cast<long>(at), in->begin() + static_cast<long>(at + n));
      }
      break;
    case 4:
      if (in->size() >= 2) {
        const size_t from = pick(in->size()), to = pick(in->size());
        const size_t n = 1 + pick(std::min(in->size() - from, in->size() - to));
        std::memmove(in->data() + to, in->data() + from, n);
      }
      break;
    case 5:
      if (!in->empty()) in->resize(pick(in->size()));
      break;
    default:
      if (in->size() >= 4) {  // a 32-bit field set to a boundary
        const size_t at = pick(in->size() - 3);
        static const uint32_t kWords[] = {0, 1, 0x7fffffffu, 0x80000000u, 0xffffffffu, 0x40000000u};
        const uint32_t w = kWords[rng() % std::size(kWords)];
        std::memcpy(in->data() + at, &w, sizeof(w));
      }
  }
}

Args parseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--mutations=", 0) == 0) a.mutations = std::atol(s.c_str() + 12);
    else if (s.rfind("--seed=", 0) == 0) a.seed = std::strtoul(s.c_str() + 7, nullptr, 0);
    else if (s.rfind("--max-seconds=", 0) == 0) a.maxSeconds = std::atof(s.c_str() + 14);
    else a.paths.push_back(s);
  }
  return a;
}

void keep(const std::string& path, const Input& in) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(in.data()), static_cast<std::streamsize>(in.size()));
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parseArgs(argc, argv);
  std::vector<Input> corpus = loadCorpus(args.paths);
  if (corpus.empty()) {
    fprintf(stderr, "no corpus inputs under the given paths\n");
    return 1;
  }
  const std::string name = std::filesystem::path(argv[0]).filename().string();
  const std::string failure = name + "-failure";
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (const Input& in : corpus) {
    keep(failure, in);
    LLVMFuzzerTestOneInput(in.data(), in.size());
  }
  std::mt19937_64 rng(args.seed);
  long done = 0;
  for (; done < args.mutations && elapsed() < args.maxSeconds; ++done) {
    Input in = corpus[rng() % corpus.size()];
    for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0; --edits) mutate(&in, rng);
    keep(failure, in);
    LLVMFuzzerTestOneInput(in.data(), in.size());
  }
  std::filesystem::remove(failure);
  printf("%s: %zu corpus inputs and %ld mutations (seed %lu) in %.2f s, no crash\n", name.c_str(), corpus.size(),
         done, args.seed, elapsed());
  return 0;
}
