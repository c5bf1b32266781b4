// ProcessGroupWeft's operations beyond the dense collectives: monitored
// barrier, sequence numbers, allgather_coalesced and sparse all-reduce.
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "bindings/torch/process_group_weft.h"
#include "bindings/torch/type_map.h"

namespace weft::torch_backend {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kSequenceKey = "weft_sequence_number";
constexpr size_t kDiagnosisBytes = 8192;

// A contiguous tensor's bytes, as a flat uint8 tensor sharing its storage.
at::Tensor bytesOf(const at::Tensor& t) { return t.reshape({-1}).view(at::kByte); }

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

}  // namespace

std::string ProcessGroupWeft::diagnosis() {
  std::string report(kDiagnosisBytes, '\0');
  if (weftCommDiagnose(comm_, report.data(), report.size()) != weftSuccess) return "";
  report.resize(strnlen(report.data(), report.size()));
  return report.empty() ? "" : "\nweft's view of the group's communicator:\n" + report;
}

void ProcessGroupWeft::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  const auto timeout = opts.timeout == c10d::kUnsetTimeout ? std::chrono::milliseconds(timeoutMs_) : opts.timeout;
  const auto deadline = Clock::now() + timeout;
  const std::string prefix = "weft_monitored_barrier/" + std::to_string(monitoredBarriers_++) + "/";
  const std::string release = prefix + "release";
  const std::string ms = std::to_string(timeout.count()) + " ms";
  if (getRank() != 0) {
    store_->set(prefix + std::to_string(getRank()), std::vector<uint8_t>{1});
    std::string verdict = "no word from rank 0 within " + ms;
    if (pollStore(*store_, release, deadline)) {
      std::vector<uint8_t> v = store_->get(release);
      verdict.assign(v.begin(), v.end());
      if (verdict == "ok") return;
      verdict = "rank 0 reported: " + verdict;
    }
    TORCH_CHECK(false, "Rank ", getRank(),
                " successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0"
                " (weft backend: ",
                verdict, ")");
  }
  if (timeout.count() <= 0) {
    store_->set(release, std::vector<uint8_t>{'t', 'i', 'm', 'e', 'o', 'u', 't'});
    TORCH_CHECK(false, "Rank 0 timed out in monitoredBarrier after ", timeout.count(), " ms");
  }
  std::vector<int> late;
  for (int r = 1; r < getSize(); r++) {
    if (pollStore(*store_, prefix + std::to_string(r), deadline)) continue;
    late.push_back(r);
    if (!waitAllRanks) break;  // fail fast on the first, as gloo does
  }
  if (late.empty()) {
    store_->set(release, std::vector<uint8_t>{'o', 'k'});
    return;
  }
  std::string what = (late.size() == 1 ? "Rank " : "Ranks ") + rankList(late) +
                     " failed to pass monitoredBarrier in " + ms;
  store_->set(release, std::vector<uint8_t>(what.begin(), what.end()));
  TORCH_CHECK(false, what, diagnosis());
}

void ProcessGroupWeft::setSequenceNumberForGroup() {
  uint64_t first = 0;
  if (getRank() == 0) {
    std::random_device device;
    first = (static_cast<uint64_t>(device()) << 32) | device();
    const auto* p = reinterpret_cast<const uint8_t*>(&first);
    store_->set(kSequenceKey, std::vector<uint8_t>(p, p + sizeof(first)));
  } else {
    std::vector<uint8_t> v = store_->get(kSequenceKey);  // bounded by the store's timeout
    TORCH_CHECK(v.size() == sizeof(first), "weft backend: the store holds a sequence number of ", v.size(),
                " bytes");
    memcpy(&first, v.data(), sizeof(first));
  }
  sequenceNum_.emplace(first);
}

