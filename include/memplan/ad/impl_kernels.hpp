#pragma once
// Alternative CPU implementations of the two kernels whose memory / time trade-off a plan can choose
// (MONeT §4, "operator implementations"): matmul and the three convolution kernels. The defaults
// live in ops.hpp (Eigen GEMM; im2col + GEMM over a whole image); here:
//
//   matmul   packed   GotoBLAS-style blocked GEMM: panels of A and B are packed into the workspace
//                     (packed_gemm_blocking: at most MC*KC + KC*NC floats), a 4x8 register-tile kernel
//                     runs over them. Exactly the workspace it declares; no allocation.
//            loop     plain loops (i-k-j, or dot products when B is transposed): no workspace.
//   conv2d*  tiled    im2col / col2im over tiles of `conv_tile_cols` output positions: a workspace of
//                     c*kh*kw*tile floats instead of c*kh*kw*ho*wo.
//            direct   nested loops over the window: no workspace.
//
// Same contract as ops.hpp: caller-provided memory, every output written in full (accumulating
// kernels zero their output first), nothing read from the workspace before it is written, fixed
// loop orders (bitwise deterministic for a given implementation). Different implementations sum in
// different orders, so their results agree within rounding, not bit for bit.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include <Eigen/Core>

#include <memplan/ad/ops.hpp>

