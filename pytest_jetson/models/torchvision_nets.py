"""torchvision's classification, segmentation and detection networks, layer for layer.

Each function mirrors the torchvision module of the same name (v0.13+ definitions), so the
parameter count equals ``sum(p.numel() for p in model.parameters())`` of the torchvision model.
BatchNormalization nodes are kept, as in an export before TensorRT folds them, so that the
running statistics are visible as buffers (not parameters) and the counts match torchvision.
Dropout is omitted: it is the identity in inference and torch does not export it.
"""

from __future__ import annotations

import math
from typing import List

import numpy as np

from .builder import Net

# --- ResNet / ResNeXt -------------------------------------------------------------------------


def _basic_block(net: Net, x: str, planes: int, stride: int, name: str) -> str:
    cin = net.shape(x)[0]
    y = net.conv(x, planes, 3, stride, 1, bias=False, name=name + ".conv1")
    y = net.relu(net.bn(y, name=name + ".bn1"), name=name + ".relu1")
    y = net.conv(y, planes, 3, 1, 1, bias=False, name=name + ".conv2")
    y = net.bn(y, name=name + ".bn2", residual=True)
    if stride != 1 or cin != planes:
        x = net.conv(x, planes, 1, stride, 0, bias=False, name=name + ".downsample.0")
        x = net.bn(x, name=name + ".downsample.1")
    return net.relu(net.add(y, x, name=name + ".add"), name=name + ".relu")


def _bottleneck(net: Net, x: str, planes: int, stride: int, name: str, groups: int = 1,
                width_per_group: int = 64, dilation: int = 1, prev_dilation: int = 1,
                first: bool = False) -> str:
    cin = net.shape(x)[0]
    width = int(planes * (width_per_group / 64.0)) * groups
    out = planes * 4
    y = net.conv(x, width, 1, 1, 0, bias=False, name=name + ".conv1")
    y = net.relu(net.bn(y, name=name + ".bn1"), name=name + ".relu1")
    d = prev_dilation if first else dilation
    # torchvision's v1.5 bottleneck strides in the 3x3 convolution
    y = net.conv(y, width, 3, stride, d, groups=groups, dilation=d, bias=False, name=name + ".conv2")
    y = net.relu(net.bn(y, name=name + ".bn2"), name=name + ".relu2")
    y = net.conv(y, out, 1, 1, 0, bias=False, name=name + ".conv3")
    y = net.bn(y, name=name + ".bn3", residual=True)
    if stride != 1 or cin != out:
        x = net.conv(x, out, 1, stride, 0, bias=False, name=name + ".downsample.0")
        x = net.bn(x, name=name + ".downsample.1")
    return net.relu(net.add(y, x, name=name + ".add"), name=name + ".relu")


def resnet_backbone(net: Net, block: str, layers: List[int], groups: int = 1,
                    width_per_group: int = 64, dilate: List[bool] | None = None) -> str:
    dilate = dilate or [False, False, False]
    x = net.conv(net.input, 64, 7, 2, 3, bias=False, name="conv1")
    x = net.relu(net.bn(x, name="bn1"), name="relu")
    x = net.maxpool(x, 3, 2, 1, name="maxpool")
    dilation = 1
    for i, (planes, n) in enumerate(zip([64, 128, 256, 512], layers)):
        stride = 1 if i == 0 else 2
        prev = dilation
        if i > 0 and dilate[i - 1]:
            dilation *= stride
            stride = 1
        for j in range(n):
            name = f"layer{i + 1}.{j}"
            s = stride if j == 0 else 1
            if block == "basic":
                if dilation > 1:
                    raise ValueError("BasicBlock does not support dilation (as in torchvision)")
                x = _basic_block(net, x, planes, s, name)
            else:
                x = _bottleneck(net, x, planes, s, name, groups, width_per_group, dilation, prev,
                                first=(j == 0))
    return x


