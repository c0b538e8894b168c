// Bindings of the causal field: htc_identify, edgewise_identify and htc_identify_many (the HTC solvers of
// causal/htc.h), htc_sweep, ancestral_sweep, htc_sweeps, global_identifiable and generic_identify
// (causal/ancestral.h), trek_edge_identified (causal/trek.h), lfhtc_identify (causal/lfhtc.h).
// Results come back as dicts of numpy arrays and lists, as fastnips.causal reads them.
#include "causal/ancestral.h"
#include "causal/htc.h"
#include "causal/lfhtc.h"
#include "causal/trek.h"
#include "common/bind.h"

namespace fastnips {
namespace {

using namespace bind;
namespace fc = causal;

using IntPairs = Int32Array;

constexpr uint64_t kMersenne61 = (uint64_t(1) << 61) - 1;

// A (k, 2) array of node ids (an empty 1-D array stands for k = 0); returns k.
int64_t pair_count(const IntPairs& a, const char* name) {
  if (!(a.ndim() == 2 && a.shape(1) == 2) && !(a.ndim() == 1 && a.shape(0) == 0))
    throw py::value_error(std::string(name) + " must have shape (k, 2)");
  return a.ndim() == 2 ? a.shape(0) : 0;
}

void check_n(int32_t n) {
  if (n < 0) throw py::value_error("n must be >= 0");
}

fc::HtcOptions htc_options(const std::string& method, bool tian, uint64_t seed, uint64_t prime) {
  fc::HtcOptions opt;
  if (method == "randomized") opt.method = fc::Method::kRandomized;
  else if (method == "maxflow") opt.method = fc::Method::kMaxFlow;
  else throw py::value_error("method must be 'randomized' or 'maxflow', got '" + method + "'");
  opt.tian = tian;
  opt.seed = seed;
  opt.prime = prime == kMersenne61 ? 0 : prime;  // 0 selects the fast Mersenne-61 arithmetic
  return opt;
}

py::list nested(const std::vector<std::vector<int32_t>>& vv) {
  py::list out(vv.size());
  for (size_t i = 0; i < vv.size(); ++i) out[i] = py::cast(vv[i]);
  return out;
}

py::dict htc_dict(const fc::HtcResult& r, bool tian) {
  py::dict d;
  d["solved"] = to_numpy(r.solved).attr("astype")("bool");
  d["order"] = to_numpy(r.order);
  d["sources"] = nested(r.sources);
  d["rounds"] = r.rounds;
  d["tests"] = r.tests;
  d["level"] = to_numpy(r.level);
  if (tian) {
    d["component"] = to_numpy(r.component);
    py::list comps;
    for (const auto& c : r.components) {
      py::dict cd;
      cd["internal"] = c.internal;
      cd["incoming"] = c.incoming;
      cd["top_order"] = c.top_order;
      comps.append(cd);
    }
    d["components"] = comps;
  }
  return d;
}

// The edge arrays of every solver: any integer arrays, narrowed to int32 by checked_int32 (ids that do not fit
// are refused by name, never wrapped).
py::dict htc_identify(int32_t n, const py::object& directed, const py::object& bidirected, const std::string& method,
                      bool tian, uint64_t seed, uint64_t prime) {
  const IntPairs dir = checked_int32(directed, "directed"), bi = checked_int32(bidirected, "bidirected");
  const int64_t n_dir = pair_count(dir, "directed"), n_bi = pair_count(bi, "bidirected");
  check_n(n);
  const auto opt = htc_options(method, tian, seed, prime);
  fc::HtcResult r;
  run_released([&] {
    r = fc::htc_identify(n, dir.data(), n_dir, bi.data(), n_bi, opt);
    return Status{};
  });
  return htc_dict(r, tian);
}

py::dict edgewise_identify(int32_t n, const py::object& directed, const py::object& bidirected, uint64_t seed,
                           uint64_t prime, bool tian) {
  const IntPairs dir = checked_int32(directed, "directed"), bi = checked_int32(bidirected, "bidirected");
  const int64_t n_dir = pair_count(dir, "directed"), n_bi = pair_count(bi, "bidirected");
  check_n(n);
  const auto opt = htc_options("randomized", false, seed, prime);
  fc::EdgewiseResult r;
  run_released([&] {
    r = tian ? fc::edgewise_identify_tian(n, dir.data(), n_dir, bi.data(), n_bi, opt)
             : fc::edgewise_identify(n, dir.data(), n_dir, bi.data(), n_bi, opt);
    return Status{};
  });
  py::dict d;
  d["edge_solved"] = to_numpy(r.edge_solved).attr("astype")("bool");
  d["node_solved"] = to_numpy(r.node_solved).attr("astype")("bool");
  py::list steps(r.steps.size());
  for (size_t i = 0; i < r.steps.size(); ++i)
    steps[i] = py::make_tuple(r.steps[i].node, py::cast(r.steps[i].S), py::cast(r.steps[i].Y));
  d["steps"] = steps;
  d["rounds"] = r.rounds;
  d["tests"] = r.tests;
  d["edge_step"] = to_numpy(r.edge_step);
  return d;
}

using SolvedFn = fc::AncestralResult (*)(int32_t, const int32_t*, int64_t, const int32_t*, int64_t);

py::dict solved_dict(const fc::AncestralResult& r) {
  py::dict d;
  d["edge_solved"] = to_numpy(r.edge_solved).attr("astype")("bool");
  d["node_solved"] = to_numpy(r.node_solved).attr("astype")("bool");
  d["rounds"] = r.rounds;
  return d;
}

// A per-graph fixpoint of causal/ancestral.h (plain or Tian) as a dict: edge_solved, node_solved, rounds.
py::dict solved_result(int32_t n, const py::object& directed, const py::object& bidirected, SolvedFn fn) {
  const IntPairs dir = checked_int32(directed, "directed"), bi = checked_int32(bidirected, "bidirected");
  const int64_t n_dir = pair_count(dir, "directed"), n_bi = pair_count(bi, "bidirected");
  check_n(n);
  fc::AncestralResult r;
  run_released([&] {
    r = fn(n, dir.data(), n_dir, bi.data(), n_bi);
    return Status{};
  });
  return solved_dict(r);
}

py::dict lfhtc_identify(int32_t n, const py::object& directed, int32_t n_latent, const py::object& latent_edges) {
  const IntPairs dir = checked_int32(directed, "directed"), lat = checked_int32(latent_edges, "latent_edges");
  const int64_t n_dir = pair_count(dir, "directed"), n_lat = pair_count(lat, "latent_edges");
  check_n(n);
  if (n_latent < 0) throw py::value_error("n_latent must be >= 0");
  fc::AncestralResult r;
  run_released([&] {
    r = fc::lfhtc_identify(n, n_latent, dir.data(), n_dir, lat.data(), n_lat);
    return Status{};
  });
  return solved_dict(r);
}

py::dict generic_identify(int32_t n, const py::object& directed, const py::object& bidirected,
                          const std::vector<std::string>& steps, bool tian, uint64_t seed, uint64_t prime) {
  const IntPairs dir = checked_int32(directed, "directed"), bi = checked_int32(bidirected, "bidirected");
  const int64_t n_dir = pair_count(dir, "directed"), n_bi = pair_count(bi, "bidirected");
  check_n(n);
  std::vector<uint8_t> codes;
  for (const std::string& s : steps) {
    if (s == "htc") codes.push_back(0);
    else if (s == "edgewise") codes.push_back(1);
    else if (s == "ancestral") codes.push_back(2);
    else throw py::value_error("steps must be 'htc', 'edgewise' or 'ancestral' (the native loop), got '" + s + "'");
  }
  if (codes.empty()) throw py::value_error("steps must not be empty");
  fc::AncestralResult r;
  run_released([&] {
    r = fc::generic_identify(n, dir.data(), n_dir, bi.data(), n_bi, codes, tian, seed,
                             prime == kMersenne61 ? 0 : prime);
    return Status{};
  });
  return solved_dict(r);
}

py::dict htc_sweeps(int32_t n, const py::object& directed, const py::object& bidirected, bool tian) {
  return solved_result(n, directed, bidirected, tian ? fc::htc_sweeps_tian : fc::htc_sweeps);
}

bool global_identifiable(int32_t n, const py::object& directed, const py::object& bidirected) {
  const IntPairs dir = checked_int32(directed, "directed"), bi = checked_int32(bidirected, "bidirected");
  const int64_t n_dir = pair_count(dir, "directed"), n_bi = pair_count(bi, "bidirected");
  check_n(n);
  bool out = false;
  run_released([&] {
    out = fc::global_identifiable(n, dir.data(), n_dir, bi.data(), n_bi);
    return Status{};
  });
  return out;
}

// One node sweep (fc::htc_sweep or fc::ancestral_sweep) from a solved mask; the nodes it solves, in order.
template <class Sweep>
py::array node_sweep(int32_t n, const py::object& directed, const py::object& bidirected, const py::object& solved,
                     Sweep sweep) {
  const IntPairs dir = checked_int32(directed, "directed"), bi = checked_int32(bidirected, "bidirected");
  const int64_t n_dir = pair_count(dir, "directed"), n_bi = pair_count(bi, "bidirected");
  check_n(n);
  // a bool or integer mask (nonzero: solved); floats, complex and objects are refused, not cast
  const Int32Array flags = checked_int32(solved, "solved");
  if (flags.ndim() != 1 || flags.shape(0) != n) throw py::value_error("solved must have shape (n,)");
  std::vector<uint8_t> mask(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) mask[size_t(v)] = flags.data()[v] != 0;
  std::vector<int32_t> out;
  run_released([&] {
    out = sweep(n, dir.data(), n_dir, bi.data(), n_bi, mask.data());
    return Status{};
  });
  return to_numpy(out);
}

py::array htc_sweep(int32_t n, const py::object& directed, const py::object& bidirected, const py::object& solved) {
  return node_sweep(n, directed, bidirected, solved, fc::htc_sweep);
}

py::array ancestral_sweep(int32_t n, const py::object& directed, const py::object& bidirected,
                          const py::object& solved) {
  return node_sweep(n, directed, bidirected, solved, fc::ancestral_sweep);
}

// A 1-D array of int64 residues mod the trek prime, of length n (name in the error).
Int64Array residues(const py::object& obj, int64_t n, const char* name) {
  Int64Array a = py::cast<Int64Array>(obj);
  if (a.ndim() != 1 || a.shape(0) != n) throw py::value_error(std::string(name) + " must have shape (n,)");
  for (int64_t k = 0; k < n; ++k)
    if (a.data()[k] < 0 || uint64_t(a.data()[k]) >= fc::kTrekPrime)
      throw py::value_error(std::string(name) + " entries must be residues in [0, 2**31 - 1)");
  return a;
}

std::vector<int32_t> node_ids(const py::object& obj, int32_t n, const char* name) {
  const Int32Array a = checked_int32(obj, name);
  if (a.ndim() != 1) throw py::value_error(std::string(name) + " must be a 1-D array of node ids");
  std::vector<int32_t> out(a.data(), a.data() + a.size());
  for (int32_t v : out)
    if (v < 0 || v >= n) throw py::value_error(std::string(name) + " holds a node id outside [0, n)");
  return out;
}

bool trek_edge_identified(int32_t n, const py::object& directed, const py::object& bidirected, int32_t i, int32_t j,
                          const py::object& sigma, const py::object& a, const py::object& b, const py::object& pool,
                          const py::object& removed, int32_t max_k) {
  const IntPairs dir = checked_int32(directed, "directed"), bi = checked_int32(bidirected, "bidirected");
  const int64_t n_dir = pair_count(dir, "directed"), n_bi = pair_count(bi, "bidirected");
  check_n(n);
  if (i < 0 || i >= n || j < 0 || j >= n) throw py::value_error("i and j must be node ids in [0, n)");
  if (max_k < 1 || max_k > 3) throw py::value_error("max_k must be 1, 2 or 3");
  Int64Array sig = py::cast<Int64Array>(sigma);
  if (sig.ndim() != 2 || sig.shape(0) != n || sig.shape(1) != n) throw py::value_error("sigma must have shape (n, n)");
  const Int64Array flat = residues(sig.attr("reshape")(-1), int64_t(n) * n, "sigma");
  const Int64Array av = residues(a, n, "a"), bv = residues(b, n, "b");
  fc::TrekEdgeQuery q;
  q.i = i;
  q.j = j;
  q.sigma = flat.data();
  q.a = av.data();
  q.b = bv.data();
  q.pool = node_ids(pool, n, "pool");
  q.removed = node_ids(removed, n, "removed");
  q.max_k = max_k;
  bool out = false;
  run_released([&] {
    out = fc::trek_edge_identified(n, dir.data(), n_dir, bi.data(), n_bi, q);
    return Status{};
  });
  return out;
}

py::list htc_identify_many(const py::sequence& graphs, const std::string& method, bool tian, uint64_t seed,
                           uint64_t prime) {
  const auto opt = htc_options(method, tian, seed, prime);
  std::vector<int32_t> ns, dir, bi;
  std::vector<int64_t> dir_off{0}, bi_off{0};
  for (const auto& item : graphs) {
    auto t = item.cast<py::tuple>();
    if (t.size() != 3) throw py::value_error("each graph must be a tuple (n, directed, bidirected)");
    const auto n = t[0].cast<int32_t>();
    check_n(n);
    const auto d = checked_int32(t[1], "directed");
    const auto b = checked_int32(t[2], "bidirected");
    pair_count(d, "directed");
    pair_count(b, "bidirected");
    ns.push_back(n);
    dir.insert(dir.end(), d.data(), d.data() + d.size());
    bi.insert(bi.end(), b.data(), b.data() + b.size());
    dir_off.push_back(int64_t(dir.size() / 2));
    bi_off.push_back(int64_t(bi.size() / 2));
  }
  std::vector<fc::HtcResult> rs;
  run_released([&] {  // the graphs run in parallel over OpenMP threads
    rs = fc::htc_identify_many(ns, dir.data(), dir_off.data(), bi.data(), bi_off.data(), opt);
    return Status{};
  });
  py::list out(rs.size());
  for (size_t i = 0; i < rs.size(); ++i) out[i] = htc_dict(rs[i], tian);
  return out;
}

}  // namespace

void bind_causal(py::module_& m) {
  m.def("htc_identify", &htc_identify, py::arg("n"), py::arg("directed"), py::arg("bidirected"),
        py::arg("method") = "randomized", py::arg("tian") = false, py::arg("seed") = 0,
        py::arg("prime") = kMersenne61,
        "Half-trek criterion fixpoint (plain or per Tian component); see fastnips.causal.htc_identify.");
  m.def("edgewise_identify", &edgewise_identify, py::arg("n"), py::arg("directed"), py::arg("bidirected"),
        py::arg("seed") = 0, py::arg("prime") = kMersenne61, py::arg("tian") = false,
        "Edgewise identification via maximal good edge sets (tian: per Tian c-component, SEMID's default); see "
        "fastnips.causal.edgewise_identify.");
  m.def("trek_edge_identified", &trek_edge_identified, py::arg("n"), py::arg("directed"), py::arg("bidirected"),
        py::arg("i"), py::arg("j"), py::arg("sigma"), py::arg("a"), py::arg("b"), py::arg("pool"),
        py::arg("removed"), py::arg("max_k"),
        "Trek-separation search for one edge j -> i (the per-edge search of fastnips.causal._ref_trek).");
  m.def("htc_sweep", &htc_sweep, py::arg("n"), py::arg("directed"), py::arg("bidirected"), py::arg("solved"),
        "One Gauss-Seidel sweep of SEMID's htcIdentifyStep; returns the nodes it solves, in order.");
  m.def("ancestral_sweep", &ancestral_sweep, py::arg("n"), py::arg("directed"), py::arg("bidirected"),
        py::arg("solved"),
        "One Gauss-Seidel sweep of SEMID's ancestralIdentifyStep; returns the nodes it solves, in order.");
  m.def("global_identifiable", &global_identifiable, py::arg("n"), py::arg("directed"), py::arg("bidirected"),
        "SEMID's globalID (false for cyclic graphs); see fastnips.causal.global_identifiable.");
  m.def("htc_sweeps", &htc_sweeps, py::arg("n"), py::arg("directed"), py::arg("bidirected"), py::arg("tian") = false,
        "htcIdentifyStep alone to its fixpoint (generalGenericID's first phase; tian: per Tian c-component graph, "
        "rounds summed); dict of edge_solved, node_solved, rounds.");
  m.def("generic_identify", &generic_identify, py::arg("n"), py::arg("directed"), py::arg("bidirected"),
        py::arg("steps"), py::arg("tian") = true, py::arg("seed") = 0, py::arg("prime") = kMersenne61,
        "SEMID's generalGenericID over 'htc', 'edgewise' (subsetSizeControl = Inf) and 'ancestral' steps; dict of "
        "edge_solved, node_solved, rounds.");
  m.def("lfhtc_identify", &lfhtc_identify, py::arg("n"), py::arg("directed"), py::arg("n_latent"),
        py::arg("latent_edges"),
        "SEMID's lfhtcID on a latent digraph (latent_edges: (latent h, observed child) pairs); dict of edge_solved, "
        "node_solved, rounds (= the nodes it solved).");
  m.def("htc_identify_many", &htc_identify_many, py::arg("graphs"), py::arg("method") = "randomized",
        py::arg("tian") = false, py::arg("seed") = 0, py::arg("prime") = kMersenne61,
        "htc_identify over a list of (n, directed, bidirected), OpenMP-parallel, GIL released.");
}

}  // namespace fastnips
