// Compressed AllReduce and the reducer with threads as ranks: results
// against the reference bit for bit, error feedback's running sums, the
// bf16/fp16 bound, TopK at ratio 1 against the exact AllReduce, and every
// bad input (a clear code, a WARN line, the user's buffers untouched).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <cstring>
#include <string>
#include <vector>

#include "compress_reference.h"
#include "src/kernels/convert.h"
#include "src/kernels/reduce.h"
#include "tests/collectives/thread_ranks.h"
#include "tests/process/process_ranks.h"

namespace weft::test {
namespace {

weftCompressConfig config(int kind, double ratio = WEFT_COMPRESS_UNDEF_RATIO, int ef = WEFT_CONFIG_UNDEF_INT) {
  weftCompressConfig c = WEFT_COMPRESS_CONFIG_INITIALIZER;
  c.kind = kind;
  c.ratio = ratio;
  c.errorFeedback = ef;
  return c;
}

std::string err(int rank, const char* what, weftResult_t r) {
  return "rank " + std::to_string(rank) + ": " + what + ": " + weftGetErrorString(r) + "\n";
}

// Runs `steps` compressed AllReduces on every rank and records, per rank,
// the running sums of outputs and of all ranks' inputs.
struct RunningSums {
  std::vector<double> out, in;
};

double relGap(const RunningSums& s) {
  double gap = 0, norm = 0;
  for (size_t i = 0; i < s.out.size(); i++) {
    gap += (s.out[i] - s.in[i]) * (s.out[i] - s.in[i]);
    norm += s.in[i] * s.in[i];
  }
  return std::sqrt(gap / norm);
}

// Each rank checks every step against the reference, bit for bit.
std::string runAgainstReference(ThreadRanks& ranks, int kind, size_t count, double ratio, bool ef, int steps,
                                std::vector<RunningSums>* sums = nullptr) {
  const int n = ranks.size();
  return ranks.run([&](int r) -> std::string {
    weftCompressConfig cfg = config(kind, ratio, ef);
    weftCompressor_t c = nullptr;
    if (weftResult_t rc = weftCompressorCreate(ranks.comm(r), count, weftFloat32, &cfg, &c)) return err(r, "create", rc);
    ReferenceCompressor ref(kind, n, count, ratio, ef);
    RunningSums s{std::vector<double>(count, 0), std::vector<double>(count, 0)};
    std::string problems;
    for (int t = 0; t < steps && problems.empty(); t++) {
      std::vector<std::vector<float>> in(n);
      for (int q = 0; q < n; q++) in[q] = gradient(q, t, count, false);
      std::vector<float> out(count, -1.0f);
      if (weftResult_t rc = weftCompressedAllReduce(in[r].data(), out.data(), c, nullptr)) return err(r, "call", rc);
      const std::vector<float> expect = ref.step(in);
      if (memcmp(out.data(), expect.data(), count * sizeof(float)) != 0)
        problems = "rank " + std::to_string(r) + " step " + std::to_string(t) + ": result differs from the reference\n";
      for (size_t i = 0; i < count; i++) {
        s.out[i] += out[i];
        for (int q = 0; q < n; q++) s.in[i] += in[q][i];
      }
    }
    float* res = nullptr;
    size_t resCount = 0;
    weftCompressorResidual(c, &res, &resCount);
    const std::vector<float> expectRes = ref.residual(r);
    if (resCount != expectRes.size() || (resCount && memcmp(res, expectRes.data(), resCount * 4) != 0))
      problems += "rank " + std::to_string(r) + ": residual differs from the reference\n";
    if (sums) (*sums)[r] = s;
    weftCompressorDestroy(c);
    return problems;
  });
}

TEST(CompressRanks, TopKAndSignMatchTheReference) {
  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.status(), weftSuccess);
  EXPECT_EQ(runAgainstReference(ranks, weftCompressTopK, 1001, 0.05, true, 4), "");
  EXPECT_EQ(runAgainstReference(ranks, weftCompressTopK, 1001, 0.05, false, 2), "");
  EXPECT_EQ(runAgainstReference(ranks, weftCompressSign, 1001, 1.0, true, 4), "");
  EXPECT_EQ(runAgainstReference(ranks, weftCompressSign, 2, 1.0, true, 2), "");  // fewer entries than ranks
}

// With error feedback, sum(outputs) = sum(inputs) - residuals, so the gap
// stays bounded and its relative size shrinks as steps accumulate; without
// it the dropped entries pile up and the gap grows.
TEST(CompressRanks, ErrorFeedbackRunningSumTracksTheInput) {
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.status(), weftSuccess);
  for (int kind : {weftCompressTopK, weftCompressSign}) {
    const double ratio = kind == weftCompressTopK ? 0.05 : 1.0;
    std::vector<RunningSums> early(2), late(2), earlyNo(2), lateNo(2);
    ASSERT_EQ(runAgainstReference(ranks, kind, 512, ratio, true, 10, &early), "");
    ASSERT_EQ(runAgainstReference(ranks, kind, 512, ratio, true, 80, &late), "");
    ASSERT_EQ(runAgainstReference(ranks, kind, 512, ratio, false, 10, &earlyNo), "");
    ASSERT_EQ(runAgainstReference(ranks, kind, 512, ratio, false, 80, &lateNo), "");
    std::printf("kind %d: relative gap after 10 / 80 steps: %.4f / %.4f with error feedback, %.4f / %.4f without\n",
                kind, relGap(early[0]), relGap(late[0]), relGap(earlyNo[0]), relGap(lateNo[0]));
    const double gapEarly = relGap(early[0]), gapLate = relGap(late[0]);
    const double noEarly = relGap(earlyNo[0]), noLate = relGap(lateNo[0]);
    EXPECT_LT(gapLate, 0.6 * gapEarly) << "kind " << kind;
    EXPECT_LT(gapLate, 0.5 * noLate) << "kind " << kind;
    // Without feedback the absolute gap grows with the steps.
    double absNoEarly = noEarly, absNoLate = noLate;
    double inEarly = 0, inLate = 0;
    for (double x : earlyNo[0].in) inEarly += x * x;
    for (double x : lateNo[0].in) inLate += x * x;
    absNoEarly *= std::sqrt(inEarly);
    absNoLate *= std::sqrt(inLate);
    EXPECT_GT(absNoLate, 2 * absNoEarly) << "kind " << kind;
  }
}

