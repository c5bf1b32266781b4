#include "benchmarks/common/verify.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace weft::bench {
namespace {

uint64_t mix(uint64_t rank, uint64_t index) {
  uint64_t x = index * 0x9E3779B97F4A7C15ull ^ (rank + 1) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return x;
}

// Returns the number of ranks that may contribute non-zero values to one
// element and the largest value each may contribute.
void sumBudget(const CheckSpec& spec, int64_t* contributors, int64_t* maxValue) {
  const int64_t bound = typeInfo(spec.type).exactIntBound;
  const int64_t scale = spec.op == BenchOp::MulSum ? 2 : 1;
  *contributors = std::max<int64_t>(1, std::min<int64_t>(spec.nranks, bound / scale));
  *maxValue = std::max<int64_t>(1, std::min<int64_t>(bound / (*contributors * scale), 100));
}

double combine(const CheckSpec& spec, auto&& valueOfRank) {
  const int n = spec.nranks;
  switch (spec.op) {
    case BenchOp::Sum:
    case BenchOp::Avg:
    case BenchOp::MulSum: {
      double sum = 0;
      for (int r = 0; r < n; ++r) {
        sum += valueOfRank(r) * (spec.op == BenchOp::MulSum ? mulSumScalar(r) : 1.0);
      }
      if (spec.op != BenchOp::Avg) return sum;
      return typeInfo(spec.type).isFloat ? sum / n : std::trunc(sum / n);
    }
    case BenchOp::Prod: {
      double product = 1;
      for (int r = 0; r < n; ++r) product *= valueOfRank(r);
      return product;
    }
    case BenchOp::Max:
    case BenchOp::Min: {
      double best = valueOfRank(0);
      for (int r = 1; r < n; ++r) {
        double v = valueOfRank(r);
        best = spec.op == BenchOp::Max ? std::max(best, v) : std::min(best, v);
      }
      return best;
    }
  }
  return 0;
}

}  // namespace

double mulSumScalar(int rank) { return (rank & 1) ? 2.0 : 1.0; }

double inputValue(const CheckSpec& spec, int rank, size_t index) {
  const auto n = static_cast<uint64_t>(spec.nranks);
  const uint64_t slot = (index + static_cast<uint64_t>(rank)) % n;  // rotates which ranks contribute
  const uint64_t random = mix(static_cast<uint64_t>(rank), index);
  if (spec.op == BenchOp::Prod) {
    const auto twos = static_cast<uint64_t>(std::min(spec.nranks, typeInfo(spec.type).maxPow2));
    return (slot < twos && (random & 1)) ? 2.0 : 1.0;
  }
  int64_t contributors, maxValue;
  sumBudget(spec, &contributors, &maxValue);
  if (slot >= static_cast<uint64_t>(contributors)) return 0.0;
  return static_cast<double>(1 + random % static_cast<uint64_t>(maxValue));
}

void fillInput(const CheckSpec& spec, void* send, size_t sendCount) {
  for (size_t i = 0; i < sendCount; ++i) storeElement(spec.type, send, i, inputValue(spec, spec.rank, i));
}

void poison(void* buffer, size_t bytes) { std::memset(buffer, 0xff, bytes); }

bool hasResult(const CheckSpec& spec) { return spec.kind != CollKind::Reduce || spec.rank == spec.root; }

double expectedValue(const CheckSpec& spec, const Shape& shape, size_t j) {
  const size_t block = shape.paramCount;
  switch (spec.kind) {
    case CollKind::AllReduce:
    case CollKind::Reduce:
      return combine(spec, [&](int r) { return inputValue(spec, r, j); });
    case CollKind::ReduceScatter: {
      const size_t index = static_cast<size_t>(spec.rank) * block + j;
      return combine(spec, [&](int r) { return inputValue(spec, r, index); });
    }
    case CollKind::AllGather:
      return inputValue(spec, static_cast<int>(j / block), j % block);
    case CollKind::Broadcast:
      return inputValue(spec, spec.root, j);
    case CollKind::AllToAll:
      return inputValue(spec, static_cast<int>(j / block), static_cast<size_t>(spec.rank) * block + j % block);
    case CollKind::SendRecv:
      return inputValue(spec, (spec.rank - 1 + spec.nranks) % spec.nranks, j);
  }
  return 0;
}

long long countWrong(const CheckSpec& spec, const Shape& shape, const void* recv) {
  if (!hasResult(spec)) return 0;
  const bool tolerant = spec.op == BenchOp::Avg && typeInfo(spec.type).isFloat;
  long long wrong = 0;
  for (size_t j = 0; j < shape.recvCount; ++j) {
    const double expected = expectedValue(spec, shape, j);
    const double got = loadElement(spec.type, recv, j);
    // Stored expectation: the value after rounding into the type.
    char stored[8];
    storeElement(spec.type, stored, 0, expected);
    const double representable = loadElement(spec.type, stored, 0);
    bool ok;
    if (tolerant) {
      ok = std::fabs(got - expected) <= 2 * ulpAt(spec.type, expected);
    } else {
      ok = got == representable;
    }
    if (!ok) ++wrong;
  }
  return wrong;
}

}  // namespace weft::bench
