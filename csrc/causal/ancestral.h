// Ancestral decomposition (Drton & Weihs 2016; SEMID 0.4.2 ancestralIdentifyStep: ancestral_sweep, and its
// fixpoint as generic_identify over the "ancestral" step, which is SEMID's ancestralID), the "htc" step's
// sweeps and globalID: causal/ancestral.cpp, causal/tian.cpp.
// Plain C++17. Same input conventions and checks as htc.h (StatusError on bad ids, self loops, duplicates);
// polls interrupt_requested() once per node test.
#pragma once
#include <cstdint>
#include <vector>

namespace fastnips::causal {

struct AncestralResult {
  std::vector<uint8_t> edge_solved;  // per input directed edge: its head was solved
  std::vector<uint8_t> node_solved;  // per node (parentless => 1)
  int32_t rounds = 0;                // sweeps that solved at least one node
};

// One Gauss-Seidel sweep of SEMID's htcIdentifyStep (the "htc" step of generalGenericID's loop): nodes
// 0..n-1 in turn; an unsolved node v (solved[v] == 0) with A_v = ((S \ sib(v)) ∪ (V \ htrFrom(v))) is solved
// when |A_v| >= |pa(v)| and a half-trek system reaches pa(v) from A_v (exact max-flow; a parentless node at
// once), and joins S at once. Returns the nodes it solved, in order.
std::vector<int32_t> htc_sweep(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                               int64_t n_bi, const uint8_t* solved);

// One Gauss-Seidel sweep of SEMID's ancestralIdentifyStep (the "ancestral" step of generalGenericID's loop;
// the branches at the top of causal/ancestral.cpp; a parentless node at once) from the solved mask `solved`:
// returns the nodes it solved, in order.
std::vector<int32_t> ancestral_sweep(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                                     int64_t n_bi, const uint8_t* solved);

// The "htc" step alone to its fixpoint, as generalGenericID's loop runs it before any other step: htc_sweep
// from the parentless nodes until a sweep solves nothing; rounds = the sweeps that solved a node. The
// result of edgewiseTSID's loop whenever it solves every node (the other steps then find nothing to do).
AncestralResult htc_sweeps(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                           int64_t n_bi);

// SEMID globalID (Drton, Foygel & Sullivant 2011, Thm 2): false for a graph with a directed cycle; else true
// iff every bidirected component (of two or more nodes) has at least two sinks and, recursively, so do the
// bidirected components inside the ancestors (within the component) of each sink. Each distinct component is
// examined once (its verdict depends on its node set only).
bool global_identifiable(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                         int64_t n_bi);

// htc_sweeps on the component graph of every Tian c-component (rounds summed over the components), as
// generalGenericID(tianDecompose = TRUE) runs it (causal/tian.cpp).
AncestralResult htc_sweeps_tian(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                                int64_t n_bi);

// SEMID generalGenericID(g, steps, tianDecompose = tian) for steps from {htcIdentifyStep (0),
// edgewiseIdentifyStep with subsetSizeControl = Inf (1), ancestralIdentifyStep (2)}: the steps in order, the
// first that identifies an edge restarts the list, until none does; on the graph or on every Tian component
// graph (rounds summed).
// The edgewise step by the randomized rank method over F_prime (htc.h; prime 0 = 2^61 - 1); the same checks.
AncestralResult generic_identify(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                                 int64_t n_bi, const std::vector<uint8_t>& steps, bool tian, uint64_t seed,
                                 uint64_t prime);

}  // namespace fastnips::causal