// 16-bit buffers: the input converts exactly to float32, the scheme runs
// as for float32, and the result is rounded once into the buffer; so the
// reference is the float32 one on the rounded inputs, rounded at the end.
std::string runNarrowBuffers(ThreadRanks& ranks, int kind, weftDataType_t type, size_t count, double ratio, int steps) {
  const int n = ranks.size();
  auto narrowed = [&](const std::vector<float>& f) {
    std::vector<uint16_t> h(f.size());
    kernels::floatToNarrow(h.data(), f.data(), f.size(), type);
    return h;
  };
  auto widened = [&](const std::vector<uint16_t>& h) {
    std::vector<float> f(h.size());
    kernels::narrowToFloat(f.data(), h.data(), h.size(), type);
    return f;
  };
  return ranks.run([&](int r) -> std::string {
    weftCompressConfig cfg = config(kind, ratio, 1);
    weftCompressor_t c = nullptr;
    if (weftResult_t rc = weftCompressorCreate(ranks.comm(r), count, type, &cfg, &c)) return err(r, "create", rc);
    ReferenceCompressor ref(kind, n, count, ratio, true);
    std::string problems;
    for (int t = 0; t < steps && problems.empty(); t++) {
      std::vector<std::vector<float>> in(n);
      for (int q = 0; q < n; q++) in[q] = widened(narrowed(gradient(q, t, count, false)));
      std::vector<uint16_t> buf = narrowed(in[r]);  // in place, as DDP hooks call it
      if (weftResult_t rc = weftCompressedAllReduce(buf.data(), buf.data(), c, nullptr)) return err(r, "call", rc);
      if (buf != narrowed(ref.step(in)))
        problems = "rank " + std::to_string(r) + " step " + std::to_string(t) + ": 16-bit result differs\n";
    }
    weftCompressorDestroy(c);
    return problems;
  });
}

