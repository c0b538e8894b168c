"""Few-step diffusion sampling: the Fast-Driver Sampler (FDS) and the samplers it competes with (paper 7).

Filled in as the submodules land: ``drivers``, ``samplers``, ``schedules``, ``targets``, ``metrics``, ``models``.
"""
