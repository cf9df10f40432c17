"""trt_pose's human-pose networks (NVIDIA-AI-IOT/trt_pose, commit 336b8cd), layer for layer.

``resnet18_baseline_att`` and ``densenet121_baseline_att`` as the repository's pre-trained models
are configured (tasks/human_pose/experiments/*_baseline_att_*.json: ``cmap_channels`` 18,
``paf_channels`` 42, ``upsample_channels`` 256, ``num_upsample`` 3, ``num_flat`` 0): 18 COCO
keypoints and 2 x 21 skeleton links (tasks/human_pose/human_pose.json).

The backbone is torchvision's network up to its last feature map (trt_pose/models/resnet.py's
ResNetBackbone: conv1 ... layer4; densenet.py's DenseNetBackbone: ``features``, ending at norm5
without a ReLU). The head is common.py's CmapPafHeadAttention: two branches (confidence maps and
part affinity fields), each three stride-2 4x4 transposed convolutions with BatchNorm and ReLU
(1/32 -> 1/4 of the input), a 3x3 attention convolution through a sigmoid (cmap) or tanh (paf)
multiplying the features, and a 1x1 convolution to the output channels.

Parameters: the graph's, which are those the engine runs. torch's ``model.parameters()`` also
counts the backbone's classifier, which trt_pose keeps but never calls (resnet18's fc, 513,000;
densenet121's classifier, 1,025,000): 21,278,308 and 21,761,956 with it, about the 81 MB and
84 MB of the README's weight files in float32.
"""

from __future__ import annotations

from .builder import Net
from .torchvision_nets import densenet121_features, resnet_backbone

#: tasks/human_pose/human_pose.json: 18 keypoints, 21 skeleton links (x and y fields each)
CMAP_CHANNELS = 18
PAF_CHANNELS = 42
UPSAMPLE_CHANNELS = 256
NUM_UPSAMPLE = 3


def _branch(net: Net, x: str, name: str, gate: str) -> str:
    for i in range(NUM_UPSAMPLE):
        x = net.conv_transpose(x, UPSAMPLE_CHANNELS, 4, 2, 1, name=f"{name}_up.{3 * i}")
        x = net.relu(net.bn(x, name=f"{name}_up.{3 * i + 1}"), name=f"{name}_up.{3 * i + 2}")
    a = net.conv(x, UPSAMPLE_CHANNELS, 3, 1, 1, name=f"{name}_att")
    a = net.sigmoid(a, name=f"{name}_att.sigmoid") if gate == "sigmoid" else net.tanh(a, name=f"{name}_att.tanh")
    return net.mul(x, a, name=f"{name}_att.mul")


def _head(net: Net, x: str) -> None:
    xc = _branch(net, x, "1.cmap", "sigmoid")
    xp = _branch(net, x, "1.paf", "tanh")
    net.output(net.conv(xc, CMAP_CHANNELS, 1, name="1.cmap_conv"))
    net.output(net.conv(xp, PAF_CHANNELS, 1, name="1.paf_conv"))


def resnet18_baseline_att(net: Net) -> None:
    _head(net, resnet_backbone(net, "basic", [2, 2, 2, 2]))


def densenet121_baseline_att(net: Net) -> None:
    _head(net, densenet121_features(net))