TEST(CompressRanks, TopKAndSignOn16BitBuffersMatchTheReference) {
  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.status(), weftSuccess);
  for (weftDataType_t type : {weftBfloat16, weftFloat16}) {
    EXPECT_EQ(runNarrowBuffers(ranks, weftCompressTopK, type, 777, 0.05, 3), "") << kernels::typeName(type);
    EXPECT_EQ(runNarrowBuffers(ranks, weftCompressSign, type, 777, 1.0, 3), "") << kernels::typeName(type);
  }
}

TEST(CompressRanks, TopKRatioOneEqualsTheExactAllReduce) {
  ThreadRanks ranks(4);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const size_t count = 3001;
  EXPECT_EQ(ranks.run([&](int r) -> std::string {
    weftCompressConfig cfg = config(weftCompressTopK, 1.0);
    weftCompressor_t c = nullptr;
    if (weftResult_t rc = weftCompressorCreate(ranks.comm(r), count, weftFloat32, &cfg, &c)) return err(r, "create", rc);
    std::string problems;
    for (int t = 0; t < 3; t++) {
      // Integer values: every summation order gives the same bits.
      std::vector<float> g = gradient(r, t, count, true), topk(count), exact(count);
      if (weftCompressedAllReduce(g.data(), topk.data(), c, nullptr) ||
          weftAllReduce(g.data(), exact.data(), count, weftFloat32, weftSum, ranks.comm(r), nullptr))
        return err(r, "call", weftInternalError);
      if (memcmp(topk.data(), exact.data(), count * 4) != 0) problems = "rank " + std::to_string(r) + ": differs\n";
    }
    float* res = nullptr;
    size_t n = 0;
    weftCompressorResidual(c, &res, &n);
    for (size_t i = 0; i < n; i++)
      if (res[i] != 0.0f) problems += "rank " + std::to_string(r) + ": residual left at ratio 1\n";
    weftCompressorDestroy(c);
    return problems;
  }), "");
}

TEST(CompressRanks, NarrowWireWithinTheDocumentedBound) {
  for (int n : {2, 3, 4}) {
    ThreadRanks ranks(n);
    ASSERT_EQ(ranks.status(), weftSuccess);
    for (int kind : {weftCompressBf16, weftCompressFp16}) {
      const size_t count = 50003;  // several slots and channels' worth
      EXPECT_EQ(ranks.run([&](int r) -> std::string {
        weftCompressConfig cfg = config(kind);
        weftCompressor_t c = nullptr;
        if (weftResult_t rc = weftCompressorCreate(ranks.comm(r), count, weftFloat32, &cfg, &c))
          return err(r, "create", rc);
        std::vector<float> g = gradient(r, 0, count, false), out(count);
        // In place on odd ranks: the ring's in-place path rounds the same way.
        float* dst = r % 2 ? g.data() : out.data();
        std::vector<std::vector<float>> all(n);
        for (int q = 0; q < n; q++) all[q] = gradient(q, 0, count, false);
        if (weftResult_t rc = weftCompressedAllReduce(g.data(), dst, c, nullptr)) return err(r, "call", rc);
        std::string problems;
        double worst = 0;
        for (size_t i = 0; i < count && problems.empty(); i++) {
          double sum = 0, sumAbs = 0;
          for (int q = 0; q < n; q++) sum += all[q][i], sumAbs += std::fabs(all[q][i]);
          const double e = std::fabs(double(dst[i]) - sum);
          worst = std::max(worst, e / sumAbs);
          if (e > narrowBound(kind, n, sumAbs))
            problems = "rank " + std::to_string(r) + " element " + std::to_string(i) + ": error " + std::to_string(e) +
                       " beyond the bound\n";
        }
        // The result is a value of the wire format on every rank.
        std::vector<uint16_t> w(count);
        std::vector<float> back(count);
        kernels::floatToNarrow(w.data(), dst, count, kind == weftCompressBf16 ? weftBfloat16 : weftFloat16);
        kernels::narrowToFloat(back.data(), w.data(), count, kind == weftCompressBf16 ? weftBfloat16 : weftFloat16);
        if (memcmp(back.data(), dst, count * 4) != 0) problems += "result is not wire-representable\n";
        uint64_t bytes = 0;
        weftCompressorBytesSent(c, &bytes);
        if (bytes == 0 || bytes > 2 * count * 2) problems += "bytes sent " + std::to_string(bytes) + "\n";
        weftCompressorDestroy(c);
        return problems;
      }), "") << n << " ranks, kind " << kind;
    }
  }
}

