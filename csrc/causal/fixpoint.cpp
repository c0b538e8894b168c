// The HTC fixpoint (fixpoint.h), shared by both per-node solvers, and the Tian decomposition.
#include "causal/fixpoint.h"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "causal/maxflow.h"
#include "causal/rank.h"
#include "common/interrupt.h"

namespace fastnips::causal::detail {
namespace {

// The result before any rank test: the parentless nodes solved at level 0 (ascending); returns the others.
std::vector<i32> start_result(const Graph& g, HtcResult& res) {
  const int n = g.n;
  res.solved.assign(n, 0);
  res.level.assign(n, -1);
  res.sources.assign(n, {});
  res.order.clear();
  res.rounds = 0;
  res.tests = 0;
  std::vector<i32> todo;
  for (int v = 0; v < n; ++v) {
    if (g.npa(v) == 0) {
      res.solved[v] = 1;
      res.level[v] = 0;
      res.order.push_back(v);
    } else {
      todo.push_back(v);
    }
  }
  return todo;
}

// rel(v) = {a : htrFrom(a) ∩ pa(v) != ∅}: the only rows that can be nonzero on pa(v); the others are
// never offered. hanc(p) = {a : p in htrFrom(a)} = An(p) ∪ sib(An(p)), per SCC in topological order.
std::vector<u64> relevant_rows(const Graph& g, bool par) {
  (void)par;
  const int n = g.n, W = g.W;
  const std::vector<u64> ha = scc_closure(g, Along::kParents, [&g, W](i32 x, u64* row) {
    sb(row, x);
    const u64* sx = g.sib_row(x);
    for (int w = 0; w < W; ++w) row[w] |= sx[w];
  });
  std::vector<u64> rel(size_t(n) * W, 0);
FASTNIPS_HTC_OMP(omp parallel for schedule(static) if (par))
  for (int v = 0; v < n; ++v) {
    u64* rv = rel.data() + size_t(v) * W;
    for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
      const u64* t = ha.data() + size_t(g.scc[g.pa[e]]) * W;
      for (int w = 0; w < W; ++w) rv[w] |= t[w];
    }
  }
  return rel;
}

// Node v solved from the rows that made its solver full: recorded in the result, its solver state freed.
template <class Solver>
void mark_solved(Solver& sol, int v, int level, HtcResult& res) {
  res.solved[v] = 1;
  res.level[v] = level;
  res.order.push_back(v);
  res.sources[v] = sol.sources(v);
  sol.release(v);
}

// The initial phase: every node of `todo` gets its initially allowed rows, (V \ htrFrom(v)) ∪
// (parentless \ sib(v)), ascending, until solved (full[v] = 1). Returns the rows offered.
template <class Solver>
i64 offer_initial(const Graph& g, Solver& sol, const std::vector<u64>& rel, const HtcResult& res,
                  const std::vector<i32>& todo, bool par, std::vector<uint8_t>& full) {
  (void)par;
  const int n = g.n, W = g.W;
  std::vector<u64> p0(W, 0);
  for (int v = 0; v < n; ++v)
    if (res.solved[v]) sb(p0.data(), v);
  const u64 last_mask = (n & 63) ? ((u64(1) << (n & 63)) - 1) : ~u64(0);
  i64 tests = 0;
  const int nt = int(todo.size());
  const InterruptShare share;
FASTNIPS_HTC_OMP(omp parallel if (par && nt > 1) reduction(+ : tests))
  {
    const InterruptJoin join(share);
    auto buf = sol.make_buf();
FASTNIPS_HTC_OMP(omp for schedule(dynamic, 1))
    for (int t = 0; t < nt; ++t) {
      const int v = todo[t];
      if (interrupt_requested()) continue;  // the caller raises after the region
      sol.begin(v);
      const u64* hv = g.htr_row(v);
      const u64* sv = g.sib_row(v);
      const u64* rv = rel.data() + size_t(v) * W;
      for (int w = 0; w < W && !full[v]; ++w) {
        u64 bits = rv[w] & (~hv[w] | (p0[w] & ~sv[w]));
        if (w == W - 1) bits &= last_mask;
        while (bits) {
          const int a = (w << 6) + __builtin_ctzll(bits);
          bits &= bits - 1;
          ++tests;
          if (sol.insert(v, a, buf) == 2) {
            full[v] = 1;
            break;
          }
          if (interrupt_requested()) {
            w = W;
            break;
          }
        }
      }
    }
  }
  return tests;
}

// One Jacobi level of the worklist: every unsolved v receives the nodes queue[head, end) solved in the
// previous level, in queue order (the rows that just became allowed: u in htrFrom(v) \ sib(v)), until it
// is solved; by[v] = the queue position of the row that completed it. Returns the rows offered.
template <class Solver>
i64 offer_level(const Graph& g, Solver& sol, const std::vector<u64>& rel, const std::vector<i32>& queue,
                size_t head, size_t end, const std::vector<i32>& unsolved, bool par, std::vector<i64>& by) {
  const int W = g.W;
  const int nu = int(unsolved.size());
  const bool ppar = par && i64(nu) * i64(end - head) >= 4096;
  (void)ppar;
  i64 tests = 0;
  const InterruptShare share;
FASTNIPS_HTC_OMP(omp parallel if (ppar) reduction(+ : tests))
  {
    const InterruptJoin join(share);
    auto buf = sol.make_buf();
FASTNIPS_HTC_OMP(omp for schedule(dynamic, 1))
    for (int t = 0; t < nu; ++t) {
      const int v = unsolved[t];
      const u64* hv = g.htr_row(v);
      const u64* sv = g.sib_row(v);
      const u64* rv = rel.data() + size_t(v) * W;
      for (size_t q = head; q < end; ++q) {
        const int u = queue[q];
        if (!tb(hv, u) || tb(sv, u) || !tb(rv, u)) continue;
        ++tests;
        if (sol.insert(v, u, buf) == 2) {
          by[v] = i64(q);
          break;
        }
        if (interrupt_requested()) break;
      }
    }
  }
  return tests;
}

// The fixpoint driver, shared by both solvers. Initial phase: every node with parents gets its initially
// allowed rows; then a FIFO worklist of solved nodes u offers u to every unsolved v with
// u in htrFrom(v) \ sib(v) (exactly the nodes that just became allowed). Nodes solved in one level are
// appended ordered by (position of the row that completed them, id), so the result does not depend on the
// number of threads.
template <class Solver>
void htc_fixpoint(const Graph& g, Solver& sol, HtcResult& res, bool par) {
  const int n = g.n;
  const std::vector<i32> todo = start_result(g, res);
  const std::vector<u64> rel = relevant_rows(g, par);
  std::vector<uint8_t> full(n, 0);
  i64 tests = offer_initial(g, sol, rel, res, todo, par, full);
  check_interrupt();
  std::vector<i32> queue, unsolved;
  for (int v : todo) {
    if (full[v]) {
      mark_solved(sol, v, 1, res);
      queue.push_back(v);
    } else {
      unsolved.push_back(v);
    }
  }
  // Worklist, one Jacobi level at a time: queue[head, end) holds the nodes solved in the previous level.
  std::vector<i64> by(n, -1);
  size_t head = 0;
  while (head < queue.size() && !unsolved.empty()) {
    const size_t end = queue.size();
    tests += offer_level(g, sol, rel, queue, head, end, unsolved, par, by);
    check_interrupt();
    std::vector<std::pair<i64, i32>> newly;
    size_t w = 0;
    for (size_t t = 0; t < unsolved.size(); ++t) {
      const int v = unsolved[t];
      if (by[v] >= 0)
        newly.emplace_back(by[v], v);
      else
        unsolved[w++] = v;
    }
    unsolved.resize(w);
    std::sort(newly.begin(), newly.end());
    for (const auto& pv : newly) {
      mark_solved(sol, pv.second, res.level[queue[size_t(pv.first)]] + 1, res);
      queue.push_back(pv.second);
    }
    head = end;
  }
  for (int v : unsolved) sol.release(v);
  res.tests = tests;
  int r = 0;
  for (int v = 0; v < n; ++v) r = std::max(r, res.level[v]);
  res.rounds = r;
}

// Whether any node with parents has an initially allowed row; if none has, no node beyond the parentless
// ones can ever be solved and no rank test is needed (e.g. one giant strongly connected component).
bool any_initial_row(const Graph& g) {
  const int n = g.n, W = g.W;
  std::vector<u64> p0(W, 0);
  for (int v = 0; v < n; ++v)
    if (g.npa(v) == 0) sb(p0.data(), v);
  for (int v = 0; v < n; ++v) {
    if (g.npa(v) == 0) continue;
    const u64* h = g.htr_row(v);
    const u64* sv = g.sib_row(v);
    for (int w = 0; w < W; ++w) {
      const u64 valid = (w == W - 1 && (n & 63)) ? ((u64(1) << (n & 63)) - 1) : ~u64(0);
      if (((~h[w] | (p0[w] & ~sv[w])) & valid) != 0) return true;
    }
  }
  return false;
}

template <class F>
void htc_randomized(const F& f, const Graph& g, u64 seed, HtcResult& res, bool par) {
  const MMatrix<F> mm = any_initial_row(g) ? compute_M(f, g, seed, par) : MMatrix<F>{};
  RankSolver<F> sol(f, g, mm, seed);
  htc_fixpoint(g, sol, res, par);
}

// ------------------------------------------------------------------------------------------------
// Tian decomposition (SEMID MixedGraph$tianDecompose): strongly connected components are merged into
// bidirected-connected super components; each is run as its own mixed graph on internal ∪ incoming.

// The component of every node (res.component) and the components' internal nodes in topological order
// (res.components); components are numbered by their smallest member.
void tian_components(const Graph& g, const std::vector<i32>& topo, HtcResult& res) {
  int ncomp = 0;
  res.component = tian_component_ids(g, &ncomp);
  res.components.assign(ncomp, {});
  for (int i = 0; i < g.n; ++i) res.components[res.component[topo[i]]].internal.push_back(topo[i]);
}

// Component c's incoming nodes and top_order, and its subgraph in local ids (node i = top_order[i]):
// d = the directed edges into internal nodes, b = the bidirected edges among them. mark[v] = c for internal
// nodes (-2 - c for incoming ones); loc maps top_order back to local ids (the caller resets it).
void component_subgraph(const Graph& g, int c, const std::vector<i32>& pos, std::vector<i32>& mark,
                        std::vector<i32>& loc, TianComponent& tc, std::vector<i32>& d, std::vector<i32>& b) {
  for (i32 v : tc.internal) mark[v] = c;
  for (i32 v : tc.internal)
    for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
      const i32 p = g.pa[e];
      if (mark[p] != c && mark[p] != -2 - c) {
        mark[p] = -2 - c;
        tc.incoming.push_back(p);
      }
    }
  auto by_pos = [&](i32 x, i32 y) { return pos[x] < pos[y]; };
  std::sort(tc.incoming.begin(), tc.incoming.end(), by_pos);
  tc.top_order.resize(tc.internal.size() + tc.incoming.size());
  std::merge(tc.internal.begin(), tc.internal.end(), tc.incoming.begin(), tc.incoming.end(), tc.top_order.begin(),
             by_pos);
  for (size_t i = 0; i < tc.top_order.size(); ++i) loc[tc.top_order[i]] = i32(i);
  for (i32 v : tc.internal) {
    for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
      d.push_back(loc[g.pa[e]]);
      d.push_back(loc[v]);
    }
    for (i32 e = g.sb_off[v]; e < g.sb_off[v + 1]; ++e) {
      const i32 s = g.sib[e];
      if (s > v) {  // both internal (bidirected edges never leave a component)
        b.push_back(loc[v]);
        b.push_back(loc[s]);
      }
    }
  }
}

