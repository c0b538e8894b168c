// SEMID's ancestral identification step (ancestral.h), branch for branch as python/fastnips/causal/
// _ref_ancestral.py (the oracle) runs it. For an unsolved node i:
//   1. G1 = Tian component graph of i in the subgraph induced by an(i); A1 = ((S \ sib_G1(i)) ∪
//      (V(G1) \ htr_G1(i))) ∩ V(G1). If |A1| >= |pa(i)|: solved iff a half-trek system in G1 reaches pa(i)
//      from A1.
//   2. Else B = (an(i) ∪ sib(an(i))) ∩ ((S ∪ (V \ htr(i))) \ ({i} ∪ sib(i))), H = induced by an({i} ∪ B),
//      G2 = Tian component graph of i in H, A2 built as A1 but in H; solved iff |A2| >= |pa(i)| and a
//      half-trek system in G2 reaches pa(i) from A2 ∩ V(G2).
// The induced subgraphs are ancestrally closed, so their strongly connected components are those of the
// whole graph; the half-trek systems are the exact incremental max-flow of maxflow.h on the component graph.
#include "causal/ancestral.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "causal/maxflow.h"
#include "causal/mixed_graph.h"
#include "causal/tian.h"
#include "common/interrupt.h"

namespace fastnips::causal {

using namespace detail;

namespace {

using Mask = std::vector<uint8_t>;

// Nodes reachable from the marked nodes of `m` along adj (CSR off/adj), added to m.
void close_along(Mask& m, const std::vector<i32>& off, const std::vector<i32>& adj) {
  std::vector<i32> stack;
  for (size_t v = 0; v < m.size(); ++v)
    if (m[v]) stack.push_back(i32(v));
  while (!stack.empty()) {
    const i32 u = stack.back();
    stack.pop_back();
    for (i32 e = off[u]; e < off[u + 1]; ++e)
      if (!m[adj[e]]) {
        m[adj[e]] = 1;
        stack.push_back(adj[e]);
      }
  }
}

// The component graph of a Tian component C: its nodes C ∪ pa(C) (global ids, ascending; loc[v] = local id,
// -1 outside) and its graph (every edge into C, the bidirected edges inside C).
struct CompGraph {
  std::vector<i32> nodes, loc;
  Graph cg;
};

// The Tian component of node i inside the ancestrally closed node set h: bidirected edges inside h and
// membership of one SCC join components.
Mask component_in(const Graph& g, const Mask& h, int i) {
  Mask inC(size_t(g.n), 0);
  std::vector<i32> stack{i};
  inC[i] = 1;
  while (!stack.empty()) {
    const i32 u = stack.back();
    stack.pop_back();
    auto visit = [&](i32 w) {
      if (h[w] && !inC[w]) {
        inC[w] = 1;
        stack.push_back(w);
      }
    };
    for (i32 e = g.sb_off[u]; e < g.sb_off[u + 1]; ++e) visit(g.sib[e]);
    const i32 c = g.scc[u];
    for (i32 k = g.scc_off[c]; k < g.scc_off[c + 1]; ++k) visit(g.scc_mem[k]);
  }
  return inC;
}

// C ∪ pa(C), ascending.
std::vector<i32> with_parents(const Graph& g, const Mask& inC) {
  Mask inV = inC;
  for (int v = 0; v < g.n; ++v)
    if (inC[v])
      for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) inV[g.pa[e]] = 1;
  std::vector<i32> out;
  for (int v = 0; v < g.n; ++v)
    if (inV[v]) out.push_back(v);
  return out;
}

std::unique_ptr<CompGraph> component_graph(const Graph& g, const Mask& inC) {
  auto out = std::make_unique<CompGraph>();
  out->nodes = with_parents(g, inC);
  out->loc.assign(size_t(g.n), -1);
  for (size_t k = 0; k < out->nodes.size(); ++k) out->loc[out->nodes[k]] = i32(k);
  std::vector<i32> d, b;
  for (i32 v : out->nodes) {
    if (!inC[v]) continue;
    for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) d.insert(d.end(), {out->loc[g.pa[e]], out->loc[v]});
    for (i32 e = g.sb_off[v]; e < g.sb_off[v + 1]; ++e)
      if (g.sib[e] > v && inC[g.sib[e]]) b.insert(b.end(), {out->loc[v], out->loc[g.sib[e]]});
  }
  out->cg = build_graph(int(out->nodes.size()), d.data(), i64(d.size() / 2), b.data(), i64(b.size() / 2), false);
  return out;
}

