#pragma once
// zoo::resnet -- the training step of an ImageNet ResNet of any depth in Chen et al.'s configuration
// (Chen 2016 §5.2: batch 32, input 3 x 224 x 224, "we count a conv-bn-relu as one layer", deeper nets
// made "by increasing the depth of each residual stage"), torchvision layout (v1.5: stride on the 3x3).
//
// Depth -> blocks (resnet_config::from_depth):
//  * 18 and 34: basic blocks (two 3x3 conv-bn-relu), units {2,2,2,2} and {3,4,6,3};
//  * 50, 101, 152, 200: bottleneck blocks (1x1, 3x3, 1x1, expansion 4), units {3,4,6,3}, {3,4,23,3},
//    {3,8,36,3}, {3,24,36,3};
//  * any other depth d with (d - 2) % 3 == 0 and d >= 14: bottleneck, B = (d - 2) / 3 blocks spread over
//    the 4 stages as evenly as possible (stage i gets B/4, the first B%4 stages one more), e.g. 1001
//    layers = 333 blocks = {84,83,83,83}.
// Layers counted: the stem conv, every conv of the blocks (3 per bottleneck, 2 per basic block) and the
// final fc: depth = 2 + 3 B (bottleneck) or 2 + 2 B (basic); projection shortcuts are not counted
// (the usual convention).
//
// Graph (per training_builder): stem conv7x7/2 - bn - relu - maxpool3x3/2; per block conv-bn-relu ...,
// shortcut (identity, or conv1x1 + bn when the shape changes), add, relu; global average pool, fc,
// log_softmax + nll_loss; then backward and one SGD update per parameter.
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <zoo/layers.hpp>

namespace memplan::zoo {

struct resnet_config {
  bool bottleneck = true;
  std::vector<std::int64_t> units{3, 4, 6, 3};  // blocks per stage (4 stages: 64, 128, 256, 512 planes)
  std::int64_t batch = 32;
  std::int64_t image = 224;
  std::int64_t classes = 1000;
  std::int64_t base_width = 64;

  [[nodiscard]] std::int64_t blocks() const {
    std::int64_t b = 0;
    for (auto u : units) b += u;
    return b;
  }
  // Layers in Chen's counting (conv-bn-relu = one layer, plus the stem conv and the fc).
  [[nodiscard]] std::int64_t depth() const { return 2 + (bottleneck ? 3 : 2) * blocks(); }

  static resnet_config from_depth(std::int64_t depth, std::int64_t batch = 32, std::int64_t image = 224) {
    resnet_config c;
    c.batch = batch;
    c.image = image;
    switch (depth) {
      case 18: c.bottleneck = false; c.units = {2, 2, 2, 2}; return c;
      case 34: c.bottleneck = false; c.units = {3, 4, 6, 3}; return c;
      case 50: c.units = {3, 4, 6, 3}; return c;
      case 101: c.units = {3, 4, 23, 3}; return c;
      case 152: c.units = {3, 8, 36, 3}; return c;
      case 200: c.units = {3, 24, 36, 3}; return c;
      default: break;
    }
    if (depth < 14 || (depth - 2) % 3 != 0)
      throw error(errc::invalid_argument, std::string("zoo::resnet: depth ").append(std::to_string(depth)) +
                                              " is neither 18/34/50/101/152/200 nor 2 + 3k with k >= 4");
    const auto b = (depth - 2) / 3;
    c.units.assign(4, b / 4);
    for (std::int64_t i = 0; i < b % 4; ++i) ++c.units[static_cast<std::size_t>(i)];
    return c;
  }
};

namespace detail {
inline tensor_ref conv_bn(training_builder& b, const std::string& n, tensor_ref x, std::int64_t cout, std::int64_t k,
                          std::int64_t stride, std::int64_t pad, bool with_relu) {
  auto y = batch_norm(b, n + ".bn", conv2d(b, n + ".conv", x, cout, k, stride, pad));
  return with_relu ? relu(b, n + ".relu", y) : y;
}
}  // namespace detail

inline graph::dataflow_graph resnet(const resnet_config& c) {
  if (c.units.size() != 4) throw error(errc::invalid_argument, "zoo::resnet: 4 stages expected");
  for (auto u : c.units)
    if (u < 1) throw error(errc::invalid_argument, "zoo::resnet: every stage needs at least one block");
  if (c.batch < 1 || c.image < 32 || c.classes < 1) throw error(errc::invalid_argument, "zoo::resnet: bad batch/image/classes");
  training_builder b(std::string("resnet").append(std::to_string(c.depth())) + std::string("-train-b").append(std::to_string(c.batch)));
  auto x = b.input("images", {c.batch, 3, c.image, c.image});
  auto target = b.input("labels", {c.batch}, int64_bytes);
  auto h = detail::conv_bn(b, "stem", x, c.base_width, 7, 2, 3, true);
  h = max_pool2d(b, "stem.maxpool", h, 3, 2, 1);
  std::int64_t channels = c.base_width;
  const std::int64_t expansion = c.bottleneck ? 4 : 1;
  for (std::size_t s = 0; s < 4; ++s) {
    const auto planes = c.base_width << s;
    for (std::int64_t u = 0; u < c.units[s]; ++u) {
      const auto n = std::string("layer").append(std::to_string(s + 1)) + std::string(".").append(std::to_string(u));
      const std::int64_t stride = (u == 0 && s > 0) ? 2 : 1;
      const bool project = stride != 1 || channels != planes * expansion;
      tensor_ref y;
      if (c.bottleneck) {
        y = detail::conv_bn(b, n + ".1", h, planes, 1, 1, 0, true);
        y = detail::conv_bn(b, n + ".2", y, planes, 3, stride, 1, true);
        y = detail::conv_bn(b, n + ".3", y, planes * expansion, 1, 1, 0, false);
      } else {
        y = detail::conv_bn(b, n + ".1", h, planes, 3, stride, 1, true);
        y = detail::conv_bn(b, n + ".2", y, planes, 3, 1, 1, false);
      }
      // torchvision computes the shortcut after the main branch.
      const auto shortcut = project ? detail::conv_bn(b, n + ".downsample", h, planes * expansion, 1, stride, 0, false) : h;
      h = relu(b, n + ".relu", add(b, n + ".add", {y, shortcut}));
      channels = planes * expansion;
    }
  }
  h = global_avg_pool(b, "avgpool", h);
  auto logits = linear(b, "fc", h, c.classes);
  return b.finish(cross_entropy(b, "loss", logits, target));
}

inline graph::dataflow_graph resnet(std::int64_t depth, std::int64_t batch = 32, std::int64_t image = 224) {
  return resnet(resnet_config::from_depth(depth, batch, image));
}

}  // namespace memplan::zoo