// Plain HTC on component c's subgraph (d, b), its solved internal nodes merged into res in original ids.
void solve_component(const Graph& g, const HtcOptions& opt, bool par, int c, const TianComponent& tc,
                     const std::vector<i32>& mark, const std::vector<i32>& d, const std::vector<i32>& b,
                     HtcResult& res) {
  const int m = int(tc.top_order.size());
  const bool cpar = par && use_threads(m, i64(d.size() / 2), i64(b.size() / 2));
  Graph sg = build_graph(m, d.data(), i64(d.size() / 2), b.data(), i64(b.size() / 2), cpar);
  HtcOptions o = opt;
  o.tian = false;
  o.seed = mix_seed(opt.seed, 0x7419ULL, u64(c));
  HtcResult sr = htc_plain(sg, o, cpar);
  res.tests += sr.tests;
  res.rounds = std::max(res.rounds, sr.rounds);
  for (i32 lv : sr.order) {
    const i32 v = tc.top_order[lv];
    if (mark[v] != c || g.npa(v) == 0) continue;  // incoming nodes / parentless handled elsewhere
    res.solved[v] = 1;
    res.level[v] = sr.level[lv];
    res.order.push_back(v);
    std::vector<i32>& Y = res.sources[v];
    for (i32 ly : sr.sources[lv]) Y.push_back(tc.top_order[ly]);
    std::sort(Y.begin(), Y.end());
  }
}

}  // namespace