// Whether a half-trek system in the component graph reaches all of pa(i) from the allowed global nodes.
bool solves(const CompGraph& c, int i, const Mask& allowed) {
  const int il = c.loc[i];
  FlowSolver sol(c.cg);
  auto buf = sol.make_buf();
  sol.begin(il);
  for (i32 v : c.nodes)
    if (allowed[v] && sol.insert(il, c.loc[v], buf) == 2) return true;
  return false;
}

// htr_H(i) = the descendants inside the node set `in` of {i} ∪ (sib(i) ∩ in) (i in `in`).
Mask htr_inside(const Graph& g, const Mask& in, int i) {
  Mask htr(size_t(g.n), 0);
  std::vector<i32> stack{i};
  htr[i] = 1;
  for (i32 e = g.sb_off[i]; e < g.sb_off[i + 1]; ++e)
    if (in[g.sib[e]]) {
      htr[g.sib[e]] = 1;
      stack.push_back(g.sib[e]);
    }
  while (!stack.empty()) {
    const i32 u = stack.back();
    stack.pop_back();
    for (i32 e = g.ch_off[u]; e < g.ch_off[u + 1]; ++e)
      if (in[g.ch[e]] && !htr[g.ch[e]]) {
        htr[g.ch[e]] = 1;
        stack.push_back(g.ch[e]);
      }
  }
  return htr;
}

// What the tests of node i keep, independent of S (found on first use): G1's nodes V(G1) = C ∪ pa(C) (C the
// Tian component of i in an(i)), each with whether it is in C, in sib_G1(i) = sib(i) ∩ C and in htr_G1(i)
// (G1's edges are those into C), G1 itself once a test needs its max-flow, and branch 2's candidates
// (near_nodes) once a test reaches branch 2.
constexpr uint8_t kInC = 1, kSib = 2, kHtr = 4;

struct First {
  std::vector<i32> nodes;      // V(G1), ascending; empty: not found yet (V(G1) holds i)
  std::vector<uint8_t> flags;  // per node: kInC | kSib | kHtr
  std::unique_ptr<CompGraph> graph;
  std::vector<u64> near;
};

Mask ancestors(const Graph& g, int i) {
  Mask an(size_t(g.n), 0);
  an[i] = 1;
  close_along(an, g.pa_off, g.pa);
  return an;
}

void first_nodes(const Graph& g, int i, First& f) {
  const Mask inC = component_in(g, ancestors(g, i), i), htr = htr_inside(g, inC, i);
  const u64* si = g.sib_row(i);
  f.nodes = with_parents(g, inC);
  for (i32 v : f.nodes)
    f.flags.push_back(uint8_t((inC[v] ? kInC : 0) | (inC[v] && tb(si, v) ? kSib : 0) | (htr[v] ? kHtr : 0)));
}

// (an(i) ∪ sib(an(i))) \ ({i} ∪ sib(i)) by OR-ing sibling bitsets: O(n + |an(i)| W).
void near_nodes(const Graph& g, int i, First& f) {
  const int W = g.W;
  const Mask an = ancestors(g, i);
  f.near.assign(size_t(W), 0);
  for (int v = 0; v < g.n; ++v) {
    if (!an[v]) continue;
    sb(f.near.data(), v);
    const u64* sr = g.sib_row(v);
    for (int w = 0; w < W; ++w) f.near[w] |= sr[w];
  }
  const u64* si = g.sib_row(i);
  for (int w = 0; w < W; ++w) f.near[w] &= ~si[w];
  f.near[size_t(i) / 64] &= ~(u64(1) << (i % 64));
}