// On a host stream the whole compressed AllReduce is one queued task, in
// order with the stream's other work; the plain AllReduce of the same count
// afterwards does not reuse the narrow-wire plan (the plan cache keys on
// the wire format); Destroy refuses while a call is queued.
TEST(CompressRanks, HostStreamOrderAndPlanCacheKey) {
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const size_t count = 10007;
  EXPECT_EQ(ranks.run([&](int r) -> std::string {
    weftStream_t s = nullptr;
    weftHostStreamCreate(&s);
    weftCompressConfig cfg = config(weftCompressBf16);
    weftCompressor_t c = nullptr;
    if (weftResult_t rc = weftCompressorCreate(ranks.comm(r), count, weftFloat32, &cfg, &c)) return err(r, "create", rc);
    std::vector<float> g = gradient(r, 0, count, false), narrow(count), exact(count);
    std::string problems;
    if (weftCompressedAllReduce(g.data(), narrow.data(), c, s) != weftSuccess) problems += "queue\n";
    // Queued behind the compressed call on the same stream.
    if (weftAllReduce(g.data(), exact.data(), count, weftFloat32, weftSum, ranks.comm(r), s) != weftSuccess)
      problems += "queue 2\n";
    weftResult_t busy = weftCompressorDestroy(c);  // may or may not still be queued
    if (weftHostStreamSynchronize(s) != weftSuccess) problems += "synchronize\n";
    std::vector<float> other = gradient(1 - r, 0, count, false);
    size_t differ = 0;
    for (size_t i = 0; i < count; i++) {
      const float sum = g[i] + other[i];  // two ranks: one float32 addition, exact reference
      if (exact[i] != sum) problems += "plain AllReduce is not exact at " + std::to_string(i) + "\n";
      differ += narrow[i] != sum;
      if (problems.size() > 200) break;
    }
    if (differ < count / 2) problems += "bf16 results look unrounded\n";
    if (busy != weftSuccess && weftCompressorDestroy(c) != weftSuccess) problems += "destroy\n";
    weftHostStreamDestroy(s);
    return problems;
  }), "");
}

// A bad call returns `code`, logs a WARN line containing `text`, and
// leaves the output as it was.
#define EXPECT_REFUSED(call, code, text)                                                  \
  do {                                                                                    \
    const long logStart_ = logFileEnd();                                                  \
    EXPECT_EQ((call), (code)) << #call;                                                   \
    EXPECT_NE(logTextSince(logStart_).find(text), std::string::npos) << #call << " log: " \
                                                                     << logTextSince(logStart_); \
  } while (0)

