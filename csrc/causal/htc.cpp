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

#include "causal/edgewise.h"
#include "causal/fixpoint.h"
#include "causal/mixed_graph.h"

namespace fastnips::causal {

using namespace detail;

HtcResult htc_identify(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                       int64_t n_bi, const HtcOptions& opt) {
  validate(n, directed, n_dir, bidirected, n_bi);
  if (opt.method == Method::kRandomized) checked_prime(opt.prime);
  const bool par = use_threads(n, n_dir, n_bi);
  const Graph g = build_graph(n, directed, n_dir, bidirected, n_bi, par);
  if (opt.tian) return htc_tian(g, opt, par);
  return htc_plain(g, opt, par);
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
FASTNIPS_HTC_OMP(omp parallel for schedule(dynamic))
  for (i64 i = 0; i < G; ++i) {
    try {
      const i64 d0 = dir_offsets[i], d1 = dir_offsets[i + 1];
      const i64 b0 = bi_offsets[i], b1 = bi_offsets[i + 1];
      out[size_t(i)] = htc_identify(ns[size_t(i)], directed ? directed + 2 * d0 : nullptr, d1 - d0,
                                    bidirected ? bidirected + 2 * b0 : nullptr, b1 - b0, opt);
    } catch (...) {
      errs[size_t(i)] = std::current_exception();
    }
  }
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
  return out;
}

}  // namespace fastnips::causal