HtcResult htc_plain(const Graph& g, const HtcOptions& opt, bool par) {
  HtcResult res;
  if (opt.method == Method::kMaxFlow) {
    FlowSolver sol(g);
    htc_fixpoint(g, sol, res, par);
  } else {
    const u64 p = checked_prime(opt.prime);
    if (p == kMersenne61)
      htc_randomized(FieldM61{}, g, opt.seed, res, par);
    else
      htc_randomized(FieldGeneric{p}, g, opt.seed, res, par);
  }
  return res;
}

HtcResult htc_tian(const Graph& g, const HtcOptions& opt, bool par) {
  const int n = g.n;
  HtcResult res;
  res.solved.assign(n, 0);
  res.level.assign(n, -1);
  res.sources.assign(n, {});
  res.component.assign(n, -1);
  if (n == 0) return res;
  // topological position: SCCs in topological order (reverse Tarjan completion), ties by node id
  std::vector<i32> topo(n);
  std::iota(topo.begin(), topo.end(), 0);
  std::stable_sort(topo.begin(), topo.end(), [&](i32 a, i32 b) { return g.scc[a] > g.scc[b]; });
  std::vector<i32> pos(n);
  for (int i = 0; i < n; ++i) pos[topo[i]] = i;
  tian_components(g, topo, res);
  // parentless first
  for (int v = 0; v < n; ++v)
    if (g.npa(v) == 0) {
      res.solved[v] = 1;
      res.level[v] = 0;
      res.order.push_back(v);
    }
  std::vector<i32> mark(n, -1), loc(n, -1);
  for (int c = 0; c < int(res.components.size()); ++c) {
    TianComponent& tc = res.components[c];
    check_interrupt();
    std::vector<i32> d, b;
    component_subgraph(g, c, pos, mark, loc, tc, d, b);
    if (!d.empty()) solve_component(g, opt, par, c, tc, mark, d, b, res);
    for (i32 v : tc.top_order) loc[v] = -1;
  }
  return res;
}

}  // namespace fastnips::causal::detail