TEST(CompressBadInput, CompressorArguments) {
  ThreadRanks ranks(1);
  ASSERT_EQ(ranks.status(), weftSuccess);
  weftComm_t comm = ranks.comm(0);
  weftCompressor_t c = nullptr;
  for (double ratio : {0.0, -0.5, 1.5, double(NAN)}) {
    weftCompressConfig cfg = config(weftCompressTopK, ratio);
    EXPECT_REFUSED(weftCompressorCreate(comm, 10, weftFloat32, &cfg, &c), weftInvalidArgument, "outside (0, 1]");
  }
  for (int kind : {weftCompressTopK, weftCompressSign}) {
    weftCompressConfig cfg = config(kind);
    EXPECT_REFUSED(weftCompressorCreate(comm, 10, weftInt32, &cfg, &c), weftInvalidArgument,
                   "takes weftFloat32, weftFloat16 or weftBfloat16 buffers, not int32");
    EXPECT_REFUSED(weftCompressorCreate(comm, 10, weftFloat64, &cfg, &c), weftInvalidArgument, "not double");
  }
  for (int kind : {weftCompressBf16, weftCompressFp16}) {
    weftCompressConfig cfg = config(kind);
    EXPECT_REFUSED(weftCompressorCreate(comm, 10, weftInt32, &cfg, &c), weftInvalidArgument,
                   "takes weftFloat32 buffers, not int32");
    EXPECT_REFUSED(weftCompressorCreate(comm, 10, weftBfloat16, &cfg, &c), weftInvalidArgument,
                   "takes weftFloat32 buffers, not bfloat16");
  }
  weftCompressConfig unset = WEFT_COMPRESS_CONFIG_INITIALIZER;
  EXPECT_REFUSED(weftCompressorCreate(comm, 10, weftFloat32, &unset, &c), weftInvalidArgument, "not a compressor kind");
  weftCompressConfig bf16ef = config(weftCompressBf16, WEFT_COMPRESS_UNDEF_RATIO, 1);
  EXPECT_REFUSED(weftCompressorCreate(comm, 10, weftFloat32, &bf16ef, &c), weftInvalidArgument, "no error feedback");
  weftCompressConfig signRatio = config(weftCompressSign, 0.5);
  EXPECT_REFUSED(weftCompressorCreate(comm, 10, weftFloat32, &signRatio, &c), weftInvalidArgument, "TopK only");
  EXPECT_REFUSED(weftCompressorCreate(comm, 10, weftFloat32, nullptr, &c), weftInvalidArgument, "config is NULL");

  weftCompressConfig cfg = config(weftCompressTopK, 0.5);
  ASSERT_EQ(weftCompressorCreate(comm, 4, weftFloat32, &cfg, &c), weftSuccess);
  std::vector<float> in = {1, 2, 3, 4}, out = {7, 7, 7, 7};
  EXPECT_REFUSED(weftCompressedAllReduce(nullptr, out.data(), c, nullptr), weftInvalidArgument, "sendbuff is NULL");
  EXPECT_REFUSED(weftCompressedAllReduce(in.data(), out.data(), nullptr, nullptr), weftInvalidArgument,
                 "compressor is NULL");
  int notAStream = 0;
  EXPECT_REFUSED(weftCompressedAllReduce(in.data(), out.data(), c, &notAStream), weftInvalidArgument,
                 "live weft host stream");
  EXPECT_EQ(out, (std::vector<float>{7, 7, 7, 7}));
  float* res = nullptr;
  size_t n = 0;
  EXPECT_EQ(weftCompressorResidual(c, &res, &n), weftSuccess);
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(weftCompressorDestroy(c), weftSuccess);
  EXPECT_REFUSED(weftCompressedAllReduce(in.data(), out.data(), c, nullptr), weftInvalidUsage, "not a live compressor");
  EXPECT_REFUSED(weftCompressorDestroy(c), weftInvalidUsage, "not a live compressor");
  EXPECT_EQ(out, (std::vector<float>{7, 7, 7, 7}));
}

