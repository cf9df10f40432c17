"""torchvision's classification and segmentation networks, layer for layer.

Each function mirrors the torchvision module of the same name (v0.13+ definitions), so the
parameter count equals ``sum(p.numel() for p in model.parameters())`` of the torchvision model.
BatchNormalization nodes are kept, as in an export before TensorRT folds them, so that the
running statistics are visible as buffers (not parameters) and the counts match torchvision.
Dropout is omitted: it is the identity in inference and torch does not export it.
"""

from __future__ import annotations

from typing import List

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


def densenet121(net: Net, growth: int = 32, blocks=(6, 12, 24, 16), init: int = 64, bn_size: int = 4) -> None:
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
    x = net.relu(net.bn(x, name="features.norm5"), name="relu")
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
