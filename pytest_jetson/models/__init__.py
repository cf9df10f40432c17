"""Models: the zoo of networks built in code, and graph analysis of any ONNX file.

- ``zoo.build(name, resolution=None)``, ``zoo.path(name, batch=None, resolution=None)``,
  ``zoo.stats(name, resolution=None, batch=1)``, ``zoo.names()``, ``zoo.default_resolution(name)``
- ``graph.analyze(path_or_model, batch=1) -> GraphStats`` (layers, fused kernels, totals)

Submodules import onnx lazily; importing this package is free.
"""
