r"""Scene graphs: the Hellinger geometry of triplet fields, as a metric and as a graph-level loss.

Paper: "Contextual Hellinger Triplet Geometry: graph-level supervision for 3D scene graph prediction"
(NeurIPS 2026; a descriptive title, see docs/papers.md). A scene graph's prediction
(object class distributions on nodes, predicate distributions on edges) defines on every edge the joint
distribution of (subject, predicate, object); its Hellinger distance to the ground truth factorises into three
Bhattacharyya coefficients (:math:`O(C + R)` per edge instead of :math:`O(C^2 R)`), and in the contextual form
(predicates conditioned on the classes) is one einsum whose inner sum is a fused Triton kernel on CUDA.

* :func:`hellinger_triplet_loss`, :class:`HellingerTripletLoss` (:mod:`fastnips.scenegraph.loss`): the loss on
  any predictor's logits, PyG batching conventions (``edge_index``, ``batch``; a ``Data`` read by attribute).
* :func:`hellinger`, :func:`bernoulli_hellinger`, :func:`triplet_hellinger`, :func:`sqrt_prob`
  (:mod:`fastnips.scenegraph.metric`): the metric itself on probabilities.
* :func:`predicate_bc` (:mod:`fastnips.scenegraph.contextual`): the contextual hot path, backends
  ``reference`` / ``triton``.
* :class:`SceneGraphPredictor`, :func:`triplet_recall`, :func:`calibration_error`
  (:mod:`fastnips.scenegraph.evaluation`): a baseline predictor and the evaluation metrics.
* :func:`synthetic_scenes` (:mod:`fastnips.scenegraph.synthetic`): rule-generated 3-D scenes with object classes
  and spatial predicates, for tests and the evaluation (the paper's 3DSSG data needs a signed agreement and is
  not reproduced here).

Design notes and measurements: docs/notes/scenegraph.md.
"""

from __future__ import annotations

from .. import _optional

if (_missing := _optional.missing_torch(__name__)) is not None:  # torch-only: say what to install
    raise _missing

from .contextual import CONTEXTUAL_BACKENDS, predicate_bc
from .evaluation import SceneGraphPredictor, calibration_error, triplet_recall
from .loss import HellingerTripletLoss, hellinger_triplet_loss
from .metric import bernoulli_hellinger, hellinger, sqrt_prob, triplet_hellinger
from .synthetic import PREDICATES, SceneBatch, synthetic_scenes

__all__ = [
    "CONTEXTUAL_BACKENDS",
    "PREDICATES",
    "HellingerTripletLoss",
    "SceneBatch",
    "SceneGraphPredictor",
    "bernoulli_hellinger",
    "calibration_error",
    "hellinger",
    "hellinger_triplet_loss",
    "predicate_bc",
    "sqrt_prob",
    "synthetic_scenes",
    "triplet_hellinger",
    "triplet_recall",
]
