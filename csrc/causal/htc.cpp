// Half-trek criterion and edgewise identification: the public entry points of causal/htc.h. See htc.h for
// the contract; docs/notes/causal.md and the docstrings of fastnips.causal for the derivations (randomized
// rank formulation, incremental max-flow).
//
// The solvers live in internal files of this folder, one concern each:
//   field.h/.cpp          integer types, splitmix64/xoshiro256** streams, the prime fields, prime checks
//   mixed_graph.h/.cpp    validation, CSR adjacency, Tarjan's SCCs, htrFrom bitsets, SCC closures
//   rank.h/.cpp           M = Omega (I - Lambda)^{-1} mod p, the incremental basis, the rank solver
//   maxflow.h/.cpp        the exact incremental max-flow solver
//   fixpoint.h/.cpp       the HTC fixpoint (both solvers) and the Tian decomposition
//   edgewise.h/.cpp       edgewise identification via maximal good edge sets
#include "causal/htc.h"

#include <exception>
#include <vector>

#include "causal/edgewise.h"
#include "causal/fixpoint.h"
#include "causal/mixed_graph.h"
#include "common/interrupt.h"

namespace fastnips::causal {

using namespace detail;

namespace {

// Plain HTC on the nodes that have an edge. A node without edges is parentless (solved at level 0) and in
// no other node's half-trek sets (htrFrom(a) = {a} meets no pa(v)), so it never takes part in a test: the
// solvers run on the graph restricted to the others (ids ascending, their random streams drawn by the
// original ids) and the result is mapped back, equal to the full graph's. The per-node state (the bitsets
// of n^2/64 words, M, one solver state per node) then scales with the edges: an edgeless graph of 10^6
// nodes costs O(n), not the 4 x 125 GB of its bitsets.
HtcResult htc_plain_restricted(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                               int64_t n_bi, const HtcOptions& opt) {
  std::vector<i32> loc(static_cast<size_t>(n), -1), ids;
  for (i64 e = 0; e < 2 * n_dir; ++e) loc[size_t(directed[e])] = 0;
  for (i64 e = 0; e < 2 * n_bi; ++e) loc[size_t(bidirected[e])] = 0;
  for (int v = 0; v < n; ++v)
    if (loc[size_t(v)] == 0) {
      loc[size_t(v)] = i32(ids.size());
      ids.push_back(v);
    }
  const int m = int(ids.size());
  if (m == n) {  // every node has an edge
    const bool par = use_threads(n, n_dir, n_bi);
    return htc_plain(build_graph(n, directed, n_dir, bidirected, n_bi, par), opt, par);
  }
  std::vector<i32> d(directed, directed + 2 * n_dir), b(bidirected, bidirected + 2 * n_bi);
  for (auto& x : d) x = loc[size_t(x)];
  for (auto& x : b) x = loc[size_t(x)];
  const bool par = use_threads(m, n_dir, n_bi);
  Graph g = build_graph(m, d.data(), n_dir, b.data(), n_bi, par);
  g.ids = ids;
  g.n_ids = n;
  const HtcResult r = htc_plain(g, opt, par);
  HtcResult out;
  out.solved.assign(size_t(n), 1);  // the nodes without edges: parentless, level 0
  out.level.assign(size_t(n), 0);
  out.sources.assign(size_t(n), {});
  for (int k = 0; k < m; ++k) {
    const i32 v = ids[size_t(k)];
    out.solved[size_t(v)] = r.solved[size_t(k)];
    out.level[size_t(v)] = r.level[size_t(k)];
    for (i32 y : r.sources[size_t(k)]) out.sources[size_t(v)].push_back(ids[size_t(y)]);  // stays sorted
  }
  for (int v = 0; v < n; ++v)  // the parentless nodes first, ascending, then the others in solve order
    if (out.level[size_t(v)] == 0) out.order.push_back(v);
  for (i32 k : r.order)
    if (r.level[size_t(k)] > 0) out.order.push_back(ids[size_t(k)]);
  out.rounds = r.rounds;
  out.tests = r.tests;
  return out;
}

}  // namespace

HtcResult htc_identify(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                       int64_t n_bi, const HtcOptions& opt) {
  validate(n, directed, n_dir, bidirected, n_bi);
  if (opt.method == Method::kRandomized) checked_prime(opt.prime);
  if (!opt.tian) return htc_plain_restricted(n, directed, n_dir, bidirected, n_bi, opt);
  // The Tian decomposition runs the solvers on each component's own subgraph: no bitsets for the whole graph.
  const bool par = use_threads(n, n_dir, n_bi);
  return htc_tian(build_graph(n, directed, n_dir, bidirected, n_bi, par, false), opt, par);
}

EdgewiseResult edgewise_identify(int32_t n, const int32_t* directed, int64_t n_dir,
                                 const int32_t* bidirected, int64_t n_bi, const HtcOptions& opt) {
  validate(n, directed, n_dir, bidirected, n_bi);
  checked_prime(opt.prime);
  const bool par = use_threads(n, n_dir, n_bi);
  const Graph g = build_graph(n, directed, n_dir, bidirected, n_bi, par);
  return edgewise_run(g, opt.prime, opt.seed, par);
}

std::vector<HtcResult> htc_identify_many(const std::vector<int32_t>& ns, const int32_t* directed,
                                         const int64_t* dir_offsets, const int32_t* bidirected,
                                         const int64_t* bi_offsets, const HtcOptions& opt) {
  const i64 G = i64(ns.size());
  std::vector<HtcResult> out(static_cast<size_t>(G));
  if (G == 0) return out;
  if (dir_offsets == nullptr || bi_offsets == nullptr) refuse("htc_identify_many: null offsets");
  for (i64 i = 0; i < G; ++i) {
    if (dir_offsets[i] < 0 || dir_offsets[i + 1] < dir_offsets[i] || bi_offsets[i] < 0 ||
        bi_offsets[i + 1] < bi_offsets[i])
      refuse("htc_identify_many: offsets must start >= 0 and be nondecreasing");
  }
  std::vector<std::exception_ptr> errs(static_cast<size_t>(G));
  const InterruptShare share;  // an interrupt stops every thread at its next poll
FASTNIPS_HTC_OMP(omp parallel)
  {
    const InterruptJoin join(share);
FASTNIPS_HTC_OMP(omp for schedule(dynamic))
  for (i64 i = 0; i < G; ++i) {
    if (interrupt_requested()) continue;
    try {
      const i64 d0 = dir_offsets[i], d1 = dir_offsets[i + 1];
      const i64 b0 = bi_offsets[i], b1 = bi_offsets[i + 1];
      out[size_t(i)] = htc_identify(ns[size_t(i)], directed ? directed + 2 * d0 : nullptr, d1 - d0,
                                    bidirected ? bidirected + 2 * b0 : nullptr, b1 - b0, opt);
    } catch (...) {
      errs[size_t(i)] = std::current_exception();
    }
  }
  }
  check_interrupt();
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
  return out;
}

}  // namespace fastnips::causal
