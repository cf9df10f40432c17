"""Hooks a conftest or another plugin implements to extend pytest-jetson.

They are called once, in ``pytest_configure``, so implement them in a plugin or in the root
``conftest.py`` (a conftest in a sub-directory is loaded too late). A second backend or source
under a taken name, or one without an opener, is a usage error naming the plugin; so is a metric
under a taken name or without what the metric table needs.
"""

import pytest


@pytest.hookspec
def pytest_jetson_backends(config):
    """Return engine backends to add: a list of ``pytest_jetson.engines.Backend``.

    ``Backend(name, open=..., available=..., clock="wall", device_time=False, pools="processes",
    pool=None, default_for=None)``; ``open(model, *, device, clock, seed, precision, batch,
    dla_core, **options)`` returns an engine (a subclass of ``pytest_jetson.engines.base.Engine``:
    ``_infer(batch)``, and optionally ``_run(feeds, batch)`` for the caller's inputs,
    ``timed_run``, ``measurement_extra``). ``pool``: the backend's own pool runner, a callable
    taking a ``pytest_jetson.run.pool_spec.PoolRun`` or its import path ``"module:function"``.
    The name becomes a ``--jetson-backend`` choice.
    """


@pytest.hookspec
def pytest_jetson_telemetry_sources(config):
    """Return telemetry sources to add: a list of ``pytest_jetson.telemetry.SourceSpec``.

    ``SourceSpec(name, open=..., available=..., auto=None)``; ``open(ctx)`` returns a
    ``pytest_jetson.telemetry.base.Source`` (``ctx``: a ``SourceContext`` with the device, the
    clock and the filesystem root). ``auto`` ranks it in ``--jetson-telemetry auto`` (jtop is 10,
    host 90). The name becomes a ``--jetson-telemetry`` choice.
    """


@pytest.hookspec
def pytest_jetson_metrics(config):
    """Return metrics to add: a list of ``pytest_jetson.metrics.Metric`` rows.

    A row says where the value comes from (``summary=``: a field of the telemetry summary, or
    ``samples=`` with ``reduction=``: a per-iteration sample list, e.g. ``"extra.<key>"``, a list
    the measuring code keeps in ``Measurement.extra``), how its error is estimated (``estimator=``,
    one of ``metrics.ESTIMATORS``; ``series=`` names its telemetry series column) and which way is
    worse. The name becomes a ``perf`` marker keyword; baselines store its error and the gate
    decides its relative bounds from it, like a built-in metric's::

        Metric("emc_util", "percent", "higher", "telemetry", "mean EMC utilisation",
               "no telemetry source reads the EMC", summary="emc_util_mean", series="emc_util",
               reduction="mean", estimator="series_mean")
    """


@pytest.hookspec
def pytest_jetson_fingerprint(config, device):
    """Return a dict of fields to add to every fingerprint (e.g. a firmware or driver version):
    a baseline recorded with other values is not compared, like one from another power mode."""
