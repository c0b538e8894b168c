r"""GraphicDesignBench: the metrics of its layout and template-variant tasks, the font-Jaccard baseline, and a
reader for a local copy of the dataset (numpy / scipy only).

Paper: "GraphicDesignBench" (GDB; NeurIPS 2026 abstract, arXiv 2604.04192; its published package is
``lica-gdb``). Layouts are layered: boxes, types, a z-order, fonts, and sibling variants of one template. Every
metric is a function of plain Python / numpy structures (lists of boxes ``[x, y, w, h]``, label lists, dicts of
layout JSON) and agrees with lica-gdb's implementation where it has one (tests check it to 1e-9, most exactly).

* Spatial understanding: :func:`detection_map` (per-class 11-point AP, mAP@0.5 and @0.5:0.95),
  :func:`layer_order_scores` / :func:`kendall_tau` / :func:`layer_order_accuracy`, :func:`label_scores`,
  :func:`count_scores`, :func:`rotation_scores`; geometry :func:`iou_matrix`, :func:`paired_iou`,
  :func:`hungarian_iou`.
* Spatial generation: :func:`completion_scores`, :func:`completion_metrics` (keyed mIoU, coverage,
  hallucination).
* Template variants: :func:`matching_scores`, :func:`retrieval_scores`, :func:`clustering_scores` (ARI, NMI,
  AMI, V-measure, Fowlkes-Mallows), :func:`template_generation_metrics` (style completion, colour transfer;
  CIEDE2000 :func:`delta_e`).
* Baselines: :class:`FontJaccardBaseline` (:func:`font_jaccard`, :func:`font_jaccard_matrix`); heuristics
  :func:`area_depth`, :func:`prior_detections`, :func:`sibling_placements`.
* Data: :class:`Layout`, :func:`load_gdb` / :func:`load_task` (a user's local copy; nothing is downloaded),
  :func:`synthetic_templates` (known sibling groups and layer orders), :data:`TASKS` (the tasks and their metric).

Design notes and measurements: docs/notes/designbench.md.
"""

from __future__ import annotations

from .baselines import area_depth, component_keys, prior_detections, sibling_placements, type_mean_boxes
from .colors import delta_e, parse_color, srgb_to_lab
from .completion import completion_metrics, completion_scores
from .detection import GDB_IOU_THRESHOLDS, average_precision, detection_map
from .fonts import FontJaccardBaseline, font_jaccard, font_jaccard_matrix
from .geometry import hungarian_iou, iou_matrix, paired_iou, xyxy_to_xywh
from .layout import Layout, normalize_font
from .loader import LAYOUT_TASK_FOLDERS, GDBDataset, load_gdb, load_task
from .ordering import kendall_tau, layer_order_accuracy, layer_order_scores, order_to_depth
from .styles import template_generation_metrics
from .synthetic import ASPECT_RATIOS, CROP_SHAPES, FONT_POOL, ratio_label, synthetic_templates
from .tasks import TASKS, Task
from .understanding import count_scores, label_scores, rotation_scores
from .variants import clustering_scores, contingency, matching_scores, retrieval_scores

__all__ = [
    "ASPECT_RATIOS", "CROP_SHAPES", "FONT_POOL", "GDB_IOU_THRESHOLDS", "LAYOUT_TASK_FOLDERS", "TASKS",
    "FontJaccardBaseline", "GDBDataset", "Layout", "Task",
    "area_depth", "average_precision", "clustering_scores", "completion_metrics", "completion_scores",
    "component_keys", "contingency", "count_scores", "delta_e", "detection_map", "font_jaccard",
    "font_jaccard_matrix", "hungarian_iou", "iou_matrix", "kendall_tau", "label_scores", "layer_order_accuracy",
    "layer_order_scores", "load_gdb", "load_task", "matching_scores", "normalize_font", "order_to_depth",
    "paired_iou", "parse_color", "prior_detections", "ratio_label", "retrieval_scores", "rotation_scores",
    "sibling_placements", "srgb_to_lab", "synthetic_templates", "template_generation_metrics", "type_mean_boxes",
    "xyxy_to_xywh",
]
