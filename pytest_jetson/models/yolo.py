"""The YOLO detectors the published Jetson results ran, layer for layer.

* YOLOv8 and YOLO11 n/s/m/l/x as Ultralytics' ``yolov8.yaml`` / ``yolo11.yaml`` build them
  (unfused: Conv + BatchNorm + SiLU), ending like Ultralytics' ONNX export: the Detect head
  decodes boxes (DFL softmax + fixed 1x1 conv, anchor points, strides) and returns
  ``(batch, 4 + 80, anchors)``. Parameter counts equal Ultralytics' model summaries (the DFL
  conv's 16 fixed weights included): 3,157,200, 11,166,560, 25,902,640, 43,691,520 and
  68,229,648 (YOLOv8 n to x); 2,624,080, 9,458,752, 20,114,688,
  25,372,160 and 56,966,176 (YOLO11 n to x).
* YOLOv5s (v6.0+ layout: 6x6 stem, SPPF), 7,235,389 parameters, as NVIDIA's cuDLA samples export
  it: the Detect head's reshape, transpose and decode trimmed off, so the engine (GPU or DLA)
  returns the three detection convolutions' outputs, (batch, 255, h, w) at strides 8, 16, 32.
* YOLOv7 as its authors deploy it (``cfg/deploy/yolov7.yaml``, RepConv re-parameterised and
  BatchNorm folded into the convolutions, as ``reparameterization`` and ``fuse()`` leave it:
  36,907,898 parameters), exported with the grid decode in the graph: (batch, 25200, 85).
"""

from __future__ import annotations

import math
from typing import List, Sequence

import numpy as np

from .builder import Net

_EPS = 1e-3  # Ultralytics' BatchNorm2d(eps=0.001)


def _div8(x: float) -> int:
    return int(math.ceil(x / 8) * 8)


# --- Ultralytics building blocks (unfused: conv, BN, SiLU) -------------------------------------


def _conv(net: Net, x: str, c2: int, k: int = 1, s: int = 1, name: str = "conv", g: int = 1,
          act: bool = True, residual: bool = False, pad: int | None = None) -> str:
    p = k // 2 if pad is None else pad
    y = net.conv(x, c2, k, s, p, groups=g, bias=False, name=name + ".conv")
    y = net.bn(y, name=name + ".bn", eps=_EPS, residual=residual)
    return net.silu(y, name=name + ".act") if act else y


def _dwconv(net: Net, x: str, c2: int, k: int, name: str) -> str:
    c1 = net.shape(x)[0]
    return _conv(net, x, c2, k, 1, name, g=math.gcd(c1, c2))


def _bottleneck(net: Net, x: str, c2: int, shortcut: bool, name: str, k=(3, 3), e: float = 0.5) -> str:
    c1 = net.shape(x)[0]
    add = shortcut and c1 == c2
    y = _conv(net, x, int(c2 * e), k[0], 1, name + ".cv1")
    y = _conv(net, y, c2, k[1], 1, name + ".cv2", residual=add)
    return net.add(x, y, name=name + ".add") if add else y


def _c2f(net: Net, x: str, c2: int, n: int, shortcut: bool, name: str, e: float = 0.5,
         inner=None) -> str:
    """C2f (YOLOv8) and C3k2 (YOLO11, whose inner blocks ``inner`` builds)."""
    c = int(c2 * e)
    y = _conv(net, x, 2 * c, 1, 1, name + ".cv1")
    ys = list(net.split(y, [c, c], name=name + ".split"))
    for i in range(n):
        if inner is None:
            ys.append(_bottleneck(net, ys[-1], c, shortcut, f"{name}.m.{i}", e=1.0))
        else:
            ys.append(inner(ys[-1], c, f"{name}.m.{i}"))
    return _conv(net, net.concat(ys, name=name + ".cat"), c2, 1, 1, name + ".cv2")


def _c3(net: Net, x: str, c2: int, n: int, shortcut: bool, name: str, k: int = 3, e: float = 0.5) -> str:
    """YOLO11's C3k: a C3 whose bottlenecks are k x k twice."""
    c_ = int(c2 * e)
    a = _conv(net, x, c_, 1, 1, name + ".cv1")
    for i in range(n):
        a = _bottleneck(net, a, c_, shortcut, f"{name}.m.{i}", k=(k, k), e=1.0)
    b = _conv(net, x, c_, 1, 1, name + ".cv2")
    return _conv(net, net.concat([a, b], name=name + ".cat"), c2, 1, 1, name + ".cv3")


