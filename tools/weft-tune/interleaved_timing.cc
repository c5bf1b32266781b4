#include "tools/weft-tune/interleaved_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace weft::tune {
namespace {

void check(weftResult_t r, const char* what) {
  if (r != weftSuccess) throw std::runtime_error(std::string(what) + " failed: " + weftGetErrorString(r) + ": " +
                                                 weftGetLastError(nullptr));
}

double nowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Small integers, so that every sum over ranks is exact in float32.
float inputAt(size_t i, int rank) { return float((i * 7 + size_t(rank) * 3) % 16); }

// A rank's input and output buffers: vectors, or weftMemAlloc memory
// registered with every timed communicator.
class Buffers {
 public:
  Buffers(size_t count, const std::vector<weftComm_t>* registerWith) {
    if (!registerWith) {
      in_.resize(count);
      out_.resize(count);
      inPtr_ = in_.data();
      outPtr_ = out_.data();
      return;
    }
    registered_ = true;
    void* p = nullptr;
    check(weftMemAlloc(&p, count * sizeof(float)), "weftMemAlloc");
    inPtr_ = static_cast<float*>(p);
    check(weftMemAlloc(&p, count * sizeof(float)), "weftMemAlloc");
    outPtr_ = static_cast<float*>(p);
    for (weftComm_t c : *registerWith)
      for (float* b : {inPtr_, outPtr_}) {
        void* h = nullptr;
        check(weftCommRegister(c, b, count * sizeof(float), &h), "weftCommRegister");
        handles_.push_back({c, h});
      }
  }
  ~Buffers() {
    if (!registered_) return;
    for (auto [c, h] : handles_) weftCommDeregister(c, h);
    weftMemFree(inPtr_);
    weftMemFree(outPtr_);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  float* in() { return inPtr_; }
  float* out() { return outPtr_; }

 private:
  std::vector<float> in_, out_;
  float* inPtr_ = nullptr;
  float* outPtr_ = nullptr;
  bool registered_ = false;
  std::vector<std::pair<weftComm_t, void*>> handles_;
};

class Rank {
 public:
  Rank(weftComm_t sync, int rank, int nranks, size_t maxCount, const std::vector<weftComm_t>* registerWith)
      : sync_(sync), rank_(rank), nranks_(nranks), buf_(maxCount, registerWith) {
    for (size_t i = 0; i < maxCount; i++) buf_.in()[i] = inputAt(i, rank);
  }

  void barrier() {
    double x = 0;
    check(weftAllReduce(&x, &x, 1, weftFloat64, weftSum, sync_, nullptr), "synchronising AllReduce");
  }

  // Max (or sum) over ranks, in place.
  void reduce(std::vector<double>* v, weftRedOp_t op) {
    check(weftAllReduce(v->data(), v->data(), v->size(), weftFloat64, op, sync_, nullptr), "AllReduce of timings");
  }

  double timeCalls(weftComm_t c, size_t count, int iters) {
    barrier();
    const double t0 = nowUs();
    for (int i = 0; i < iters; i++)
      check(weftAllReduce(buf_.in(), buf_.out(), count, weftFloat32, weftSum, c, nullptr), "timed AllReduce");
    return (nowUs() - t0) / iters;
  }

  long wrongElements(weftComm_t c, size_t count) {
    float* out = buf_.out();
    std::fill(out, out + count, std::nanf(""));
    check(weftAllReduce(buf_.in(), out, count, weftFloat32, weftSum, c, nullptr), "checked AllReduce");
    long wrong = 0;
    for (size_t i = 0; i < count; i++) {
      double expect = 0;
      for (int r = 0; r < nranks_; r++) expect += inputAt(i, r);
      wrong += out[i] != float(expect);
    }
    return wrong;
  }

 private:
  weftComm_t sync_;
  int rank_;
  int nranks_;
  Buffers buf_;
};

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

std::vector<size_t> sweepSizes(size_t min, size_t max, double factor) {
  std::vector<size_t> sizes;
  for (double b = double(min); b < double(max); b *= factor) sizes.push_back(size_t(b));
  sizes.push_back(max);
  return sizes;
}

std::vector<SweepPoint> sweepAllReduce(weftComm_t sync, const std::vector<weftComm_t>& timed, int rank, int nranks,
                                       const SweepOptions& o) {
  const size_t maxBytes = o.sizes.empty() ? 4 : *std::max_element(o.sizes.begin(), o.sizes.end());
  Rank me(sync, rank, nranks, std::max<size_t>(1, maxBytes / sizeof(float)), o.registered ? &timed : nullptr);
  const size_t nc = timed.size();
  std::vector<SweepPoint> points;
  for (size_t bytes : o.sizes) {
    const size_t count = std::max<size_t>(1, bytes / sizeof(float));
    SweepPoint p;
    p.bytes = count * sizeof(float);
    // Warm up (connections, plan caches), then size the samples by the
    // fastest communicator's time for one call.
    std::vector<double> first(nc);
    for (size_t k = 0; k < nc; k++) {
      me.timeCalls(timed[k], count, 2);
      first[k] = me.timeCalls(timed[k], count, 1);
    }
    me.reduce(&first, weftMax);
    const double fastest = std::max(*std::min_element(first.begin(), first.end()), 0.1);
    p.iters = int(std::clamp(std::lround(o.sampleUs / fastest), 1L, 10000L));

    // A sample of one call is noisier than a mean over many: twice the
    // rounds where a sample is a single call (the largest sizes).
    const int rounds = p.iters == 1 ? 2 * o.rounds : o.rounds;
    std::vector<double> samples(size_t(rounds) * nc);
    for (int r = 0; r < rounds; r++)
      for (size_t j = 0; j < nc; j++) {
        const size_t k = (j + size_t(r)) % nc;
        samples[size_t(r) * nc + k] = me.timeCalls(timed[k], count, p.iters);
      }
    me.reduce(&samples, weftMax);
    for (size_t k = 0; k < nc; k++) {
      std::vector<double> mine;
      for (int r = 0; r < rounds; r++) mine.push_back(samples[size_t(r) * nc + k]);
      p.medianUs.push_back(median(mine));
      p.samplesUs.push_back(std::move(mine));
    }
    std::vector<double> wrong(nc);
    for (size_t k = 0; k < nc; k++) wrong[k] = double(me.wrongElements(timed[k], count));
    me.reduce(&wrong, weftSum);
    for (double w : wrong) p.wrong.push_back(long(w));
    points.push_back(std::move(p));
  }
  return points;
}

}  // namespace weft::tune
