// Compressed AllReduce of device buffers, ranks as threads sharing GPU 0:
// TopK and Sign against the host reference (tests/compress) bit for bit,
// outputs and residuals, over several steps; the residual in device
// memory, Reset, and the refusals (bf16/fp16 kinds, mixing host and device
// buffers in one compressor, inside a group). Skipped without a GPU.
//
// Sign's scale is summed in double by a tree on the device and
// sequentially on the host; the inputs are integers, so every value in
// play is a multiple of a power of two small enough for those sums to be
// exact in double, and the device must match the host bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu_util.h"
#include "tests/compress/compress_reference.h"

namespace weft::test {
namespace {

weftCompressConfig config(int kind, double ratio, int ef) {
  weftCompressConfig c = WEFT_COMPRESS_CONFIG_INITIALIZER;
  c.kind = kind;
  c.ratio = ratio;
  c.errorFeedback = ef;
  return c;
}

std::string bitDiff(const char* what, int step, const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return std::string(what) + ": size differs\n";
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); i++)
    if (memcmp(&got[i], &want[i], 4) != 0 && bad++ == 0) first = i;
  if (!bad) return "";
  return std::string(what) + " step " + std::to_string(step) + ": " + std::to_string(bad) + " entries differ, first " +
         std::to_string(first) + " got " + std::to_string(got[first]) + " want " + std::to_string(want[first]) + "\n";
}

struct Case {
  int kind;
  int nranks;
  size_t count;
  double ratio;
  int ef;
  bool inPlace;
};

// One rank: `steps` calls on its own stream, each checked against its own
// copy of the reference (every rank's inputs are seeded, so each rank can
// step all of them).
std::string rankMain(const Case& k, weftComm_t comm, int r, int steps) {
  if (cudaSetDevice(0) != cudaSuccess) return "cudaSetDevice failed\n";
  weftCompressConfig cfg = config(k.kind, k.ratio, k.ef);
  weftCompressor_t c = nullptr;
  if (weftCompressorCreate(comm, k.count, weftFloat32, &cfg, &c) != weftSuccess) return "create failed\n";
  ReferenceCompressor ref(k.kind, k.nranks, k.count, k.ratio, k.ef == 1);
  cudaStream_t s;
  float *in = nullptr, *out = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMalloc(reinterpret_cast<void**>(&in), k.count * 4);
  cudaMalloc(reinterpret_cast<void**>(&out), k.count * 4);
  std::string problems;
  for (int step = 0; step < steps && problems.empty(); step++) {
    std::vector<std::vector<float>> inputs;
    for (int q = 0; q < k.nranks; q++) inputs.push_back(gradient(q, step, k.count, true));
    const std::vector<float> want = ref.step(inputs);
    cudaMemcpy(in, inputs[r].data(), k.count * 4, cudaMemcpyHostToDevice);
    cudaMemset(out, 0xff, k.count * 4);
    float* dst = k.inPlace ? in : out;
    if (weftResult_t rc = weftCompressedAllReduce(in, dst, c, s))
      return std::string("weftCompressedAllReduce: ") + weftGetErrorString(rc) + "\n";
    if (cudaStreamSynchronize(s) != cudaSuccess) return "stream failed\n";
    weftResult_t async = weftSuccess;
    weftCommGetAsyncError(comm, &async);
    if (async != weftSuccess) return std::string("async error: ") + weftGetErrorString(async) + "\n";
    std::vector<float> got(k.count);
    cudaMemcpy(got.data(), dst, k.count * 4, cudaMemcpyDeviceToHost);
    problems += bitDiff("output", step, got, want);
    float* res = nullptr;
    size_t n = 0;
    weftCompressorResidual(c, &res, &n);
    const std::vector<float> wantRes = ref.residual(r);
    if (n != wantRes.size()) problems += "residual length " + std::to_string(n) + "\n";
    std::vector<float> gotRes(n);
    if (n) cudaMemcpy(gotRes.data(), res, n * 4, cudaMemcpyDeviceToHost);
    problems += bitDiff("residual", step, gotRes, wantRes);
  }
  cudaFree(in);
  cudaFree(out);
  cudaStreamDestroy(s);
  if (weftCompressorDestroy(c) != weftSuccess) problems += "destroy failed\n";
  return problems;
}

