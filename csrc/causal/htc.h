// Half-trek criterion (HTC) and edgewise identification (EID) for linear SEMs on mixed graphs.
// Plain C++17, std only (OpenMP optional): no Python, no pybind11. The binding lives in causal/bind.cpp;
// htc.cpp lists the internal files of the solvers. Needs GCC or Clang (unsigned __int128, __builtin_ctzll).
//
// Semantics follow SEMID 0.4.2 (github.com/Lucaweihs/SEMID) exactly:
//   * htrFrom(v) (SEMID convention) = {v} ∪ sib(v) ∪ directed descendants of {v} ∪ sib(v).
//   * Plain HTC = SEMID htcID(g, tianDecompose=FALSE) = graphID.htcID: fixpoint of
//       S := {parentless};  v joins S when  max-half-trek-system(A_v -> pa(v)) = |pa(v)|,
//       A_v = (V \ htrFrom(v)) ∪ (S \ sib(v)).
//   * Tian mode = SEMID htcID(g) (default tianDecompose=TRUE): plain HTC on every Tian c-component
//     (SEMID's cyclic variant: bidirected components of the graph whose nodes are the strongly
//     connected components of the directed part).
//   * Edgewise = SEMID edgewiseID(g, tianDecompose=FALSE, subsetSizeControl=Inf), decided without
//     subset enumeration through the unique maximal good edge set per node (notes §1.4(4)).
//
// Methods (HTC only; edgewise always uses the randomized rank method):
//   kRandomized  M = Omega (I-Lambda)^{-1} over F_p with random nonzero parameters, one matrix per run,
//                restricted to the m columns of nodes that have a child, built by the column recurrence
//                M[:,k] = Omega[:,k] + sum_{j->k} lambda_jk M[:,j] in topological order of the strongly
//                connected components (one LU of (I-Lambda_CC) per nontrivial SCC C, solved for all n rows),
//                so a DAG costs O(n (|D| + m) + |B|).
//                "v solvable" <=> rank M[A_v, pa(v)] = |pa(v)| (FDD Lemma 2), tracked with one incremental
//                reduced-row-echelon basis per unsolved node: every row is offered once, when it becomes
//                allowed; rows already in the span are rejected by exact reduction or, after one such
//                rejection, by a dot product with a random null-space vector until the next pivot.
//                Y_v = the rows that became pivots.
//                ERROR IS ONE-SIDED: every reported "solved" is certified by an exactly computed
//                nonsingular |pa(v)| x |pa(v)| minor mod p, which proves the half-trek system exists (the
//                minor is a nonzero evaluation of a rational function). A solvable node is missed only if a
//                minor (numerator degree <= n, Cauchy-Binet + Jacobi) vanishes at the random point or a
//                null-space screen errs (1/p per screened row): <= ~2 n^2 / (p-1) for the whole run by a
//                union bound, ~2^-40 at n = 1000 with the default p = 2^61-1. A small prime (e.g. 101)
//                only loses nodes. Time O(n (|D| + m + sum_C |C|^2) + |B| + sum_C |C|^3 +
//                n*sum_v|pa(v)| + sum_v |pa(v)|^3) <= O(n^4) (C = SCCs); O(n^2 + |B|) for a DAG with
//                bounded in-degree. Memory: 8 n m bytes for M (plus the same transiently for M^T) and one
//                |pa(v)| x rank basis per node while it is unsolved.
//   kMaxFlow     exact and deterministic: one unit-capacity, vertex-split flow network per unsolved node,
//                kept across rounds; each newly allowed source triggers one augmenting-path search; vertices
//                that cannot reach pa(v) at all, or that a failed search proved dead since the last
//                augmentation, are never re-scanned. Time O(sum_v (|pa(v)|+1) (n+|D|+|B|)) <= O(n^4).
//                Memory ~12 bytes * n * (#unsolved nodes) at most. Y_v = the sources carrying flow.
//   Both methods return the same solved set (deterministic vs. one-sided randomized); Y_v may differ.
//
// Input: directed = 2*n_dir int32 (tail0, head0, tail1, head1, ...), bidirected = 2*n_bi int32 pairs
// (either orientation). 0-based ids. The caller validates; these functions re-check cheaply and throw a
// StatusError (common/status.h; a ValueError in Python) on ids out of range, self loops, or duplicate edges
// (a bidirected pair given as both (i,j) and (j,i) counts as a duplicate), and on an invalid opt.prime.
// Cyclic directed parts are allowed. Functions are thread-safe (no global state) and deterministic for a
// fixed (input, opt), also under any number of OpenMP threads. Nodes without any edge cost O(1) each in
// htc_identify (the solvers run on the other nodes; the bitset and solver memory above counts only those).
// Long loops poll interrupt_requested() (common/interrupt.h) and throw StatusError(Status::interrupted()).
#pragma once
#include <cstdint>
#include <vector>