TEST(CompressBadInput, RanksThatDisagreeAllFail) {
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const long logStart = logFileEnd();
  EXPECT_EQ(ranks.run([&](int r) -> std::string {
    weftCompressConfig cfg = config(weftCompressSign);
    weftCompressor_t c = nullptr;
    weftResult_t rc = weftCompressorCreate(ranks.comm(r), r == 0 ? 100 : 200, weftFloat32, &cfg, &c);
    return rc == weftInvalidUsage ? "" : err(r, "create with different counts", rc);
  }), "");
  EXPECT_NE(logTextSince(logStart).find("ranks disagree"), std::string::npos);
}

TEST(CompressBadInput, ReducerLayoutsThatDifferAllFail) {
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const long logStart = logFileEnd();
  EXPECT_EQ(ranks.run([&](int r) -> std::string {
    std::vector<float> a(8), b(8);
    void* bufs[2] = {a.data(), b.data()};
    const size_t counts[2] = {8, size_t(r == 0 ? 8 : 4)};
    weftReducer_t red = nullptr;
    weftResult_t rc = weftReducerCreate(ranks.comm(r), 2, bufs, counts, weftFloat32, nullptr, &red);
    return rc == weftInvalidUsage ? "" : err(r, "create with different layouts", rc);
  }), "");
  EXPECT_NE(logTextSince(logStart).find("ranks registered different buffers"), std::string::npos);
}

TEST(CompressBadInput, CompressorOfADestroyedCommunicator) {
  weftCompressor_t c = nullptr;
  {
    ThreadRanks ranks(1);
    ASSERT_EQ(ranks.status(), weftSuccess);
    weftCompressConfig cfg = config(weftCompressBf16);
    ASSERT_EQ(weftCompressorCreate(ranks.comm(0), 4, weftFloat32, &cfg, &c), weftSuccess);
  }
  std::vector<float> in = {1, 2, 3, 4}, out = {7, 7, 7, 7};
  EXPECT_REFUSED(weftCompressedAllReduce(in.data(), out.data(), c, nullptr), weftInvalidUsage,
                 "communicator was destroyed");
  EXPECT_EQ(out, (std::vector<float>{7, 7, 7, 7}));
  EXPECT_EQ(weftCompressorDestroy(c), weftSuccess);
}

TEST(CompressBadInput, ReducerMisuse) {
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const long logStart = logFileEnd();
  EXPECT_EQ(ranks.run([&](int r) -> std::string {
    // Three buffers of 4 floats; 16-byte buckets: one buffer per bucket.
    std::vector<std::vector<float>> g = {{1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}};
    void* bufs[3] = {g[0].data(), g[1].data(), g[2].data()};
    const size_t counts[3] = {4, 4, 4};
    weftReducerConfig cfg = WEFT_REDUCER_CONFIG_INITIALIZER;
    cfg.bucketBytes = 16;
    cfg.firstBucketBytes = 16;
    weftReducer_t red = nullptr;
    if (weftResult_t rc = weftReducerCreate(ranks.comm(r), 3, bufs, counts, weftFloat32, &cfg, &red))
      return err(r, "create", rc);
    std::string problems;
    auto expect = [&](weftResult_t got, weftResult_t want, const char* what) {
      if (got != want) problems += err(r, what, got);
    };
    expect(weftReducerMarkReady(red, 3), weftInvalidArgument, "unknown index 3");
    expect(weftReducerMarkReady(red, -1), weftInvalidArgument, "unknown index -1");
    expect(weftReducerMarkReady(red, 2), weftSuccess, "mark 2");
    expect(weftReducerMarkReady(red, 2), weftInvalidUsage, "mark 2 twice");
    // Buffers 0 and 1 never marked: Wait refuses and writes nothing, even
    // though bucket 0 (buffer 2) was reduced.
    expect(weftReducerWait(red), weftInvalidUsage, "wait with unmarked buffers");
    if (g[2] != std::vector<float>{3, 3, 3, 3}) problems += "rank " + std::to_string(r) + ": buffer 2 written\n";
    // The next step starts clean and works.
    for (int i : {2, 0, 1}) expect(weftReducerMarkReady(red, i), weftSuccess, "mark");
    expect(weftReducerWait(red), weftSuccess, "wait");
    for (int i = 0; i < 3; i++)
      if (g[i] != std::vector<float>(4, 2.0f * (i + 1))) problems += "rank " + std::to_string(r) + ": wrong sum\n";
    expect(weftReducerDestroy(red), weftSuccess, "destroy");
    expect(weftReducerMarkReady(red, 0), weftInvalidUsage, "mark after destroy");
    return problems;
  }), "");
  const std::string log = logTextSince(logStart);
  for (const char* text : {"index 3 is not a registered buffer", "index -1 is not a registered buffer",
                           "buffer 2 was already marked ready", "2 buffer(s) never marked ready",
                           "not a live reducer"})
    EXPECT_NE(log.find(text), std::string::npos) << text;
}