def _classifier_head(net: Net, x: str, classes: int = 1000) -> str:
    x = net.flatten(net.global_avgpool(x, name="avgpool"), name="flatten")
    return net.linear(x, classes, name="fc")


def resnet(net: Net, block: str, layers: List[int], groups: int = 1, width_per_group: int = 64) -> None:
    x = resnet_backbone(net, block, layers, groups, width_per_group)
    net.output(_classifier_head(net, x))


# --- VGG / AlexNet ----------------------------------------------------------------------------

VGG_CFG = {
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"],
}


def vgg(net: Net, cfg: list) -> None:
    x = net.input
    i = 0
    for v in cfg:
        if v == "M":
            x = net.maxpool(x, 2, 2, name=f"features.{i}")
            i += 1
        else:
            x = net.conv(x, v, 3, 1, 1, name=f"features.{i}")
            x = net.relu(x, name=f"features.{i + 1}")
            i += 2
    x = net.flatten(net.adaptive_avgpool(x, 7, name="avgpool"), name="flatten")
    x = net.relu(net.linear(x, 4096, name="classifier.0"), name="classifier.1")
    x = net.relu(net.linear(x, 4096, name="classifier.3"), name="classifier.4")
    net.output(net.linear(x, 1000, name="classifier.6"))


def alexnet(net: Net) -> None:
    x = net.relu(net.conv(net.input, 64, 11, 4, 2, name="features.0"), name="features.1")
    x = net.maxpool(x, 3, 2, name="features.2")
    x = net.relu(net.conv(x, 192, 5, 1, 2, name="features.3"), name="features.4")
    x = net.maxpool(x, 3, 2, name="features.5")
    x = net.relu(net.conv(x, 384, 3, 1, 1, name="features.6"), name="features.7")
    x = net.relu(net.conv(x, 256, 3, 1, 1, name="features.8"), name="features.9")
    x = net.relu(net.conv(x, 256, 3, 1, 1, name="features.10"), name="features.11")
    x = net.maxpool(x, 3, 2, name="features.12")
    x = net.flatten(net.adaptive_avgpool(x, 6, name="avgpool"), name="flatten")
    x = net.relu(net.linear(x, 4096, name="classifier.1"), name="classifier.2")
    x = net.relu(net.linear(x, 4096, name="classifier.4"), name="classifier.5")
    net.output(net.linear(x, 1000, name="classifier.6"))


# --- SqueezeNet 1.1 ---------------------------------------------------------------------------


def _fire(net: Net, x: str, squeeze: int, e1: int, e3: int, name: str) -> str:
    s = net.relu(net.conv(x, squeeze, 1, name=name + ".squeeze"), name=name + ".squeeze_activation")
    a = net.relu(net.conv(s, e1, 1, name=name + ".expand1x1"), name=name + ".expand1x1_activation")
    b = net.relu(net.conv(s, e3, 3, 1, 1, name=name + ".expand3x3"), name=name + ".expand3x3_activation")
    return net.concat([a, b], name=name + ".cat")


def squeezenet1_1(net: Net) -> None:
    x = net.relu(net.conv(net.input, 64, 3, 2, name="features.0"), name="features.1")
    x = net.maxpool(x, 3, 2, ceil=True, name="features.2")
    x = _fire(net, x, 16, 64, 64, "features.3")
    x = _fire(net, x, 16, 64, 64, "features.4")
    x = net.maxpool(x, 3, 2, ceil=True, name="features.5")
    x = _fire(net, x, 32, 128, 128, "features.6")
    x = _fire(net, x, 32, 128, 128, "features.7")
    x = net.maxpool(x, 3, 2, ceil=True, name="features.8")
    x = _fire(net, x, 48, 192, 192, "features.9")
    x = _fire(net, x, 48, 192, 192, "features.10")
    x = _fire(net, x, 64, 256, 256, "features.11")
    x = _fire(net, x, 64, 256, 256, "features.12")
    x = net.relu(net.conv(x, 1000, 1, name="classifier.1"), name="classifier.2")
    net.output(net.flatten(net.global_avgpool(x, name="classifier.3"), name="flatten"))


