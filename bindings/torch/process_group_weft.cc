#include "bindings/torch/process_group_weft.h"

#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bindings/torch/type_map.h"

namespace weft::torch_backend {

namespace {

constexpr const char* kUniqueIdKey = "weft_unique_id";

// Event names in torch's profiler, "<backend>:<operation>" as torch's tests
// expect them (static strings: Work keeps the pointer).
const char* profilingTitle(c10d::OpType type) {
  switch (type) {
    case c10d::OpType::BROADCAST: return "weft:broadcast";
    case c10d::OpType::ALLREDUCE: return "weft:all_reduce";
    case c10d::OpType::ALLREDUCE_COALESCED: return "weft:all_reduce";
    case c10d::OpType::REDUCE: return "weft:reduce";
    case c10d::OpType::ALLGATHER: return "weft:all_gather";
    case c10d::OpType::_ALLGATHER_BASE: return "weft:all_gather_into_tensor";
    case c10d::OpType::ALLGATHER_COALESCED: return "weft:all_gather";
    case c10d::OpType::GATHER: return "weft:gather";
    case c10d::OpType::SCATTER: return "weft:scatter";
    case c10d::OpType::REDUCE_SCATTER: return "weft:reduce_scatter";
    case c10d::OpType::_REDUCE_SCATTER_BASE: return "weft:reduce_scatter_tensor";
    case c10d::OpType::ALLTOALL_BASE: return "weft:all_to_all";
    case c10d::OpType::ALLTOALL: return "weft:all_to_all";
    case c10d::OpType::BARRIER: return "weft:barrier";
    default: return nullptr;
  }
}

void checkCpuDense(const at::Tensor& t, const char* fn) {
  TORCH_CHECK(t.device().is_cpu(), "weft backend: ", fn, " needs CPU tensors, got one on ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "weft backend: ", fn, " needs dense (strided) tensors");
  TORCH_CHECK(t.is_contiguous(), "weft backend: ", fn, " needs contiguous tensors");
}

void checkSingle(const std::vector<at::Tensor>& tensors, const char* fn) {
  TORCH_CHECK(tensors.size() == 1, "weft backend: ", fn, " takes exactly one tensor per process, got ",
              tensors.size());
  checkCpuDense(tensors[0], fn);
}

void checkSameShape(const std::vector<at::Tensor>& list, const at::Tensor& like, const char* fn) {
  for (const at::Tensor& t : list) {
    checkCpuDense(t, fn);
    TORCH_CHECK(t.numel() == like.numel() && t.scalar_type() == like.scalar_type(), "weft backend: ", fn,
                " needs every tensor of the list to match the input in size and type");
  }
}

// One contiguous tensor holding a list's tensors end to end.
at::Tensor flatten(const std::vector<at::Tensor>& list) {
  std::vector<at::Tensor> flat;
  flat.reserve(list.size());
  for (const at::Tensor& t : list) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

}  // namespace

ProcessGroupWeft::ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size) {
  weftUniqueId id;
  if (rank == 0) {
    check(weftGetUniqueId(&id), "weftGetUniqueId");
    const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
    store->set(kUniqueIdKey, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
  } else {
    std::vector<uint8_t> bytes = store->get(kUniqueIdKey);  // bounded by the store's timeout
    TORCH_CHECK(bytes.size() == sizeof(id), "weft backend: the store holds a unique id of ", bytes.size(),
                " bytes, expected ", sizeof(id));
    memcpy(&id, bytes.data(), sizeof(id));
  }
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = static_cast<int>(std::min<int64_t>(std::max<int64_t>(timeout.count(), 1), INT_MAX));
  timeoutMs_ = config.timeoutMs;
  config.commName = "torch";
  check(weftCommInitRankConfig(&comm_, size, id, rank, &config), "weftCommInitRankConfig");
  store_ = store;
  queue_ = std::make_unique<OpQueue>();
  p2p_ = std::make_unique<P2pEngine>(store, rank, size, config.timeoutMs);
  setSequenceNumberForGroup();
}

ProcessGroupWeft::~ProcessGroupWeft() {
  // Python drops the last reference with the GIL held, and a queued
  // operation's completion runs Python callbacks (Future.then) on the queue's
  // thread: joining that thread while holding the GIL would wait forever.
  if (Py_IsInitialized() && PyGILState_Check()) {
    pybind11::gil_scoped_release noGil;
    stopThreads();
  } else {
    stopThreads();
  }
  if (!comm_) return;
  weftResult_t failed = weftSuccess;
  weftCommGetAsyncError(comm_, &failed);
  if (failed != weftSuccess)
    weftCommAbort(comm_);
  else
    weftCommDestroy(comm_);
}

void ProcessGroupWeft::stopThreads() {
  p2p_.reset();
  queue_.reset();  // every queued operation ends first (each is bounded by the timeout)
}

void ProcessGroupWeft::check(weftResult_t r, const char* what) const {
  if (r == weftSuccess) return;
  const char* detail = weftGetLastError(comm_);
  // Worded as gloo's timeouts are ("Timed out ..."), which callers match on.
  std::string timedOut =
      r == weftTimeout ? "Timed out waiting " + std::to_string(timeoutMs_) + " ms for the other ranks: " : "";
  throw std::runtime_error(std::string("weft backend: ") + what + " failed on rank " + std::to_string(getRank()) +
                           ": " + timedOut + weftGetErrorString(r) +
                           (detail && *detail ? std::string(" (") + detail + ")" : ""));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                         std::function<void()> body,
                                                         const std::vector<at::Tensor>& inputs) {
  // As gloo does: every operation that runs in issue order moves the
  // group's sequence number on.
  if (sequenceNum_) sequenceNum_->increment();
  auto work = c10::make_intrusive<WorkWeft>(getRank(), type, outputs, profilingTitle(type),
                                            inputs.empty() ? outputs : inputs);
  queue_->push([work, body = std::move(body)] {
    std::exception_ptr eptr;
    try {
      body();
    } catch (...) {
      eptr = std::current_exception();
    }
    work->complete(eptr);
  });
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  checkSingle(tensors, "broadcast");
  at::Tensor t = tensors[0];
  weftDataType_t type = toWeftType(t.scalar_type());
  int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::BROADCAST, tensors, [this, t, type, root] {
    check(weftBroadcast(t.data_ptr(), t.data_ptr(), t.numel(), type, root, comm_, nullptr), "broadcast");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].is_sparse()) return sparseAllreduce(tensors[0], opts);
  checkSingle(tensors, "allreduce");
  at::Tensor t = tensors[0];
  weftDataType_t type = toWeftType(t.scalar_type());
  weftRedOp_t op = toWeftOp(opts.reduceOp, t.scalar_type());
  return enqueue(c10d::OpType::ALLREDUCE, tensors, [this, t, type, op] {
    check(weftAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), type, op, comm_, nullptr), "allreduce");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "weft backend: allreduce_coalesced needs at least one tensor");
  for (const at::Tensor& t : tensors) {
    checkCpuDense(t, "allreduce_coalesced");
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "weft backend: allreduce_coalesced needs one type");
  }
  weftDataType_t type = toWeftType(tensors[0].scalar_type());
  weftRedOp_t op = toWeftOp(opts.reduceOp, tensors[0].scalar_type());
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, tensors, [this, tensors, type, op] {
    at::Tensor flat = flatten(tensors);
    check(weftAllReduce(flat.data_ptr(), flat.data_ptr(), flat.numel(), type, op, comm_, nullptr),
          "allreduce_coalesced");
    int64_t offset = 0;
    for (const at::Tensor& t : tensors) {
      const_cast<at::Tensor&>(t).view({-1}).copy_(flat.narrow(0, offset, t.numel()));
      offset += t.numel();
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  checkSingle(tensors, "reduce");
  at::Tensor t = tensors[0];
  weftDataType_t type = toWeftType(t.scalar_type());
  weftRedOp_t op = toWeftOp(opts.reduceOp, t.scalar_type());
  int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::REDUCE, tensors, [this, t, type, op, root] {
    check(weftReduce(t.data_ptr(), t.data_ptr(), t.numel(), type, op, root, comm_, nullptr), "reduce");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions& opts) {
  checkSingle(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
              "weft backend: allgather needs one output list of ", getSize(), " tensors");
  at::Tensor in = inputs[0];
  std::vector<at::Tensor> outs = outputs[0];
  checkSameShape(outs, in, "allgather");
  weftDataType_t type = toWeftType(in.scalar_type());
  return enqueue(c10d::OpType::ALLGATHER, outs, [this, in, outs, type] {
    at::Tensor gathered = at::empty({static_cast<int64_t>(outs.size()) * in.numel()}, in.options());
    check(weftAllGather(in.data_ptr(), gathered.data_ptr(), in.numel(), type, comm_, nullptr), "allgather");
    for (size_t r = 0; r < outs.size(); r++)
      const_cast<at::Tensor&>(outs[r]).view({-1}).copy_(gathered.narrow(0, r * in.numel(), in.numel()));
  }, inputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions& opts) {
  checkCpuDense(input, "_allgather_base");
  checkCpuDense(output, "_allgather_base");
  TORCH_CHECK(output.numel() == input.numel() * getSize() && output.scalar_type() == input.scalar_type(),
              "weft backend: _allgather_base output must hold world_size x input elements of the input's type");
  weftDataType_t type = toWeftType(input.scalar_type());
  at::Tensor in = input, out = output;
  return enqueue(c10d::OpType::_ALLGATHER_BASE, {out}, [this, in, out, type] {
    check(weftAllGather(in.data_ptr(), out.data_ptr(), in.numel(), type, comm_, nullptr), "_allgather_base");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::GatherOptions& opts) {
  checkSingle(inputs, "gather");
  int root = static_cast<int>(opts.rootRank);
  at::Tensor in = inputs[0];
  std::vector<at::Tensor> outs;
  if (getRank() == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "weft backend: gather needs one output list of ", getSize(), " tensors on the root");
    outs = outputs[0];
    checkSameShape(outs, in, "gather");
  } else {
    TORCH_CHECK(outputs.empty(), "weft backend: gather takes no output list on non-root ranks");
  }
  weftDataType_t type = toWeftType(in.scalar_type());
  return enqueue(c10d::OpType::GATHER, outs, [this, in, outs, type, root] {
    if (getRank() != root) {
      check(weftSend(in.data_ptr(), in.numel(), type, root, comm_, nullptr), "gather");
      return;
    }
    check(weftGroupStart(), "gather");
    weftResult_t r = weftSuccess;
    for (int peer = 0; peer < getSize() && r == weftSuccess; peer++)
      if (peer != root) r = weftRecv(outs[peer].data_ptr(), in.numel(), type, peer, comm_, nullptr);
    weftResult_t end = weftGroupEnd();
    check(r != weftSuccess ? r : end, "gather");
    const_cast<at::Tensor&>(outs[root]).copy_(in);
  }, inputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  checkSingle(outputs, "scatter");
  int root = static_cast<int>(opts.rootRank);
  at::Tensor out = outputs[0];
  std::vector<at::Tensor> ins;
  if (getRank() == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "weft backend: scatter needs one input list of ", getSize(), " tensors on the root");
    ins = inputs[0];
    checkSameShape(ins, out, "scatter");
  } else {
    TORCH_CHECK(inputs.empty(), "weft backend: scatter takes no input list on non-root ranks");
  }
  weftDataType_t type = toWeftType(out.scalar_type());
  return enqueue(c10d::OpType::SCATTER, outputs, [this, out, ins, type, root] {
    if (getRank() != root) {
      check(weftRecv(out.data_ptr(), out.numel(), type, root, comm_, nullptr), "scatter");
      return;
    }
    check(weftGroupStart(), "scatter");
    weftResult_t r = weftSuccess;
    for (int peer = 0; peer < getSize() && r == weftSuccess; peer++)
      if (peer != root) r = weftSend(ins[peer].data_ptr(), out.numel(), type, peer, comm_, nullptr);
    weftResult_t end = weftGroupEnd();
    check(r != weftSuccess ? r : end, "scatter");
    const_cast<at::Tensor&>(out).copy_(ins[root]);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  checkSingle(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
              "weft backend: reduce_scatter needs one input list of ", getSize(), " tensors");
  at::Tensor out = outputs[0];
  std::vector<at::Tensor> ins = inputs[0];
  checkSameShape(ins, out, "reduce_scatter");
  weftDataType_t type = toWeftType(out.scalar_type());
  weftRedOp_t op = toWeftOp(opts.reduceOp, out.scalar_type());
  return enqueue(c10d::OpType::REDUCE_SCATTER, outputs, [this, out, ins, type, op] {
    at::Tensor flat = flatten(ins);
    check(weftReduceScatter(flat.data_ptr(), out.data_ptr(), out.numel(), type, op, comm_, nullptr),
          "reduce_scatter");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  checkCpuDense(input, "_reduce_scatter_base");
  checkCpuDense(output, "_reduce_scatter_base");
  TORCH_CHECK(input.numel() == output.numel() * getSize() && output.scalar_type() == input.scalar_type(),
              "weft backend: _reduce_scatter_base input must hold world_size x output elements of its type");
  weftDataType_t type = toWeftType(output.scalar_type());
  weftRedOp_t op = toWeftOp(opts.reduceOp, output.scalar_type());
  at::Tensor in = input, out = output;
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {out}, [this, in, out, type, op] {
    check(weftReduceScatter(in.data_ptr(), out.data_ptr(), out.numel(), type, op, comm_, nullptr),
          "_reduce_scatter_base");
  });
}

void ProcessGroupWeft::exchange(const std::vector<at::Tensor>& sendBlocks, const std::vector<at::Tensor>& recvBlocks) {
  const int me = getRank();
  check(weftGroupStart(), "alltoall");
  weftResult_t r = weftSuccess;
  for (int peer = 0; peer < getSize() && r == weftSuccess; peer++) {
    if (peer == me) continue;
    const at::Tensor& s = sendBlocks[peer];
    const at::Tensor& d = recvBlocks[peer];
    if (s.numel() > 0) r = weftSend(s.data_ptr(), s.numel(), toWeftType(s.scalar_type()), peer, comm_, nullptr);
    if (r == weftSuccess && d.numel() > 0)
      r = weftRecv(d.data_ptr(), d.numel(), toWeftType(d.scalar_type()), peer, comm_, nullptr);
  }
  weftResult_t end = weftGroupEnd();
  check(r != weftSuccess ? r : end, "alltoall");
  const_cast<at::Tensor&>(recvBlocks[me]).copy_(sendBlocks[me]);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& outputSplitSizes,
                                                               std::vector<int64_t>& inputSplitSizes,
                                                               const c10d::AllToAllOptions& opts) {
  checkCpuDense(input, "alltoall_base");
  checkCpuDense(output, "alltoall_base");
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "weft backend: alltoall needs one type");
  const int n = getSize();
  at::Tensor in = input, out = output;
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK(in.numel() == out.numel() && in.size(0) % n == 0,
                "weft backend: alltoall_base without splits needs equal tensors whose first dimension divides by ",
                n);
    weftDataType_t type = toWeftType(in.scalar_type());
    return enqueue(c10d::OpType::ALLTOALL_BASE, {out}, [this, in, out, type, n] {
      check(weftAlltoAll(in.data_ptr(), out.data_ptr(), in.numel() / n, type, comm_, nullptr), "alltoall_base");
    });
  }
  // Uneven splits (sizes along dimension 0): one send and one receive per peer.
  auto blocks = [n](const at::Tensor& t, const std::vector<int64_t>& splits) {
    std::vector<at::Tensor> out;
    int64_t row = t.numel() / std::max<int64_t>(t.size(0), 1);
    int64_t offset = 0;
    for (int r = 0; r < n; r++) {
      int64_t rows = splits.empty() ? t.size(0) / n : splits[r];
      out.push_back(t.view({-1}).narrow(0, offset * row, rows * row));
      offset += rows;
    }
    return out;
  };
  TORCH_CHECK(outputSplitSizes.empty() || static_cast<int>(outputSplitSizes.size()) == n,
              "weft backend: alltoall_base needs ", n, " output split sizes");
  TORCH_CHECK(inputSplitSizes.empty() || static_cast<int>(inputSplitSizes.size()) == n,
              "weft backend: alltoall_base needs ", n, " input split sizes");
  std::vector<at::Tensor> sendBlocks = blocks(in, inputSplitSizes), recvBlocks = blocks(out, outputSplitSizes);
  return enqueue(c10d::OpType::ALLTOALL_BASE, {out},
                 [this, sendBlocks, recvBlocks] { exchange(sendBlocks, recvBlocks); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(static_cast<int>(outputs.size()) == getSize() && static_cast<int>(inputs.size()) == getSize(),
              "weft backend: alltoall needs ", getSize(), " input and output tensors");
  for (const at::Tensor& t : outputs) checkCpuDense(t, "alltoall");
  for (const at::Tensor& t : inputs) {
    checkCpuDense(t, "alltoall");
    toWeftType(t.scalar_type());
  }
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  return enqueue(c10d::OpType::ALLTOALL, outs, [this, ins, outs] { exchange(ins, outs); });
}

// Point-to-point runs beside the queue, on a communicator per direction
// (p2p_engine.h): tags are matched and a receive never waits behind a send.
c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  checkSingle(tensors, "send");
  TORCH_CHECK(dstRank >= 0 && dstRank < getSize() && dstRank != getRank(), "weft backend: send to rank ", dstRank,
              " of a group of ", getSize(), " ranks (this is rank ", getRank(), ")");
  auto work = c10::make_intrusive<WorkWeft>(getRank(), c10d::OpType::SEND, tensors, "weft:send", tensors);
  p2p_->send(work, tensors[0], dstRank, tag);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  checkSingle(tensors, "recv");
  TORCH_CHECK(srcRank >= 0 && srcRank < getSize() && srcRank != getRank(), "weft backend: recv from rank ",
              srcRank, " of a group of ", getSize(), " ranks (this is rank ", getRank(), ")");
  auto work = c10::make_intrusive<WorkWeft>(getRank(), c10d::OpType::RECV, tensors, "weft:recv", tensors);
  p2p_->recv(work, tensors[0], srcRank, tag);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  checkSingle(tensors, "recv");
  TORCH_CHECK(getSize() > 1, "weft backend: recv from any source in a group of one rank");
  auto work =
      c10::make_intrusive<WorkWeft>(getRank(), c10d::OpType::RECVANYSOURCE, tensors, "weft:recvAnySource", tensors);
  p2p_->recv(work, tensors[0], P2pEngine::kAnySource, tag);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::barrier(const c10d::BarrierOptions& opts) {
  // A one-byte all-reduce: it returns only once every rank has entered, and
  // it is queued behind this rank's earlier operations, so they are done too.
  return enqueue(c10d::OpType::BARRIER, {}, [this] {
    uint8_t token = 0;
    check(weftAllReduce(&token, &token, 1, weftUint8, weftMax, comm_, nullptr), "barrier");
  });
}

}  // namespace weft::torch_backend