namespace fastnips::causal {

enum class Method { kRandomized, kMaxFlow };

struct HtcOptions {
  Method method = Method::kRandomized;
  bool tian = false;    // htc_identify only: Tian-decompose first (SEMID's default htcID)
  uint64_t seed = 0;    // randomized method: seed of the random parameters / null-space screens
  uint64_t prime = 0;   // randomized method: field size p; 0 => 2^61-1 (fast Mersenne arithmetic).
                        // Any other value must be a prime with 3 <= p < 2^63 (else a StatusError).
                        // Small primes are allowed (they only lose solved nodes, never add one).
};

// One Tian c-component (tian mode only). All ids are original node ids.
struct TianComponent {
  std::vector<int32_t> internal;   // nodes of the component (their incoming edges are decided here)
  std::vector<int32_t> incoming;   // parents of internal nodes that are not internal (parentless here)
  std::vector<int32_t> top_order;  // internal ∪ incoming, in a topological order of the strongly connected
                                   // components of the whole graph (ties inside one SCC: ascending id).
                                   // This is SEMID's `topOrder`; node i of the component subgraph is
                                   // top_order[i]. The subgraph has every directed edge INTO an internal
                                   // node and the bidirected edges among internal nodes; its covariance is
                                   // SEMID's tianSigmaForComponent(Sigma, internal, incoming, top_order).
};

struct HtcResult {
  std::vector<uint8_t> solved;   // per node, 1 if all incoming edge coefficients are identified
                                 // (parentless nodes are solved)
  std::vector<int32_t> order;    // solved nodes in the order they were solved (parentless first, ascending);
                                 // a valid identification order: every y in sources[v] ∩ htr(v) precedes v.
  std::vector<std::vector<int32_t>> sources;  // per node v: the HTC source set Y_v (|Y_v| = |pa(v)|, sorted)
                                              // used to solve it; empty if parentless or unsolved
  int32_t rounds = 0;            // Jacobi fixpoint passes that solved at least one node (= max of `level`)
  int64_t tests = 0;             // (v, a) pairs tested: a row a offered to v's basis (kRandomized) or a
                                 // source a added to v's flow network (kMaxFlow). Pairs with htrFrom(a) ∩
                                 // pa(v) = ∅ (structurally zero rows) are skipped and not counted, so both
                                 // methods report the same count when they pick the same rows.
  std::vector<int32_t> level;    // per node: Jacobi pass in which it was solved (0 = parentless, 1 = solved
                                 // from the initial allowed sets, ...); -1 if unsolved
  // ---- tian mode only (both empty when opt.tian == false) ----
  std::vector<int32_t> component;          // per node: index into `components` of the component where
                                           // the node is internal
  std::vector<TianComponent> components;   // ordered by smallest internal node id
  // In tian mode: solved/level/sources of node v refer to the run on the subgraph of component[v];
  // sources[v] holds ORIGINAL ids of nodes of components[component[v]].top_order, and the identifying
  // equations use that component's covariance (tianSigmaForComponent), not Sigma. `order` lists the
  // parentless nodes first (ascending), then for each component in turn its solved non-parentless
  // internal nodes in solve order (components are identified independently of each other).
  // rounds = max over components, tests = sum over components.
};

// Plain HTC (opt.tian = false) or SEMID's default Tian-decomposed HTC (opt.tian = true).
HtcResult htc_identify(int32_t n, const int32_t* directed, int64_t n_dir, const int32_t* bidirected,
                       int64_t n_bi, const HtcOptions& opt);

// Edges S->node identified from sources Y (|Y| = |S|), in application order (SEMID's Gauss-Seidel node
// order 0..n-1 per pass). S and Y are sorted. The identifying equation of a step uses the edges solved
// by earlier steps (SEMID's SigmaMinus): replay the steps in order.
struct EdgewiseStep {
  int32_t node;
  std::vector<int32_t> S;
  std::vector<int32_t> Y;
};

struct EdgewiseResult {
  std::vector<uint8_t> edge_solved;   // per input directed edge, input order
  std::vector<uint8_t> node_solved;   // per node: all incoming edges identified (parentless => 1)
  std::vector<EdgewiseStep> steps;
  int32_t rounds = 0;                 // Gauss-Seidel passes that identified at least one edge
  int64_t tests = 0;                  // rows offered to a basis
  std::vector<int32_t> edge_step;     // per input directed edge: index into `steps` that solved it, or -1
};

// SEMID edgewiseID(tianDecompose=FALSE, subsetSizeControl=Inf). opt.tian and opt.method are ignored
// (always the randomized rank method with opt.seed / opt.prime; same one-sided error as above: every
// reported edge is certified). Per node and pass the unique maximal good set S* is found by at most
// |U| rank computations (U = unsolved parents), instead of SEMID's enumeration of 2^|U| subsets.
// Time per pass O(n^3/64 + sum_v |U_v| (n |U_v| + |U_v|^3)) after the O(n^2 m)-or-less matrix M; the
// number of passes is at most the number of steps + 1 (a pass that identifies nothing ends the loop).
EdgewiseResult edgewise_identify(int32_t n, const int32_t* directed, int64_t n_dir,
                                 const int32_t* bidirected, int64_t n_bi, const HtcOptions& opt);

// SEMID's default edgewiseID(tianDecompose=TRUE, subsetSizeControl=Inf): edgewise_identify on the component
// graph of every Tian c-component (causal/tian.cpp), each with opt.seed; steps in original ids (S, Y
// sorted), grouped by component in order of smallest member; edge_step indexes these steps; rounds = max and
// tests = sum over the components.
EdgewiseResult edgewise_identify_tian(int32_t n, const int32_t* directed, int64_t n_dir,
                                      const int32_t* bidirected, int64_t n_bi, const HtcOptions& opt);

// Batch: graph g has ns[g] nodes, directed edges [dir_offsets[g], dir_offsets[g+1]) of `directed`
// (offsets count edges, not int32s; size G+1) and likewise bidirected/bi_offsets. Runs htc_identify on
// each, OpenMP-parallel over graphs (schedule(dynamic)); each graph then runs single-threaded. Results
// equal G separate htc_identify calls. If any graph throws, the first exception (lowest g) is rethrown
// after the loop. The caller releases the GIL.
std::vector<HtcResult> htc_identify_many(const std::vector<int32_t>& ns, const int32_t* directed,
                                         const int64_t* dir_offsets, const int32_t* bidirected,
                                         const int64_t* bi_offsets, const HtcOptions& opt);

}  // namespace fastnips::causal