struct State {
  const Graph& g;
  Mask solved;
  std::vector<First> first;  // per node, on first use
};

// Branch 2: H = the subgraph induced by an({i} ∪ B), B = near ∩ (S ∪ (V \ htr(i))).
bool second_branch(State& s, int i, First& f, Mask& allowed) {
  const Graph& g = s.g;
  if (f.near.empty()) near_nodes(g, i, f);
  Mask h(size_t(g.n), 0);
  h[i] = 1;
  for (int v = 0; v < g.n; ++v)
    if (tb(f.near.data(), v) && (s.solved[v] || !tb(g.htr_row(i), v))) h[v] = 1;
  close_along(h, g.pa_off, g.pa);
  // A2 = ((S ∩ H) \ sib_H(i)) ∪ (H \ htr_H(i))
  const Mask htr = htr_inside(g, h, i);
  int count = 0;
  for (int v = 0; v < g.n; ++v) {
    allowed[v] = h[v] && ((s.solved[v] && !tb(g.sib_row(i), v)) || !htr[v]);
    count += allowed[v];
  }
  if (count < g.npa(i)) return false;
  const auto c2 = component_graph(g, component_in(g, h, i));
  return solves(*c2, i, allowed);  // allowed nodes outside G2 are never offered
}

bool node_solvable(State& s, int i) {
  const Graph& g = s.g;
  First& f = s.first[i];
  if (f.nodes.empty()) first_nodes(g, i, f);
  // A1 = ((S ∩ V(G1)) \ sib_G1(i)) ∪ (V(G1) \ htr_G1(i))
  Mask allowed(size_t(g.n), 0);
  int count = 0;
  for (size_t k = 0; k < f.nodes.size(); ++k) {
    const bool a = (s.solved[f.nodes[k]] && !(f.flags[k] & kSib)) || !(f.flags[k] & kHtr);
    allowed[f.nodes[k]] = a;
    count += a;
  }
  if (count >= g.npa(i)) {
    if (!f.graph) {
      Mask inC(size_t(g.n), 0);
      for (size_t k = 0; k < f.nodes.size(); ++k) inC[f.nodes[k]] = f.flags[k] & kInC;
      f.graph = component_graph(g, inC);
    }
    return solves(*f.graph, i, allowed);
  }
  std::fill(allowed.begin(), allowed.end(), 0);
  return second_branch(s, i, f, allowed);
}

}  // namespace

// A node's test depends on the solved set S only, and S only grows: a node that failed is not retested until
// S has grown (|S| tells, S being monotone); G1 per node is found once, on first use.
struct AncestralSweeper::Impl {
  State s;
  std::vector<i64> failed_at;
  explicit Impl(const Graph& g)
      : s{g, Mask(size_t(g.n), 0), std::vector<First>(size_t(g.n))}, failed_at(size_t(g.n), -1) {}
};

AncestralSweeper::AncestralSweeper(const Graph& g) : p_(std::make_unique<Impl>(g)) {}
AncestralSweeper::~AncestralSweeper() = default;

std::vector<int32_t> AncestralSweeper::sweep(std::vector<uint8_t>& solved) {
  State& s = p_->s;
  const int n = s.g.n;
  i64 n_solved = 0;
  bool shrunk = false;  // a node solved at the last call is not now: the memo does not hold, start afresh
  for (int v = 0; v < n; ++v) {
    shrunk = shrunk || (s.solved[v] && !solved[v]);
    n_solved += (s.solved[v] = solved[v] != 0);
  }
  if (shrunk) std::fill(p_->failed_at.begin(), p_->failed_at.end(), -1);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    if (s.solved[i] || p_->failed_at[i] == n_solved) continue;
    check_interrupt();
    if (s.g.npa(i) == 0 || node_solvable(s, i)) {  // no parents: the empty half-trek system
      s.solved[i] = solved[i] = 1;
      s.first[i] = First{};  // a solved node is not tested again
      ++n_solved;
      out.push_back(i);
    } else {
      p_->failed_at[i] = n_solved;
    }
  }
  return out;
}