// Host gradients are final when marked: a stream for them is a mistake,
// and marking with no stream is the plain MarkReady.
TEST(CompressBadInput, ReducerStreamForHostBuffers) {
  ThreadRanks ranks(1);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const long logStart = logFileEnd();
  std::vector<float> g(8, 2.0f);
  void* bufs[1] = {g.data()};
  const size_t counts[1] = {8};
  weftReducer_t red = nullptr;
  ASSERT_EQ(weftReducerCreate(ranks.comm(0), 1, bufs, counts, weftFloat32, nullptr, &red), weftSuccess);
  int notAStream = 0;
  EXPECT_EQ(weftReducerMarkReadyOnStream(red, 0, &notAStream), weftInvalidUsage);
  EXPECT_EQ(weftReducerMarkReadyOnStream(red, 0, nullptr), weftSuccess);
  EXPECT_EQ(weftReducerWait(red), weftSuccess);
  EXPECT_EQ(g, std::vector<float>(8, 2.0f));
  EXPECT_EQ(weftReducerDestroy(red), weftSuccess);
  EXPECT_NE(logTextSince(logStart).find("a stream was given for host buffers"), std::string::npos);
}

// A reducer of 16-bit gradients with compression and averaging: TopK at
// ratio 1 sums exactly (integers), then the average divides in float32 and
// rounds once into the 16-bit bucket, as an uncompressed Avg does.
TEST(CompressRanks, ReducerAveragesSixteenBitCompressedBuckets) {
  const int n = 3;
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const size_t counts[2] = {301, 77};
  for (weftDataType_t type : {weftBfloat16, weftFloat16}) {
    EXPECT_EQ(ranks.run([&](int r) -> std::string {
      std::vector<std::vector<uint16_t>> bufs(2);
      std::vector<std::vector<float>> expect(2);
      for (int b = 0; b < 2; b++) {
        std::vector<float> mine(counts[b]), sum(counts[b], 0.0f);
        for (int q = 0; q < n; q++)
          for (size_t i = 0; i < counts[b]; i++) {
            const float v = float(int((q * 7 + i * 3 + b) % 11) - 5);
            if (q == r) mine[i] = v;
            sum[i] += v;
          }
        bufs[b].resize(counts[b]);
        kernels::floatToNarrow(bufs[b].data(), mine.data(), counts[b], type);
        for (float& v : sum) v /= float(n);
        // Rounded once to the buffer's type, then back for comparison.
        std::vector<uint16_t> narrow(counts[b]);
        kernels::floatToNarrow(narrow.data(), sum.data(), counts[b], type);
        expect[b].resize(counts[b]);
        kernels::narrowToFloat(expect[b].data(), narrow.data(), counts[b], type);
      }
      void* ptrs[2] = {bufs[0].data(), bufs[1].data()};
      weftReducerConfig cfg = WEFT_REDUCER_CONFIG_INITIALIZER;
      cfg.average = 1;
      cfg.compress = weftCompressTopK;
      cfg.ratio = 1.0;
      weftReducer_t red = nullptr;
      if (weftResult_t rc = weftReducerCreate(ranks.comm(r), 2, ptrs, counts, type, &cfg, &red)) return err(r, "create", rc);
      std::string problems;
      if (weftReducerMarkReady(red, 1) || weftReducerMarkReady(red, 0) || weftReducerWait(red))
        problems = err(r, "step", weftInternalError);
      weftReducerDestroy(red);
      for (int b = 0; b < 2 && problems.empty(); b++) {
        std::vector<float> got(counts[b]);
        kernels::narrowToFloat(got.data(), bufs[b].data(), counts[b], type);
        for (size_t i = 0; i < counts[b]; i++)
          if (got[i] != expect[b][i]) {
            problems = "rank " + std::to_string(r) + " buffer " + std::to_string(b) + " element " + std::to_string(i) +
                       ": " + std::to_string(got[i]) + ", expected " + std::to_string(expect[b][i]) + "\n";
            break;
          }
      }
      return problems;
    }), "") << kernels::typeName(type);
  }
}

