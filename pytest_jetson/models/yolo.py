"""Ultralytics YOLOv8n (detection, 80 classes), unfused, as ``yolov8n.yaml`` builds it.

Scale n: depth 0.33, width 0.25. The graph ends like Ultralytics' ONNX export: the Detect head
decodes boxes (DFL softmax + fixed 1x1 conv, anchor points, strides) and returns
``(batch, 4 + 80, anchors)``; anchors and strides are constants, not parameters. The parameter
count equals Ultralytics' unfused summary (3,157,200, the DFL conv's 16 fixed weights included).
"""

from __future__ import annotations

from typing import List

import numpy as np

from .builder import Net

_EPS = 1e-3  # Ultralytics' BatchNorm2d(eps=0.001)


def _conv(net: Net, x: str, c2: int, k: int = 1, s: int = 1, name: str = "conv",
          residual: bool = False) -> str:
    y = net.conv(x, c2, k, s, k // 2, bias=False, name=name + ".conv")
    return net.silu(net.bn(y, name=name + ".bn", eps=_EPS, residual=residual), name=name + ".act")


def _bottleneck(net: Net, x: str, c2: int, shortcut: bool, name: str) -> str:
    c1 = net.shape(x)[0]
    y = _conv(net, x, c2, 3, 1, name + ".cv1")  # e=1.0 inside C2f
    add = shortcut and c1 == c2
    y = _conv(net, y, c2, 3, 1, name + ".cv2", residual=add)
    return net.add(x, y, name=name + ".add") if add else y


def _c2f(net: Net, x: str, c2: int, n: int, shortcut: bool, name: str) -> str:
    c = int(c2 * 0.5)
    y = _conv(net, x, 2 * c, 1, 1, name + ".cv1")
    ys = list(net.split(y, [c, c], name=name + ".split"))
    for i in range(n):
        ys.append(_bottleneck(net, ys[-1], c, shortcut, f"{name}.m.{i}"))
    return _conv(net, net.concat(ys, name=name + ".cat"), c2, 1, 1, name + ".cv2")


def _sppf(net: Net, x: str, c2: int, name: str, k: int = 5) -> str:
    c_ = net.shape(x)[0] // 2
    ys = [_conv(net, x, c_, 1, 1, name + ".cv1")]
    for i in range(3):
        ys.append(net.maxpool(ys[-1], k, 1, k // 2, name=f"{name}.m.{i}"))
    return _conv(net, net.concat(ys, name=name + ".cat"), c2, 1, 1, name + ".cv2")


def _anchors(sizes: List[tuple], strides: List[int]):
    points, steps = [], []
    for (h, w), s in zip(sizes, strides):
        sy, sx = np.meshgrid(np.arange(h) + 0.5, np.arange(w) + 0.5, indexing="ij")
        points.append(np.stack((sx, sy), -1).reshape(-1, 2))
        steps.append(np.full((h * w, 1), s))
    anchors = np.concatenate(points).T.astype(np.float32)[None]  # (1, 2, A)
    stride = np.concatenate(steps).T.astype(np.float32)[None]  # (1, 1, A)
    return anchors, stride


def yolov8n(net: Net, nc: int = 80, reg_max: int = 16) -> None:
    x = _conv(net, net.input, 16, 3, 2, "model.0")
    x = _conv(net, x, 32, 3, 2, "model.1")
    x = _c2f(net, x, 32, 1, True, "model.2")
    x = _conv(net, x, 64, 3, 2, "model.3")
    p3 = _c2f(net, x, 64, 2, True, "model.4")
    x = _conv(net, p3, 128, 3, 2, "model.5")
    p4 = _c2f(net, x, 128, 2, True, "model.6")
    x = _conv(net, p4, 256, 3, 2, "model.7")
    x = _c2f(net, x, 256, 1, True, "model.8")
    p5 = _sppf(net, x, 256, "model.9")
    x = net.concat([net.upsample_nearest(p5, 2, name="model.10"), p4], name="model.11")
    h4 = _c2f(net, x, 128, 1, False, "model.12")
    x = net.concat([net.upsample_nearest(h4, 2, name="model.13"), p3], name="model.14")
    o3 = _c2f(net, x, 64, 1, False, "model.15")
    x = net.concat([_conv(net, o3, 64, 3, 2, "model.16"), h4], name="model.17")
    o4 = _c2f(net, x, 128, 1, False, "model.18")
    x = net.concat([_conv(net, o4, 128, 3, 2, "model.19"), p5], name="model.20")
    o5 = _c2f(net, x, 256, 1, False, "model.21")

    feats = [o3, o4, o5]
    c2 = max(16, net.shape(o3)[0] // 4, reg_max * 4)
    c3 = max(net.shape(o3)[0], min(nc, 100))
    no = nc + reg_max * 4
    flat = []
    for i, f in enumerate(feats):
        name = "model.22"
        b = _conv(net, f, c2, 3, 1, f"{name}.cv2.{i}.0")
        b = _conv(net, b, c2, 3, 1, f"{name}.cv2.{i}.1")
        b = net.conv(b, 4 * reg_max, 1, name=f"{name}.cv2.{i}.2")
        c = _conv(net, f, c3, 3, 1, f"{name}.cv3.{i}.0")
        c = _conv(net, c, c3, 3, 1, f"{name}.cv3.{i}.1")
        c = net.conv(c, nc, 1, name=f"{name}.cv3.{i}.2")
        y = net.concat([b, c], name=f"{name}.cat.{i}")
        _, h, w = net.shape(y)
        flat.append(net.reshape(y, (no, h * w), name=f"{name}.view.{i}"))
    sizes = [net.shape(f)[1:] for f in feats]
    total = sum(h * w for h, w in sizes)
    x = net.concat(flat, axis=2, name="model.22.cat")
    box, cls = net.split(x, [4 * reg_max, nc], name="model.22.split")
    # DFL: softmax over the 16 bins of each side, then their expectation via a fixed 1x1 conv
    d = net.reshape(box, (4, reg_max, total), name="model.22.dfl.view")
    d = net.transpose(d, [0, 2, 1, 3], name="model.22.dfl.transpose")
    d = net.softmax(d, axis=1, name="model.22.dfl.softmax")
    d = net.conv(d, 1, 1, bias=False, name="model.22.dfl.conv", weight_init="arange")
    d = net.reshape(d, (4, total), name="model.22.dfl.out")
    lt, rb = net.split(d, [2, 2], name="model.22.dist")
    anchors, strides = _anchors(sizes, [8, 16, 32])
    a = net.const("model.22.anchors", anchors[0])
    x1y1 = net.sub(a, lt, name="model.22.x1y1")
    x2y2 = net.add(a, rb, name="model.22.x2y2")
    half = net.const("model.22.half", np.array(2.0, np.float32))
    cxy = net.div(net.add(x1y1, x2y2, name="model.22.sum"), half, name="model.22.cxy")
    wh = net.sub(x2y2, x1y1, name="model.22.wh")
    s = net.const("model.22.strides", strides[0])
    dbox = net.mul(net.concat([cxy, wh], name="model.22.xywh"), s, name="model.22.dbox")
    net.output(net.concat([dbox, net.sigmoid(cls, name="model.22.cls")], name="output0"))
