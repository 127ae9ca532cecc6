#!/bin/sh
# Regenerate the bundled graphs in data/models (or in the folder given as $1) and their README:
# 12 models in training and 4 in inference at batch 1 and 32, and 4 more in training at batch 32.
# Needs Debian's /usr/bin/python3 with python3-torch 1.13 and python3-torchvision 0.14.
# Deterministic: same torch/torchvision => byte-identical files (gzip mtime is 0).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../data/models}
mkdir -p "$out"
py=/usr/bin/python3
train_models="alexnet vgg11 vgg16 resnet18 resnet50 googlenet inception_v3 mobilenet_v2 mnasnet0_5 squeezenet1_0 efficientnet_b0 transformer"
infer_models="resnet18 resnet50 mobilenet_v2 transformer"
extra_models="densenet121 resnet101 regnet_y_400mf shufflenet_v2_x1_0"   # training at batch 32 only
for b in 1 32; do
  for m in $train_models; do
    extra=""
    # inception_v3's auxiliary classifier batch-normalises a 1x1 map, which PyTorch refuses in
    # training at batch 1; the bundle builds inception_v3 without it at every batch size.
    [ "$m" = inception_v3 ] && extra="--no-aux"
    $py "$here/export_torch.py" --model "$m" --batch "$b" --mode train $extra -o "$out/$m-train-b$b.json.gz"
  done
  for m in $infer_models; do
    $py "$here/export_torch.py" --model "$m" --batch "$b" --mode inference -o "$out/$m-infer-b$b.json.gz"
  done
done
for m in $extra_models; do
  $py "$here/export_torch.py" --model "$m" --batch 32 --mode train -o "$out/$m-train-b32.json.gz"
done
$py "$here/make_bundle_readme.py" "$out"
