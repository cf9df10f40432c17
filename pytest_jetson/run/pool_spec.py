"""What a pool runs: one ``WorkerSpec`` per process, read from the forms users write.

``run_pool`` and the ``process_pool`` fixture accept a model repeated ``processes`` times
(``"resnet50"``, ``("resnet50", {"precision": "int8"})``) or a list of workloads, one per tenant
(``[("resnet50", {...}), ("yolov8n", {...})]``); an entry's ``"processes"`` option repeats it.
Everything is checked here, before a process starts, so bad input costs no spawn.
"""

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import ConfigError
from ..models.reference import resolve

#: Options the pool itself reads; every other option goes to ``open_engine``.
DEFAULT_PRECISION = "fp16"


@dataclass(frozen=True)
class WorkerSpec:
    """One worker: its index in the pool, its model and the options its engine opens with."""

    index: int
    model: str
    options: Dict[str, Any] = field(default_factory=dict)
    #: ``"module:function"`` (or a picklable callable) opening the engine instead of
    #: ``open_engine``; same signature. For custom runners and for the pool's own tests.
    engine_factory: Any = None

    @property
    def precision(self) -> str:
        return str(self.options.get("precision", DEFAULT_PRECISION))

    @property
    def batch(self) -> int:
        return int(self.options.get("batch") or 1)

    @property
    def model_name(self) -> str:
        """The model as reports print it: a zoo name, or the file's stem."""
        return resolve(self.model).name

    @property
    def label(self) -> str:
        return f"worker {self.index} ({self.model_name})"

    def describe(self) -> str:
        return f"{self.model_name} {self.precision} batch {self.batch}"


Workload = Tuple[str, Dict[str, Any]]


def _check_processes(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what}={value!r}: the number of processes must be an integer such as 4")
    if value < 1:
        raise ConfigError(
            f"{what}={value}: a pool needs at least 1 process; pass processes=1 or more"
        )
    return value


def _one(entry: Any, where: str) -> Workload:
    if isinstance(entry, (str, os.PathLike)):
        return os.fspath(entry), {}
    if isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], (str, os.PathLike)):
        model, options = entry
        if options is None:
            options = {}
        if not isinstance(options, dict):
            raise ConfigError(
                f"{where}: the options of {model!r} must be a dict such as "
                f"{{'precision': 'int8', 'batch': 1}}, not {type(options).__name__}"
            )
        return os.fspath(model), dict(options)
    raise ConfigError(
        f"{where}: {entry!r} is not a workload; write a model name ('resnet50'), a path to an "
        "ONNX file, or a (model, options) pair such as ('resnet50', {'precision': 'int8'})"
    )


def is_single(workloads: Any) -> bool:
    if isinstance(workloads, (str, os.PathLike)):
        return True
    return (
        isinstance(workloads, tuple) and len(workloads) == 2
        and isinstance(workloads[0], (str, os.PathLike))
        and (workloads[1] is None or isinstance(workloads[1], dict))
    )


def worker_specs(workloads: Any, processes: Optional[int] = None,
                 common: Optional[Dict[str, Any]] = None) -> List[WorkerSpec]:
    """The pool's workers, in order. ``common`` options apply to every workload unless the
    workload sets them itself (the fixture's ``precision=``, ``batch=`` keywords)."""
    common = dict(common or {})
    if is_single(workloads):
        entries: Sequence[Workload] = [_one(workloads, "process_pool")]
        count = 1 if processes is None else _check_processes(processes, "processes")
        options = entries[0][1]
        if "processes" in options:
            count = _check_processes(options.pop("processes"), f"{entries[0][0]} processes")
        expanded = [entries[0]] * count
    else:
        if not isinstance(workloads, (list, tuple)) or not workloads:
            raise ConfigError(
                "process_pool: expected a model, or a non-empty list of workloads such as "
                "[('resnet50', {'precision': 'int8'}), ('yolov8n', {})]; got "
                f"{workloads!r}"
            )
        expanded = []
        for i, entry in enumerate(workloads):
            model, options = _one(entry, f"process_pool workload {i}")
            repeat = _check_processes(options.pop("processes", 1), f"workload {i} ({model}) processes")
            expanded.extend([(model, options)] * repeat)
        if processes is not None:
            _check_processes(processes, "processes")
            if processes != len(expanded):
                raise ConfigError(
                    f"processes={processes} does not match the {len(expanded)} workloads listed; "
                    "with a list, give each workload's count as its 'processes' option and leave "
                    "processes= out"
                )
    specs = []
    for index, (model, options) in enumerate(expanded):
        merged = dict(common)
        merged.update(options)
        factory = merged.pop("engine_factory", None)
        if "batch" in merged:
            batch = merged["batch"]
            if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
                raise ConfigError(
                    f"worker {index} ({model}): batch={batch!r} must be a positive integer"
                )
        specs.append(WorkerSpec(index=index, model=model, options=merged, engine_factory=factory))
    return specs


@dataclass
class PoolRun:
    """One pool as its backend's runner receives it (``Backend.pool``): the workers, checked,
    and the run's settings. A runner returns a ``PoolMeasurement``; ``run.pool`` has the parts
    the built-in runners share (``measured_window``, ``environment``, ``assemble``).

    ``window`` and ``warmup``: seconds; ``deadline``: the whole run's limit in seconds, engine
    builds included; ``clock``: the clock the caller asked for (None: the context's);
    ``context``: the session's Context or None; ``telemetry``: as ``run_pool`` takes it."""

    specs: List[WorkerSpec]
    device: Any
    backend: Any
    window: float
    warmup: float
    deadline: float
    seed: int
    clock: Any = None
    context: Any = None
    telemetry: Any = None
