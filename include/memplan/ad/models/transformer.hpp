#pragma once
// A one-block pre-norm transformer encoder classifier over token sequences [batch, length]:
//   x = embed(tokens) + pos;  x += W_o * attention(LN1(x));  x += MLP(LN2(x));  mean over tokens -> linear.
// Multi-head attention splits heads with views (no copy): q/k/v [B,T,H*d] are read as [B,H,T,d] by
// strided batched matmuls; only the merge of heads back to [B,T,H*d] is a materialising copy.
#include <cmath>
#include <cstdint>
#include <string>

#include <memplan/ad/models/model.hpp>
#include <memplan/ad/tape.hpp>

namespace memplan::ad::models {

struct transformer_options {
  std::int64_t batch = 32;
  std::int64_t length = 8;
  std::int64_t vocab = 16;
  std::int64_t dim = 32;
  std::int64_t heads = 2;
  std::int64_t mlp_hidden = 64;
  std::int64_t classes = 2;
  std::uint64_t seed = 1;
};

template <optimizer O>
model transformer(const transformer_options& o, const O& opt) {
  if (o.batch < 1 || o.length < 1 || o.vocab < 1 || o.dim < 1 || o.heads < 1 || o.dim % o.heads != 0 ||
      o.mlp_hidden < 1 || o.classes < 2)
    throw error(errc::invalid_argument, "ad::models::transformer: bad options (dim must be a multiple of heads)");
  const auto B = o.batch, T = o.length, D = o.dim, H = o.heads, dh = o.dim / o.heads;
  tape t("transformer-b" + std::to_string(B), o.seed);
  auto ids = t.input("features", {B, T});
  auto y = t.input("labels", {B});
  auto emb = t.weight("embed", {o.vocab, D}, init::normal(0.0, 0.5));
  auto pos = t.weight("pos", {T, D}, init::normal(0.0, 0.5));
  auto x = t.add(t.embedding(emb, ids), pos);  // pos broadcasts over the batch
  auto lin = [&](var in, const std::string& nm, std::int64_t fin, std::int64_t fout) {
    auto w = t.weight(nm + ".w", {fin, fout}, init::glorot_uniform(fin, fout));
    auto b = t.weight(nm + ".b", {fout}, init::zeros());
    return t.linear(in, w, b);
  };
  auto ln = [&](var in, const std::string& nm) {
    auto g = t.weight(nm + ".gamma", {D}, init::constant(1.0));
    auto b = t.weight(nm + ".beta", {D}, init::zeros());
    return t.layer_norm(in, g, b);
  };
  // attention
  auto h = ln(x, "ln1");
  auto heads = [&](var v) { return t.permute(t.reshape(v, {B, T, H, dh}), {0, 2, 1, 3}); };  // views
  auto q = heads(lin(h, "attn.q", D, D));
  auto k = heads(lin(h, "attn.k", D, D));
  auto v = heads(lin(h, "attn.v", D, D));
  auto p = t.softmax(t.matmul(q, t.transpose(k), static_cast<float>(1.0 / std::sqrt(static_cast<double>(dh)))));
  auto a = t.reshape(t.permute(t.matmul(p, v), {0, 2, 1, 3}), {B, T, D});
  x = t.add(x, lin(a, "attn.out", D, D));
  // MLP
  h = ln(x, "ln2");
  x = t.add(x, lin(t.relu(lin(h, "mlp.fc1", D, o.mlp_hidden)), "mlp.fc2", o.mlp_hidden, D));
  // classify the mean token
  auto logits = lin(t.mean(x, 1), "head", D, o.classes);
  auto r = t.softmax_cross_entropy(logits, y);
  model m;
  m.step = t.training_step(r.loss, opt);
  m.features = t.storage_of(ids);
  m.labels = t.storage_of(y);
  m.loss = t.storage_of(r.loss);
  m.probs = t.storage_of(r.probs);
  m.batch = B;
  m.classes = o.classes;
  return m;
}

}  // namespace memplan::ad::models
