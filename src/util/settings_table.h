// Every WEFT_* variable weft reads, declared once. Included by settings.h
// with WEFT_SETTING defined; nothing else includes it.
//
// WEFT_SETTING(handle, name, type, default, scope, doc)
// WEFT_SETTING_NCCL(handle, name, ncclName, type, default, scope, doc)
//   the same, plus the NCCL name operators use for it: read (below the
//   WEFT_ name, from the environment and /etc/nccl.conf, ~/.nccl.conf)
//   only in processes that enabled NCCL names (libnccl.so.2 does at load)
//   handle   the constant code reads it through (settings::kNSlots)
//   type     Int (decimal, 0x hex or 0 octal, optional K/M/G suffix),
//            Bool (1/true/yes/on, 0/false/no/off) or String
//   default  the value when unset, as it would be written (parsed like a
//            set value), or nullptr: unset (docs/environment.md says "unset")
//   scope    Comm: taken into each communicator's Config when it is created;
//            Process: read outside any communicator (once, or at each call
//            that has none); Launch: from the environment only (launchers,
//            perf binaries, the settings loader itself), never from a file
//   doc      one line; docs/environment.md has the full story
// docs/environment.md is tested against this table (tests/settings).

// Logging
WEFT_SETTING_NCCL(kDebug, "WEFT_DEBUG", "NCCL_DEBUG", String, nullptr, Process, "log level: WARN, INFO or TRACE")
WEFT_SETTING_NCCL(kDebugSubsys, "WEFT_DEBUG_SUBSYS", "NCCL_DEBUG_SUBSYS", String, "ALL", Process,
                  "subsystems whose INFO/TRACE lines print")
WEFT_SETTING_NCCL(kDebugFile, "WEFT_DEBUG_FILE", "NCCL_DEBUG_FILE", String, nullptr, Process,
                  "log file (%h host, %p pid) instead of stderr")

// Settings files
WEFT_SETTING(kConfFile, "WEFT_CONF_FILE", String, nullptr, Launch,
             "one more settings file, read after /etc/weft.conf and ~/.weft.conf")

// Bootstrap and sockets
WEFT_SETTING_NCCL(kSocketIfname, "WEFT_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", String, nullptr, Process,
                  "interfaces to listen on")
WEFT_SETTING_NCCL(kCommId, "WEFT_COMM_ID", "NCCL_COMM_ID", String, nullptr, Process,
                  "<ip>:<port> of the bootstrap root")
WEFT_SETTING(kCommSecret, "WEFT_COMM_SECRET", String, nullptr, Process, "mixed into ids built from WEFT_COMM_ID")
WEFT_SETTING(kBootstrapMaxConns, "WEFT_BOOTSTRAP_MAX_CONNS", Int, "32", Process,
             "outgoing bootstrap connections a rank keeps open")
WEFT_SETTING(kBootstrapMaxIncoming, "WEFT_BOOTSTRAP_MAX_INCOMING", Int, "128", Process,
             "connections into a rank's bootstrap at once; past it, new ones wait and idle ones are asked to retire")
WEFT_SETTING(kAllToAllMaxPeers, "WEFT_ALLTOALL_MAX_PEERS", Int, "64", Comm,
             "peers an AllToAll keeps connected at once; beyond, it runs in batches")
WEFT_SETTING(kSocketNSocks, "WEFT_SOCKET_NSOCKS", Int, "2", Comm, "TCP sockets per socket-transport connection")
WEFT_SETTING(kSocketBidir, "WEFT_SOCKET_BIDIR", Int, "1", Comm,
             "1: a socket-transport connection to a peer that already has one the other way reuses its sockets")
WEFT_SETTING(kSocketInline, "WEFT_SOCKET_INLINE", Int, "1", Comm,
             "largest piece the executor moves itself (0: none; 1: 32K, or every piece under two cores per rank)")
WEFT_SETTING(kSocketDirect, "WEFT_SOCKET_DIRECT", Int, "64K", Comm,
             "smallest piece sent from / received into the caller's buffer instead of a staging slot (0: never)")
