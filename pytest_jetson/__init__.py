"""pytest-jetson: performance regression testing of DNN inference on NVIDIA Jetson boards."""

__version__ = "0.1.0"

__all__ = ["__version__"]