# --- DenseNet-121 -----------------------------------------------------------------------------


def densenet121_features(net: Net, growth: int = 32, blocks=(6, 12, 24, 16), init: int = 64,
                         bn_size: int = 4) -> str:
    """torchvision's ``densenet121().features``: it ends at norm5, before the ReLU of forward()."""
    x = net.conv(net.input, init, 7, 2, 3, bias=False, name="features.conv0")
    x = net.relu(net.bn(x, name="features.norm0"), name="features.relu0")
    x = net.maxpool(x, 3, 2, 1, name="features.pool0")
    for b, n in enumerate(blocks):
        feats = [x]
        for i in range(n):
            name = f"features.denseblock{b + 1}.denselayer{i + 1}"
            # each dense layer concatenates every earlier feature map, as torchvision's does
            y = net.concat(feats, name=name + ".cat") if len(feats) > 1 else feats[0]
            y = net.relu(net.bn(y, name=name + ".norm1"), name=name + ".relu1")
            y = net.conv(y, bn_size * growth, 1, bias=False, name=name + ".conv1")
            y = net.relu(net.bn(y, name=name + ".norm2"), name=name + ".relu2")
            y = net.conv(y, growth, 3, 1, 1, bias=False, name=name + ".conv2")
            feats.append(y)
        x = net.concat(feats, name=f"features.denseblock{b + 1}.cat")
        if b != len(blocks) - 1:
            name = f"features.transition{b + 1}"
            c = net.shape(x)[0]
            x = net.relu(net.bn(x, name=name + ".norm"), name=name + ".relu")
            x = net.conv(x, c // 2, 1, bias=False, name=name + ".conv")
            x = net.avgpool(x, 2, 2, name=name + ".pool")
    return net.bn(x, name="features.norm5")


def densenet121(net: Net) -> None:
    x = net.relu(densenet121_features(net), name="relu")
    x = net.flatten(net.global_avgpool(x, name="avgpool"), name="flatten")
    net.output(net.linear(x, 1000, name="classifier"))


# --- ShuffleNet V2 x1.0 -----------------------------------------------------------------------


def _channel_shuffle(net: Net, x: str, groups: int, name: str) -> str:
    c, h, w = net.shape(x)
    y = net.reshape(x, (groups, c // groups, h, w), name=name + ".view")
    y = net.transpose(y, [0, 2, 1, 3, 4], name=name + ".transpose")
    return net.reshape(y, (c, h, w), name=name + ".flatten")


def _shuffle_unit(net: Net, x: str, oup: int, stride: int, name: str) -> str:
    bf = oup // 2
    cin = net.shape(x)[0]
    if stride == 1:
        x1, x2 = net.split(x, [cin // 2, cin // 2], name=name + ".chunk")
    else:
        x1, x2 = x, x
        b = net.conv(x1, cin, 3, stride, 1, groups=cin, bias=False, name=name + ".branch1.0")
        b = net.bn(b, name=name + ".branch1.1")
        b = net.conv(b, bf, 1, bias=False, name=name + ".branch1.2")
        x1 = net.relu(net.bn(b, name=name + ".branch1.3"), name=name + ".branch1.4")
    y = net.conv(x2, bf, 1, bias=False, name=name + ".branch2.0")
    y = net.relu(net.bn(y, name=name + ".branch2.1"), name=name + ".branch2.2")
    y = net.conv(y, bf, 3, stride, 1, groups=bf, bias=False, name=name + ".branch2.3")
    y = net.bn(y, name=name + ".branch2.4")
    y = net.conv(y, bf, 1, bias=False, name=name + ".branch2.5")
    y = net.relu(net.bn(y, name=name + ".branch2.6"), name=name + ".branch2.7")
    return _channel_shuffle(net, net.concat([x1, y], name=name + ".cat"), 2, name + ".shuffle")


def shufflenet_v2(net: Net, repeats=(4, 8, 4), channels=(24, 116, 232, 464, 1024)) -> None:
    x = net.conv(net.input, channels[0], 3, 2, 1, bias=False, name="conv1.0")
    x = net.relu(net.bn(x, name="conv1.1"), name="conv1.2")
    x = net.maxpool(x, 3, 2, 1, name="maxpool")
    for s, (n, c) in enumerate(zip(repeats, channels[1:4])):
        for i in range(n):
            x = _shuffle_unit(net, x, c, 2 if i == 0 else 1, f"stage{s + 2}.{i}")
    x = net.conv(x, channels[4], 1, bias=False, name="conv5.0")
    x = net.relu(net.bn(x, name="conv5.1"), name="conv5.2")
    c = net.shape(x)[0]
    x = net.node("ReduceMean", [x], (c,), "mean", axes=[2, 3], keepdims=0)
    net.output(net.linear(x, 1000, name="fc"))


# --- MobileNet V2 -----------------------------------------------------------------------------


def mobilenet_v2(net: Net) -> None:
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]
    x = net.conv(net.input, 32, 3, 2, 1, bias=False, name="features.0.0")
    x = net.relu6(net.bn(x, name="features.0.1"), name="features.0.2")
    idx = 1
    for t, c, n, s in settings:
        for i in range(n):
            name = f"features.{idx}"
            stride = s if i == 0 else 1
            cin = net.shape(x)[0]
            hidden = int(round(cin * t))
            y = x
            j = 0
            if t != 1:
                y = net.conv(y, hidden, 1, bias=False, name=f"{name}.conv.{j}.0")
                y = net.relu6(net.bn(y, name=f"{name}.conv.{j}.1"), name=f"{name}.conv.{j}.2")
                j += 1
            y = net.conv(y, hidden, 3, stride, 1, groups=hidden, bias=False, name=f"{name}.conv.{j}.0")
            y = net.relu6(net.bn(y, name=f"{name}.conv.{j}.1"), name=f"{name}.conv.{j}.2")
            y = net.conv(y, c, 1, bias=False, name=f"{name}.conv.{j + 1}")
            y = net.bn(y, name=f"{name}.conv.{j + 2}", residual=stride == 1 and cin == c)
            x = net.add(x, y, name=name + ".add") if stride == 1 and cin == c else y
            idx += 1
    x = net.conv(x, 1280, 1, bias=False, name="features.18.0")
    x = net.relu6(net.bn(x, name="features.18.1"), name="features.18.2")
    x = net.flatten(net.global_avgpool(x, name="avgpool"), name="flatten")
    net.output(net.linear(x, 1000, name="classifier.1"))


# --- FCN --------------------------------------------------------------------------------------


def fcn(net: Net, backbone: str, classes: int = 21) -> None:
    """torchvision's fcn_resnet50 (aux_loss=None: no auxiliary classifier), and fcn_resnet18 as
    jetson-inference runs it.

    fcn_resnet18 follows dusty-nv/pytorch-segmentation, whose FCN jetson-inference's models are
    trained and exported with: a ResNet-18 backbone at output stride 32 (no dilation), the same
    FCNHead, and, for ONNX export, no upsample: the engine returns the class grid at 1/32 of the
    input, which jetson-inference upsamples itself outside the network.
    """
    h, w = net.shape(net.input)[1:]
    if backbone == "resnet50":
        x = resnet_backbone(net, "bottleneck", [3, 4, 6, 3], dilate=[False, True, True])
    else:
        x = resnet_backbone(net, "basic", [2, 2, 2, 2])
    inter = net.shape(x)[0] // 4
    x = net.conv(x, inter, 3, 1, 1, bias=False, name="classifier.0")
    x = net.relu(net.bn(x, name="classifier.1"), name="classifier.2")
    x = net.conv(x, classes, 1, name="classifier.4")
    if backbone == "resnet50":
        x = net.resize_bilinear(x, (h, w), name="upsample")
    net.output(x)


# --- SSD300 (VGG16 backbone) ------------------------------------------------------------------

#: torchvision's DefaultBoxGenerator for ssd300_vgg16: aspect ratios per feature map, the scales
#: s_k (one more than the maps: s'_k = sqrt(s_k s_k+1)) and the steps (input pixels per cell).
SSD300_ASPECT_RATIOS = ((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))
SSD300_SCALES = (0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05)
SSD300_STEPS = (8, 16, 32, 64, 100, 300)
#: BoxCoder(weights=(10, 10, 5, 5)): the head's offsets are scaled by these before decoding
SSD300_BOX_WEIGHTS = (10.0, 10.0, 5.0, 5.0)
SSD300_CLASSES = 91


def ssd300_anchors_per_location() -> List[int]:
    """Two square boxes (s_k, s'_k) plus two per aspect ratio: [4, 6, 6, 6, 4, 4]."""
    return [2 + 2 * len(ar) for ar in SSD300_ASPECT_RATIOS]


def ssd300_vgg16(net: Net, classes: int = SSD300_CLASSES) -> None:
    """torchvision's ssd300_vgg16 without its transform and post-processing: what the detector
    engine of a deployed pipeline runs. The input is the normalised (batch, 3, 300, 300) image;
    the outputs are the head's ``boxes`` (batch, 8732, 4), offsets against the default boxes,
    and ``scores`` (batch, 8732, 91), class logits before the softmax.

    The backbone is VGG16's features with the third max-pool in ceil mode (38x38 at conv4_3),
    whose L2-normalised output is rescaled per channel (``scale_weight``, 512 parameters: a
    depthwise 1x1 convolution here, the per-channel scale TensorRT makes of the multiply);
    then conv5, the dilated fc6/fc7 pair as convolutions, and four extra blocks: six feature maps
    (38, 19, 10, 5, 3, 1) with 4, 6, 6, 6, 4 and 4 default boxes per cell.
    """
    cfg = VGG_CFG["vgg16"][:-1]  # maxpool5 is replaced by fc's 3x3 stride-1 pool
    x = net.input
    i = 0
    pools = 0
    prefix = "backbone.features"
    feats = []
    for v in cfg:
        if v == "M":
            pools += 1
            if pools == 4:  # conv4_3's output is the first feature map; the rest is extra.0
                feats.append(x)
                prefix, i = "backbone.extra.0", 0
            x = net.maxpool(x, 2, 2, ceil=pools == 3, name=f"{prefix}.{i}")
            i += 1
        else:
            x = net.relu(net.conv(x, v, 3, 1, 1, name=f"{prefix}.{i}"), name=f"{prefix}.{i + 1}")
            i += 2
    conv4_3 = feats[0]
    # F.normalize(x) over channels: x / max(||x||_2, eps), then scale_weight per channel
    c = net.shape(conv4_3)[0]
    norm = net.node("ReduceL2", [conv4_3], (1,) + net.shape(conv4_3)[1:], "backbone.l2norm",
                    axes=[1], keepdims=1)
    eps = net.const("backbone.l2norm.eps", np.array(1e-12, np.float32))
    norm = net.node("Max", [norm, eps], net.shape(norm), "backbone.l2norm.clamp")
    scaled = net.conv(net.div(conv4_3, norm, name="backbone.l2norm.div"), c, 1, groups=c, bias=False,
                      name="backbone.scale_weight")
    feats = [scaled]
    x = net.maxpool(x, 3, 1, 1, name="backbone.extra.0.7.0")
    x = net.relu(net.conv(x, 1024, 3, 1, 6, dilation=6, name="backbone.extra.0.7.1"), name="backbone.extra.0.7.2")
    x = net.relu(net.conv(x, 1024, 1, name="backbone.extra.0.7.3"), name="backbone.extra.0.7.4")
    feats.append(x)
    for b, (mid, out, stride, pad) in enumerate([(256, 512, 2, 1), (128, 256, 2, 1), (128, 256, 1, 0),
                                                 (128, 256, 1, 0)]):
        name = f"backbone.extra.{b + 1}"
        x = net.relu(net.conv(x, mid, 1, name=name + ".0"), name=name + ".1")
        x = net.relu(net.conv(x, out, 3, stride, pad, name=name + ".2"), name=name + ".3")
        feats.append(x)
    anchors = ssd300_anchors_per_location()
    net.output(_ssd_head(net, feats, anchors, 4, "head.regression_head", "boxes"))
    net.output(_ssd_head(net, feats, anchors, classes, "head.classification_head", "scores"))


def _ssd_head(net: Net, feats: List[str], anchors: List[int], columns: int, name: str, out: str) -> str:
    """SSDScoringHead: a 3x3 convolution per map, (N, A*K, H, W) -> (N, H*W*A, K), concatenated."""
    flat = []
    for k, (f, a) in enumerate(zip(feats, anchors)):
        y = net.conv(f, a * columns, 3, 1, 1, name=f"{name}.module_list.{k}")
        _, h, w = net.shape(y)
        y = net.reshape(y, (a, columns, h, w), name=f"{name}.view.{k}")
        y = net.transpose(y, [0, 3, 4, 1, 2], name=f"{name}.permute.{k}")
        flat.append(net.reshape(y, (h * w * a, columns), name=f"{name}.flat.{k}"))
    return net.concat(flat, axis=1, name=out)


def ssd300_feature_sizes(height: int, width: int) -> List[tuple]:
    """The six feature maps' (height, width) at an input size: (38, 38) ... (1, 1) at 300."""
    def sides(s: int) -> List[int]:
        s = -(-(s // 2 // 2) // 2)  # pool1, pool2 floor; pool3 in ceil mode: conv4_3
        out = [s, s // 2]  # pool4 (fc's pool keeps the size)
        out += [(out[-1] - 1) // 2 + 1]  # conv8_2: 3x3, stride 2, pad 1
        out += [(out[-1] - 1) // 2 + 1]  # conv9_2
        out += [out[-1] - 2, out[-1] - 4]  # conv10_2, conv11_2: 3x3 unpadded
        return out
    return list(zip(sides(height), sides(width)))


def ssd300_default_boxes(height: int = 300, width: int = 300) -> np.ndarray:
    """torchvision's DefaultBoxGenerator for ssd300_vgg16: (A, 4) boxes (cx, cy, w, h) relative to
    the input, in the head's order (feature map, cell row-major, then the cell's boxes), widths
    and heights clipped to [0, 1]. 8732 boxes at 300x300."""
    out = []
    for k, (fh, fw) in enumerate(ssd300_feature_sizes(height, width)):
        s, s_next = SSD300_SCALES[k], SSD300_SCALES[k + 1]
        wh = [(s, s), (math.sqrt(s * s_next),) * 2]
        for ar in SSD300_ASPECT_RATIOS[k]:
            r = math.sqrt(ar)
            wh += [(s * r, s / r), (s / r, s * r)]
        wh_arr = np.clip(np.array(wh, np.float32), 0.0, 1.0)
        cy, cx = np.meshgrid((np.arange(fh) + 0.5) / (height / SSD300_STEPS[k]),
                             (np.arange(fw) + 0.5) / (width / SSD300_STEPS[k]), indexing="ij")
        centres = np.repeat(np.stack([cx.ravel(), cy.ravel()], -1), len(wh), axis=0)
        out.append(np.concatenate([centres, np.tile(wh_arr, (fh * fw, 1))], axis=1))
    return np.concatenate(out).astype(np.float32)