WEFT_SETTING(kSocketBuffsize, "WEFT_SOCKET_BUFFSIZE", Int, "4M", Process, "SO_SNDBUF/SO_RCVBUF of data sockets")
WEFT_SETTING(kSocketDeadPeerS, "WEFT_SOCKET_DEAD_PEER_S", Int, "30", Process,
             "seconds before a silent TCP peer is declared dead")
WEFT_SETTING_NCCL(kHostId, "WEFT_HOSTID", "NCCL_HOSTID", String, nullptr, Comm,
                  "the identity that decides \"same host\"")

// Transport choice
WEFT_SETTING_NCCL(kShmDisable, "WEFT_SHM_DISABLE", "NCCL_SHM_DISABLE", Bool, "0", Comm, "never use shared memory")
WEFT_SETTING_NCCL(kP2pDisable, "WEFT_P2P_DISABLE", "NCCL_P2P_DISABLE", Bool, "0", Comm,
                  "never use CUDA-IPC peer-to-peer")
WEFT_SETTING(kDeviceSetup, "WEFT_DEVICE_SETUP", Bool, "1", Comm,
             "with a GPU, init sets up the device path (stream, status word, ring FIFOs)")
WEFT_SETTING(kDeviceNChannels, "WEFT_DEVICE_NCHANNELS", Int, "0", Comm,
             "most channels of a device call, 1..64; 0: from the GPU link (NVLink 16, PCIe 4)")
WEFT_SETTING(kDeviceExactArith, "WEFT_DEVICE_EXACT_ARITH", Bool, "0", Comm,
             "device float16/bfloat16 reductions round as the host executor does (no half2/bfloat162 instructions)")
WEFT_SETTING(kDeviceImageArena, "WEFT_DEVICE_IMAGE_ARENA", Int, "4M", Comm,
             "bytes of device memory per communicator for plan images, reserved with its device state")
WEFT_SETTING(kDeviceScratch, "WEFT_DEVICE_SCRATCH", Int, "16M", Comm,
             "bytes of device scratch and as many of in-place staging per communicator, reserved with its device "
             "state; a device call that needs more allocates in the call path (refused inside CUDA graph capture)")
WEFT_SETTING_NCCL(kNet, "WEFT_NET", "NCCL_NET", String, nullptr, Comm, "force Socket or IB between hosts")

// FIFOs, channels, algorithms
WEFT_SETTING_NCCL(kBuffsize, "WEFT_BUFFSIZE", "NCCL_BUFFSIZE", Int, "4M", Comm, "bytes of one connection's FIFO")
WEFT_SETTING(kNSlots, "WEFT_NSLOTS", Int, "8", Comm, "slots per FIFO")
WEFT_SETTING(kLlBuffsize, "WEFT_LL_BUFFSIZE", Int, "128K", Comm, "data bytes a rank publishes per LL round; 0: no LL protocol")
WEFT_SETTING(kDirect, "WEFT_DIRECT", Bool, "1", Comm,
             "single-copy collectives on registered buffers of ranks on one host")
WEFT_SETTING(kDirectMinBytes, "WEFT_DIRECT_MIN_BYTES", Int, "256K", Comm,
             "smallest call (nccl-tests bytes) that runs single-copy on registered buffers")
WEFT_SETTING(kStreamMinBytes, "WEFT_STREAM_MIN_BYTES", Int, "16M", Comm,
             "smallest host call (bytes of its output) written with non-temporal stores; 0: never")
WEFT_SETTING(kNChannels, "WEFT_NCHANNELS", Int, "1", Comm, "channels per communicator")
WEFT_SETTING_NCCL(kMinChannels, "WEFT_MIN_NCHANNELS", "NCCL_MIN_NCHANNELS", Int, nullptr, Comm,
                  "raise the channel count to at least this (config minCTAs wins)")
