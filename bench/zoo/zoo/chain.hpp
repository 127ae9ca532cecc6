#pragma once
// zoo::chain -- the linear training chain of Beaumont et al. (§3.1, Figure 1): layers i = 0..L-1,
//   F_i : x_i -> x_{i+1}                      time u_F[i], temporary memory ex_F[i]
//   B_i : x_{i+1}, x_i, y_{i+1} -> y_i        time u_B[i], temporary memory ex_B[i]
// x_0 is the input (resident), y_L = d loss / d x_L is produced from x_L by a loss op of zero time,
// y_0 is the result (kind output). Costs are in seconds, as in the paper; sizes in bytes.
//
// Beaumont §6 obtains u_F, u_B, ex, |x_i|, |y_i| by measuring torchvision ResNet / DenseNet / Inception
// (grouped into linear chains of "virtual layers") on a V100 at 224/500/1000 pixel images. Those
// measurements are not published; chain_params::from_resnet derives the same quantities analytically
// from the zoo's ResNet layout instead (one virtual layer per stem / residual block / head; FLOPs at an
// assumed sustained rate; ex_F = the block's intermediate activations, ex_B = twice that).
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <zoo/resnet.hpp>

namespace memplan::zoo {

struct chain_params {
  std::vector<double> u_f, u_b;                 // L entries each (seconds)
  std::vector<std::int64_t> x_bytes, y_bytes;   // L + 1 entries each
  std::vector<std::int64_t> ex_f, ex_b;         // L entries each (may be empty: all zero)
  std::string name = "chain";

  [[nodiscard]] std::size_t layers() const { return u_f.size(); }

  // Every layer alike (the homogeneous chains of the checkpointing literature).
  static chain_params uniform(std::size_t layers, std::int64_t x, std::int64_t y, double u_f, double u_b,
                              std::int64_t ex_f = 0, std::int64_t ex_b = 0) {
    chain_params c;
    c.u_f.assign(layers, u_f);
    c.u_b.assign(layers, u_b);
    c.x_bytes.assign(layers + 1, x);
    c.y_bytes.assign(layers + 1, y);
    c.ex_f.assign(layers, ex_f);
    c.ex_b.assign(layers, ex_b);
    c.name = std::string("chain").append(std::to_string(layers));
    return c;
  }

