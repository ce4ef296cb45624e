"""`meshrl plan CONFIG`: the memory each service of a run needs, before anything starts.

`shapes.model_shape` counts a model's parameters exactly (the architecture built on torch's
meta device: no weights read), `memory.plan_memory` turns a run config into per-device
bytes per service, `devices` names the accelerators a plan can be checked against.
"""