WEFT_SETTING_NCCL(kMaxChannels, "WEFT_MAX_NCHANNELS", "NCCL_MAX_NCHANNELS", Int, nullptr, Comm,
                  "cap the channel count at this (config maxCTAs wins)")
WEFT_SETTING(kCallChannels, "WEFT_CALL_CHANNELS", Int, "0", Comm, "channels every call uses (0: the model's choice)")
WEFT_SETTING(kSliceBytes, "WEFT_SLICE_BYTES", Int, "0", Comm, "slice size every call uses (0: the model's choice)")
WEFT_SETTING_NCCL(kAlgo, "WEFT_ALGO", "NCCL_ALGO", String, nullptr, Comm, "algorithms the selector may use")
WEFT_SETTING_NCCL(kProto, "WEFT_PROTO", "NCCL_PROTO", String, nullptr, Comm, "protocols the selector may use")
WEFT_SETTING(kTuneShmLatNs, "WEFT_TUNE_SHM_LAT_NS", Int, "3000", Comm, "cost model: shared-memory hop latency, ns")
WEFT_SETTING(kTuneShmBwMbs, "WEFT_TUNE_SHM_BW_MBS", Int, "8000", Comm, "cost model: shared-memory bandwidth, MB/s")
WEFT_SETTING(kTuneNetLatNs, "WEFT_TUNE_NET_LAT_NS", Int, "25000", Comm, "cost model: network hop latency, ns")
WEFT_SETTING(kTuneNetBwMbs, "WEFT_TUNE_NET_BW_MBS", Int, "2500", Comm, "cost model: network bandwidth, MB/s")
WEFT_SETTING(kTuneFile, "WEFT_TUNE_FILE", String, nullptr, Comm, "cost-model constants and curves from weft-tune")
WEFT_SETTING(kSpinCount, "WEFT_SPIN_COUNT", Int, "200", Process, "polls before a waiter yields")
WEFT_SETTING(kSpin, "WEFT_SPIN", String, "auto", Comm,
             "a rank's waits busy-poll first: auto (when ranks on the host <= CPUs), 1 always, 0 never")
WEFT_SETTING(kYieldUs, "WEFT_YIELD_US", Int, "2000", Process, "microseconds a waiter yields before it sleeps")
WEFT_SETTING(kSimd, "WEFT_SIMD", String, nullptr, Process, "cap the reduction loops: scalar, sse2, avx2, avx512")

// Timeouts and checks
WEFT_SETTING(kTimeoutMs, "WEFT_TIMEOUT_MS", Int, "300000", Comm, "bound on every wait, ms")
WEFT_SETTING(kCheck, "WEFT_CHECK", Int, "0", Comm, "compare every collective's arguments across ranks")
WEFT_SETTING(kDiagnoseSignal, "WEFT_DIAGNOSE_SIGNAL", String, nullptr, Process,
             "signal (USR1, a number) that logs who has not arrived in each communicator; unset: none")

// Tracing
WEFT_SETTING(kTraceFile, "WEFT_TRACE_FILE", String, nullptr, Comm,
             "per-rank Chrome/Perfetto trace of every call (%r rank, %h host, %p pid)")
WEFT_SETTING(kTraceMaxEvents, "WEFT_TRACE_MAX_EVENTS", Int, "100000", Comm,
             "events a trace keeps (the oldest are dropped)")

// Topology
WEFT_SETTING_NCCL(kTopoFile, "WEFT_TOPO_FILE", "NCCL_TOPO_FILE", String, nullptr, Comm,
                  "topology JSON file instead of detection")
WEFT_SETTING(kTopoDumpFile, "WEFT_TOPO_DUMP_FILE", String, nullptr, Comm, "write the topology in use here")

