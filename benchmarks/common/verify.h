// Correctness checking: inputs crafted so that every reduction is exact in
// any order, the expected result computed on the host, and a count of the
// elements that differ. See docs/benchmarks.md, "Correctness".
#pragma once

#include <cstddef>

#include "benchmarks/common/collective.h"
#include "benchmarks/common/dtype.h"

namespace weft::bench {

struct CheckSpec {
  CollKind kind;
  weftDataType_t type;
  BenchOp op;  // Sum for collectives without an op
  int nranks;
  int rank;
  int root;
};

// Rank `rank`'s input element `index` (an index into its send buffer), as
// the exact value stored. Values are small non-negative integers: sums (and
// PreMulSums) of all ranks stay within the type's run of exact integers
// because only a bounded number of ranks contribute a non-zero value to any
// element; products are of 1s and 2s below the largest exact power of two.
double inputValue(const CheckSpec& spec, int rank, size_t index);
// The PreMulSum scalar of a rank: 1 on even ranks, 2 on odd ranks.
double mulSumScalar(int rank);

// Writes this rank's inputs into its send buffer (sendCount elements).
void fillInput(const CheckSpec& spec, void* send, size_t sendCount);
// Fills bytes with a pattern that no expected value equals (NaN, -1).
void poison(void* buffer, size_t bytes);

// The expected value of element j of this rank's receive buffer.
double expectedValue(const CheckSpec& spec, const Shape& shape, size_t j);
// Whether this rank's receive buffer has a defined result (not so on the
// non-root ranks of Reduce).
bool hasResult(const CheckSpec& spec);
// Wrong elements among recv[0 .. shape.recvCount). Exact comparison, except
// floating-point avg, which allows 2 ulps (the library may multiply by 1/n
// before or after summing).
long long countWrong(const CheckSpec& spec, const Shape& shape, const void* recv);

}  // namespace weft::bench
