// The exact max-flow method of the HTC solvers (maxflow.h): an augmenting-path search per newly allowed
// source on the vertex-split network of one node, with dead-vertex pruning between augmentations.
#include "causal/maxflow.h"

namespace fastnips::causal::detail {

// Ancestors per node: per SCC in topological order, then copied to the nodes.
FlowSolver::FlowSolver(const Graph& g_) : g(g_), n(g_.n), W(g_.W), st(size_t(g_.n)) {
  anc = rows_per_node(g, scc_closure(g, Along::kParents, [](i32 x, u64* row) { sb(row, x); }));
}

// Dead: nothing on the L side; on the Rin/Rout sides the nodes that reach no parent of v.
void FlowSolver::reset_dead(VS& s) const {
  u64* d = s.dead.data();
  std::fill(d, d + W, 0);
  for (int w = 0; w < W; ++w) d[W + w] = d[2 * W + w] = ~s.rel[w];
}

void FlowSolver::begin(int v) {
  VS& s = st[v];
  s.fL.assign(n, -1);
  s.fR.assign(n, -1);
  s.pr.assign(n, -1);
  s.src.clear();
  s.rel.assign(W, 0);
  for (i32 e = g.pa_off[v]; e < g.pa_off[v + 1]; ++e) {
    const u64* t = anc.data() + size_t(g.pa[e]) * W;
    for (int w = 0; w < W; ++w) s.rel[w] |= t[w];
  }
  s.dead.resize(size_t(3) * W);
  reset_dead(s);
  s.flow = 0;
}

int FlowSolver::insert(int v, int a, Buf& buf) {
  VS& s = st[v];
  // a reaches no parent of v by a half-trek: no path can start at L(a)
  {
    const u64* h = g.htr_row(a);
    const u64* p = g.pa_row(v);
    bool any = false;
    for (int w = 0; w < W; ++w)
      if (h[w] & p[w]) {
        any = true;
        break;
      }
    if (!any) return 0;
  }
  const int top = search(s, v, a, buf);
  if (top < 0) return 0;
  augment(s, buf.stk.data(), top);
  s.src.push_back(a);
  ++s.flow;
  reset_dead(s);
  return s.flow == g.npa(v) ? 2 : 1;
}

// Depth-first search from L(a) for a path to t in the residual network, skipping dead vertices and marking
// every vertex it enters dead (it is then either on the path or proved unable to reach t). Returns the
// position on buf.stk of the path's last vertex (a Rout(p) with p in pa(v)), or -1 when there is none.
int FlowSolver::search(VS& s, int v, int a, Buf& buf) const {
  const u64* pm = g.pa_row(v);
  i32* stk = buf.stk.data();
  i32* it = buf.it.data();
  int top = 0;
  stk[0] = a;
  it[0] = 0;
  sb(s.dead.data(), a);
  while (top >= 0) {
    bool found = false;
    const i32 nxt = next_vertex(s, pm, stk[top], it[top], found);
    if (found) return top;
    if (nxt < 0) {
      --top;
      continue;
    }
    ++top;
    stk[top] = nxt;
    it[top] = 0;
  }
  return -1;
}

// The next residual arc out of `node` not tried yet (it: the arcs tried so far): the vertex it enters
// (marked dead), or -1 when none is left; found = true when the arc is Rout(p) -> t.
i32 FlowSolver::next_vertex(VS& s, const u64* pm, i32 node, i32& it, bool& found) const {
  u64* deadL = s.dead.data();
  u64* deadI = deadL + W;
  u64* deadO = deadL + 2 * W;
  const i32* fL = s.fL.data();
  const i32* fR = s.fR.data();
  const i32* pr = s.pr.data();
  const int n2 = 2 * n;
  if (node < n) {  // L(x): forward to Rin(x), Rin(sib)
    const i32 x = node;
    const i32 deg = 1 + g.sb_off[x + 1] - g.sb_off[x];
    while (it < deg) {
      const i32 j = it++;
      const i32 u = j == 0 ? x : g.sib[g.sb_off[x] + j - 1];
      if (u == fL[x] || tb(deadI, u)) continue;
      sb(deadI, u);
      return n + u;
    }
    return -1;
  }
  if (node < n2) {  // Rin(u): to Rout(u) if free, else back along the flow arc
    const i32 u = node - n;
    if (it != 0) return -1;
    it = 1;
    const i32 p = pr[u];
    if (p < 0) {
      if (tb(deadO, u)) return -1;
      sb(deadO, u);
      return n2 + u;
    }
    if (p < n) {
      if (tb(deadL, p)) return -1;
      sb(deadL, p);
      return p;
    }
    if (tb(deadO, p - n)) return -1;
    sb(deadO, p - n);
    return p + n;
  }
  // Rout(u): t, back to Rin(u) if used, children
  const i32 u = node - n2;
  const i32 cb = g.ch_off[u], nch = g.ch_off[u + 1] - cb;
  for (;;) {
    const i32 j = it++;
    if (j == 0) {
      if (tb(pm, u) && fR[u] != n) {
        found = true;
        return -1;
      }
      continue;
    }
    if (j == 1) {
      if (pr[u] >= 0 && !tb(deadI, u)) {
        sb(deadI, u);
        return n + u;
      }
      continue;
    }
    if (j - 2 >= nch) return -1;
    const i32 c = g.ch[cb + j - 2];
    if (c == fR[u] || tb(deadI, c)) continue;
    sb(deadI, c);
    return n + c;
  }
}

// One more unit of flow along stk[0..top] -> t.
void FlowSolver::augment(VS& s, const i32* stk, int top) const {
  i32* fL = s.fL.data();
  i32* fR = s.fR.data();
  i32* pr = s.pr.data();
  const int n2 = 2 * n;
  for (int i = 0; i <= top; ++i) {
    const i32 x = stk[i];
    const i32 y = i < top ? stk[i + 1] : -1;
    if (x < n) {  // L(x) -> Rin(u)
      const i32 u = y - n;
      fL[x] = u;
      pr[u] = x;
    } else if (x < n2) {
      const i32 u = x - n;
      if (y >= n2 && y - n2 == u) {
        // Rin(u) -> Rout(u): vertex becomes used; pr[u] set by the entering arc
      } else if (y < n) {
        fL[y] = -1;  // cancel L(y) -> Rin(u)
      } else {
        fR[y - n2] = -1;  // cancel Rout(w) -> Rin(u)
      }
    } else {
      const i32 u = x - n2;
      if (y < 0) {
        fR[u] = n;
      } else if (y - n == u) {
        pr[u] = -1;  // cancel Rin(u) -> Rout(u)
      } else {
        const i32 c = y - n;
        fR[u] = c;
        pr[c] = n + u;
      }
    }
  }
}

void FlowSolver::release(int v) {
  VS& s = st[v];
  std::vector<i32>().swap(s.fL);
  std::vector<i32>().swap(s.fR);
  std::vector<i32>().swap(s.pr);
  std::vector<u64>().swap(s.dead);
  std::vector<u64>().swap(s.rel);
}

}  // namespace fastnips::causal::detail
