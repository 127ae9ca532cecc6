#pragma once
// Small training graphs for quick tests and examples: an MLP and a LeNet-style CNN, built like every
// zoo model (zoo::training_builder: forward, cross-entropy loss, backward, in-place SGD updates).
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <zoo/layers.hpp>

namespace memplan::zoo {

// dims = {inputs, hidden..., classes}: linear-relu ... linear, cross entropy.
inline graph::dataflow_graph mlp(std::int64_t batch, const std::vector<std::int64_t>& dims) {
  if (dims.size() < 2) throw error(errc::invalid_argument, "zoo::mlp: need at least input and output widths");
  if (batch < 1) throw error(errc::invalid_argument, "zoo::mlp: batch must be positive");
  std::string name = "mlp";
  for (auto d : dims) name += std::string("-").append(std::to_string(d));
  training_builder b(name + std::string("-train-b").append(std::to_string(batch)));
  auto h = b.input("x", {batch, dims[0]});
  auto target = b.input("labels", {batch}, int64_bytes);
  for (std::size_t i = 1; i < dims.size(); ++i) {
    h = linear(b, std::string("fc").append(std::to_string(i)), h, dims[i]);
    if (i + 1 < dims.size()) h = relu(b, std::string("relu").append(std::to_string(i)), h);
  }
  return b.finish(cross_entropy(b, "loss", h, target));
}

struct cnn_config {
  std::int64_t batch = 8;
  std::int64_t image = 32;
  std::int64_t in_channels = 3;
  std::vector<std::int64_t> channels{16, 32};  // one conv3x3-bn-relu-maxpool2 stage each
  std::int64_t hidden = 64;
  std::int64_t classes = 10;
};

inline graph::dataflow_graph cnn(const cnn_config& c) {
  if (c.batch < 1 || c.image < 1 || c.in_channels < 1 || c.classes < 1 || c.hidden < 1 || c.channels.empty())
    throw error(errc::invalid_argument, "zoo::cnn: bad configuration");
  if ((c.image >> c.channels.size()) < 1)
    throw error(errc::invalid_argument, std::string("zoo::cnn: the image is too small for ").append(std::to_string(c.channels.size())) + " pooling stages");
  training_builder b(std::string("cnn-i").append(std::to_string(c.image)) + std::string("-train-b").append(std::to_string(c.batch)));
  auto h = b.input("images", {c.batch, c.in_channels, c.image, c.image});
  auto target = b.input("labels", {c.batch}, int64_bytes);
  for (std::size_t s = 0; s < c.channels.size(); ++s) {
    const auto n = std::string("block").append(std::to_string(s + 1));
    h = relu(b, n + ".relu", batch_norm(b, n + ".bn", conv2d(b, n + ".conv", h, c.channels[s], 3, 1, 1)));
    h = max_pool2d(b, n + ".pool", h, 2, 2);
  }
  h = relu(b, "fc1.relu", linear(b, "fc1", h, c.hidden));
  return b.finish(cross_entropy(b, "loss", linear(b, "fc2", h, c.classes), target));
}

}  // namespace memplan::zoo
