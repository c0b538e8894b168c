// Internal to the causal criteria: SEMID's Tian decomposition into component graphs (causal/tian.cpp).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "causal/ancestral.h"
#include "causal/htc.h"
#include "causal/mixed_graph.h"

namespace fastnips::causal::detail {

// One Tian component graph, valid during the callback: local node k is the caller's node nodes[k] (SEMID's
// topological order of the condensation); local directed edge k, (ld[2k], ld[2k+1]), is the caller's directed
// edge dir_ids[k]; lb holds the local bidirected pairs (the component's, in the caller's order).
struct TianPiece {
  const std::vector<i32>& nodes;
  const std::vector<i32>& dir_ids;
  const std::vector<i32>& ld;
  const std::vector<i32>& lb;
};

// Validates the graph (a ValueError StatusError), then calls f on the component graph of every Tian
// c-component with a directed edge into it, in order of smallest member; polls Ctrl-C between components.
void for_each_tian_component(int32_t n, const i32* directed, i64 n_dir, const i32* bidirected, i64 n_bi,
                             const std::function<void(const TianPiece&)>& f);

// One Gauss-Seidel sweep of htcIdentifyStep on a built graph (causal/ancestral.cpp); s: the solved mask,
// updated. Returns the nodes it solved, in order.
std::vector<int32_t> htc_sweep_graph(const Graph& g, std::vector<uint8_t>& s);

// SEMID's ancestralIdentifyStep on a built graph, one Gauss-Seidel sweep per call (causal/ancestral.cpp): s is
// the solved mask, updated; returns the nodes the sweep solved, in order (a parentless node given as unsolved
// among them). A node's test depends on the mask only: while it grows from call to call (generalGenericID's
// loop), a node that failed is retested only once it has grown, and what a node's tests share is kept until
// it is solved; a mask that lost a node drops the memo.
class AncestralSweeper {
 public:
  explicit AncestralSweeper(const Graph& g);
  ~AncestralSweeper();
  std::vector<int32_t> sweep(std::vector<uint8_t>& s);

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

// htc_sweeps on a built graph (causal/ancestral.cpp): directed holds its n_dir edges (for edge_solved).
AncestralResult htc_sweeps_run(const Graph& g, const int32_t* directed, int64_t n_dir);

}  // namespace fastnips::causal::detail
