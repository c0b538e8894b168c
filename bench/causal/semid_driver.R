# SEMID reference driver for the fastnips causal (HTC) benchmarks.
#
# SEMID is the CRAN package for generic identifiability of linear SEMs
# (Barber, Drton, Weihs, Sturma; https://cran.r-project.org/package=SEMID).
# It is NOT part of this repository. Install it from CRAN:
#     Rscript -e 'install.packages("SEMID")'
# or into a dedicated library and point FASTNIPS_SEMID_LIB at it:
#     mkdir -p /opt/R-semid
#     Rscript -e 'install.packages("SEMID", lib = "/opt/R-semid")'
#     export FASTNIPS_SEMID_LIB=/opt/R-semid    # default when unset
# SEMID needs igraph, R.oo, R.methodsS3 and R.utils; jsonlite is needed by this
# driver (on Debian: apt-get install r-cran-igraph r-cran-r.oo r-cran-r.utils
# r-cran-jsonlite).
#
# Usage:
#     Rscript bench/causal/semid_driver.R IN.json OUT.json
#
# IN.json:
#     {"functions": ["htcID", "htcID_tian", "graphID.htcID"],   # optional, default: all three
#      "repeats": 5,                                             # optional, default 5
#      "warmup": true,                                           # optional, default true (false: for calls of
#                                                                #   minutes: the warm-up runs on a 3-node graph)
#      "graphs": [{"id": "...", "n": N,
#                  "directed":   [[i, j], ...],    # i -> j, 0-based
#                  "bidirected": [[i, j], ...],    # i <-> j, 0-based, either order
#                  "latent": K, "latent_edges": [[h, v], ...]},  # optional (lfhtcID): latent h -> observed v,
#                                                                # 0-based; h is node n + h of the LatentDigraph
#                 ...]}
#
# OUT.json: one record per (graph, function), in input order:
#     [{"id": "...", "function": "htcID", "seconds": [..repeats..],
#       "identified_nodes": [0-based, sorted], "identifiable": true}, ...]
#
# Functions:
#     htcID          SEMID::htcID(MixedGraph(L, O), tianDecompose = FALSE)  (plain FDD HTC)
#     htcID_tian     SEMID::htcID(MixedGraph(L, O))  (default: per Tian c-component)
#     graphID.htcID  SEMID::graphID.htcID(L, O)      (original FDD code; returns 1-based nodes)
#     edgewiseID_tian, edgewiseTSID, ancestralID  SEMID's functions with their defaults (Tian decomposition;
#                    edgewiseID: subsetSizeControl = 3); only when named in "functions"
#     globalID       SEMID::globalID(MixedGraph(L, O)); "identified_nodes" = all nodes iff TRUE
#     generalGenericID_htc_edgewise  SEMID::generalGenericID(MixedGraph(L, O), list(htcIdentifyStep,
#                    edgewiseIdentifyStep), tianDecompose = FALSE) (SEMID's README example; exhaustive subsets)
#     generalGenericID_htc_ancestral  SEMID::generalGenericID(MixedGraph(L, O), list(htcIdentifyStep,
#                    ancestralIdentifyStep)) (its default tianDecompose = TRUE)
#     lfhtcID        SEMID::lfhtcID(LatentDigraph(L', observedNodes = 1:n, latentNodes = (n+1):(n+K))), L' the
#                    (n+K) x (n+K) adjacency of the directed and latent edges; "identified_nodes" as for htcID
# For htcID/htcID_tian a node is "identified" when all its incoming directed
# edges are identified (no unsolved parents); parentless nodes count as
# identified. "identifiable" means every node is identified.
#
# Timing: per (graph, function) one untimed warm-up call (unless "warmup": false), then `repeats` timed
# calls (wall clock via Sys.time(), microsecond resolution, rounded to 1e-6 s)
# inside this R session. Input construction (L, O and the MixedGraph object)
# is outside the timed region.
# SEMID's MixedGraph is a mutable R.oo reference object that lazily caches
# derived graphs (trek graph, flow graph, Tian components) on first use, so a
# fresh MixedGraph is built (untimed) before every call; each timed call thus
# measures the full work SEMID does for a newly given graph. No explicit gc()
# is forced between calls: with R.oo objects (finalizers) a full gc() costs
# ~50 ms, far more than SEMID itself on small graphs; R's automatic GC may
# still run inside a timed call, as it would in any SEMID session.