namespace memplan::ad {

// ---- blocking of the packed GEMM -----------------------------------------------------------------

struct packed_gemm_blocking {
  static constexpr std::int64_t mr = 4, nr = 8;       // register tile
  static constexpr std::int64_t mc = 64, kc = 256, nc = 512;  // cache blocks (A block: 64 KiB, B panel: 512 KiB)
  std::int64_t mcp = 0, kcp = 0, ncp = 0;             // the blocks this product uses (rounded to the tile)
  [[nodiscard]] std::int64_t a_floats() const { return mcp * kcp; }
  [[nodiscard]] std::int64_t workspace_floats() const { return mcp * kcp + kcp * ncp; }
};

inline packed_gemm_blocking packed_blocking(const matmul_attr& a) {
  auto round_up = [](std::int64_t v, std::int64_t q) { return (v + q - 1) / q * q; };
  packed_gemm_blocking b;
  if (a.m == 0 || a.n == 0 || a.k == 0) return b;  // nothing to pack
  b.mcp = std::min(packed_gemm_blocking::mc, round_up(a.m, packed_gemm_blocking::mr));
  b.kcp = std::min(packed_gemm_blocking::kc, a.k);
  b.ncp = std::min(packed_gemm_blocking::nc, round_up(a.n, packed_gemm_blocking::nr));
  return b;
}

// Output positions per tile of the tiled convolution kernels.
inline constexpr std::int64_t conv_tile_cols = 64;
inline std::int64_t conv_tile(const conv_attr& a) { return std::min(conv_tile_cols, a.col_cols()); }
inline std::int64_t conv_tiled_workspace_floats(const conv_attr& a) { return a.col_rows() * conv_tile(a); }

namespace kernels {

namespace detail {
// C row i: *= alpha, += bias (the same epilogue as the default matmul).
inline void matmul_epilogue(const matmul_attr& a, const float* bias, float* pc) {
  if (a.alpha == 1.0f && !a.bias) return;
  for (std::int64_t i = 0; i < a.m; ++i) {
    float* row = pc + i * a.ldc;
    if (a.alpha != 1.0f)
      for (std::int64_t j = 0; j < a.n; ++j) row[j] *= a.alpha;
    if (a.bias)
      for (std::int64_t j = 0; j < a.n; ++j) row[j] += bias[j];
  }
}

// op(A)(i, p) and op(B)(p, j) of one batch entry.
struct gemm_operands {
  const float* a;
  const float* b;
  std::int64_t lda, ldb;
  bool ta, tb;
  [[nodiscard]] float A(std::int64_t i, std::int64_t p) const { return ta ? a[p * lda + i] : a[i * lda + p]; }
  [[nodiscard]] float B(std::int64_t p, std::int64_t j) const { return tb ? b[j * ldb + p] : b[p * ldb + j]; }
};

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] as mr-row panels, p-major within a panel: ap[panel][p][r];
// rows past the matrix are zero.
inline void pack_a(const gemm_operands& g, std::int64_t i0, std::int64_t mc, std::int64_t m, std::int64_t p0, std::int64_t kc,
                   float* ap) {
  constexpr auto mr = packed_gemm_blocking::mr;
  for (std::int64_t ib = 0; ib < mc; ib += mr)
    for (std::int64_t p = 0; p < kc; ++p)
      for (std::int64_t r = 0; r < mr; ++r) {
        const auto i = i0 + ib + r;
        *ap++ = (ib + r < mc && i < m) ? g.A(i, p0 + p) : 0.0f;
      }
}

// Packs op(B)[p0 : p0+kc, j0 : j0+nc] as nr-column panels: bp[panel][p][c]; columns past the matrix are zero.
inline void pack_b(const gemm_operands& g, std::int64_t p0, std::int64_t kc, std::int64_t j0, std::int64_t nc, std::int64_t n,
                   float* bp) {
  constexpr auto nr = packed_gemm_blocking::nr;
  for (std::int64_t jb = 0; jb < nc; jb += nr)
    for (std::int64_t p = 0; p < kc; ++p)
      for (std::int64_t c = 0; c < nr; ++c) {
        const auto j = j0 + jb + c;
        *bp++ = (jb + c < nc && j < n) ? g.B(p0 + p, j) : 0.0f;
      }
}

// C[rows, cols] (= or +=) the mr x nr product of one A panel and one B panel over kc. The register
// tile is 4 rows of two 4-float vectors (GCC/Clang vector extension: plain SSE2 code at -O2), written
// out so that the eight accumulators stay in registers.
inline void micro_kernel(std::int64_t kc, const float* ap, const float* bp, float* c, std::int64_t ldc, std::int64_t rows,
                         std::int64_t cols, bool accumulate) {
  constexpr auto mr = packed_gemm_blocking::mr, nr = packed_gemm_blocking::nr;
  typedef float v4 __attribute__((vector_size(16)));
  static_assert(mr == 4 && nr == 8, "the register tile is 4 x (2 x 4) floats");
  v4 c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{};
  for (std::int64_t p = 0; p < kc; ++p, ap += mr, bp += nr) {
    v4 b0, b1;
    std::memcpy(&b0, bp, sizeof b0);
    std::memcpy(&b1, bp + 4, sizeof b1);
    const v4 a0 = {ap[0], ap[0], ap[0], ap[0]}, a1 = {ap[1], ap[1], ap[1], ap[1]};
    const v4 a2 = {ap[2], ap[2], ap[2], ap[2]}, a3 = {ap[3], ap[3], ap[3], ap[3]};
    c00 += a0 * b0, c01 += a0 * b1, c10 += a1 * b0, c11 += a1 * b1;
    c20 += a2 * b0, c21 += a2 * b1, c30 += a3 * b0, c31 += a3 * b1;
  }
  const v4 acc[mr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  float out[mr][nr];
  std::memcpy(out, acc, sizeof out);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t s = 0; s < cols; ++s) c[r * ldc + s] = accumulate ? c[r * ldc + s] + out[r][s] : out[r][s];
}
}  // namespace detail

// Blocked GEMM over packed panels; `ws` holds packed_blocking(a).workspace_floats() floats.
inline void matmul_packed(const matmul_attr& a, const float* A, const float* B, const float* bias, float* C, float* ws) {
  constexpr auto mr = packed_gemm_blocking::mr, nr = packed_gemm_blocking::nr;
  const auto blk = packed_blocking(a);
  float* ap = ws;
  float* bp = ws + blk.a_floats();
  for (std::int64_t b0 = 0; b0 < a.batch[0]; ++b0)
    for (std::int64_t b1 = 0; b1 < a.batch[1]; ++b1) {
      const detail::gemm_operands g{A + b0 * a.stride_a[0] + b1 * a.stride_a[1], B + b0 * a.stride_b[0] + b1 * a.stride_b[1],
                                    a.lda, a.ldb, a.trans_a, a.trans_b};
      float* pc = C + b0 * a.stride_c[0] + b1 * a.stride_c[1];
      if (a.k == 0) {
        for (std::int64_t i = 0; i < a.m; ++i)
          for (std::int64_t j = 0; j < a.n; ++j) pc[i * a.ldc + j] = 0.0f;
      }
      for (std::int64_t j0 = 0; j0 < a.n && a.k > 0; j0 += blk.ncp) {
        const auto nc = std::min(blk.ncp, a.n - j0);
        for (std::int64_t p0 = 0; p0 < a.k; p0 += blk.kcp) {
          const auto kc = std::min(blk.kcp, a.k - p0);
          detail::pack_b(g, p0, kc, j0, nc, a.n, bp);
          for (std::int64_t i0 = 0; i0 < a.m; i0 += blk.mcp) {
            const auto mc = std::min(blk.mcp, a.m - i0);
            detail::pack_a(g, i0, mc, a.m, p0, kc, ap);
            for (std::int64_t jb = 0; jb < nc; jb += nr)
              for (std::int64_t ib = 0; ib < mc; ib += mr)
                detail::micro_kernel(kc, ap + (ib / mr) * kc * mr, bp + (jb / nr) * kc * nr, pc + (i0 + ib) * a.ldc + j0 + jb,
                                     a.ldc, std::min(mr, mc - ib), std::min(nr, nc - jb), p0 > 0);
          }
        }
      }
      detail::matmul_epilogue(a, bias, pc);
    }
}

// Plain loops, no workspace: C row by row (axpy over rows of B), or dot products when B is stored
// transposed.
inline void matmul_loop(const matmul_attr& a, const float* A, const float* B, const float* bias, float* C) {
  for (std::int64_t b0 = 0; b0 < a.batch[0]; ++b0)
    for (std::int64_t b1 = 0; b1 < a.batch[1]; ++b1) {
      const detail::gemm_operands g{A + b0 * a.stride_a[0] + b1 * a.stride_a[1], B + b0 * a.stride_b[0] + b1 * a.stride_b[1],
                                    a.lda, a.ldb, a.trans_a, a.trans_b};
      float* pc = C + b0 * a.stride_c[0] + b1 * a.stride_c[1];
      for (std::int64_t i = 0; i < a.m; ++i) {
        float* row = pc + i * a.ldc;
        if (a.trans_b) {
          for (std::int64_t j = 0; j < a.n; ++j) {
            const float* bj = g.b + j * a.ldb;
            float s = 0.0f;
            for (std::int64_t p = 0; p < a.k; ++p) s += g.A(i, p) * bj[p];
            row[j] = s;
          }
        } else {
          for (std::int64_t j = 0; j < a.n; ++j) row[j] = 0.0f;
          for (std::int64_t p = 0; p < a.k; ++p) {
            const float aip = g.A(i, p);
            const float* bp = g.b + p * a.ldb;
            for (std::int64_t j = 0; j < a.n; ++j) row[j] += aip * bp[j];
          }
        }
      }
      detail::matmul_epilogue(a, bias, pc);
    }
}

// ---- convolution over tiles of output positions ----

namespace detail {
// col[r, q] for output positions p0 .. p0+t-1 (r over c*kh*kw), row stride t.
inline void im2col_tile(const conv_attr& a, const float* x, std::int64_t p0, std::int64_t t, float* col) {
  for (std::int64_t c = 0; c < a.c; ++c)
    for (std::int64_t i = 0; i < a.kh; ++i)
      for (std::int64_t j = 0; j < a.kw; ++j) {
        float* row = col + ((c * a.kh + i) * a.kw + j) * t;
        for (std::int64_t q = 0; q < t; ++q) {
          const auto oh = (p0 + q) / a.wo, ow = (p0 + q) % a.wo;
          const auto ih = oh * a.stride_h - a.pad_h + i, iw = ow * a.stride_w - a.pad_w + j;
          row[q] = (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w) ? x[(c * a.h + ih) * a.w + iw] : 0.0f;
        }
      }
}
// dx += col2im of a tile (dx is zeroed by the caller).
inline void col2im_tile_add(const conv_attr& a, const float* col, std::int64_t p0, std::int64_t t, float* dx) {
  for (std::int64_t c = 0; c < a.c; ++c)
    for (std::int64_t i = 0; i < a.kh; ++i)
      for (std::int64_t j = 0; j < a.kw; ++j) {
        const float* row = col + ((c * a.kh + i) * a.kw + j) * t;
        for (std::int64_t q = 0; q < t; ++q) {
          const auto oh = (p0 + q) / a.wo, ow = (p0 + q) % a.wo;
          const auto ih = oh * a.stride_h - a.pad_h + i, iw = ow * a.stride_w - a.pad_w + j;
          if (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w) dx[(c * a.h + ih) * a.w + iw] += row[q];
        }
      }
}
// The output columns ow whose input column ow*stride - pad + j lies in [0, w): [lo, hi).
inline void valid_cols(const conv_attr& a, std::int64_t j, std::int64_t& lo, std::int64_t& hi) {
  lo = 0;
  while (lo < a.wo && lo * a.stride_w - a.pad_w + j < 0) ++lo;
  hi = a.wo;
  while (hi > lo && (hi - 1) * a.stride_w - a.pad_w + j >= a.w) --hi;
}
}  // namespace detail

// y = conv(x, w) (+ bias) tile by tile; `col` holds conv_tiled_workspace_floats(a) floats.
inline void conv2d_tiled(const conv_attr& a, const float* x, const float* w, const float* bias, float* y, float* col) {
  const auto kr = a.col_rows(), kc = a.col_cols(), tile = conv_tile(a);
  const_matrix_map wm(w, a.f, kr, Eigen::OuterStride<>(kr));
  for (std::int64_t s = 0; s < a.n; ++s) {
    float* ys = y + s * a.f * kc;
    for (std::int64_t p0 = 0; p0 < kc; p0 += tile) {
      const auto t = std::min(tile, kc - p0);
      detail::im2col_tile(a, x + s * a.c * a.h * a.w, p0, t, col);
      const_matrix_map cm(col, kr, t, Eigen::OuterStride<>(t));
      matrix_map ym(ys + p0, a.f, t, Eigen::OuterStride<>(kc));
      ym.noalias() = wm * cm;
    }
    if (a.bias)
      for (std::int64_t f = 0; f < a.f; ++f)
        for (std::int64_t p = 0; p < kc; ++p) ys[f * kc + p] += bias[f];
  }
}

inline void conv2d_grad_input_tiled(const conv_attr& a, const float* w, const float* dy, float* dx, float* col) {
  const auto kr = a.col_rows(), kc = a.col_cols(), tile = conv_tile(a);
  const_matrix_map wm(w, a.f, kr, Eigen::OuterStride<>(kr));
  for (std::int64_t i = 0; i < a.n * a.c * a.h * a.w; ++i) dx[i] = 0.0f;
  for (std::int64_t s = 0; s < a.n; ++s)
    for (std::int64_t p0 = 0; p0 < kc; p0 += tile) {
      const auto t = std::min(tile, kc - p0);
      const_matrix_map dym(dy + s * a.f * kc + p0, a.f, t, Eigen::OuterStride<>(kc));
      matrix_map cm(col, kr, t, Eigen::OuterStride<>(t));
      cm.noalias() = wm.transpose() * dym;
      detail::col2im_tile_add(a, col, p0, t, dx + s * a.c * a.h * a.w);
    }
}

inline void conv2d_grad_weight_tiled(const conv_attr& a, const float* x, const float* dy, float* dw, float* col) {
  const auto kr = a.col_rows(), kc = a.col_cols(), tile = conv_tile(a);
  matrix_map dwm(dw, a.f, kr, Eigen::OuterStride<>(kr));
  dwm.setZero();
  for (std::int64_t s = 0; s < a.n; ++s)
    for (std::int64_t p0 = 0; p0 < kc; p0 += tile) {
      const auto t = std::min(tile, kc - p0);
      detail::im2col_tile(a, x + s * a.c * a.h * a.w, p0, t, col);
      const_matrix_map cm(col, kr, t, Eigen::OuterStride<>(t));
      const_matrix_map dym(dy + s * a.f * kc + p0, a.f, t, Eigen::OuterStride<>(kc));
      dwm.noalias() += dym * cm.transpose();
    }
}

// ---- direct convolution (no workspace) ----

inline void conv2d_direct(const conv_attr& a, const float* x, const float* w, const float* bias, float* y) {
  const auto plane = a.ho * a.wo;
  for (std::int64_t s = 0; s < a.n; ++s)
    for (std::int64_t f = 0; f < a.f; ++f) {
      float* yp = y + (s * a.f + f) * plane;
      const float b = a.bias ? bias[f] : 0.0f;
      for (std::int64_t p = 0; p < plane; ++p) yp[p] = 0.0f;
      for (std::int64_t c = 0; c < a.c; ++c) {
        const float* xp = x + (s * a.c + c) * a.h * a.w;
        for (std::int64_t i = 0; i < a.kh; ++i)
          for (std::int64_t j = 0; j < a.kw; ++j) {
            const float wv = w[((f * a.c + c) * a.kh + i) * a.kw + j];
            std::int64_t lo = 0, hi = 0;
            detail::valid_cols(a, j, lo, hi);
            for (std::int64_t oh = 0; oh < a.ho; ++oh) {
              const auto ih = oh * a.stride_h - a.pad_h + i;
              if (ih < 0 || ih >= a.h) continue;
              const auto at = ih * a.w - a.pad_w + j;  // input index of ow = 0 (may lie left of the row)
              float* yr = yp + oh * a.wo;
              for (std::int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xp[at + ow * a.stride_w];
            }
          }
      }
      if (a.bias)
        for (std::int64_t p = 0; p < plane; ++p) yp[p] += b;
    }
}

inline void conv2d_grad_input_direct(const conv_attr& a, const float* w, const float* dy, float* dx) {
  const auto plane = a.ho * a.wo;
  for (std::int64_t i = 0; i < a.n * a.c * a.h * a.w; ++i) dx[i] = 0.0f;
  for (std::int64_t s = 0; s < a.n; ++s)
    for (std::int64_t c = 0; c < a.c; ++c) {
      float* dxp = dx + (s * a.c + c) * a.h * a.w;
      for (std::int64_t f = 0; f < a.f; ++f) {
        const float* dyp = dy + (s * a.f + f) * plane;
        for (std::int64_t i = 0; i < a.kh; ++i)
          for (std::int64_t j = 0; j < a.kw; ++j) {
            const float wv = w[((f * a.c + c) * a.kh + i) * a.kw + j];
            std::int64_t lo = 0, hi = 0;
            detail::valid_cols(a, j, lo, hi);
            for (std::int64_t oh = 0; oh < a.ho; ++oh) {
              const auto ih = oh * a.stride_h - a.pad_h + i;
              if (ih < 0 || ih >= a.h) continue;
              const auto at = ih * a.w - a.pad_w + j;
              const float* dr = dyp + oh * a.wo;
              for (std::int64_t ow = lo; ow < hi; ++ow) dxp[at + ow * a.stride_w] += wv * dr[ow];
            }
          }
      }
    }
}

inline void conv2d_grad_weight_direct(const conv_attr& a, const float* x, const float* dy, float* dw) {
  const auto plane = a.ho * a.wo;
  for (std::int64_t f = 0; f < a.f; ++f)
    for (std::int64_t c = 0; c < a.c; ++c)
      for (std::int64_t i = 0; i < a.kh; ++i)
        for (std::int64_t j = 0; j < a.kw; ++j) {
          std::int64_t lo = 0, hi = 0;
          detail::valid_cols(a, j, lo, hi);
          float sum = 0.0f;
          for (std::int64_t s = 0; s < a.n; ++s) {
            const float* xp = x + (s * a.c + c) * a.h * a.w;
            const float* dyp = dy + (s * a.f + f) * plane;
            for (std::int64_t oh = 0; oh < a.ho; ++oh) {
              const auto ih = oh * a.stride_h - a.pad_h + i;
              if (ih < 0 || ih >= a.h) continue;
              const auto at = ih * a.w - a.pad_w + j;
              const float* dr = dyp + oh * a.wo;
              for (std::int64_t ow = lo; ow < hi; ++ow) sum += dr[ow] * xp[at + ow * a.stride_w];
            }
          }
          dw[((f * a.c + c) * a.kh + i) * a.kw + j] = sum;
        }
}

}  // namespace kernels
}  // namespace memplan::ad