// IB / RoCE
WEFT_SETTING_NCCL(kIbDisable, "WEFT_IB_DISABLE", "NCCL_IB_DISABLE", Bool, "0", Comm, "never use IB/RoCE")
WEFT_SETTING_NCCL(kIbHca, "WEFT_IB_HCA", "NCCL_IB_HCA", String, nullptr, Comm, "HCA ports to use")
WEFT_SETTING_NCCL(kIbGidIndex, "WEFT_IB_GID_INDEX", "NCCL_IB_GID_INDEX", Int, "-1", Comm, "RoCE GID index (-1: auto)")
WEFT_SETTING_NCCL(kIbTc, "WEFT_IB_TC", "NCCL_IB_TC", Int, "0", Comm, "RoCE traffic class")
WEFT_SETTING_NCCL(kIbSl, "WEFT_IB_SL", "NCCL_IB_SL", Int, "0", Comm, "IB service level")
WEFT_SETTING_NCCL(kIbTimeout, "WEFT_IB_TIMEOUT", "NCCL_IB_TIMEOUT", Int, "20", Comm, "local ACK timeout exponent")
WEFT_SETTING_NCCL(kIbRetryCnt, "WEFT_IB_RETRY_CNT", "NCCL_IB_RETRY_CNT", Int, "7", Comm, "IB transport retries")
WEFT_SETTING_NCCL(kIbQpsPerConnection, "WEFT_IB_QPS_PER_CONNECTION", "NCCL_IB_QPS_PER_CONNECTION", Int, "1", Comm,
                  "queue pairs per IB connection")
WEFT_SETTING_NCCL(kIbRoceVersion, "WEFT_IB_ROCE_VERSION", "NCCL_IB_ROCE_VERSION_NUM", Int, "0", Comm,
                  "RoCE version of the automatic GID choice (0: any)")
WEFT_SETTING_NCCL(kIbAddrFamily, "WEFT_IB_ADDR_FAMILY", "NCCL_IB_ADDR_FAMILY", String, nullptr, Comm,
                  "address family of the automatic RoCE GID choice (AF_INET, AF_INET6)")
WEFT_SETTING_NCCL(kIbAddrRange, "WEFT_IB_ADDR_RANGE", "NCCL_IB_ADDR_RANGE", String, nullptr, Comm,
                  "address range of the automatic RoCE GID choice (CIDR)")
WEFT_SETTING_NCCL(kIbPkey, "WEFT_IB_PKEY", "NCCL_IB_PKEY", Int, "0", Comm, "partition key index of the QPs")
WEFT_SETTING(kIbMaxNics, "WEFT_IB_MAX_NICS", Int, "0", Comm,
             "most IB ports one rank spreads its channels over (0: all at the closest distance)")
WEFT_SETTING(kIbVerbsLib, "WEFT_IB_VERBS_LIB", String, "libibverbs.so.1", Process, "the verbs library to dlopen")

// GPUDirect RDMA
WEFT_SETTING(kGdrDisable, "WEFT_GDR_DISABLE", Bool, "0", Comm, "stage GPU buffers through host memory over IB")
WEFT_SETTING_NCCL(kNetGdrLevel, "WEFT_NET_GDR_LEVEL", "NCCL_NET_GDR_LEVEL", String, nullptr, Comm,
             "farthest GPU-NIC path for GPUDirect RDMA: LOC, PIX, PXB, PHB, SYS")
WEFT_SETTING_NCCL(kDmabufEnable, "WEFT_DMABUF_ENABLE", "NCCL_DMABUF_ENABLE", Bool, "1", Comm,
                  "register GPU memory through dma-buf")
WEFT_SETTING_NCCL(kGdrFlushDisable, "WEFT_GDR_FLUSH_DISABLE", "NCCL_GDR_FLUSH_DISABLE", Bool, "0", Comm,
                  "skip the read-back flush of GPU slots")

// Launchers and perf binaries (not read by the library)
WEFT_SETTING(kRank, "WEFT_RANK", Int, nullptr, Launch, "this process's rank")
WEFT_SETTING(kNRanks, "WEFT_NRANKS", Int, nullptr, Launch, "the process count")
WEFT_SETTING(kLocalRank, "WEFT_LOCAL_RANK", Int, nullptr, Launch, "set by weft-run; nothing reads it yet")
