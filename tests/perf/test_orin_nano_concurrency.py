"""Concurrent vision inference on a Jetson Orin Nano (the concurrency study, SEEDS.md section 1).

ResNet50 (classification), FCN_ResNet50 (segmentation) and YOLOv8n (detection) as TensorRT engines
at int8, fp16 and tf32, batch 1 to 16, and 1/2/4/8 concurrent processes. Every test is gated on
the baselines in baselines/orin-nano-8gb/; a few carry the study's absolute figures as well.
"""

import pytest

pytestmark = pytest.mark.jetson("orin-nano")

MODELS = ["resnet50", "fcn_resnet50", "yolov8n"]
# long enough for the gate to decide a 5-10% change (see docs/explanation/statistics.md):
# FCN_ResNet50 at 520x520 runs a few inferences per second per process
DURATION = {"resnet50": "5s", "yolov8n": "5s", "fcn_resnet50": "20s"}
POOL_DURATION = {"resnet50": "5s", "yolov8n": "10s", "fcn_resnet50": "60s"}
PRECISIONS = ["int8", "fp16", "tf32"]
BATCHES = [1, 2, 4, 8, 16]
PROCESSES = [1, 2, 4, 8]

# The study's own figures for ResNet50 int8 on one process, ~500 img/s at batch 1 and ~1000 at
# batch 8, were trtexec's (inferences pipelined, no wait between them). This suite's own loop copies
# in and out and waits for every inference: on the same GPU time about 400 and 940 img/s. The bounds
# are those, with the same room for run-to-run noise as before (0.8 and 0.85 of the figure).
ABSOLUTE = {
    ("resnet50", "int8", 1): dict(throughput=">= 320/s"),
    ("resnet50", "int8", 8): dict(throughput=">= 800/s"),
}


# FCN_ResNet50 at batch 16 (about 0.9 s per batch on 8 GB) varies between seeds of the simulated
# board by more than its 5% tolerances and the gate's run-to-run floor: with the shipped flags it
# failed 3 of 100 unchanged runs alone (benchmarks/test_bench_gate_suite.py), so the suite
# stops at batch 8 there.
MAX_BATCH = {"fcn_resnet50": 8}


def _single_params():
    for model in MODELS:
        for precision in PRECISIONS:
            for batch in BATCHES:
                if batch > MAX_BATCH.get(model, batch):
                    continue
                bounds = ABSOLUTE.get((model, precision, batch))
                marks = [pytest.mark.perf(**bounds)] if bounds else []
                yield pytest.param(model, precision, batch, marks=marks, id=f"{model}-{precision}-b{batch}")


@pytest.mark.perf(throughput="5%", latency_mean="5%", memory="5%", power="10%", energy="10%")
@pytest.mark.parametrize("model, precision, batch", list(_single_params()))
def test_one_process(trt_engine, perf, model, precision, batch):
    engine = trt_engine(model, precision=precision, batch=batch)
    perf.measure(engine, duration=DURATION[model], warmup="1s")


@pytest.mark.perf(per_process_throughput="15%", throughput="10%", memory="5%")
@pytest.mark.parametrize("processes", PROCESSES, ids=lambda n: f"p{n}")
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("model", MODELS)
def test_concurrent_processes(process_pool, perf, model, precision, processes):
    pool = process_pool(model, processes=processes, precision=precision, batch=1,
                        duration=POOL_DURATION[model], warmup="1s")
    perf.record(pool)


# GPU activity as the study read it from Nsight Systems' GPU metrics (ResNet50 under trtexec, 1-8
# processes): "GPU utilisation" at 100% while SMs were active 75-90% of the time, issue slots
# 25-40% used and tensor cores busy about 25% at 1-2 processes, 15-20% at 4-8, never above 50%.
# The simulated board's figures at batch 1 in this suite's loop (`pytest-jetson` docs, how-to
# "traces", has the table): tensor cores 27-33% at 1-2 processes, as the study; 23-30% at 4-8, the
# same fall with time-slicing but 5-10 points above the study (the simulator does not model the
# cache misses the study saw rise with time-slicing); issue slots 26-33%; SM active 78-86% in int8
# and fp16 at 1-2 processes, within the study's range (the gap between two kernels leaves every
# SM idle), 66-79% at 4-8; TF32, which the study did not run, 88-91% at 1-2 processes: its
# kernels last twice fp16's against the same gaps. The bounds are the study's ranges widened by
# those gaps, so a change to the model or the engine that moves a figure further from the study
# fails here.
STUDY_LOW = pytest.mark.perf(tensor_active=">= 15 %", issue_active=">= 20 %", sm_active=">= 55 %")
STUDY_HIGH = pytest.mark.perf(issue_active="<= 40 %", sm_active="<= 92 %")
# tensor cores: the study's "never above 50%" and its fall with time-slicing, per process count
STUDY_BY_PROCESSES = {
    # each a point or two above the simulated figure: a bound at the figure itself fails on the
    # next refit's hundredth of a point, not on a change that moves the board
    1: pytest.mark.perf(tensor_active="<= 34 %", gpu_util=">= 95 %"),
    2: pytest.mark.perf(tensor_active="<= 34 %", gpu_util=">= 95 %"),
    4: pytest.mark.perf(tensor_active="<= 32 %"),
    8: pytest.mark.perf(tensor_active="<= 29 %"),
}


def _activity_params():
    for processes, mark in STUDY_BY_PROCESSES.items():
        for precision in PRECISIONS:
            yield pytest.param(precision, processes, marks=[mark], id=f"{precision}-p{processes}")


@STUDY_LOW
@STUDY_HIGH
@pytest.mark.parametrize("precision, processes", list(_activity_params()))
def test_gpu_activity_as_the_study_measured_it(process_pool, perf, precision, processes):
    """SM, issue-slot and tensor-core activity of ResNet50 pools (batch 1) within the study's ranges."""
    perf.record(process_pool("resnet50", processes=processes, precision=precision, batch=1, duration="5s",
                             warmup="1s"))


@pytest.mark.perf(per_process_throughput="<= 300/s", memory="<= 6 GiB")
def test_eight_resnet50_tenants_share_the_gpu(process_pool, perf):
    """Eight int8 ResNet50 processes time-slice the GPU: each gets a fraction of one alone
    (~200 img/s in the study), and each holds its own engine and buffers."""
    perf.record(process_pool("resnet50", processes=8, precision="int8", batch=8, duration="5s",
                             warmup="1s"))


@pytest.mark.perf(throughput="10%", memory="5%")
def test_mixed_tenants(process_pool, perf):
    """A detection and a classification model on one board, as multi-tenant deployments run."""
    perf.record(process_pool([("resnet50", {"precision": "int8", "batch": 4}),
                              ("yolov8n", {"precision": "fp16", "batch": 1})], duration="5s",
                             warmup="1s"))
