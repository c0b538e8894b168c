r"""Predictive coding, deep feedback control and Approx PC side by side in torch (approxpc, NeurIPS 2026).

* :class:`PCNet` -- :math:`x_l = W_l f(x_{l-1}) + b_l`, any depth.
* :func:`pc_inference` -- energy descent, soft (:math:`\gamma > 0`) or hard clamp; backends ``reference``
  (autograd), ``fused`` (hand-derived gradient, in place) and ``triton`` (fused matmul kernels, CUDA).
* :func:`dfc_inference` -- leaky integral controller, :math:`Q = J^\top` or given feedback.
* :func:`approx_pc_inference` -- one controller over intermediate subgoals.
* :class:`Backprop`, :class:`PredictiveCoding`, :class:`DeepFeedbackControl`, :class:`ApproxPC` -- learners
  with one ``set_grads(x, y)`` interface for any torch optimizer; :func:`update_similarity` compares updates.
* :func:`fit_classifier`, :func:`accuracy` -- the training loop of the evaluation (one-hot MSE targets).
* :mod:`fastnips.pc.reference` -- the plain formulas and the closed-form linear equilibria.

In a deep linear network PC's equilibrium is :math:`\varepsilon = J^\top(JJ^\top + \gamma I)^{-1}e` and equals
DFC's with :math:`Q = J^\top`, :math:`\alpha = \gamma`; with nonlinearities they differ by :math:`O(\|e\|^2)`.
"""

from __future__ import annotations

from .. import _optional

if (_missing := _optional.missing_torch(__name__)) is not None:  # torch-only: say what to install
    raise _missing

from .inference import PC_BACKENDS, approx_pc_inference, dfc_inference, pc_inference
from .learners import ApproxPC, Backprop, DeepFeedbackControl, PredictiveCoding, update_similarity
from .network import PCNet
from .reference import Inference
from .training import FitHistory, accuracy, fit_classifier

__all__ = ["PC_BACKENDS", "ApproxPC", "Backprop", "DeepFeedbackControl", "FitHistory", "Inference", "PCNet",
           "PredictiveCoding", "accuracy", "approx_pc_inference", "dfc_inference", "fit_classifier", "pc_inference",
           "update_similarity"]