  // A ResNet (zoo::resnet_config) as a chain of virtual layers, Beaumont §6.1; flops_per_second is the
  // sustained rate that turns FLOPs into seconds (default: 14 TFLOP/s, a V100's float32 peak).
  static chain_params from_resnet(const resnet_config& c, double flops_per_second = 14e12) {
    if (flops_per_second <= 0) throw error(errc::invalid_argument, "zoo::chain: flops_per_second must be positive");
    chain_params p;
    p.name = std::string("chain-resnet").append(std::to_string(c.depth())) + std::string("-i").append(std::to_string(c.image)) + std::string("-b").append(std::to_string(c.batch));
    const auto N = c.batch;
    auto act = [&](std::int64_t ch, std::int64_t hw) { return N * ch * hw * hw * float32_bytes; };
    auto conv_flops = [&](std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t hw_out) {
      return 2.0 * static_cast<double>(N * cout * hw_out * hw_out) * static_cast<double>(cin * k * k);
    };
    auto layer = [&](double flops, std::int64_t out_bytes, std::int64_t inner) {
      p.u_f.push_back(flops / flops_per_second);
      p.u_b.push_back(2.0 * flops / flops_per_second);
      p.x_bytes.push_back(out_bytes);
      p.y_bytes.push_back(out_bytes);
      p.ex_f.push_back(inner);
      p.ex_b.push_back(2 * inner);
    };
    p.x_bytes.push_back(act(3, c.image));
    p.y_bytes.push_back(act(3, c.image));
    // Stem: conv7x7/2 + bn + relu (three activations at image/2) then maxpool to image/4.
    auto hw = (c.image + 2 * 3 - 7) / 2 + 1;
    const auto pooled = (hw + 2 - 3) / 2 + 1;
    layer(conv_flops(3, c.base_width, 7, hw), act(c.base_width, pooled), 3 * act(c.base_width, hw));
    hw = pooled;
    std::int64_t ch = c.base_width;
    const std::int64_t e = c.bottleneck ? 4 : 1;
    for (std::size_t s = 0; s < c.units.size(); ++s) {
      const auto planes = c.base_width << s;
      for (std::int64_t u = 0; u < c.units[s]; ++u) {
        const std::int64_t stride = (u == 0 && s > 0) ? 2 : 1;
        const auto out = (hw - 1) / stride + 1;
        double f = 0;
        std::int64_t inner = 0;
        if (c.bottleneck) {
          f += conv_flops(ch, planes, 1, hw) + conv_flops(planes, planes, 3, out) + conv_flops(planes, planes * e, 1, out);
          inner += 3 * act(planes, hw) + 3 * act(planes, out) + 2 * act(planes * e, out);
        } else {
          f += conv_flops(ch, planes, 3, out) + conv_flops(planes, planes, 3, out);
          inner += 3 * act(planes, out) + 2 * act(planes, out);
        }
        if (stride != 1 || ch != planes * e) {
          f += conv_flops(ch, planes * e, 1, out);
          inner += 2 * act(planes * e, out);
        }
        layer(f, act(planes * e, out), inner);
        ch = planes * e;
        hw = out;
      }
    }
    // Head: global average pool + fc (+ log_softmax); its output is the logits.
    layer(2.0 * static_cast<double>(N * ch * c.classes), N * c.classes * float32_bytes, N * ch * float32_bytes);
    return p;
  }
};

inline graph::dataflow_graph chain(const chain_params& p) {
  const auto L = p.layers();
  if (L == 0) throw error(errc::invalid_argument, "zoo::chain: a chain needs at least one layer");
  if (p.u_b.size() != L || p.x_bytes.size() != L + 1 || p.y_bytes.size() != L + 1 ||
      (!p.ex_f.empty() && p.ex_f.size() != L) || (!p.ex_b.empty() && p.ex_b.size() != L))
    throw error(errc::invalid_argument, "zoo::chain: u_f/u_b/ex_f/ex_b need L entries and x_bytes/y_bytes L + 1 (L = " +
                                            std::to_string(L) + ")");
  for (std::size_t i = 0; i < L; ++i)
    if (p.u_f[i] < 0 || p.u_b[i] < 0) throw error(errc::invalid_argument, std::string("zoo::chain: negative time at layer ").append(std::to_string(i)));
  graph::dataflow_graph g(p.name);
  auto xn = [](std::size_t i) { return std::string("x").append(std::to_string(i)); };
  auto yn = [](std::size_t i) { return std::string("y").append(std::to_string(i)); };
  std::vector<graph::tensor_ref> x, y(L + 1);
  x.push_back(g.add_tensor(xn(0), p.x_bytes[0], tensor_kind::input));
  for (std::size_t i = 0; i < L; ++i) {
    x.push_back(g.add_tensor(xn(i + 1), p.x_bytes[i + 1], tensor_kind::activation));
    g.add_op(std::string("F").append(std::to_string(i)), {x[i]}, {x[i + 1]},
             {"forward", op_phase::forward, p.u_f[i], p.ex_f.empty() ? 0 : p.ex_f[i]});
  }
  y[L] = g.add_tensor(yn(L), p.y_bytes[L], tensor_kind::gradient);
  g.add_op("loss", {x[L]}, {y[L]}, {"loss", op_phase::backward, 0.0, 0});
  for (std::size_t k = L; k-- > 0;) {
    y[k] = g.add_tensor(yn(k), p.y_bytes[k], k == 0 ? tensor_kind::output : tensor_kind::gradient);
    g.add_op(std::string("B").append(std::to_string(k)), {x[k + 1], x[k], y[k + 1]}, {y[k]},
             {"backward", op_phase::backward, p.u_b[k], p.ex_b.empty() ? 0 : p.ex_b[k]});
  }
  return g;
}

}  // namespace memplan::zoo