namespace {

// global_identifiable for graphs of at most kBitsetMaxN nodes on n x W bitset rows (pa, ch, sib) built straight
// from the edges: the checks of validate() with the same messages (duplicates by a bit already set), a
// directed cycle by Kahn's order, and each component / ancestor search O(W) per node instead of a walk over
// adjacency lists (the dense bidirected part of a 100-node graph has thousands of edges).
constexpr int kBitsetMaxN = 1024;

// The graph as bitset rows, checked as validate() checks it (its checks, in its order; a duplicate is a bit
// already set).
struct BitGraph {
  int n, W;
  std::vector<u64> pa, ch, sib;
  u64* row(std::vector<u64>& m, int v) const { return m.data() + size_t(v) * W; }
  const u64* row(const std::vector<u64>& m, int v) const { return m.data() + size_t(v) * W; }
  BitGraph(int n_, const i32* dir, i64 nd, const i32* bi, i64 nb)
      : n(n_), W((n_ + 63) / 64), pa(size_t(n_) * W, 0), ch(pa), sib(pa) {
    check_edge_counts(dir, nd, bi, nb);
    check_edge_ends(n, dir, nd, "directed");
    if (add_pairs(dir, nd, ch, pa)) refuse("htc: duplicate directed edge");
    check_edge_ends(n, bi, nb, "bidirected");
    if (add_pairs(bi, nb, sib, sib)) refuse("htc: duplicate bidirected edge");
  }
  // Bit y of fwd's row x and bit x of back's row y for every pair (x, y); whether a bit was set already (a
  // duplicate: for bidirected pairs, fwd = back = sib, so (a, b) after (b, a) counts).
  bool add_pairs(const i32* e, i64 m, std::vector<u64>& fwd, std::vector<u64>& back) {
    bool dup = false;
    for (i64 k = 0; k < m; ++k) {
      const i32 x = e[2 * k], y = e[2 * k + 1];
      dup = dup || tb(row(fwd, x), y);
      sb(row(fwd, x), y);
      sb(row(back, y), x);
    }
    return dup;
  }
  // Kahn's order: every node leaves the queue iff there is no directed cycle.
  bool acyclic() const {
    std::vector<int> indeg(size_t(n), 0);
    std::vector<i32> queue;
    for (int v = 0; v < n; ++v) {
      for (int w = 0; w < W; ++w) indeg[size_t(v)] += __builtin_popcountll(row(pa, v)[w]);
      if (indeg[size_t(v)] == 0) queue.push_back(v);
    }
    for (size_t k = 0; k < queue.size(); ++k)
      for (int w = 0; w < W; ++w)
        for (u64 m = row(ch, queue[k])[w]; m; m &= m - 1)
          if (--indeg[size_t(64 * w + __builtin_ctzll(m))] == 0) queue.push_back(64 * w + __builtin_ctzll(m));
    return int(queue.size()) == n;
  }
};

bool global_identifiable_bitsets(int n, const i32* dir, i64 nd, const i32* bi, i64 nb) {
  const BitGraph g(n, dir, nd, bi, nb);
  if (!g.acyclic()) return false;
  const int W = g.W;
  // nodes reachable from `start` along the rows `adj` inside `in` (start included)
  std::vector<u64> out(static_cast<size_t>(W)), frontier;
  auto reach = [&](int start, const std::vector<u64>& adj, const std::vector<u64>& in) {
    std::fill(out.begin(), out.end(), 0);
    sb(out.data(), start);
    frontier.assign(1, u64(start));
    while (!frontier.empty()) {
      const int u = int(frontier.back());
      frontier.pop_back();
      const u64* r = g.row(adj, u);
      for (int w = 0; w < W; ++w)
        for (u64 m = r[w] & in[size_t(w)] & ~out[size_t(w)]; m; m &= m - 1) {
          out[size_t(w)] |= m & -m;
          frontier.push_back(u64(64 * w + __builtin_ctzll(m)));
        }
    }
    return out;
  };
  auto count = [W](const std::vector<u64>& m) {
    int c = 0;
    for (int w = 0; w < W; ++w) c += __builtin_popcountll(m[size_t(w)]);
    return c;
  };
  std::vector<std::vector<u64>> todo;
  std::set<std::vector<u64>> done;  // a component's verdict depends on its node set only
  auto push_components = [&](const std::vector<u64>& nodes) {  // bidirected components (> 1 node) in `nodes`
    std::vector<u64> left = nodes;
    for (int w = 0; w < W; ++w)
      while (left[size_t(w)]) {
        const std::vector<u64>& c = reach(64 * w + __builtin_ctzll(left[size_t(w)]), g.sib, nodes);
        for (int x = 0; x < W; ++x) left[size_t(x)] &= ~c[size_t(x)];
        if (count(c) > 1 && done.insert(c).second) todo.push_back(c);
      }
  };
  std::vector<u64> all(size_t(W), ~u64(0));
  if (n % 64) all[size_t(W - 1)] = (u64(1) << (n % 64)) - 1;
  push_components(all);
  std::vector<std::vector<u64>> ancs;
  while (!todo.empty()) {
    check_interrupt();
    const std::vector<u64> comp = std::move(todo.back());
    todo.pop_back();
    ancs.clear();
    for (int w = 0; w < W; ++w)
      for (u64 m = comp[size_t(w)]; m; m &= m - 1) {
        const int v = 64 * w + __builtin_ctzll(m);
        bool sink = true;
        for (int x = 0; x < W && sink; ++x) sink = !(g.row(g.ch, v)[x] & comp[size_t(x)]);
        if (sink) ancs.push_back(reach(v, g.pa, comp));  // the ancestors of the sink v inside comp
      }
    if (ancs.size() == 1) return false;
    for (const auto& a : ancs)
      if (count(a) > 1) push_components(a);
  }
  return true;
}

}  // namespace

