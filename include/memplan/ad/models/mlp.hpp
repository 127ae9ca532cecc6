#pragma once
// A multi-layer perceptron classifier: features [batch, in] -> (linear, activation) x layers ->
// linear -> softmax cross-entropy.
#include <cstdint>
#include <string>

#include <memplan/ad/models/model.hpp>
#include <memplan/ad/tape.hpp>

namespace memplan::ad::models {

struct mlp_options {
  std::int64_t batch = 64;
  std::int64_t in = 2;
  std::int64_t hidden = 64;
  int layers = 2;  // hidden layers
  std::int64_t classes = 2;
  enum class activation { relu, tanh } act = activation::tanh;
  std::uint64_t seed = 1;
};

template <optimizer O>
model mlp(const mlp_options& o, const O& opt) {
  if (o.batch < 1 || o.in < 1 || o.hidden < 1 || o.layers < 0 || o.classes < 2)
    throw error(errc::invalid_argument, "ad::models::mlp: bad options");
  tape t("mlp-b" + std::to_string(o.batch), o.seed);
  auto x = t.input("features", {o.batch, o.in});
  auto y = t.input("labels", {o.batch});
  auto h = x;
  std::int64_t width = o.in;
  for (int l = 0; l < o.layers; ++l) {
    const auto nm = "fc" + std::to_string(l + 1);
    auto w = t.weight(nm + ".w", {width, o.hidden},
                      o.act == mlp_options::activation::relu ? init::he_normal(width) : init::glorot_uniform(width, o.hidden));
    auto b = t.weight(nm + ".b", {o.hidden}, init::zeros());
    h = t.linear(h, w, b);
    h = o.act == mlp_options::activation::relu ? t.relu(h) : t.tanh(h);
    width = o.hidden;
  }
  auto w = t.weight("out.w", {width, o.classes}, init::glorot_uniform(width, o.classes));
  auto b = t.weight("out.b", {o.classes}, init::zeros());
  auto r = t.softmax_cross_entropy(t.linear(h, w, b), y);
  model m;
  m.step = t.training_step(r.loss, opt);
  m.features = t.storage_of(x);
  m.labels = t.storage_of(y);
  m.loss = t.storage_of(r.loss);
  m.probs = t.storage_of(r.probs);
  m.batch = o.batch;
  m.classes = o.classes;
  return m;
}

}  // namespace memplan::ad::models
