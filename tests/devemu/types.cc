// The element types of the devemu tests: random inputs and the reference
// each output element is checked against (float64 with the type's rounding
// bound for float sums and products; exact for integers, Max/Min and copies).
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "src/exec/cuda/device_compute.cuh"
#include "src/kernels/functors.h"
#include "tests/devemu/harness.h"

namespace weft::devemu {
namespace {

using cuda::kOpAvg;
using cuda::kOpMax;
using cuda::kOpMin;
using cuda::kOpPreMulSum;
using cuda::kOpProd;

template <int T>
struct TypeImpl {
  using E = kernels::Elem<T>;
  using S = typename E::Store;
  using A = typename E::Acc;

  static S storeOf(A a) { return kernels::storeElem<E>(a); }
  static A accOf(const char* p) {
    S s;
    std::memcpy(&s, p, sizeof(S));
    return kernels::loadElem<E>(s);
  }
  static A scaleAcc() { return E::kIsFloat ? A(0.5) : A(3); }

  static void random(char* dst, std::mt19937_64& rng, int opKind) {
    S s;
    if constexpr (E::kIsFloat) {
      std::uniform_real_distribution<double> d(opKind == kOpProd ? 0.5 : -1.0, opKind == kOpProd ? 1.5 : 1.0);
      s = storeOf(A(d(rng)));
    } else {
      std::uniform_int_distribution<int64_t> d(-1000, 1000);
      s = S(d(rng));
    }
    std::memcpy(dst, &s, sizeof(S));
  }
  static void scalar(unsigned char dst[8]) {
    std::memset(dst, 0, 8);
    const S s = storeOf(scaleAcc());
    std::memcpy(dst, &s, sizeof(S));
  }
  static A apply(int opKind, A a, A b) {
    switch (opKind) {
      case kOpProd: return kernels::FuncProd<E>::apply(a, b);
      case kOpMax: return kernels::FuncMax<E>::apply(a, b);
      case kOpMin: return kernels::FuncMin<E>::apply(a, b);
      default: return kernels::FuncSum<E>::apply(a, b);
    }
  }
  static std::string show(const char* p) {
    if constexpr (E::kIsFloat) return std::to_string(double(accOf(p)));
    else return std::to_string(static_cast<long long>(accOf(p)));
  }

  static std::string check(const char* got, const std::vector<const char*>& terms, bool reduced, int opKind,
                           int nranks) {
    if (!reduced) {
      if (std::memcmp(got, terms[0], sizeof(S)) == 0) return {};
      return "got " + show(got) + ", want a copy of " + show(terms[0]);
    }
    if constexpr (!E::kIsFloat) {
      // Integer arithmetic wraps and is exact in any order.
      A r{};
      for (size_t i = 0; i < terms.size(); i++) {
        A x = accOf(terms[i]);
        if (opKind == kOpPreMulSum) x = A(x * scaleAcc());
        r = i ? apply(opKind, r, x) : x;
      }
      if (opKind == kOpAvg) r = kernels::avgDivide<E>(r, nranks);
      if (storeOf(r) == accOf(got)) return {};
      return "got " + show(got) + ", want " + std::to_string(static_cast<long long>(r));
    } else {
      double ref = 0, sumAbs = 0;
      for (size_t i = 0; i < terms.size(); i++) {
        double x = double(accOf(terms[i]));
        if (opKind == kOpPreMulSum) x *= double(scaleAcc());
        sumAbs += std::fabs(x);
        if (i == 0) ref = x;
        else if (opKind == kOpProd) ref *= x;
        else if (opKind == kOpMax) ref = std::fmax(ref, x);
        else if (opKind == kOpMin) ref = std::fmin(ref, x);
        else ref += x;
      }
      if (opKind == kOpAvg) ref /= nranks;
      const double v = double(accOf(got));
      double eps = sizeof(S) == 8 ? 0x1p-52 : sizeof(S) == 4 ? 0x1p-23 : T == weftFloat16 ? 0x1p-10 : 0x1p-7;
      const double k = double(terms.size() + 2);
      const double tol = (opKind == kOpMax || opKind == kOpMin) ? 0.0
                         : opKind == kOpProd                    ? eps * k * std::fabs(ref)
                                                                : eps * k * sumAbs;
      if (std::fabs(v - ref) <= tol) return {};
      return "got " + show(got) + ", want " + std::to_string(ref) + " (+-" + std::to_string(tol) + ")";
    }
  }

  static TypeOps ops() {
    TypeOps o;
    o.size = sizeof(S);
    o.random = &random;
    o.scalar = &scalar;
    o.check = &check;
    return o;
  }
};

}  // namespace

TypeOps typeOps(weftDataType_t t) {
  switch (t) {
    case weftFloat32: return TypeImpl<weftFloat32>::ops();
    case weftFloat16: return TypeImpl<weftFloat16>::ops();
    case weftBfloat16: return TypeImpl<weftBfloat16>::ops();
    case weftInt32: return TypeImpl<weftInt32>::ops();
    case weftFloat64: return TypeImpl<weftFloat64>::ops();
    case weftUint8: return TypeImpl<weftUint8>::ops();
    case weftInt64: return TypeImpl<weftInt64>::ops();
    default: throw std::invalid_argument("devemu: no reference for type " + std::to_string(int(t)));
  }
}

size_t typeBytes(weftDataType_t t) { return typeOps(t).size; }

}  // namespace weft::devemu