def _c3_v5(net: Net, x: str, c2: int, n: int, shortcut: bool, name: str) -> str:
    """YOLOv5's C3: bottlenecks of a 1x1 then a 3x3 convolution."""
    c_ = int(c2 * 0.5)
    a = _conv(net, x, c_, 1, 1, name + ".cv1")
    for i in range(n):
        a = _bottleneck(net, a, c_, shortcut, f"{name}.m.{i}", k=(1, 3), e=1.0)
    b = _conv(net, x, c_, 1, 1, name + ".cv2")
    return _conv(net, net.concat([a, b], name=name + ".cat"), c2, 1, 1, name + ".cv3")


def _sppf(net: Net, x: str, c2: int, name: str, k: int = 5) -> str:
    c_ = net.shape(x)[0] // 2
    ys = [_conv(net, x, c_, 1, 1, name + ".cv1")]
    for i in range(3):
        ys.append(net.maxpool(ys[-1], k, 1, k // 2, name=f"{name}.m.{i}"))
    return _conv(net, net.concat(ys, name=name + ".cat"), c2, 1, 1, name + ".cv2")


def _attention(net: Net, x: str, heads: int, name: str, attn_ratio: float = 0.5) -> str:
    """Ultralytics' ``Attention`` (C2PSA): 1x1 qkv, softmax(q^T k / sqrt(d)), v attn^T, plus a
    3x3 depthwise positional encoding of v, then a 1x1 projection."""
    c, h, w = net.shape(x)
    hd = c // heads
    kd = int(hd * attn_ratio)
    n = h * w
    qkv = _conv(net, x, c + 2 * kd * heads, 1, 1, name + ".qkv", act=False)
    qkv = net.reshape(qkv, (heads, 2 * kd + hd, n), name=name + ".view")
    q, k, v = net.split(qkv, [kd, kd, hd], axis=2, name=name + ".split")
    qt = net.transpose(q, [0, 1, 3, 2], name=name + ".qt")
    att = net.node("MatMul", [qt, k], (heads, n, n), name + ".qk")
    att = net.mul(att, net.const(name + ".scale", np.array(kd ** -0.5, np.float32)), name=name + ".scaled")
    att = net.softmax(att, axis=-1, name=name + ".softmax")
    at = net.transpose(att, [0, 1, 3, 2], name=name + ".at")
    y = net.node("MatMul", [v, at], (heads, hd, n), name + ".av")
    y = net.reshape(y, (c, h, w), name=name + ".out")
    pe = _conv(net, net.reshape(v, (c, h, w), name=name + ".v"), c, 3, 1, name + ".pe", g=c, act=False)
    y = net.add(y, pe, name=name + ".pe_add")
    return _conv(net, y, c, 1, 1, name + ".proj", act=False)


def _c2psa(net: Net, x: str, n: int, name: str) -> str:
    c1 = net.shape(x)[0]
    c = int(c1 * 0.5)
    y = _conv(net, x, 2 * c, 1, 1, name + ".cv1")
    a, b = net.split(y, [c, c], name=name + ".split")
    for i in range(n):
        blk = f"{name}.m.{i}"
        b = net.add(b, _attention(net, b, c // 64, blk + ".attn"), name=blk + ".add1")
        f = _conv(net, b, 2 * c, 1, 1, blk + ".ffn.0")
        f = _conv(net, f, c, 1, 1, blk + ".ffn.1", act=False)
        b = net.add(b, f, name=blk + ".add2")
    return _conv(net, net.concat([a, b], name=name + ".cat"), c1, 1, 1, name + ".cv2")


def _anchors(sizes: List[tuple], strides: List[int]):
    points, steps = [], []
    for (h, w), s in zip(sizes, strides):
        sy, sx = np.meshgrid(np.arange(h) + 0.5, np.arange(w) + 0.5, indexing="ij")
        points.append(np.stack((sx, sy), -1).reshape(-1, 2))
        steps.append(np.full((h * w, 1), s))
    anchors = np.concatenate(points).T.astype(np.float32)[None]  # (1, 2, A)
    stride = np.concatenate(steps).T.astype(np.float32)[None]  # (1, 1, A)
    return anchors, stride


def _detect(net: Net, feats: Sequence[str], name: str, nc: int = 80, reg_max: int = 16,
            legacy: bool = True) -> None:
    """Ultralytics' anchor-free Detect head with the export-time decode (YOLOv8 legacy head, or
    YOLO11's depthwise-separable class branch)."""
    ch0 = net.shape(feats[0])[0]
    c2 = max(16, ch0 // 4, reg_max * 4)
    c3 = max(ch0, min(nc, 100))
    no = nc + reg_max * 4
    flat = []
    for i, f in enumerate(feats):
        b = _conv(net, f, c2, 3, 1, f"{name}.cv2.{i}.0")
        b = _conv(net, b, c2, 3, 1, f"{name}.cv2.{i}.1")
        b = net.conv(b, 4 * reg_max, 1, name=f"{name}.cv2.{i}.2")
        if legacy:
            c = _conv(net, f, c3, 3, 1, f"{name}.cv3.{i}.0")
            c = _conv(net, c, c3, 3, 1, f"{name}.cv3.{i}.1")
        else:
            c = _dwconv(net, f, net.shape(f)[0], 3, f"{name}.cv3.{i}.0.0")
            c = _conv(net, c, c3, 1, 1, f"{name}.cv3.{i}.0.1")
            c = _dwconv(net, c, c3, 3, f"{name}.cv3.{i}.1.0")
            c = _conv(net, c, c3, 1, 1, f"{name}.cv3.{i}.1.1")
        c = net.conv(c, nc, 1, name=f"{name}.cv3.{i}.2")
        y = net.concat([b, c], name=f"{name}.cat.{i}")
        _, h, w = net.shape(y)
        flat.append(net.reshape(y, (no, h * w), name=f"{name}.view.{i}"))
    sizes = [net.shape(f)[1:] for f in feats]
    total = sum(h * w for h, w in sizes)
    x = net.concat(flat, axis=2, name=name + ".cat")
    box, cls = net.split(x, [4 * reg_max, nc], name=name + ".split")
    # DFL: softmax over the 16 bins of each side, then their expectation via a fixed 1x1 conv
    d = net.reshape(box, (4, reg_max, total), name=name + ".dfl.view")
    d = net.transpose(d, [0, 2, 1, 3], name=name + ".dfl.transpose")
    d = net.softmax(d, axis=1, name=name + ".dfl.softmax")
    d = net.conv(d, 1, 1, bias=False, name=name + ".dfl.conv", weight_init="arange")
    d = net.reshape(d, (4, total), name=name + ".dfl.out")
    lt, rb = net.split(d, [2, 2], name=name + ".dist")
    anchors, strides = _anchors(sizes, [8, 16, 32])
    a = net.const(name + ".anchors", anchors[0])
    x1y1 = net.sub(a, lt, name=name + ".x1y1")
    x2y2 = net.add(a, rb, name=name + ".x2y2")
    half = net.const(name + ".half", np.array(2.0, np.float32))
    cxy = net.div(net.add(x1y1, x2y2, name=name + ".sum"), half, name=name + ".cxy")
    wh = net.sub(x2y2, x1y1, name=name + ".wh")
    s = net.const(name + ".strides", strides[0])
    dbox = net.mul(net.concat([cxy, wh], name=name + ".xywh"), s, name=name + ".dbox")
    net.output(net.concat([dbox, net.sigmoid(cls, name=name + ".cls")], name="output0"))


# --- YOLOv8 ----------------------------------------------------------------------------------

#: yolov8.yaml's scales: depth, width, max channels. Ultralytics' summaries (unfused) in that file
#: give 3,157,200 / 11,166,560 / 25,902,640 / 43,691,520 / 68,229,648 parameters for n/s/m/l/x;
#: its docs table rounds them to 3.2 / 11.2 / 25.9 / 43.7 / 68.2 M, with 8.7 / 28.6 / 78.9 / 165.2
#: / 257.8 GFLOPs at 640 (the fused model).
YOLOV8_SCALES = {"n": (0.33, 0.25, 1024), "s": (0.33, 0.50, 1024), "m": (0.67, 0.75, 768),
                 "l": (1.00, 1.00, 512), "x": (1.00, 1.25, 512)}


def yolov8(net: Net, scale: str, nc: int = 80) -> None:
    depth, width, top = YOLOV8_SCALES[scale]

    def ch(c: int) -> int:
        return _div8(min(c, top) * width)

    def rep(n: int) -> int:
        return max(round(n * depth), 1) if n > 1 else n

    def c2f(x: str, c2: int, n: int, shortcut: bool, name: str) -> str:
        return _c2f(net, x, ch(c2), rep(n), shortcut, name)

    x = _conv(net, net.input, ch(64), 3, 2, "model.0")
    x = _conv(net, x, ch(128), 3, 2, "model.1")
    x = c2f(x, 128, 3, True, "model.2")
    x = _conv(net, x, ch(256), 3, 2, "model.3")
    p3 = c2f(x, 256, 6, True, "model.4")
    x = _conv(net, p3, ch(512), 3, 2, "model.5")
    p4 = c2f(x, 512, 6, True, "model.6")
    x = _conv(net, p4, ch(1024), 3, 2, "model.7")
    x = c2f(x, 1024, 3, True, "model.8")
    p5 = _sppf(net, x, ch(1024), "model.9")
    x = net.concat([net.upsample_nearest(p5, 2, name="model.10"), p4], name="model.11")
    h4 = c2f(x, 512, 3, False, "model.12")
    x = net.concat([net.upsample_nearest(h4, 2, name="model.13"), p3], name="model.14")
    o3 = c2f(x, 256, 3, False, "model.15")
    x = net.concat([_conv(net, o3, ch(256), 3, 2, "model.16"), h4], name="model.17")
    o4 = c2f(x, 512, 3, False, "model.18")
    x = net.concat([_conv(net, o4, ch(512), 3, 2, "model.19"), p5], name="model.20")
    o5 = c2f(x, 1024, 3, False, "model.21")
    _detect(net, [o3, o4, o5], "model.22", nc=nc, legacy=True)


def yolov8n(net: Net, nc: int = 80) -> None:
    yolov8(net, "n", nc)


# --- YOLO11 ----------------------------------------------------------------------------------

#: yolo11.yaml's scales: depth, width, max channels.
YOLO11_SCALES = {"n": (0.50, 0.25, 1024), "s": (0.50, 0.50, 1024), "m": (0.50, 1.00, 512),
                 "l": (1.00, 1.00, 512), "x": (1.00, 1.50, 512)}


def yolo11(net: Net, scale: str, nc: int = 80) -> None:
    depth, width, top = YOLO11_SCALES[scale]
    c3k_all = scale in "mlx"  # parse_model sets C3k2's c3k for the M/L/X sizes

    def ch(c: int) -> int:
        return _div8(min(c, top) * width)

    def rep(n: int) -> int:
        return max(round(n * depth), 1) if n > 1 else n

    def c3k2(x: str, c2: int, n: int, c3k: bool, name: str, e: float = 0.5) -> str:
        use_c3k = c3k or c3k_all
        inner = None
        if use_c3k:
            def inner(y, c, nm):
                return _c3(net, y, c, 2, True, nm)
        else:
            def inner(y, c, nm):
                return _bottleneck(net, y, c, True, nm)
        return _c2f(net, x, ch(c2), rep(n), True, name, e=e, inner=inner)

    x = _conv(net, net.input, ch(64), 3, 2, "model.0")
    x = _conv(net, x, ch(128), 3, 2, "model.1")
    x = c3k2(x, 256, 2, False, "model.2", e=0.25)
    x = _conv(net, x, ch(256), 3, 2, "model.3")
    p3 = c3k2(x, 512, 2, False, "model.4", e=0.25)
    x = _conv(net, p3, ch(512), 3, 2, "model.5")
    p4 = c3k2(x, 512, 2, True, "model.6")
    x = _conv(net, p4, ch(1024), 3, 2, "model.7")
    x = c3k2(x, 1024, 2, True, "model.8")
    x = _sppf(net, x, ch(1024), "model.9")
    p5 = _c2psa(net, x, rep(2), "model.10")
    x = net.concat([net.upsample_nearest(p5, 2, name="model.11"), p4], name="model.12")
    h4 = c3k2(x, 512, 2, False, "model.13")
    x = net.concat([net.upsample_nearest(h4, 2, name="model.14"), p3], name="model.15")
    o3 = c3k2(x, 256, 2, False, "model.16")
    x = net.concat([_conv(net, o3, ch(256), 3, 2, "model.17"), h4], name="model.18")
    o4 = c3k2(x, 512, 2, False, "model.19")
    x = net.concat([_conv(net, o4, ch(512), 3, 2, "model.20"), p5], name="model.21")
    o5 = c3k2(x, 1024, 2, True, "model.22")
    _detect(net, [o3, o4, o5], "model.23", nc=nc, legacy=False)


# --- YOLOv5s ---------------------------------------------------------------------------------


def yolov5s(net: Net, nc: int = 80) -> None:
    """yolov5s.yaml (v6.0+), depth 0.33, width 0.50; outputs as the cuDLA samples trim them."""
    def rep(n: int) -> int:
        return max(round(n * 0.33), 1) if n > 1 else n

    x = _conv(net, net.input, 32, 6, 2, "model.0", pad=2)
    x = _conv(net, x, 64, 3, 2, "model.1")
    x = _c3_v5(net, x, 64, rep(3), True, "model.2")
    x = _conv(net, x, 128, 3, 2, "model.3")
    p3 = _c3_v5(net, x, 128, rep(6), True, "model.4")
    x = _conv(net, p3, 256, 3, 2, "model.5")
    p4 = _c3_v5(net, x, 256, rep(9), True, "model.6")
    x = _conv(net, p4, 512, 3, 2, "model.7")
    x = _c3_v5(net, x, 512, rep(3), True, "model.8")
    x = _sppf(net, x, 512, "model.9")
    h10 = _conv(net, x, 256, 1, 1, "model.10")
    x = net.concat([net.upsample_nearest(h10, 2, name="model.11"), p4], name="model.12")
    x = _c3_v5(net, x, 256, rep(3), False, "model.13")
    h14 = _conv(net, x, 128, 1, 1, "model.14")
    x = net.concat([net.upsample_nearest(h14, 2, name="model.15"), p3], name="model.16")
    o3 = _c3_v5(net, x, 128, rep(3), False, "model.17")
    x = net.concat([_conv(net, o3, 128, 3, 2, "model.18"), h14], name="model.19")
    o4 = _c3_v5(net, x, 256, rep(3), False, "model.20")
    x = net.concat([_conv(net, o4, 256, 3, 2, "model.21"), h10], name="model.22")
    o5 = _c3_v5(net, x, 512, rep(3), False, "model.23")
    for i, f in enumerate([o3, o4, o5]):
        net.output(net.conv(f, 3 * (nc + 5), 1, name=f"model.24.m.{i}"))


# --- YOLOv7 (deploy, fused) ------------------------------------------------------------------


def _fconv(net: Net, x: str, c2: int, k: int = 1, s: int = 1, name: str = "conv") -> str:
    """A YOLOv7 Conv after ``fuse()``: the BatchNorm folded into the convolution's bias."""
    return net.silu(net.conv(x, c2, k, s, k // 2, bias=True, name=name), name=name + ".act")


def _elan(net: Net, x: str, c_in: int, c_mid: int, c_out: int, name: str, wide: bool = False) -> str:
    """The ELAN block of the backbone (4 branches) or, ``wide``, of the head (6 branches)."""
    a = _fconv(net, x, c_in, 1, 1, name + ".0")
    b = _fconv(net, x, c_in, 1, 1, name + ".1")
    outs = [a, b]
    y = b
    for i in range(4):
        y = _fconv(net, y, c_mid, 3, 1, f"{name}.{i + 2}")
        outs.append(y)
    keep = outs[::-1] if wide else [outs[5], outs[3], outs[1], outs[0]]
    return _fconv(net, net.concat(keep, name=name + ".cat"), c_out, 1, 1, name + ".out")


def _mp(net: Net, x: str, c: int, name: str) -> List[str]:
    """MP-1: max-pool branch and strided-conv branch, concatenated by the caller."""
    a = _fconv(net, net.maxpool(x, 2, 2, name=name + ".mp"), c, 1, 1, name + ".0")
    b = _fconv(net, _fconv(net, x, c, 1, 1, name + ".1"), c, 3, 2, name + ".2")
    return [b, a]


def _sppcspc(net: Net, x: str, c2: int, name: str) -> str:
    c_ = c2
    x1 = _fconv(net, _fconv(net, _fconv(net, x, c_, 1, 1, name + ".cv1"), c_, 3, 1, name + ".cv3"),
                c_, 1, 1, name + ".cv4")
    pools = [net.maxpool(x1, k, 1, k // 2, name=f"{name}.m.{k}") for k in (5, 9, 13)]
    y1 = _fconv(net, _fconv(net, net.concat([x1] + pools, name=name + ".cat1"), c_, 1, 1, name + ".cv5"),
                c_, 3, 1, name + ".cv6")
    y2 = _fconv(net, x, c_, 1, 1, name + ".cv2")
    return _fconv(net, net.concat([y1, y2], name=name + ".cat2"), c2, 1, 1, name + ".cv7")


#: yolov7.yaml's anchors (pixels) per stride.
YOLOV7_ANCHORS = [[(12, 16), (19, 36), (40, 28)], [(36, 75), (76, 55), (72, 146)],
                  [(142, 110), (192, 243), (459, 401)]]


def yolov7(net: Net, nc: int = 80) -> None:
    x = _fconv(net, net.input, 32, 3, 1, "model.0")
    x = _fconv(net, x, 64, 3, 2, "model.1")
    x = _fconv(net, x, 64, 3, 1, "model.2")
    x = _fconv(net, x, 128, 3, 2, "model.3")
    x = _elan(net, x, 64, 64, 256, "model.4")
    x = net.concat(_mp(net, x, 128, "model.12"), name="model.16")
    p3 = _elan(net, x, 128, 128, 512, "model.17")
    x = net.concat(_mp(net, p3, 256, "model.25"), name="model.29")
    p4 = _elan(net, x, 256, 256, 1024, "model.30")
    x = net.concat(_mp(net, p4, 512, "model.38"), name="model.42")
    x = _elan(net, x, 256, 256, 1024, "model.43")
    h51 = _sppcspc(net, x, 512, "model.51")
    y = net.upsample_nearest(_fconv(net, h51, 256, 1, 1, "model.52"), 2, name="model.53")
    x = net.concat([_fconv(net, p4, 256, 1, 1, "model.54"), y], name="model.55")
    h63 = _elan(net, x, 256, 128, 256, "model.56", wide=True)
    y = net.upsample_nearest(_fconv(net, h63, 128, 1, 1, "model.64"), 2, name="model.65")
    x = net.concat([_fconv(net, p3, 128, 1, 1, "model.66"), y], name="model.67")
    h75 = _elan(net, x, 128, 64, 128, "model.68", wide=True)
    x = net.concat(_mp(net, h75, 128, "model.76") + [h63], name="model.80")
    h88 = _elan(net, x, 256, 128, 256, "model.81", wide=True)
    x = net.concat(_mp(net, h88, 256, "model.89") + [h51], name="model.93")
    h101 = _elan(net, x, 512, 256, 512, "model.94", wide=True)
    feats = [_fconv(net, h, c, 3, 1, f"model.{i}") for h, c, i in
             ((h75, 256, 102), (h88, 512, 103), (h101, 1024, 104))]
    # Detect with the export-time grid decode: sigmoid, xy = (2s - 0.5 + grid) * stride,
    # wh = (2s)^2 * anchor, then all anchors of all levels as rows.
    no = nc + 5
    rows = []
    for i, (f, stride) in enumerate(zip(feats, (8, 16, 32))):
        nm = f"model.105.{i}"
        y = net.conv(f, 3 * no, 1, name=nm + ".m")
        _, h, w = net.shape(y)
        y = net.reshape(y, (3, no, h, w), name=nm + ".view")
        y = net.sigmoid(net.transpose(y, [0, 1, 3, 4, 2], name=nm + ".permute"), name=nm + ".sigmoid")
        xy, wh, rest = net.split(y, [2, 2, no - 4], axis=4, name=nm + ".split")
        gy, gx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
        grid = (np.stack((gx, gy), -1)[None] - 0.5).astype(np.float32)  # (1, h, w, 2)
        two = net.const(nm + ".two", np.array(2.0, np.float32))
        xy = net.mul(net.add(net.mul(xy, two, name=nm + ".xy2"), net.const(nm + ".grid", grid),
                             name=nm + ".xyg"), net.const(nm + ".stride", np.array(float(stride), np.float32)),
                     name=nm + ".xy")
        anchor = np.array(YOLOV7_ANCHORS[i], np.float32).reshape(3, 1, 1, 2)
        wh2 = net.mul(wh, two, name=nm + ".wh2")
        wh = net.mul(net.mul(wh2, wh2, name=nm + ".whsq"), net.const(nm + ".anchor", anchor), name=nm + ".wh")
        y = net.concat([xy, wh, rest], axis=4, name=nm + ".cat")
        rows.append(net.reshape(y, (3 * h * w, no), name=nm + ".rows"))
    net.output(net.concat(rows, axis=1, name="output"))
