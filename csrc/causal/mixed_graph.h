// Internal to the HTC solvers: the mixed graph (directed + bidirected edges) as sorted CSR adjacency lists
// and n x W bitsets (W = ceil(n / 64) words per row), with its strongly connected components and SEMID's
// htrFrom sets (causal/mixed_graph.cpp). Plain C++17.
#pragma once
#include <cstdint>
#include <vector>

#include "causal/field.h"

namespace fastnips::causal::detail {

inline bool tb(const u64* row, int i) { return (row[i >> 6] >> (i & 63)) & 1u; }
inline void sb(u64* row, int i) { row[i >> 6] |= u64(1) << (i & 63); }

struct Graph {
  int n = 0, W = 0;
  i64 n_dir = 0, n_bi = 0;
  std::vector<i32> pa_off, pa, pa_eid;  // parents of v, ascending; input edge index
  std::vector<i32> ch_off, ch, ch_eid;  // children of v, ascending
  std::vector<i32> sb_off, sib, sb_eid; // siblings of v, ascending; bidirected input index
  std::vector<u64> htr;   // n*W: SEMID htrFrom(v) = De({v} ∪ sib(v)) (includes v, sib(v))
  std::vector<u64> sibm;  // n*W: sib(v)
  std::vector<u64> pam;   // n*W: pa(v)
  std::vector<i32> scc;   // SCC id per node (Tarjan completion order = reverse topological order)
  int nscc = 0;
  std::vector<i32> scc_off, scc_mem;  // members of SCC c: scc_mem[scc_off[c] .. scc_off[c+1])
  // A graph restricted to the nodes that have an edge (htc.cpp): node v is node ids[v] of the caller's graph
  // of n_ids nodes. The random streams are drawn by those ids, so the results equal the full graph's.
  std::vector<i32> ids;  // empty: the identity (n_ids = n)
  int n_ids = 0;
  int npa(int v) const { return pa_off[v + 1] - pa_off[v]; }
  u64 id(int v) const { return ids.empty() ? u64(v) : u64(ids[size_t(v)]); }
  int id_count() const { return ids.empty() ? n : n_ids; }
  const u64* htr_row(int v) const { return htr.data() + size_t(v) * W; }
  const u64* sib_row(int v) const { return sibm.data() + size_t(v) * W; }
  const u64* pa_row(int v) const { return pam.data() + size_t(v) * W; }
};

// Threads inside one call only when not already inside a parallel region (htc_identify_many) and the
// work (~ (n + |D|) * n for the matrix M, (n + |D| + |B|) * n / 64 for the graph bitsets) dwarfs the cost of
// a few parallel regions.
bool use_threads(int64_t n, int64_t n_dir, int64_t n_bi);

// Refuses (ValueError StatusError) ids out of range, self loops and duplicate edges (a bidirected pair given
// as both (i,j) and (j,i) counts as a duplicate).
void validate(int n, const i32* dir, i64 nd, const i32* bi, i64 nb);

// validate()'s checks before its duplicate searches, for callers that find duplicates their own way: the edge
// counts and buffers, and per edge kind ("directed" / "bidirected" in the messages) ids and self loops.
void check_edge_counts(const i32* dir, i64 nd, const i32* bi, i64 nb);
void check_edge_ends(int n, const i32* edges, i64 m, const char* kind);

// A node-level criterion's answer per directed edge (tail, head): solved iff its head is.
inline std::vector<uint8_t> edges_of_nodes(const std::vector<uint8_t>& node_solved, const i32* dir, i64 nd) {
  std::vector<uint8_t> out(static_cast<size_t>(nd));
  for (i64 e = 0; e < nd; ++e) out[size_t(e)] = node_solved[size_t(dir[2 * e + 1])];
  return out;
}

// An edge-level answer per node: solved iff every directed edge into it is (parentless nodes are).
inline std::vector<uint8_t> nodes_of_edges(const std::vector<uint8_t>& edge_solved, int n, const i32* dir, i64 nd) {
  std::vector<uint8_t> out(static_cast<size_t>(n), 1);
  for (i64 e = 0; e < nd; ++e)
    if (!edge_solved[size_t(e)]) out[size_t(dir[2 * e + 1])] = 0;
  return out;
}

// The graph of n nodes, nd directed (tail, head) and nb bidirected pairs (validated); par: may use threads.
// bitsets = false leaves htr, sibm and pam empty (the Tian decomposition needs only the adjacency and the
// SCCs; the n x n/64 words of each bitset are what bounds the graphs the solvers can take).
Graph build_graph(int n, const i32* dir, i64 nd, const i32* bi, i64 nb, bool par, bool bitsets = true);

// The Tian c-component of every node (SEMID's sense: bidirected components merged along directed cycles, i.e.
// union-find over SCC members and bidirected endpoints), numbered 0, 1, ... by smallest member; *ncomp gets
// their number.
std::vector<i32> tian_component_ids(const Graph& g, int* ncomp);

// Which way scc_closure follows the directed edges.
enum class Along { kChildren, kParents };

// One bitset row per SCC, closed along the directed edges: row(C) = seed of C's members ∪ the rows of the
// SCCs C' != C of their children (kChildren: descendants) or parents (kParents: ancestors). seed(x, row)
// ORs node x's own bits into row. SCCs are visited so that every C' comes first (Tarjan ids: the SCCs a
// node reaches have smaller ids). O((n + |D|) W).
template <class Seed>
std::vector<u64> scc_closure(const Graph& g, Along along, Seed&& seed) {
  const int nc = g.nscc, W = g.W;
  const bool down = along == Along::kChildren;
  const std::vector<i32>& off = down ? g.ch_off : g.pa_off;
  const std::vector<i32>& adj = down ? g.ch : g.pa;
  std::vector<u64> rows(size_t(nc) * W, 0);
  for (int k = 0; k < nc; ++k) {
    const int c = down ? k : nc - 1 - k;
    u64* t = rows.data() + size_t(c) * W;
    for (i32 i = g.scc_off[c]; i < g.scc_off[c + 1]; ++i) {
      const i32 x = g.scc_mem[i];
      seed(x, t);
      for (i32 e = off[x]; e < off[x + 1]; ++e) {
        const i32 cc = g.scc[adj[e]];
        if (cc == c) continue;
        const u64* t2 = rows.data() + size_t(cc) * W;
        for (int w = 0; w < W; ++w) t[w] |= t2[w];
      }
    }
  }
  return rows;
}

// Node u's row = the row of its SCC, for every node (n x W).
std::vector<u64> rows_per_node(const Graph& g, const std::vector<u64>& scc_rows);

}  // namespace fastnips::causal::detail
