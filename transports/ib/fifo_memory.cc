#include "transports/ib/fifo_memory.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "src/util/error.h"
#include "src/util/log.h"

namespace weft::ib {

namespace {

constexpr size_t kPage = 4096;

void* pageAlloc(size_t bytes) {
  void* p = std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage);
  if (!p) raise(weftSystemError, "NET/IB: out of memory for a %zu-byte FIFO", bytes);
  return p;
}

}  // namespace

IbFifoMemory::IbFifoMemory(std::shared_ptr<IbDevice> dev, uint32_t nSlots, uint64_t slotBytes) : dev_(std::move(dev)) {
  const size_t len = fifoBytes(nSlots, slotBytes);
  hostMem_ = pageAlloc(len);
  try {
    hdr_ = fifoInit(hostMem_, nSlots, slotBytes);
    data_ = static_cast<char*>(hostMem_) + hdr_->dataOffset;
    mr_ = dev_->hostMrs->acquire(hostMem_, len);
  } catch (...) {
    release();
    throw;
  }
}

IbFifoMemory::IbFifoMemory(std::shared_ptr<IbDevice> dev, GdrMode mode, int cudaDev, uint32_t nSlots,
                           uint64_t slotBytes)
    : dev_(std::move(dev)), mode_(mode) {
  if (mode == GdrMode::Staged) raise(weftInternalError, "NET/IB: GPU slots requested in staged mode");
  const size_t slots = size_t(nSlots) * slotBytes;
  const size_t headerLen = fifoBytes(nSlots, slotBytes) - slots;
  hostMem_ = pageAlloc(headerLen);
  try {
    hdr_ = fifoInit(hostMem_, nSlots, slotBytes);
    gpu_ = cuda::GpuDirectBuffer(cudaDev, slots);
    data_ = gpu_.data();
    mr_ = dev_->gpuMrs(mode).acquire(gpu_.data(), gpu_.bytes());
  } catch (...) {
    release();
    throw;
  }
}

IbFifoMemory::~IbFifoMemory() { release(); }

void IbFifoMemory::release() noexcept {
  // The HCA lets go of the memory before it is freed.
  if (mr_.handle) {
    try {
      if (mode_ == GdrMode::Staged) dev_->hostMrs->release(mr_);
      else dev_->gpuMrs(mode_).release(mr_);
    } catch (const std::exception& e) {
      WEFT_WARN("NET/IB: releasing a FIFO registration on %s: %s", dev_->name.c_str(), e.what());
    }
    mr_ = MrKeys{};
  }
  gpu_ = cuda::GpuDirectBuffer();
  std::free(hostMem_);
  hostMem_ = nullptr;
}

FlushQp::FlushQp(const IbDevice& dev, ibv_cq* cq, const LoopbackAddress& addr, const IbConfig& cfg,
                 const std::string& where)
    : v_(dev.v), where_(where) {
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 2;  // one read in flight (FlushSchedule), one spare
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  qp_ = v_->createQp(dev.pd, &init);
  if (!qp_) raise(weftSystemError, "NET/IB: ibv_create_qp for the GPU flush on %s failed: %s", where.c_str(),
                  std::strerror(errno));
  try {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = static_cast<uint16_t>(cfg.pkeyIndex);
    a.port_num = addr.port;
    // The QP is both requester and responder of its reads.
    a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
    int rc = v_->modifyQp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc) raise(weftSystemError, "NET/IB: GPU flush QP to INIT on %s failed: %s", where.c_str(), std::strerror(rc));

    std::random_device rd;
    const uint32_t psn = rd() & 0xffffff;
    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RTR;
    r.path_mtu = addr.mtu;
    r.dest_qp_num = qp_->qp_num;
    r.rq_psn = psn;
    r.max_dest_rd_atomic = 1;
    r.min_rnr_timer = 12;
    r.ah_attr.port_num = addr.port;
    r.ah_attr.sl = static_cast<uint8_t>(cfg.serviceLevel);
    if (addr.roce) {
      r.ah_attr.is_global = 1;
      r.ah_attr.grh.dgid = addr.gid;
      r.ah_attr.grh.sgid_index = static_cast<uint8_t>(addr.gidIndex);
      r.ah_attr.grh.hop_limit = 255;
      r.ah_attr.grh.traffic_class = static_cast<uint8_t>(cfg.trafficClass);
    } else {
      r.ah_attr.dlid = addr.lid;
    }
    rc = v_->modifyQp(qp_, &r,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc) raise(weftSystemError, "NET/IB: GPU flush QP to RTR on %s failed: %s", where.c_str(), std::strerror(rc));

    ibv_qp_attr s{};
    s.qp_state = IBV_QPS_RTS;
    s.sq_psn = psn;
    s.timeout = static_cast<uint8_t>(cfg.timeout);
    s.retry_cnt = static_cast<uint8_t>(cfg.retryCount);
    s.rnr_retry = 7;
    s.max_rd_atomic = 1;
    rc = v_->modifyQp(qp_, &s,
                      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc) raise(weftSystemError, "NET/IB: GPU flush QP to RTS on %s failed: %s", where.c_str(), std::strerror(rc));
  } catch (...) {
    v_->destroyQp(qp_);
    qp_ = nullptr;
    throw;
  }
}

FlushQp::~FlushQp() {
  if (qp_) v_->destroyQp(qp_);
}

void FlushQp::postRead(uint64_t remoteAddr, uint32_t rkey, uint64_t landingAddr, uint32_t lkey) {
  ibv_sge sge{};
  sge.addr = landingAddr;
  sge.length = kReadBytes;
  sge.lkey = lkey;
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kFlushWrId;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remoteAddr;
  wr.wr.rdma.rkey = rkey;
  int rc = ibv_post_send(qp_, &wr, &bad);
  if (rc)
    raise(weftSystemError, "NET/IB: posting the GPU flush read on %s failed: %s", where_.c_str(), std::strerror(rc));
}

}  // namespace weft::ib