bool global_identifiable(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                         int64_t n_bi) {
  if (n >= 0 && n <= kBitsetMaxN) return global_identifiable_bitsets(n, directed, n_dir, bidirected, n_bi);
  validate(n, directed, n_dir, bidirected, n_bi);
  const Graph g = build_graph(n, directed, n_dir, bidirected, n_bi, false, false);
  if (g.nscc != n) return false;  // a directed cycle
  Mask in(size_t(n), 0), seen(size_t(n), 0);
  std::vector<i32> stack;
  // nodes reachable from `start` along (off, adj) inside the marked set `in`, ascending
  auto reach = [&](i32 start, const std::vector<i32>& off, const std::vector<i32>& adj) {
    std::vector<i32> out{start};
    seen[start] = 1;
    stack.assign(1, start);
    while (!stack.empty()) {
      const i32 u = stack.back();
      stack.pop_back();
      for (i32 e = off[u]; e < off[u + 1]; ++e)
        if (in[adj[e]] && !seen[adj[e]]) {
          seen[adj[e]] = 1;
          out.push_back(adj[e]);
          stack.push_back(adj[e]);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<std::vector<i32>> todo;
  std::set<std::vector<i32>> done;  // a component's verdict depends on its node set only
  auto push_components = [&](const std::vector<i32>& nodes) {  // bidirected components (> 1 node) in `nodes`
    for (i32 v : nodes) in[v] = 1;
    for (i32 v : nodes)
      if (!seen[v]) {
        std::vector<i32> c = reach(v, g.sb_off, g.sib);
        if (c.size() > 1 && done.insert(c).second) todo.push_back(std::move(c));
      }
    for (i32 v : nodes) in[v] = seen[v] = 0;
  };
  std::vector<i32> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  push_components(all);
  while (!todo.empty()) {
    check_interrupt();
    const std::vector<i32> comp = std::move(todo.back());
    todo.pop_back();
    for (i32 v : comp) in[v] = 1;
    std::vector<i32> sinks;
    for (i32 v : comp) {
      bool sink = true;
      for (i32 e = g.ch_off[v]; e < g.ch_off[v + 1] && sink; ++e) sink = !in[g.ch[e]];
      if (sink) sinks.push_back(v);
    }
    if (sinks.size() == 1) return false;
    std::vector<std::vector<i32>> ancs;
    for (i32 s : sinks) {
      ancs.push_back(reach(s, g.pa_off, g.pa));  // the ancestors of s inside comp
      for (i32 v : ancs.back()) seen[v] = 0;
    }
    for (i32 v : comp) in[v] = 0;
    for (const auto& a : ancs)
      if (a.size() > 1) push_components(a);
  }
  return true;
}

std::vector<int32_t> detail::htc_sweep_graph(const Graph& g, std::vector<uint8_t>& s) {
  const int n = g.n;
  FlowSolver sol(g);
  auto buf = sol.make_buf();
  std::vector<int32_t> out;
  for (int v = 0; v < n; ++v) {
    if (s[v]) continue;
    if (g.npa(v) == 0) {  // the empty half-trek system
      s[v] = 1;
      out.push_back(v);
      continue;
    }
    check_interrupt();
    int count = 0;
    for (int a = 0; a < n; ++a) count += (s[a] && !tb(g.sib_row(v), a)) || !tb(g.htr_row(v), a);
    if (count < g.npa(v)) continue;
    sol.begin(v);
    bool ok = false;
    for (int a = 0; a < n && !ok; ++a)
      if ((s[a] && !tb(g.sib_row(v), a)) || !tb(g.htr_row(v), a)) ok = sol.insert(v, a, buf) == 2;
    sol.release(v);
    if (ok) {
      s[v] = 1;
      out.push_back(v);
    }
  }
  return out;
}

AncestralResult detail::htc_sweeps_run(const Graph& g, const int32_t* directed, int64_t n_dir) {
  AncestralResult r;
  r.node_solved.assign(size_t(g.n), 0);
  for (int v = 0; v < g.n; ++v) r.node_solved[size_t(v)] = g.npa(v) == 0;
  while (!htc_sweep_graph(g, r.node_solved).empty()) ++r.rounds;
  r.edge_solved = edges_of_nodes(r.node_solved, directed, n_dir);
  return r;
}

std::vector<int32_t> htc_sweep(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                               int64_t n_bi, const uint8_t* solved) {
  validate(n, directed, n_dir, bidirected, n_bi);
  const Graph g = build_graph(n, directed, n_dir, bidirected, n_bi, false);
  Mask s(solved, solved + n);
  return htc_sweep_graph(g, s);
}

std::vector<int32_t> ancestral_sweep(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                                     int64_t n_bi, const uint8_t* solved) {
  validate(n, directed, n_dir, bidirected, n_bi);
  const Graph g = build_graph(n, directed, n_dir, bidirected, n_bi, false);
  Mask s(solved, solved + n);
  return AncestralSweeper(g).sweep(s);
}

AncestralResult htc_sweeps(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                           int64_t n_bi) {
  validate(n, directed, n_dir, bidirected, n_bi);
  return detail::htc_sweeps_run(build_graph(n, directed, n_dir, bidirected, n_bi, false), directed, n_dir);
}

}  // namespace fastnips::causal