.libPaths(c(Sys.getenv("FASTNIPS_SEMID_LIB", "/opt/R-semid"), .libPaths()))

suppressPackageStartupMessages({
  library(SEMID)
  library(jsonlite)
})

ALL_FUNCTIONS <- c("htcID", "htcID_tian", "graphID.htcID")
EXTRA_FUNCTIONS <- c("edgewiseID_tian", "edgewiseTSID", "ancestralID", "globalID", "lfhtcID",
                     "generalGenericID_htc_edgewise", "generalGenericID_htc_ancestral")

edge_matrix <- function(edges, n, what, id) {
  # edges: list of length-2 lists/vectors (0-based); returns k x 2 1-based matrix
  if (is.null(edges) || length(edges) == 0) {
    return(matrix(integer(0), ncol = 2))
  }
  if (!all(vapply(edges, length, integer(1)) == 2L)) {
    stop(sprintf("graph %s: every %s edge must be a pair", id, what))
  }
  m <- matrix(as.integer(unlist(edges)), ncol = 2, byrow = TRUE)
  if (any(m < 0) || any(m >= n)) {
    stop(sprintf("graph %s: %s edge endpoint out of range [0, %d)", id, what, n))
  }
  if (any(m[, 1] == m[, 2])) {
    stop(sprintf("graph %s: %s self-loop not allowed", id, what))
  }
  m + 1L
}

build_LO <- function(g) {
  id <- as.character(g$id)
  n <- as.integer(g$n)
  if (length(n) != 1 || is.na(n) || n < 1) {
    stop(sprintf("graph %s: n must be a positive integer", id))
  }
  D <- edge_matrix(g$directed, n, "directed", id)
  B <- edge_matrix(g$bidirected, n, "bidirected", id)
  L <- matrix(0, n, n)
  O <- matrix(0, n, n)
  L[D] <- 1
  O[B] <- 1
  O[B[, c(2, 1), drop = FALSE]] <- 1
  K <- if (is.null(g$latent)) 0L else as.integer(g$latent)
  LL <- matrix(0, n + K, n + K)  # the latent digraph: observed 1..n, latent n+1..n+K
  LL[seq_len(n), seq_len(n)] <- L
  if (K > 0) {
    E <- matrix(as.integer(unlist(g$latent_edges)), ncol = 2, byrow = TRUE)
    if (any(E[, 1] < 0) || any(E[, 1] >= K) || any(E[, 2] < 0) || any(E[, 2] >= n)) {
      stop(sprintf("graph %s: latent edge out of range", id))
    }
    LL[cbind(n + 1L + E[, 1], 1L + E[, 2])] <- 1
  }
  list(id = id, n = n, K = K, L = L, O = O, LL = LL)
}

# Each runner: list(prepare = function(G) -> input (untimed; G from build_LO),
#                   call    = function(input) -> raw result (timed),
#                   nodes   = function(raw, n) -> 1-based identified nodes)
htc_nodes <- function(res, n) {
  which(vapply(res$unsolvedParents, length, integer(1)) == 0L)
}

mixed_graph_runner <- function(f) {
  list(prepare = function(G) MixedGraph(G$L, G$O), call = f, nodes = htc_nodes)
}

