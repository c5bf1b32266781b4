// Symmetry of a simulated call. Two kinds of rank permutations that can map
// a cluster onto itself:
//   - the shift r -> (r + period) mod n (64 hosts x 8 ranks in racks of 8
//     hosts under a spine: the shift by one rack, 64 ranks);
//   - the rotation of every host's ranks, local index l -> (l + 1) mod L,
//     when every host has L ranks numbered host by host (one NIC per rank:
//     the rails; rank l's link and NIC onto rank l+1's).
// They commute; the group they generate (with either left out where the
// cluster or the plans do not have it) acts on the ranks without fixed
// points. When every rank's plan is its representative's moved by the group
// element that carries the representative to it (peers moved alike, the
// same steps and byte counts in the same order), every rank behaves in the
// flow model exactly like its representative: its steps start and end at
// the same times, its flows get the same fair shares. The model then runs
// the representatives' plans only, each flow standing for its copies (one
// per group element), each link for its orbit: a link's load is its
// representative's flows times how many copies of them cross each link of
// the orbit.
//
// On 64 x 8 in racks: a flat ring or `hier` runs 64 ranks (the shift; the
// flat ring's order is not rotation-invariant) or 8 (`hier`: both);
// `hiertree` (a tree per rail across hosts, rotation only) 64. The trees
// across ranks are not invariant (the root is special): they run in full,
// as do uneven hosts, a degraded host, and blocks of unequal sizes (a
// buffer that does not split evenly over a ring).
#pragma once

#include <vector>

#include "algorithms/plan.h"
#include "src/sim/cluster.h"

namespace weft::sim {

struct RankSymmetry {
  int nranks = 0;
  int period = 0;  // the shift; nranks: none
  int rotate = 1;  // ranks per host rotated; 1: none
  // Per link: the representative of its orbit (its lowest index), and how
  // many copies of a flow crossing one link of the orbit cross each link of
  // it (copies() / orbit size). Links no flow can cross (NICs no rank
  // uses) are their own orbit.
  std::vector<int> linkRep;
  std::vector<int> linkWeight;

  int copies() const { return nranks / period * rotate; }
  bool reduces() const { return copies() > 1; }
  // The representative of r's class (local index 0 of a host among the
  // first `period` ranks).
  int rep(int r) const { return r % period - r % period % rotate; }
  // The group element carrying rep(r) to r, applied to x.
  int moveLike(int r, int x) const;
  // Its inverse applied to x: where x sits seen from rep(r).
  int moveBackLike(int r, int x) const;
};

// The full model: every rank and link its own class.
RankSymmetry noSymmetry(const Cluster& c);

// The largest group of the two kinds (each where asked for) that maps the
// cluster onto itself: the rotation when the hosts allow it, and the
// smallest shift period dividing n (a multiple of the rotated hosts'
// ranks); noSymmetry(c) when there is none. Plans invariant under one kind
// only are simulated with that kind alone.
RankSymmetry findSymmetry(const Cluster& c, bool withShift, bool withRotation);

// Whether plan `b` (rank r) is plan `a` (rank s.rep(r)) moved like r, as
// far as the flow model sees it: channels, steps, their peers, connections,
// element counts, element size and slice.
bool movedPlanMatches(const RankSymmetry& s, int r, const plan::Plan& a, const plan::Plan& b);

}  // namespace weft::sim
