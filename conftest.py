pytest_plugins = ["pytester"]

# In-process pytester runs unload modules first imported inside them; importing these C-extension
# packages once here keeps them loaded, since a second import of onnx's extension aborts.
try:  # pragma: no cover - both are test dependencies
    import onnx  # noqa: F401
    import onnxruntime  # noqa: F401
except ImportError:
    pass

# CI runs the same hypothesis examples every time, so a red build is reproducible; locally each
# run explores new examples.
import os  # noqa: E402

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