RUNNERS <- list(
  "htcID" = list(
    prepare = function(G) MixedGraph(G$L, G$O),
    call = function(x) htcID(x, tianDecompose = FALSE),
    nodes = htc_nodes
  ),
  "htcID_tian" = list(
    prepare = function(G) MixedGraph(G$L, G$O),
    call = function(x) htcID(x),
    nodes = htc_nodes
  ),
  "graphID.htcID" = list(
    prepare = function(G) list(L = G$L, O = G$O),
    call = function(x) graphID.htcID(x$L, x$O),
    nodes = function(res, n) as.integer(res)   # NULL -> integer(0)
  ),
  "edgewiseID_tian" = mixed_graph_runner(function(x) edgewiseID(x)),
  "edgewiseTSID" = mixed_graph_runner(function(x) edgewiseTSID(x)),
  "ancestralID" = mixed_graph_runner(function(x) ancestralID(x)),
  "generalGenericID_htc_edgewise" = mixed_graph_runner(function(x) {
    generalGenericID(x, list(htcIdentifyStep, edgewiseIdentifyStep), tianDecompose = FALSE)
  }),
  "generalGenericID_htc_ancestral" = mixed_graph_runner(function(x) {
    generalGenericID(x, list(htcIdentifyStep, ancestralIdentifyStep))
  }),
  "globalID" = list(   # "identified nodes": all of them when globally identifiable, else none
    prepare = function(G) MixedGraph(G$L, G$O),
    call = function(x) globalID(x),
    nodes = function(res, n) if (isTRUE(res)) seq_len(n) else integer(0)
  ),
  "lfhtcID" = list(
    prepare = function(G) LatentDigraph(G$LL, observedNodes = seq_len(G$n), latentNodes = G$n + seq_len(G$K)),
    call = function(x) lfhtcID(x),
    nodes = htc_nodes
  )
)

run_one <- function(G, fname, repeats, warmup = TRUE) {
  r <- RUNNERS[[fname]]
  nodes <- NULL
  if (warmup) {  # untimed
    raw <- r$call(r$prepare(G))
    nodes <- sort(unique(as.integer(r$nodes(raw, G$n))))
  } else {  # untimed, on a 3-node graph (the IV graph): loads SEMID's code paths (the first call costs ~1 s)
    r$call(r$prepare(build_LO(list(id = "warm-up", n = 3, directed = list(c(0, 1), c(1, 2)),
                                   bidirected = list(c(1, 2)), latent = 1, latent_edges = list(c(0, 1), c(0, 2))))))
  }
  secs <- numeric(repeats)
  for (k in seq_len(repeats)) {
    input <- r$prepare(G)
    t0 <- Sys.time()
    raw_k <- r$call(input)
    t1 <- Sys.time()
    secs[k] <- round(as.numeric(difftime(t1, t0, units = "secs")), 6)
    nodes_k <- sort(unique(as.integer(r$nodes(raw_k, G$n))))
    if (is.null(nodes)) {
      nodes <- nodes_k
    } else if (!identical(nodes_k, nodes)) {
      stop(sprintf("graph %s, %s: result changed between calls", G$id, fname))
    }
  }
  list(
    id = G$id,
    "function" = fname,
    seconds = I(secs),
    identified_nodes = I(nodes - 1L),
    identifiable = length(nodes) == G$n
  )
}

main <- function(args) {
  if (length(args) != 2) {
    stop("usage: Rscript semid_driver.R IN.json OUT.json")
  }
  spec <- fromJSON(args[[1]], simplifyVector = FALSE)
  fns <- if (is.null(spec$functions)) ALL_FUNCTIONS else as.character(unlist(spec$functions))
  bad <- setdiff(fns, c(ALL_FUNCTIONS, EXTRA_FUNCTIONS))
  if (length(bad) > 0) {
    stop(sprintf("unknown function(s): %s (known: %s)",
                 paste(bad, collapse = ", "), paste(c(ALL_FUNCTIONS, EXTRA_FUNCTIONS), collapse = ", ")))
  }
  repeats <- if (is.null(spec$repeats)) 5L else as.integer(spec$repeats)
  if (length(repeats) != 1 || is.na(repeats) || repeats < 1) {
    stop("repeats must be a positive integer")
  }
  warmup <- if (is.null(spec$warmup)) TRUE else isTRUE(spec$warmup)
  out <- list()
  for (g in spec$graphs) {
    G <- build_LO(g)
    for (fname in fns) {
      out[[length(out) + 1]] <- run_one(G, fname, repeats, warmup)
    }
  }
  writeLines(toJSON(out, auto_unbox = TRUE, digits = NA), args[[2]])
  invisible(NULL)
}

main(commandArgs(trailingOnly = TRUE))