// The reducer's thread reduces full buckets while the caller "computes"
// (sleeps, so the two cores stay free for the communication): most of the
// communication must be hidden, and the stats must add up.
TEST(CompressRanks, ReducerOverlapsCommunicationWithCompute) {
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const int nbuf = 8;
  const size_t per = 256 << 10;  // 1 MiB of float32 per buffer
  std::vector<weftReducerStats> stats(2);
  EXPECT_EQ(ranks.run([&](int r) -> std::string {
    std::vector<std::vector<float>> g(nbuf, std::vector<float>(per));
    std::vector<void*> bufs;
    std::vector<size_t> counts(nbuf, per);
    for (auto& b : g) bufs.push_back(b.data());
    weftReducerConfig cfg = WEFT_REDUCER_CONFIG_INITIALIZER;
    cfg.bucketBytes = 2 << 20;
    cfg.firstBucketBytes = 1 << 20;
    weftReducer_t red = nullptr;
    if (weftResult_t rc = weftReducerCreate(ranks.comm(r), nbuf, bufs.data(), counts.data(), weftFloat32, &cfg, &red))
      return err(r, "create", rc);
    int nb = 0;
    std::vector<int> of(nbuf);
    weftReducerBuckets(red, of.data(), &nb);
    std::string problems;
    if (nb != 5 || of[nbuf - 1] != 0 || of[0] != 4) problems += "unexpected buckets\n";
    for (int step = 0; step < 3; step++) {
      for (auto& b : g) std::fill(b.begin(), b.end(), float(r + 1));
      for (int i = nbuf - 1; i >= 0; i--) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // backward of layer i
        if (weftResult_t rc = weftReducerMarkReady(red, i)) return err(r, "mark", rc);
      }
      if (weftResult_t rc = weftReducerWait(red)) return err(r, "wait", rc);
      for (auto& b : g)
        if (b[0] != 3.0f || b[per - 1] != 3.0f) problems += "wrong sum\n";
    }
    weftReducerGetStats(red, &stats[r]);
    weftReducerDestroy(red);
    return problems;
  }), "");
  const weftReducerStats& s = stats[0];
  std::printf("reducer, 2 thread ranks, 8 x 1 MiB in 5 buckets, 30 ms compute per buffer: last step %.1f ms, "
              "comm %.1f ms, hidden %.1f ms, wait %.1f ms, exposed %.1f%%\n",
              s.stepMs, s.commMs, s.hiddenMs, s.waitMs, 100 * s.exposedFraction);
  EXPECT_EQ(s.steps, 3u);
  EXPECT_GT(s.commMs, 0);
  EXPECT_LE(s.hiddenMs, s.commMs + 1e-9);
  // Only the last bucket (1 of 8 MiB) has no compute left to hide behind;
  // the margins leave room for a loaded machine.
  EXPECT_GT(s.hiddenMs, 0.3 * s.commMs);
  EXPECT_LT(s.exposedFraction, 0.6);
  EXPECT_NEAR(s.exposedFraction, s.waitMs / s.stepMs, 1e-9);
}

}  // namespace
}  // namespace weft::test