uint64_t ProcessGroupWeft::getSequenceNumberForGroup() { return sequenceNum_ ? sequenceNum_->get() : 0; }

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(static_cast<int>(outputLists.size()) == getSize(), "weft backend: allgather_coalesced needs ",
              getSize(), " output lists, got ", outputLists.size());
  std::vector<at::Tensor> outs;
  for (const at::Tensor& t : inputs)
    TORCH_CHECK(t.device().is_cpu() && t.layout() == at::kStrided && t.is_contiguous(),
                "weft backend: allgather_coalesced needs CPU, dense, contiguous tensors");
  for (const auto& list : outputLists) {
    TORCH_CHECK(list.size() == inputs.size(), "weft backend: allgather_coalesced needs every output list to hold ",
                inputs.size(), " tensors, like the input list");
    for (size_t j = 0; j < list.size(); j++) {
      TORCH_CHECK(list[j].device().is_cpu() && list[j].layout() == at::kStrided && list[j].is_contiguous(),
                  "weft backend: allgather_coalesced needs CPU, dense, contiguous tensors");
      TORCH_CHECK(list[j].scalar_type() == inputs[j].scalar_type() && list[j].numel() == inputs[j].numel(),
                  "weft backend: allgather_coalesced output ", j, " differs from input ", j, " in type or size");
      outs.push_back(list[j]);
    }
  }
  std::vector<std::vector<at::Tensor>> lists = outputLists;
  std::vector<at::Tensor> ins = inputs;
  return enqueue(
      c10d::OpType::ALLGATHER_COALESCED, outs,
      [this, lists, ins] {
        std::vector<at::Tensor> parts;
        for (const at::Tensor& t : ins) parts.push_back(bytesOf(t));
        at::Tensor packed = parts.empty() ? at::empty({0}, at::kByte) : at::cat(parts);
        const int64_t block = packed.numel();
        at::Tensor gathered = at::empty({block * getSize()}, at::kByte);
        if (block > 0)
          check(weftAllGather(packed.data_ptr(), gathered.data_ptr(), block, weftUint8, comm_, nullptr),
                "allgather_coalesced");
        for (int r = 0; r < getSize(); r++) {
          int64_t offset = r * block;
          for (const at::Tensor& out : lists[r]) {
            const int64_t n = out.numel() * out.element_size();
            bytesOf(out).copy_(gathered.narrow(0, offset, n));
            offset += n;
          }
        }
      },
      ins);
}

at::Tensor ProcessGroupWeft::gatherSparse(const at::Tensor& input) {
  at::Tensor in = input.coalesce();
  at::Tensor indices = in._indices().contiguous();
  at::Tensor values = in._values().contiguous();
  const int n = getSize();
  at::Tensor nnz = at::empty({n}, at::kLong);
  int64_t mine = in._nnz();
  check(weftAllGather(&mine, nnz.data_ptr(), 1, weftInt64, comm_, nullptr), "sparse allreduce");
  const int64_t most = nnz.max().item<int64_t>();
  if (most == 0) return in;
  // Pad every rank's entries to the largest count so one AllGather moves each.
  std::vector<int64_t> valueShape = values.sizes().vec();
  valueShape[0] = most;
  at::Tensor idxPad = at::zeros({indices.size(0), most}, at::kLong);
  idxPad.narrow(1, 0, mine).copy_(indices);
  at::Tensor valPad = at::zeros(valueShape, values.options());
  valPad.narrow(0, 0, mine).copy_(values);
  at::Tensor idxAll = at::empty({n, indices.size(0), most}, at::kLong);
  std::vector<int64_t> allShape = {n};
  allShape.insert(allShape.end(), valueShape.begin(), valueShape.end());
  at::Tensor valAll = at::empty(allShape, values.options());
  check(weftAllGather(idxPad.data_ptr(), idxAll.data_ptr(), idxPad.numel(), weftInt64, comm_, nullptr),
        "sparse allreduce");
  check(weftAllGather(valPad.data_ptr(), valAll.data_ptr(), valPad.numel(), toWeftType(values.scalar_type()),
                      comm_, nullptr),
        "sparse allreduce");
  std::vector<at::Tensor> idxParts, valParts;
  for (int r = 0; r < n; r++) {
    const int64_t k = nnz[r].item<int64_t>();
    idxParts.push_back(idxAll[r].narrow(1, 0, k));
    valParts.push_back(valAll[r].narrow(0, 0, k));
  }
  return at::sparse_coo_tensor(at::cat(idxParts, 1), at::cat(valParts, 0), in.sizes()).coalesce();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::sparseAllreduce(const at::Tensor& tensor,
                                                                 const c10d::AllreduceOptions& opts) {
  TORCH_CHECK(tensor.device().is_cpu(), "weft backend: sparse allreduce needs a CPU tensor");
  TORCH_CHECK(opts.reduceOp == c10d::ReduceOp::SUM, "weft backend: sparse allreduce supports SUM only");
  toWeftType(tensor.scalar_type());  // an unsupported type raises here, on the caller's thread
  at::Tensor t = tensor;
  return enqueue(c10d::OpType::ALLREDUCE, {t}, [this, t] { const_cast<at::Tensor&>(t).copy_(gatherSparse(t)); });
}

}  // namespace weft::torch_backend