void runCase(const Case& k, int steps = 3) {
  std::vector<weftComm_t> comms(k.nranks);
  std::vector<int> devs(k.nranks, 0);
  ASSERT_EQ(weftCommInitAll(comms.data(), k.nranks, devs.data()), weftSuccess);
  std::vector<std::string> problems(k.nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < k.nranks; r++)
    threads.emplace_back([&, r] { problems[r] = rankMain(k, comms[r], r, steps); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < k.nranks; r++) EXPECT_EQ(problems[r], "") << "rank " << r;
  for (auto c : comms) weftCommDestroy(c);
}

TEST(GpuCompress, TopKMatchesTheHostBitForBit) {
  SKIP_WITHOUT_GPU();
  runCase({weftCompressTopK, 2, 10007, 0.05, 1, false});
}
TEST(GpuCompress, TopKManyRunsInPlaceThreeRanks) {
  SKIP_WITHOUT_GPU();
  runCase({weftCompressTopK, 3, 300001, 0.01, 1, true});
}
TEST(GpuCompress, TopKWithoutErrorFeedbackAndAtRatioOne) {
  SKIP_WITHOUT_GPU();
  runCase({weftCompressTopK, 2, 4099, 0.1, 0, false});
  runCase({weftCompressTopK, 2, 4099, 1.0, 1, false}, 1);
}
TEST(GpuCompress, SignMatchesTheHostBitForBit) {
  SKIP_WITHOUT_GPU();
  runCase({weftCompressSign, 2, 10007, 1.0, 1, false});
  runCase({weftCompressSign, 3, 130, 1.0, 1, true});
  runCase({weftCompressSign, 2, 5000, 1.0, 0, false});
}

// Device residual, Reset, and the refusals, on one rank.
TEST(GpuCompress, ResidualIsDeviceMemoryAndRefusals) {
  SKIP_WITHOUT_GPU();
  weftComm_t comm;
  int dev = 0;
  ASSERT_EQ(weftCommInitAll(&comm, 1, &dev), weftSuccess);
  const size_t count = 1000;
  float* d = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d), count * 4));
  std::vector<float> h = gradient(0, 0, count, true);
  CUDA_OK(cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice));

  weftCompressConfig bf16 = config(weftCompressBf16, WEFT_COMPRESS_UNDEF_RATIO, WEFT_CONFIG_UNDEF_INT);
  weftCompressor_t narrow = nullptr;
  ASSERT_EQ(weftCompressorCreate(comm, count, weftFloat32, &bf16, &narrow), weftSuccess);
  EXPECT_EQ(weftCompressedAllReduce(d, d, narrow, nullptr), weftInvalidUsage);
  EXPECT_EQ(weftCompressorDestroy(narrow), weftSuccess);

  weftCompressConfig topk = config(weftCompressTopK, 0.1, 1);
  weftCompressor_t c = nullptr;
  ASSERT_EQ(weftCompressorCreate(comm, count, weftFloat32, &topk, &c), weftSuccess);
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  EXPECT_EQ(weftCompressedAllReduce(d, d, c, nullptr), weftInvalidUsage);
  ASSERT_EQ(weftGroupEnd(), weftSuccess);
  ASSERT_EQ(weftCompressedAllReduce(d, d, c, nullptr), weftSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  float* res = nullptr;
  size_t n = 0;
  ASSERT_EQ(weftCompressorResidual(c, &res, &n), weftSuccess);
  ASSERT_EQ(n, count);
  cudaPointerAttributes a{};
  CUDA_OK(cudaPointerGetAttributes(&a, res));
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  std::vector<float> r(count);
  CUDA_OK(cudaMemcpy(r.data(), res, count * 4, cudaMemcpyDeviceToHost));
  size_t nonzero = 0;
  for (float x : r) nonzero += x != 0.0f;
  EXPECT_GT(nonzero, 0u);
  ASSERT_EQ(weftCompressorReset(c), weftSuccess);
  CUDA_OK(cudaMemcpy(r.data(), res, count * 4, cudaMemcpyDeviceToHost));
  for (float x : r) ASSERT_EQ(x, 0.0f);
  // Bound to device buffers: a host call is refused, nothing written.
  std::vector<float> hostOut(count, 7.0f);
  EXPECT_EQ(weftCompressedAllReduce(h.data(), hostOut.data(), c, nullptr), weftInvalidUsage);
  EXPECT_EQ(hostOut, std::vector<float>(count, 7.0f));
  EXPECT_EQ(weftCompressorDestroy(c), weftSuccess);
  CUDA_OK(cudaFree(d));
  weftCommDestroy(comm);
}

}  // namespace
}  // namespace weft::test
