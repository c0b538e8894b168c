"""The tasks of the GraphicDesignBench abstract and the metric that scores each here.

The abstract announces 16 tasks as "spatial composition (8 understanding + 4 generation) and template variants
(3 understanding + 2 generation)"; those counts add up to 17, and lica-gdb's README and the arXiv paper name 17
such tasks (8 + 4 layout, 3 + 2 template), so all 17 are listed. ``gdb_id`` is lica-gdb's benchmark id where it
ships a pipeline (its paper-only layout tasks have none); ``metric`` the fastnips function; ``needs`` what a user
must bring beyond predictions (nothing for the structural metrics; renders and neural scorers for the image-quality
scores that lica-gdb adds to the generation tasks, which are not computed here).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TASKS", "Task"]


@dataclass(frozen=True)
class Task:
    """One GDB task: ``key``, ``name``, ``axis`` (``"spatial"`` / ``"template"``), ``kind``
    (``"understanding"`` / ``"generation"``), ``gdb_id`` (lica-gdb benchmark id or ``""``), ``metric`` (the
    fastnips function) and ``needs`` (what beyond predictions and ground truth the full GDB score needs)."""

    key: str
    name: str
    axis: str
    kind: str
    gdb_id: str
    metric: str
    needs: str = ""


_IMG = "lica-gdb's image scores (CLIP, DINO, LPIPS, FID, judges) need renders and neural models"
TASKS = (
    Task("aspect_ratio", "aspect-ratio classification", "spatial", "understanding", "layout-4", "label_scores"),
    Task("component_count", "component counting", "spatial", "understanding", "layout-5", "count_scores"),
    Task("component_type", "component type classification", "spatial", "understanding", "layout-6",
         "label_scores(labels=...)"),
    Task("component_detection", "component detection", "spatial", "understanding", "layout-7", "detection_map"),
    Task("layer_order", "layer order", "spatial", "understanding", "", "layer_order_scores"),
    Task("image_rotation", "image rotation", "spatial", "understanding", "", "rotation_scores"),
    Task("crop_shape", "crop shape", "spatial", "understanding", "", "label_scores"),
    Task("frame_detection", "frame detection", "spatial", "understanding", "", "detection_map"),
    Task("intent_to_layout", "intent-to-layout generation", "spatial", "generation", "layout-1", "hungarian_iou",
         _IMG),
    Task("partial_completion", "partial layout completion (single / multi)", "spatial", "generation", "layout-2",
         "completion_metrics", _IMG),
    Task("aspect_ratio_adaptation", "aspect-ratio adaptation", "spatial", "generation", "layout-3",
         "completion_metrics", _IMG),
    Task("layer_aware_insertion", "layer-aware object insertion", "spatial", "generation", "layout-8",
         "completion_scores", _IMG),
    Task("template_matching", "sibling (template) matching", "template", "understanding", "template-1",
         "matching_scores"),
    Task("template_retrieval", "sibling retrieval", "template", "understanding", "template-2", "retrieval_scores"),
    Task("template_clustering", "sibling clustering", "template", "understanding", "template-3",
         "clustering_scores"),
    Task("style_completion", "style completion", "template", "generation", "template-4",
         "template_generation_metrics(task='style_completion')"),
    Task("color_transfer", "colour transfer", "template", "generation", "template-5",
         "template_generation_metrics(task='color_transfer')"),
)
