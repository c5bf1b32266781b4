// The pipeline model: which channel count and slice each algorithm gets.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/pipeline_model.h"
#include "algorithms/registry.h"
#include "algorithms/selector.h"

namespace weft::test {
namespace {

using plan::Coll;

algo::CostInputs oneHost(int n, uint64_t bytes) {
  algo::CostInputs in;
  in.nranks = n;
  in.nHosts = 1;
  in.bytes = bytes;
  in.intra = {2.0, 8.0};  // 2 µs per hand-off, 8000 bytes/µs
  return in;
}

plan::FifoGeometry slots512k() { return plan::FifoGeometry{512 * 1024, 8}; }

TEST(PipelineModel, ChainByHand) {
  // Broadcast over 8 ranks: depth 7. 1 MB in 4 slices of 256 KB:
  // (7 + 4 - 1) stages of (2 µs + 1 MB / 8000 / 4).
  algo::CostInputs in = oneHost(8, 1 << 20);
  const double expect = 10 * (2.0 + (1 << 20) / 8000.0 / 4);
  EXPECT_NEAR(algo::pipelinedUs(Coll::Broadcast, algo::kRing, in, 1, 256 * 1024), expect, 1e-6);
}

TEST(PipelineModel, RingByHandGainsNothingFromSlices) {
  // AllReduce ring over 4 ranks, 1 MB: 6 steps of 256 KB blocks.
  algo::CostInputs in = oneHost(4, 1 << 20);
  const double bytesUs = 1.5 * (1 << 20) / 8000.0;
  EXPECT_NEAR(algo::pipelinedUs(Coll::AllReduce, algo::kRing, in, 1, 512 * 1024), 6 * 2.0 + bytesUs, 1e-6);
  EXPECT_NEAR(algo::pipelinedUs(Coll::AllReduce, algo::kRing, in, 1, 64 * 1024), 6 * 4 * 2.0 + bytesUs, 1e-6);
  algo::CallShape s = algo::shapeCall(Coll::AllReduce, algo::kRing, in, slots512k());
  EXPECT_EQ(s.sliceBytes, 512u * 1024);
  EXPECT_EQ(s.nChannels, 1);
}

TEST(PipelineModel, PipelinesGetSmallerSlicesAsTheyGrow) {
  // Tiny calls: one piece whatever the slice, so the FIFO's slot.
  EXPECT_EQ(algo::shapeCall(Coll::Broadcast, algo::kRing, oneHost(8, 8), slots512k()).sliceBytes, 512u * 1024);
  // 4 MB over a depth-7 chain: filling 7 hops of 512 KB slices costs more
  // than the hand-offs of smaller ones.
  const uint64_t mid = algo::shapeCall(Coll::Broadcast, algo::kRing, oneHost(8, 4 << 20), slots512k()).sliceBytes;
  EXPECT_LT(mid, 512u * 1024);
  EXPECT_GE(mid, algo::kMinSliceBytes);
  // The optimum grows like sqrt(size): a larger call, no smaller slices.
  const uint64_t big = algo::shapeCall(Coll::Broadcast, algo::kRing, oneHost(8, 64 << 20), slots512k()).sliceBytes;
  EXPECT_GE(big, mid);
  // Trees pipeline too.
  EXPECT_LT(algo::shapeCall(Coll::AllReduce, algo::kBinaryTree, oneHost(8, 4 << 20), slots512k()).sliceBytes, 512u * 1024);
  // The chosen shape is never worse than the plain one.
  algo::CostInputs in = oneHost(8, 4 << 20);
  algo::CallShape s = algo::shapeCall(Coll::Broadcast, algo::kRing, in, slots512k());
  EXPECT_LE(s.us, algo::pipelinedUs(Coll::Broadcast, algo::kRing, in, 1, 512 * 1024));
}

// A call smaller than half the slot still pipelines: halves that hold the
// whole call are one piece as the slot is, and the search goes on past
// them to slices below the call's size (128 KB through a tree of 6 network
// hops on 64 hosts: 8 KB slices, about a third of the one-piece time).
TEST(PipelineModel, CallsBelowHalfASlotStillPipeline) {
  algo::CostInputs in;
  in.nranks = 64;
  in.nHosts = 64;
  in.bytes = 128 << 10;
  in.intra = {0.6, 240};
  in.inter = {4.5, 5};
  const algo::CallShape s = algo::shapeCall(Coll::AllReduce, algo::kDoubleTree, in, slots512k());
  EXPECT_LT(s.sliceBytes, in.bytes);
  EXPECT_LT(s.us, 0.5 * algo::pipelinedUs(Coll::AllReduce, algo::kDoubleTree, in, 1, 512 * 1024));
}

TEST(PipelineModel, ChannelsOnlyWhenOneChannelCannotFillTheLink) {
  algo::CostInputs in = oneHost(8, 64 << 20);
  in.maxChannels = 8;
  // No per-channel limit (one executor thread does every channel's copies).
  EXPECT_EQ(algo::shapeCall(Coll::AllReduce, algo::kRing, in, slots512k()).nChannels, 1);
  // A channel carries a quarter of the link: four channels for large calls...
  in.channelBwGBs = 2.0;
  EXPECT_EQ(algo::shapeCall(Coll::AllReduce, algo::kRing, in, slots512k()).nChannels, 4);
  // ...never more than the communicator has...
  in.maxChannels = 2;
  EXPECT_EQ(algo::shapeCall(Coll::AllReduce, algo::kRing, in, slots512k()).nChannels, 2);
  // ...and no more than fill the link for small ones: channels with paths
  // of their own hand off side by side, so they cost no latency, but beyond
  // four they carry nothing faster.
  in.maxChannels = 8;
  in.bytes = 1024;
  EXPECT_LE(algo::shapeCall(Coll::AllReduce, algo::kRing, in, slots512k()).nChannels, 4);
  // On a shared path (no per-channel limit) each channel's hand-offs come one
  // after another: one channel, whatever the size.
  in.channelBwGBs = 0;
  EXPECT_EQ(algo::shapeCall(Coll::AllReduce, algo::kRing, in, slots512k()).nChannels, 1);
  in.bytes = 64 << 20;
  EXPECT_EQ(algo::shapeCall(Coll::AllReduce, algo::kDoubleTree, in, slots512k()).nChannels, 1);
}

// Channels with paths of their own wait on them side by side: a ring's
// slices pay the step latency once per round of the channels, not once per
// channel (weft-sim on 64 x 8 with a NIC per channel: the flat ring reaches
// the NICs' bandwidth on 8 channels, where this model used to give it 2-6).
TEST(PipelineModel, ChannelsWithOwnPathsHandOffSideBySide) {
  algo::CostInputs in;
  in.nranks = 512;
  in.nHosts = 64;
  in.bytes = 128 << 20;
  in.intra = {0.6, 240};
  in.inter = {4.5, 40};
  in.maxChannels = 8;
  in.channelBwGBs = 5;
  const double one = algo::pipelinedUs(Coll::AllReduce, algo::kRing, in, 1, 512 << 10);
  const double eight = algo::pipelinedUs(Coll::AllReduce, algo::kRing, in, 8, 512 << 10);
  // Eight channels reach the 40 GB/s of eight NICs, and their latency is one
  // channel's over an eighth of the slices.
  EXPECT_LT(eight, one / 4);
  EXPECT_EQ(algo::shapeCall(Coll::AllReduce, algo::kRing, in, slots512k()).nChannels, 8);
}

// The double tree splits a channel's bytes over its two trees, each in
// pieces of its own: 256 KB on one channel in 128 KB slices is one piece
// per tree, as in 256 KB slices (the model counted two pieces of the whole
// channel, priced the larger slice as a pipeline, and picked it on two
// hosts where the simulation ran it 1.5x slower). Its fill stages move one
// tree's piece over one link: in 64 KB slices (two pieces per tree) depth
// + 1 hand-offs, the bytes term once, and depth - 1 filling stages of a
// quarter of it (one piece of one tree: 1/2 of 1/2).
TEST(PipelineModel, DoubleTreeCountsPiecesPerTree) {
  algo::CostInputs in = oneHost(4, 256 * 1024);
  in.nranks = 4;
  in.nHosts = 2;
  in.inter = {5.0, 10.0};
  const double one = algo::pipelinedUs(Coll::AllReduce, algo::kDoubleTree, in, 1, 256 * 1024);
  EXPECT_NEAR(algo::pipelinedUs(Coll::AllReduce, algo::kDoubleTree, in, 1, 128 * 1024), one, 1e-9);
  // A single tree's pipeline has two pieces in 128 KB slices.
  EXPECT_GT(algo::pipelinedUs(Coll::AllReduce, algo::kBinaryTree, in, 1, 256 * 1024),
            algo::pipelinedUs(Coll::AllReduce, algo::kBinaryTree, in, 1, 128 * 1024));
  const double L = algo::hopLatencyUs(in), bytesUs = algo::bytesTermUs(Coll::AllReduce, algo::kDoubleTree, in);
  const double depth = std::round(algo::latencyTermUs(Coll::AllReduce, algo::kDoubleTree, in) / L);
  EXPECT_NEAR(algo::pipelinedUs(Coll::AllReduce, algo::kDoubleTree, in, 1, 64 * 1024),
              (depth + 1) * L + bytesUs + (depth - 1) * bytesUs / 4, 1e-6);
}

TEST(Selector, SelectCallCombinesAlgorithmAndShape) {
  algo::CostInputs in = oneHost(8, 4 << 20);
  algo::CallChoice c = algo::selectCall(Coll::Broadcast, in, algo::AlgoFilter{}, slots512k());
  EXPECT_EQ(c.algo, algo::kRing);
  EXPECT_EQ(c.shape.sliceBytes, algo::shapeCall(Coll::Broadcast, algo::kRing, in, slots512k()).sliceBytes);
}

}  // namespace
}  // namespace weft::test
