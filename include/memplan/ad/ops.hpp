#pragma once
// Forward and backward kernels of memplan::ad over CALLER-PROVIDED memory.
//
// Every kernel takes raw float pointers plus a small attribute struct that holds every dimension it
// needs; it never allocates and never reads memory it has not been handed as an input (or written
// itself first). Each output is written in full: accumulating kernels zero their output first, so an
// arena slot holding garbage or NaN poison gives the same bits as a fresh allocation. Reductions run in
// one fixed order, so results are deterministic; with every base address 64-byte aligned (see
// tensor.hpp) they are also independent of where the buffers are.
//
// Integer data (class labels, token ids, max-pool argmax) travel in 4-byte float slots: labels and
// token ids as exact small integral floats, max-pool indices as int32 bit patterns.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include <Eigen/Core>

#include <memplan/base/error.hpp>

namespace memplan::ad {

// ---- attributes ------------------------------------------------------------------------------------

struct fill_attr {
  std::int64_t n = 0;
  float value = 0.0f;
};

// Gather (scatter=false): out[v] = in[offset(v)] for v over `shape` in row-major order, where
// offset(v) = sum_i v_i * stride[i]. Scatter (scatter=true): out[offset(v)] = in[v]. Views are
// permutations of their base, so a scatter writes every element of its output.
struct strided_attr {
  static constexpr int max_rank = 6;
  int rank = 0;
  std::int64_t shape[max_rank] = {};
  std::int64_t stride[max_rank] = {};
  bool scatter = false;
};

// Strided batched GEMM: for every (b0, b1) < batch:
//   C[b0,b1] = alpha * op(A[b0,b1]) * op(B[b0,b1]) (+ bias[n] on each row)
// A[b0,b1] starts at a + b0*stride_a[0] + b1*stride_a[1] and is stored row-major with row stride lda
// as an [m,k] matrix, or as a [k,m] matrix when trans_a (op(A) = A^T); likewise B ([k,n] / [n,k]).
// C is [m,n] with row stride ldc. Transposed and head-split views are read in place this way.
struct matmul_attr {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch[2] = {1, 1};
  bool trans_a = false, trans_b = false;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t stride_a[2] = {0, 0}, stride_b[2] = {0, 0}, stride_c[2] = {0, 0};
  float alpha = 1.0f;
  bool bias = false;
};

// y[o,i] = a[o,i] (+|*) b[o,i], or b[i] when broadcast_b (b repeats over the outer index).
struct binary_attr {
  std::int64_t outer = 0, inner = 0;
  bool broadcast_b = false;
};

struct unary_attr {
  std::int64_t n = 0;
  float alpha = 1.0f;  // scale factor (scale kernel)
};

// Viewing the operand as [outer, mid, inner]:
//   sum_keep_mid: out[m] = scale * sum_{o,i} in[o,m,i]      (bias / beta gradients)
//   sum_mid:      out[o,i] = scale * sum_m in[o,m,i]       (sum / mean over one axis)
//   broadcast_mid: out[o,m,i] = scale * in[o,i]             (backward of sum_mid)
struct reduce_attr {
  std::int64_t outer = 1, mid = 1, inner = 1;
  float scale = 1.0f;
};

// NCHW convolution, weight [f, c, kh, kw], optional bias [f]; im2col + GEMM with the column matrix
// [c*kh*kw, ho*wo] in the workspace.
struct conv_attr {
  std::int64_t n = 0, c = 0, h = 0, w = 0;
  std::int64_t f = 0, kh = 0, kw = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  std::int64_t ho = 0, wo = 0;
  bool bias = false;
  [[nodiscard]] std::int64_t col_rows() const { return c * kh * kw; }
  [[nodiscard]] std::int64_t col_cols() const { return ho * wo; }
  [[nodiscard]] std::int64_t workspace_floats() const { return col_rows() * col_cols(); }
};

// Pooling over `planes` = N*C independent [h, w] planes, window kh x kw, stride, no padding.
struct pool_attr {
  std::int64_t planes = 0, h = 0, w = 0;
  std::int64_t kh = 0, kw = 0, stride_h = 1, stride_w = 1;
  std::int64_t ho = 0, wo = 0;
};

// Batch norm (training mode) normalises x viewed as [outer=N, channels=C, inner=H*W] per channel.
// Layer norm normalises x viewed as [outer=rows, channels=D] per row (inner unused = 1).
struct norm_attr {
  std::int64_t outer = 0, channels = 0, inner = 1;
  float eps = 1e-5f;
};

struct softmax_attr {
  std::int64_t rows = 0, cols = 0;
};

struct embedding_attr {
  std::int64_t count = 0, vocab = 0, dim = 0;
};

struct sgd_attr {
  std::int64_t n = 0;
  float lr = 0.01f, momentum = 0.0f;
};

struct adam_attr {
  std::int64_t n = 0;
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

// ---- kernels ---------------------------------------------------------------------------------------
namespace kernels {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using const_matrix_map = Eigen::Map<const row_major, Eigen::Unaligned, Eigen::OuterStride<>>;
using matrix_map = Eigen::Map<row_major, Eigen::Unaligned, Eigen::OuterStride<>>;

inline std::int64_t index_of(float v, std::int64_t limit, const char* what) {
  if (!(v >= 0.0f) || v != std::floor(v) || v >= static_cast<float>(limit))
    throw error(errc::invalid_argument, std::string("ad: ") + what + " " + std::to_string(v) + " is not an integer in [0, " +
                                            std::to_string(limit) + ")");
  return static_cast<std::int64_t>(v);
}

inline void fill(const fill_attr& a, float* out) {
  for (std::int64_t i = 0; i < a.n; ++i) out[i] = a.value;
}

inline void strided_copy(const strided_attr& a, const float* in, float* out) {
  std::int64_t idx[strided_attr::max_rank] = {};
  std::int64_t total = 1;
  for (int d = 0; d < a.rank; ++d) total *= a.shape[d];
  std::int64_t off = 0;
  for (std::int64_t v = 0; v < total; ++v) {
    if (a.scatter) out[off] = in[v];
    else out[v] = in[off];
    for (int d = a.rank - 1; d >= 0; --d) {  // odometer increment of the view index
      off += a.stride[d];
      if (++idx[d] < a.shape[d]) break;
      off -= a.stride[d] * a.shape[d];
      idx[d] = 0;
    }
  }
}

inline void matmul(const matmul_attr& a, const float* A, const float* B, const float* bias, float* C) {
  const auto ra = a.trans_a ? a.k : a.m, ca = a.trans_a ? a.m : a.k;
  const auto rb = a.trans_b ? a.n : a.k, cb = a.trans_b ? a.k : a.n;
  for (std::int64_t b0 = 0; b0 < a.batch[0]; ++b0)
    for (std::int64_t b1 = 0; b1 < a.batch[1]; ++b1) {
      const float* pa = A + b0 * a.stride_a[0] + b1 * a.stride_a[1];
      const float* pb = B + b0 * a.stride_b[0] + b1 * a.stride_b[1];
      float* pc = C + b0 * a.stride_c[0] + b1 * a.stride_c[1];
      matrix_map mc(pc, a.m, a.n, Eigen::OuterStride<>(a.ldc));
      if (a.k == 0) {
        mc.setZero();
      } else {
        const_matrix_map ma(pa, ra, ca, Eigen::OuterStride<>(a.lda));
        const_matrix_map mb(pb, rb, cb, Eigen::OuterStride<>(a.ldb));
        if (!a.trans_a && !a.trans_b) mc.noalias() = ma * mb;
        else if (a.trans_a && !a.trans_b) mc.noalias() = ma.transpose() * mb;
        else if (!a.trans_a && a.trans_b) mc.noalias() = ma * mb.transpose();
        else mc.noalias() = ma.transpose() * mb.transpose();
      }
      if (a.alpha != 1.0f || a.bias)
        for (std::int64_t i = 0; i < a.m; ++i) {
          float* row = pc + i * a.ldc;
          if (a.alpha != 1.0f)
            for (std::int64_t j = 0; j < a.n; ++j) row[j] *= a.alpha;
          if (a.bias)
            for (std::int64_t j = 0; j < a.n; ++j) row[j] += bias[j];
        }
    }
}

inline void add(const binary_attr& a, const float* x, const float* y, float* out) {
  for (std::int64_t o = 0; o < a.outer; ++o) {
    const float* yb = a.broadcast_b ? y : y + o * a.inner;
    const float* xb = x + o * a.inner;
    float* ob = out + o * a.inner;
    for (std::int64_t i = 0; i < a.inner; ++i) ob[i] = xb[i] + yb[i];
  }
}

inline void mul(const binary_attr& a, const float* x, const float* y, float* out) {
  for (std::int64_t o = 0; o < a.outer; ++o) {
    const float* yb = a.broadcast_b ? y : y + o * a.inner;
    const float* xb = x + o * a.inner;
    float* ob = out + o * a.inner;
    for (std::int64_t i = 0; i < a.inner; ++i) ob[i] = xb[i] * yb[i];
  }
}

// out[i] = sum_o dy[o,i] * x[o,i]: gradient of a broadcast multiplier.
inline void mul_grad_broadcast(const binary_attr& a, const float* dy, const float* x, float* out) {
  for (std::int64_t i = 0; i < a.inner; ++i) out[i] = 0.0f;
  for (std::int64_t o = 0; o < a.outer; ++o)
    for (std::int64_t i = 0; i < a.inner; ++i) out[i] += dy[o * a.inner + i] * x[o * a.inner + i];
}

inline void scale(const unary_attr& a, const float* x, float* y) {
  for (std::int64_t i = 0; i < a.n; ++i) y[i] = a.alpha * x[i];
}

inline void relu(const unary_attr& a, const float* x, float* y) {
  for (std::int64_t i = 0; i < a.n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
// Needs the output only (Chen et al. §3: declare minimum dependencies): y > 0 <=> x > 0.
inline void relu_grad(const unary_attr& a, const float* y, const float* dy, float* dx) {
  for (std::int64_t i = 0; i < a.n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}
inline void sigmoid(const unary_attr& a, const float* x, float* y) {
  for (std::int64_t i = 0; i < a.n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}
inline void sigmoid_grad(const unary_attr& a, const float* y, const float* dy, float* dx) {
  for (std::int64_t i = 0; i < a.n; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}
inline void tanh(const unary_attr& a, const float* x, float* y) {
  for (std::int64_t i = 0; i < a.n; ++i) y[i] = std::tanh(x[i]);
}
inline void tanh_grad(const unary_attr& a, const float* y, const float* dy, float* dx) {
  for (std::int64_t i = 0; i < a.n; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

inline void sum_keep_mid(const reduce_attr& a, const float* x, float* out) {
  for (std::int64_t m = 0; m < a.mid; ++m) {
    double s = 0.0;
    for (std::int64_t o = 0; o < a.outer; ++o) {
      const float* p = x + (o * a.mid + m) * a.inner;
      for (std::int64_t i = 0; i < a.inner; ++i) s += p[i];
    }
    out[m] = static_cast<float>(a.scale * s);
  }
}

inline void sum_mid(const reduce_attr& a, const float* x, float* out) {
  for (std::int64_t o = 0; o < a.outer; ++o)
    for (std::int64_t i = 0; i < a.inner; ++i) {
      double s = 0.0;
      for (std::int64_t m = 0; m < a.mid; ++m) s += x[(o * a.mid + m) * a.inner + i];
      out[o * a.inner + i] = static_cast<float>(a.scale * s);
    }
}

inline void broadcast_mid(const reduce_attr& a, const float* x, float* out) {
  for (std::int64_t o = 0; o < a.outer; ++o)
    for (std::int64_t m = 0; m < a.mid; ++m) {
      float* p = out + (o * a.mid + m) * a.inner;
      for (std::int64_t i = 0; i < a.inner; ++i) p[i] = a.scale * x[o * a.inner + i];
    }
}

// ---- convolution (im2col + GEMM) ----

inline void im2col(const conv_attr& a, const float* x, float* col) {
  const auto cols = a.col_cols();
  for (std::int64_t c = 0; c < a.c; ++c)
    for (std::int64_t i = 0; i < a.kh; ++i)
      for (std::int64_t j = 0; j < a.kw; ++j) {
        float* row = col + ((c * a.kh + i) * a.kw + j) * cols;
        for (std::int64_t oh = 0; oh < a.ho; ++oh) {
          const auto ih = oh * a.stride_h - a.pad_h + i;
          for (std::int64_t ow = 0; ow < a.wo; ++ow) {
            const auto iw = ow * a.stride_w - a.pad_w + j;
            row[oh * a.wo + ow] = (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w) ? x[(c * a.h + ih) * a.w + iw] : 0.0f;
          }
        }
      }
}

// dx (zeroed here) += col2im(col)
inline void col2im(const conv_attr& a, const float* col, float* dx) {
  for (std::int64_t i = 0; i < a.c * a.h * a.w; ++i) dx[i] = 0.0f;
  const auto cols = a.col_cols();
  for (std::int64_t c = 0; c < a.c; ++c)
    for (std::int64_t i = 0; i < a.kh; ++i)
      for (std::int64_t j = 0; j < a.kw; ++j) {
        const float* row = col + ((c * a.kh + i) * a.kw + j) * cols;
        for (std::int64_t oh = 0; oh < a.ho; ++oh) {
          const auto ih = oh * a.stride_h - a.pad_h + i;
          if (ih < 0 || ih >= a.h) continue;
          for (std::int64_t ow = 0; ow < a.wo; ++ow) {
            const auto iw = ow * a.stride_w - a.pad_w + j;
            if (iw >= 0 && iw < a.w) dx[(c * a.h + ih) * a.w + iw] += row[oh * a.wo + ow];
          }
        }
      }
}

inline void conv2d(const conv_attr& a, const float* x, const float* w, const float* bias, float* y, float* col) {
  const auto kr = a.col_rows(), kc = a.col_cols();
  const_matrix_map wm(w, a.f, kr, Eigen::OuterStride<>(kr));
  const_matrix_map cm(col, kr, kc, Eigen::OuterStride<>(kc));
  for (std::int64_t s = 0; s < a.n; ++s) {
    im2col(a, x + s * a.c * a.h * a.w, col);
    float* ys = y + s * a.f * kc;
    matrix_map ym(ys, a.f, kc, Eigen::OuterStride<>(kc));
    ym.noalias() = wm * cm;
    if (a.bias)
      for (std::int64_t f = 0; f < a.f; ++f)
        for (std::int64_t p = 0; p < kc; ++p) ys[f * kc + p] += bias[f];
  }
}

// dx needs only the weight and dy.
inline void conv2d_grad_input(const conv_attr& a, const float* w, const float* dy, float* dx, float* col) {
  const auto kr = a.col_rows(), kc = a.col_cols();
  const_matrix_map wm(w, a.f, kr, Eigen::OuterStride<>(kr));
  matrix_map cm(col, kr, kc, Eigen::OuterStride<>(kc));
  for (std::int64_t s = 0; s < a.n; ++s) {
    const_matrix_map dym(dy + s * a.f * kc, a.f, kc, Eigen::OuterStride<>(kc));
    cm.noalias() = wm.transpose() * dym;
    col2im(a, col, dx + s * a.c * a.h * a.w);
  }
}

// dw needs only x and dy.
inline void conv2d_grad_weight(const conv_attr& a, const float* x, const float* dy, float* dw, float* col) {
  const auto kr = a.col_rows(), kc = a.col_cols();
  const_matrix_map cm(col, kr, kc, Eigen::OuterStride<>(kc));
  matrix_map dwm(dw, a.f, kr, Eigen::OuterStride<>(kr));
  if (a.n == 0) dwm.setZero();
  for (std::int64_t s = 0; s < a.n; ++s) {
    im2col(a, x + s * a.c * a.h * a.w, col);
    const_matrix_map dym(dy + s * a.f * kc, a.f, kc, Eigen::OuterStride<>(kc));
    if (s == 0) dwm.noalias() = dym * cm.transpose();
    else dwm.noalias() += dym * cm.transpose();
  }
}

// ---- pooling ----

inline void max_pool2d(const pool_attr& a, const float* x, float* y, float* idx) {
  for (std::int64_t p = 0; p < a.planes; ++p) {
    const float* xp = x + p * a.h * a.w;
    for (std::int64_t oh = 0; oh < a.ho; ++oh)
      for (std::int64_t ow = 0; ow < a.wo; ++ow) {
        std::int32_t best_i = -1;
        float best = 0.0f;
        for (std::int64_t i = 0; i < a.kh; ++i)
          for (std::int64_t j = 0; j < a.kw; ++j) {
            const auto at = static_cast<std::int32_t>((oh * a.stride_h + i) * a.w + ow * a.stride_w + j);
            if (best_i < 0 || xp[at] > best) best = xp[at], best_i = at;  // first maximum wins
          }
        const auto o = (p * a.ho + oh) * a.wo + ow;
        y[o] = best;
        std::memcpy(idx + o, &best_i, sizeof best_i);
      }
  }
}

// Uses the saved argmax indices, not the input (so x can be freed after the forward pass).
inline void max_pool2d_grad(const pool_attr& a, const float* idx, const float* dy, float* dx) {
  for (std::int64_t i = 0; i < a.planes * a.h * a.w; ++i) dx[i] = 0.0f;
  for (std::int64_t p = 0; p < a.planes; ++p)
    for (std::int64_t o = 0; o < a.ho * a.wo; ++o) {
      std::int32_t at;
      std::memcpy(&at, idx + p * a.ho * a.wo + o, sizeof at);
      if (at < 0 || at >= a.h * a.w)
        throw error(errc::runtime_error, "ad: max_pool2d_grad read a corrupt argmax index " + std::to_string(at));
      dx[p * a.h * a.w + at] += dy[p * a.ho * a.wo + o];
    }
}

inline void avg_pool2d(const pool_attr& a, const float* x, float* y) {
  const float inv = 1.0f / static_cast<float>(a.kh * a.kw);
  for (std::int64_t p = 0; p < a.planes; ++p) {
    const float* xp = x + p * a.h * a.w;
    for (std::int64_t oh = 0; oh < a.ho; ++oh)
      for (std::int64_t ow = 0; ow < a.wo; ++ow) {
        float s = 0.0f;
        for (std::int64_t i = 0; i < a.kh; ++i)
          for (std::int64_t j = 0; j < a.kw; ++j) s += xp[(oh * a.stride_h + i) * a.w + ow * a.stride_w + j];
        y[(p * a.ho + oh) * a.wo + ow] = s * inv;
      }
  }
}

inline void avg_pool2d_grad(const pool_attr& a, const float* dy, float* dx) {
  const float inv = 1.0f / static_cast<float>(a.kh * a.kw);
  for (std::int64_t i = 0; i < a.planes * a.h * a.w; ++i) dx[i] = 0.0f;
  for (std::int64_t p = 0; p < a.planes; ++p)
    for (std::int64_t oh = 0; oh < a.ho; ++oh)
      for (std::int64_t ow = 0; ow < a.wo; ++ow) {
        const float g = dy[(p * a.ho + oh) * a.wo + ow] * inv;
        for (std::int64_t i = 0; i < a.kh; ++i)
          for (std::int64_t j = 0; j < a.kw; ++j) dx[p * a.h * a.w + (oh * a.stride_h + i) * a.w + ow * a.stride_w + j] += g;
      }
}

// ---- batch norm (training mode: batch statistics; biased variance) ----

inline void batch_norm(const norm_attr& a, const float* x, const float* gamma, const float* beta, float* y, float* mean,
                       float* invstd) {
  const double count = static_cast<double>(a.outer * a.inner);
  for (std::int64_t c = 0; c < a.channels; ++c) {
    double s = 0.0;
    for (std::int64_t o = 0; o < a.outer; ++o)
      for (std::int64_t i = 0; i < a.inner; ++i) s += x[(o * a.channels + c) * a.inner + i];
    const double mu = count > 0 ? s / count : 0.0;
    double v = 0.0;
    for (std::int64_t o = 0; o < a.outer; ++o)
      for (std::int64_t i = 0; i < a.inner; ++i) {
        const double d = x[(o * a.channels + c) * a.inner + i] - mu;
        v += d * d;
      }
    const float m = static_cast<float>(mu);
    const float is = static_cast<float>(1.0 / std::sqrt((count > 0 ? v / count : 0.0) + a.eps));
    mean[c] = m;
    invstd[c] = is;
    for (std::int64_t o = 0; o < a.outer; ++o)
      for (std::int64_t i = 0; i < a.inner; ++i) {
        const auto at = (o * a.channels + c) * a.inner + i;
        y[at] = gamma[c] * ((x[at] - m) * is) + beta[c];
      }
  }
}

// dx = gamma*invstd * (dy - mean(dy) - xhat*mean(dy*xhat)), per channel.
inline void batch_norm_grad_input(const norm_attr& a, const float* x, const float* gamma, const float* mean,
                                  const float* invstd, const float* dy, float* dx) {
  const double count = static_cast<double>(a.outer * a.inner);
  for (std::int64_t c = 0; c < a.channels; ++c) {
    double sdy = 0.0, sdyx = 0.0;
    for (std::int64_t o = 0; o < a.outer; ++o)
      for (std::int64_t i = 0; i < a.inner; ++i) {
        const auto at = (o * a.channels + c) * a.inner + i;
        sdy += dy[at];
        sdyx += static_cast<double>(dy[at]) * ((x[at] - mean[c]) * invstd[c]);
      }
    const float mdy = static_cast<float>(sdy / count), mdyx = static_cast<float>(sdyx / count);
    const float k = gamma[c] * invstd[c];
    for (std::int64_t o = 0; o < a.outer; ++o)
      for (std::int64_t i = 0; i < a.inner; ++i) {
        const auto at = (o * a.channels + c) * a.inner + i;
        dx[at] = k * (dy[at] - mdy - ((x[at] - mean[c]) * invstd[c]) * mdyx);
      }
  }
}

inline void batch_norm_grad_gamma(const norm_attr& a, const float* x, const float* mean, const float* invstd,
                                  const float* dy, float* dgamma) {
  for (std::int64_t c = 0; c < a.channels; ++c) {
    double s = 0.0;
    for (std::int64_t o = 0; o < a.outer; ++o)
      for (std::int64_t i = 0; i < a.inner; ++i) {
        const auto at = (o * a.channels + c) * a.inner + i;
        s += static_cast<double>(dy[at]) * ((x[at] - mean[c]) * invstd[c]);
      }
    dgamma[c] = static_cast<float>(s);
  }
}

// ---- layer norm over the last dimension ----

inline void layer_norm(const norm_attr& a, const float* x, const float* gamma, const float* beta, float* y, float* mean,
                       float* invstd) {
  const auto d = a.channels;
  for (std::int64_t r = 0; r < a.outer; ++r) {
    const float* xr = x + r * d;
    double s = 0.0;
    for (std::int64_t j = 0; j < d; ++j) s += xr[j];
    const double mu = s / static_cast<double>(d);
    double v = 0.0;
    for (std::int64_t j = 0; j < d; ++j) v += (xr[j] - mu) * (xr[j] - mu);
    const float m = static_cast<float>(mu);
    const float is = static_cast<float>(1.0 / std::sqrt(v / static_cast<double>(d) + a.eps));
    mean[r] = m;
    invstd[r] = is;
    for (std::int64_t j = 0; j < d; ++j) y[r * d + j] = gamma[j] * ((xr[j] - m) * is) + beta[j];
  }
}

inline void layer_norm_grad_input(const norm_attr& a, const float* x, const float* gamma, const float* mean,
                                  const float* invstd, const float* dy, float* dx) {
  const auto d = a.channels;
  for (std::int64_t r = 0; r < a.outer; ++r) {
    const float* xr = x + r * d;
    const float* dyr = dy + r * d;
    double sg = 0.0, sgx = 0.0;
    for (std::int64_t j = 0; j < d; ++j) {
      const float g = dyr[j] * gamma[j];
      sg += g;
      sgx += static_cast<double>(g) * ((xr[j] - mean[r]) * invstd[r]);
    }
    const float mg = static_cast<float>(sg / static_cast<double>(d)), mgx = static_cast<float>(sgx / static_cast<double>(d));
    for (std::int64_t j = 0; j < d; ++j)
      dx[r * d + j] = invstd[r] * (dyr[j] * gamma[j] - mg - ((xr[j] - mean[r]) * invstd[r]) * mgx);
  }
}

inline void layer_norm_grad_gamma(const norm_attr& a, const float* x, const float* mean, const float* invstd,
                                  const float* dy, float* dgamma) {
  const auto d = a.channels;
  for (std::int64_t j = 0; j < d; ++j) dgamma[j] = 0.0f;
  for (std::int64_t r = 0; r < a.outer; ++r)
    for (std::int64_t j = 0; j < d; ++j) dgamma[j] += dy[r * d + j] * ((x[r * d + j] - mean[r]) * invstd[r]);
}

// ---- softmax and softmax cross-entropy (rows of logits) ----

inline void softmax(const softmax_attr& a, const float* x, float* y) {
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const float* xr = x + r * a.cols;
    float* yr = y + r * a.cols;
    float mx = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < a.cols; ++j) mx = std::max(mx, xr[j]);
    double s = 0.0;
    for (std::int64_t j = 0; j < a.cols; ++j) s += (yr[j] = std::exp(xr[j] - mx));
    const float inv = static_cast<float>(1.0 / s);
    for (std::int64_t j = 0; j < a.cols; ++j) yr[j] *= inv;
  }
}

// dx = y * (dy - sum(dy*y)); needs the output, not the input.
inline void softmax_grad(const softmax_attr& a, const float* y, const float* dy, float* dx) {
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const float* yr = y + r * a.cols;
    const float* dr = dy + r * a.cols;
    double s = 0.0;
    for (std::int64_t j = 0; j < a.cols; ++j) s += static_cast<double>(dr[j]) * yr[j];
    const float sf = static_cast<float>(s);
    for (std::int64_t j = 0; j < a.cols; ++j) dx[r * a.cols + j] = yr[j] * (dr[j] - sf);
  }
}

// loss[0] = mean over rows of -log softmax(x)[label]; probs = softmax(x) saved for the backward pass.
inline void softmax_xent(const softmax_attr& a, const float* x, const float* labels, float* loss, float* probs) {
  double total = 0.0;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const auto lab = index_of(labels[r], a.cols, "class label");
    const float* xr = x + r * a.cols;
    float* pr = probs + r * a.cols;
    float mx = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < a.cols; ++j) mx = std::max(mx, xr[j]);
    double s = 0.0;
    for (std::int64_t j = 0; j < a.cols; ++j) s += std::exp(static_cast<double>(xr[j] - mx));
    const double lse = static_cast<double>(mx) + std::log(s);
    for (std::int64_t j = 0; j < a.cols; ++j) pr[j] = static_cast<float>(std::exp(static_cast<double>(xr[j]) - lse));
    total += lse - xr[lab];
  }
  loss[0] = static_cast<float>(a.rows > 0 ? total / static_cast<double>(a.rows) : 0.0);
}

inline void softmax_xent_grad(const softmax_attr& a, const float* probs, const float* labels, const float* dloss,
                              float* dx) {
  const float k = a.rows > 0 ? dloss[0] / static_cast<float>(a.rows) : 0.0f;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const auto lab = index_of(labels[r], a.cols, "class label");
    for (std::int64_t j = 0; j < a.cols; ++j)
      dx[r * a.cols + j] = k * (probs[r * a.cols + j] - (j == lab ? 1.0f : 0.0f));
  }
}

// ---- embedding ----

inline void embedding(const embedding_attr& a, const float* table, const float* ids, float* out) {
  for (std::int64_t r = 0; r < a.count; ++r) {
    const auto t = index_of(ids[r], a.vocab, "token id");
    std::memcpy(out + r * a.dim, table + t * a.dim, static_cast<std::size_t>(a.dim) * sizeof(float));
  }
}

inline void embedding_grad(const embedding_attr& a, const float* ids, const float* dy, float* dtable) {
  for (std::int64_t i = 0; i < a.vocab * a.dim; ++i) dtable[i] = 0.0f;
  for (std::int64_t r = 0; r < a.count; ++r) {
    const auto t = index_of(ids[r], a.vocab, "token id");
    for (std::int64_t j = 0; j < a.dim; ++j) dtable[t * a.dim + j] += dy[r * a.dim + j];
  }
}

// ---- optimizers (in place: an output may be the very storage of an input, read before written) ----

// v' = momentum*v + g; w' = w - lr*v'   (momentum == 0: no velocity, w' = w - lr*g)
inline void sgd(const sgd_attr& a, const float* w, const float* v, const float* g, float* w_out, float* v_out) {
  for (std::int64_t i = 0; i < a.n; ++i) {
    if (v) {
      const float nv = a.momentum * v[i] + g[i];
      v_out[i] = nv;
      w_out[i] = w[i] - a.lr * nv;
    } else {
      w_out[i] = w[i] - a.lr * g[i];
    }
  }
}

// Kingma & Ba, Alg. 1, with the step count t (already incremented, t >= 1) read from a tensor.
inline void adam(const adam_attr& a, const float* w, const float* m, const float* v, const float* g, const float* t,
                 float* w_out, float* m_out, float* v_out) {
  const double step = t[0];
  const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(a.beta1), step));
  const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(a.beta2), step));
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float nm = a.beta1 * m[i] + (1.0f - a.beta1) * g[i];
    const float nv = a.beta2 * v[i] + (1.0f - a.beta2) * g[i] * g[i];
    m_out[i] = nm;
    v_out[i] = nv;
    w_out[i] = w[i] - a.lr * (nm / c1) / (std::sqrt(nv / c2) + a.eps);
  }
}

inline void step_increment(const float* t, float* t_out) { t_out[0] = t[0] + 1.0f; }

}  // namespace kernels
}  // namespace memplan::ad
