// The text the perf binaries print, line by line, in nccl-tests' layout so
// that existing dashboards and parsers read weft's results unchanged. Pure
// functions of their arguments: the unit tests compare them to nccl-tests
// sample lines byte for byte.
#pragma once

#include <cstddef>
#include <string>

namespace weft::bench {

// The nccl-tests output format version we reproduce. The version line keeps
// nccl-tests' words; the header/library codes are weft's version codes
// (WEFT_VERSION_CODE, e.g. 100 for 0.1.0), which are below 10000 and so can
// never be mistaken for an NCCL code (2.x.y >= 20000).
inline constexpr const char* kFormatVersion = "2.19.6";

std::string versionLine(int headerCode, int libraryCode);
std::string startLine(const std::string& testName);

struct ParamLineFields {
  int nThreads, nGpus;
  size_t minBytes, maxBytes, stepBytes, stepFactor;
  int warmupIters, iters, aggIters, checkIters;
  int graphLaunches = 0;  // -G, as nccl-tests prints it
};
std::string paramLine(const ParamLineFields& fields);

// One "#  Rank ..." line of the "# Using devices" block.
std::string deviceLine(int rank, int group, int pid, const std::string& host, int device,
                       const std::string& busId, const std::string& deviceName);

// The "#" line and the three header rows above the results.
std::string resultHeader();

// Formats value so it fits width characters: %.2f, then %.1f, then %.0f,
// then exponent notation.
std::string fitNumber(double value, int width);

// "size count type redop root" columns of a result line.
std::string resultPrefix(size_t bytes, size_t count, const std::string& typeName, const std::string& opName,
                         int root);
// One "time algbw busbw #wrong" group; wrong < 0 prints N/A (checking off).
std::string resultPart(double timeUs, double algBw, double busBw, long long wrong);

// "# Out of bounds values", "# Avg bus bandwidth", "#" lines.
std::string resultFooter(long long wrongTotal, double avgBusBw);
std::string concludedLine(const std::string& testName);

}  // namespace weft::bench
