pytest_plugins = ["pytester"]

# In-process pytester runs unload modules first imported inside them; importing these C-extension
# packages once here keeps them loaded, since a second import of onnx's extension aborts.
try:  # pragma: no cover - both are test dependencies
    import onnx  # noqa: F401
    import onnxruntime  # noqa: F401
except ImportError:
    pass
