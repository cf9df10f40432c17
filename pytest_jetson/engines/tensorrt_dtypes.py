"""numpy dtypes of TensorRT's ``DataType`` members, by member name.

``trt.nptype`` is not used: TensorRT 8.2.1's and 8.5.2's (``python/packaging/tensorrt/__init__.py``
at those tags, JetPack 4.6 and 5.1) build their table with ``np.bool``, which numpy 1.24 removed
(fixed in 8.5.3), so on the numpy a Python 3.8 board installs every engine open would raise
AttributeError. The names cover every ``DataType`` member of TensorRT 8.2 to 11.4; those numpy
has no dtype for are refused by name.
"""

from typing import Any, Dict, Optional

import numpy as np

from ..errors import EngineError

#: None: numpy has no such dtype (bfloat16, the 8/4-bit floats, packed int4, the E8M0 scale type)
NUMPY_DTYPES: Dict[str, Optional[Any]] = {
    "FLOAT": np.float32, "HALF": np.float16, "INT8": np.int8, "INT32": np.int32, "INT64": np.int64,
    "BOOL": np.bool_, "UINT8": np.uint8,
    "BF16": None, "FP8": None, "FP4": None, "INT4": None, "E8M0": None,
}


def numpy_dtype(trt_dtype: Any, where: str) -> Any:
    """The numpy dtype for a ``trt.DataType`` member; an EngineError where numpy has none."""
    name = str(getattr(trt_dtype, "name", trt_dtype)).rsplit(".", 1)[-1]
    if name not in NUMPY_DTYPES:
        raise EngineError(f"{where}: TensorRT data type {name} is unknown to pytest-jetson")
    dtype = NUMPY_DTYPES[name]
    if dtype is None:
        raise EngineError(f"{where}: its I/O tensor is {name}, which numpy has no dtype for; export the "
                          "model with float32, float16, int8, int32, int64, uint8 or bool inputs and outputs")
    return dtype
