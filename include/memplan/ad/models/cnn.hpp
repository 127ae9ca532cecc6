#pragma once
// A small residual CNN with batch norm for [batch, channels, H, W] images:
//   conv3x3 -> BN -> relu -> residual block (conv-BN-relu-conv-BN, + skip, relu) -> maxpool 2
//   -> conv3x3 (2x width) -> BN -> relu -> maxpool 2 -> global average pool -> linear -> softmax CE.
// Convolutions followed by batch norm carry no bias (beta plays that role).
#include <cstdint>
#include <string>

#include <memplan/ad/models/model.hpp>
#include <memplan/ad/tape.hpp>

namespace memplan::ad::models {

struct cnn_options {
  std::int64_t batch = 32;
  std::int64_t channels = 1, height = 16, width = 16;
  std::int64_t width_mult = 8;  // channels of the first stage
  std::int64_t classes = 3;
  std::uint64_t seed = 1;
};

template <optimizer O>
model cnn(const cnn_options& o, const O& opt) {
  if (o.batch < 1 || o.channels < 1 || o.height < 4 || o.width < 4 || o.width_mult < 1 || o.classes < 2)
    throw error(errc::invalid_argument, "ad::models::cnn: bad options (images must be at least 4x4)");
  tape t("cnn-b" + std::to_string(o.batch), o.seed);
  auto x = t.input("features", {o.batch, o.channels, o.height, o.width});
  auto y = t.input("labels", {o.batch});
  auto conv_bn_relu = [&](var in, const std::string& nm, std::int64_t cin, std::int64_t cout, bool act) {
    auto w = t.weight(nm + ".w", {cout, cin, 3, 3}, init::he_normal(cin * 9));
    auto g = t.weight(nm + ".bn.gamma", {cout}, init::constant(1.0));
    auto b = t.weight(nm + ".bn.beta", {cout}, init::zeros());
    auto h = t.batch_norm(t.conv2d(in, w, std::nullopt, {1, 1}), g, b);
    return act ? t.relu(h) : h;
  };
  const auto c1 = o.width_mult, c2 = 2 * o.width_mult;
  auto h = conv_bn_relu(x, "stem", o.channels, c1, true);
  auto r = conv_bn_relu(h, "res.conv1", c1, c1, true);
  r = conv_bn_relu(r, "res.conv2", c1, c1, false);
  h = t.relu(t.add(r, h));  // residual connection: h has two consumers, its gradient is accumulated
  h = t.max_pool2d(h, 2);
  h = conv_bn_relu(h, "stage2", c1, c2, true);
  h = t.max_pool2d(h, 2);
  auto f = t.global_avg_pool(h);  // [batch, c2]
  auto w = t.weight("head.w", {c2, o.classes}, init::glorot_uniform(c2, o.classes));
  auto b = t.weight("head.b", {o.classes}, init::zeros());
  auto loss = t.softmax_cross_entropy(t.linear(f, w, b), y);
  model m;
  m.step = t.training_step(loss.loss, opt);
  m.features = t.storage_of(x);
  m.labels = t.storage_of(y);
  m.loss = t.storage_of(loss.loss);
  m.probs = t.storage_of(loss.probs);
  m.batch = o.batch;
  m.classes = o.classes;
  return m;
}

}  // namespace memplan::ad::models
