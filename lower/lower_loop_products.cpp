// Plain products and convolutions (matmul, gemm, conv, einsum's cousins) as
// loop nests Saturn generates: one kernel summing operand products along the
// contracted axes, each operand read through a strided view that walks the
// summed axes (no im2col, no copies but the zero padding of a convolution's
// input). These are what a graph runs as written (`saturn run --no-opt`);
// a library call runs one only when the extractor chose its library op
// (blas.matmul, dnnl.conv, ...), which the cost model prices against these
// loops (TargetSpec::naive_contract_gflops).
#include "lower/lowerer.hpp"

namespace saturn::lower {

Value Lowerer::product_loops(const ir::Node& n, Value& a, Value& b, bool ta, bool tb, double alpha, const Dims& out,
                             DType result) {
  const std::size_t r = out.size();
  const std::int64_t K = ta ? a.dims[a.dims.size() - 2] : a.dims.back();
  // The loops run over [batch..., M, N, K], K summed: a broadcast along N,
  // b along M.
  Dims full = out;
  full.push_back(K);
  for (Value* v : {&a, &b})
    if (v->pending || v->is_scalar_constant) v->view = whole(*v);
  auto oriented = [](View v, bool transpose) {
    const std::size_t k = v.dims.size();
    if (transpose) {
      std::swap(v.dims[k - 1], v.dims[k - 2]);
      std::swap(v.strides[k - 1], v.strides[k - 2]);
    }
    return v;
  };
  Dims a_to(out.begin(), out.end() - 1), b_to(out.begin(), out.end() - 2);
  a_to.push_back(K);
  b_to.insert(b_to.end(), {K, out.back()});
  View av = oriented(a.view, ta).broadcast_to(a_to), bv = oriented(b.view, tb).broadcast_to(b_to);
  av.dims = bv.dims = full;
  av.strides.insert(av.strides.end() - 1, 0);  // [.. sM 0 sK]
  bv.strides.push_back(bv.strides[r - 2]);     // [.. sK sN sK]
  bv.strides[r - 2] = 0;                       // [.. 0 sN sK]
  std::vector<bool> red(full.size(), false);
  red.back() = true;
  const ir::Sym body = sym(leaf(av)) * sym(leaf(bv));
  const SymId post = alpha == 1.0 ? acc_ : (sym(acc_) * alpha).id();
  return reduce(body.id(), full, red, ReduceKind::Sum, post, 1, n.op + " (loops)", result, float_compute(a));
}

bool Lowerer::lower_gemm_loops(const ir::Node& n, std::vector<Value*>& in, const Dims& out) {
  if (in.size() < 2 || !in[0] || !in[1] || in[0]->dims.size() != 2 || in[1]->dims.size() != 2 ||
      !ir::is_float(in[0]->dtype) || in[1]->dtype != in[0]->dtype || n.outputs.size() != 1)
    return false;
  const DType t = in[0]->dtype;
  Value* c = in.size() > 2 ? in[2] : nullptr;
  const double beta = n.attrs.f("beta", 1.0);
  // With C, the product stays in the compute type until beta C is added:
  // one rounding to t, as the reference's.
  const DType product = adds_product_bias(c, beta) ? float_compute(*in[0]) : t;
  Value y = reshaped_to(product_loops(n, *in[0], *in[1], n.attrs.i("transA", 0) != 0, n.attrs.i("transB", 0) != 0,
                                      n.attrs.f("alpha", 1.0), out, product),
                        out);
  add_product_bias(n, std::move(y), c, beta, out, t);
  return true;
}

bool Lowerer::lower_conv_loops(const ir::Node& n, std::vector<Value*>& in, const Dims& out) {
  if (in.size() < 2 || !in[0] || !in[1] || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  Value& x = *in[0];
  Value& w = *in[1];
  const std::size_t r = x.dims.size();
  if (r < 3 || w.dims.size() != r || !ir::is_float(x.dtype) || w.dtype != x.dtype) return false;
  const std::size_t s = r - 2;
  const ir::WindowGeometry win = ir::window_geometry(n.attrs, Dims(x.dims.begin() + 2, x.dims.end()),
                                                     Dims(w.dims.begin() + 2, w.dims.end()), false);
  // Zero padding the windows read, exactly up to the last window's end (a
  // negative end crops what no window reaches).
  Dims pads(2 * r, 0);
  bool padded = false;
  for (std::size_t i = 0; i < s; ++i) {
    const std::int64_t span = (win.kernel[i] - 1) * win.dilations[i] + 1;
    pads[2 + i] = win.pads_begin[i];
    pads[r + 2 + i] = (out[2 + i] - 1) * win.strides[i] + span - x.dims[2 + i] - win.pads_begin[i];
    padded |= pads[2 + i] != 0 || pads[r + 2 + i] != 0;
  }
  Value xp = padded ? stored(emit_pad(x, pads, "constant", 0.0, n.outputs[0] + " padded input")) : x;
  const View xv = dense(xp), wv = dense(w);
  const std::int64_t G = n.attrs.i("group", 1), M = w.dims[0], Cg = w.dims[1], Mg = M / G;
  // [N, G, M/G, out spatial..., C/G, kernel...], the last 1 + s summed.
  Dims full{out[0], G, Mg};
  full.insert(full.end(), out.begin() + 2, out.end());
  full.push_back(Cg);
  full.insert(full.end(), w.dims.begin() + 2, w.dims.end());
  View xl{xv.buffer, xv.offset, full, Dims(full.size(), 0)};
  View wl{wv.buffer, wv.offset, full, Dims(full.size(), 0)};
  xl.strides[0] = xv.strides[0];
  xl.strides[1] = Cg * xv.strides[1];
  wl.strides[1] = Mg * wv.strides[0];
  wl.strides[2] = wv.strides[0];
  xl.strides[3 + s] = xv.strides[1];
  wl.strides[3 + s] = wv.strides[1];
  for (std::size_t i = 0; i < s; ++i) {
    xl.strides[3 + i] = win.strides[i] * xv.strides[2 + i];
    xl.strides[4 + s + i] = win.dilations[i] * xv.strides[2 + i];
    wl.strides[4 + s + i] = wv.strides[2 + i];
  }
  std::vector<bool> red(full.size(), false);
  for (std::size_t i = 3 + s; i < full.size(); ++i) red[i] = true;
  ir::Sym body = sym(leaf(xl)) * sym(leaf(wl));
  if (padded) {
    // The reference skips the taps in the padding: 0 times a non-finite
    // weight would be NaN. A constant mask of the padded spatial dims (1
    // inside) says which taps count.
    const Dims sp(xp.dims.begin() + 2, xp.dims.end());
    ir::Tensor mask(x.dtype, sp);
    for (std::int64_t i = 0; i < ir::numel(sp); ++i) {
      const std::vector<std::int64_t> at = ir::unflatten(i, sp);
      bool inside = true;
      for (std::size_t d = 0; d < s; ++d) inside &= at[d] >= pads[2 + d] && at[d] < pads[2 + d] + x.dims[2 + d];
      mask.set(static_cast<std::size_t>(i), inside ? 1.0 : 0.0);
    }
    folded_->push_back(std::move(mask));
    const View mv = View::of(add_weight(&folded_->back(), n.outputs[0] + " padding mask"), sp);
    View ml{mv.buffer, 0, full, Dims(full.size(), 0)};
    for (std::size_t i = 0; i < s; ++i) {
      ml.strides[3 + i] = win.strides[i] * mv.strides[i];
      ml.strides[4 + s + i] = win.dilations[i] * mv.strides[i];
    }
    body = ir::scalar::select(sym(leaf(ml)) > 0.5, body, 0.0);
  }
  // With a bias, the sums stay in the compute type until it is added: one
  // rounding to x's type, as the reference's.
  Value* bias = in.size() > 2 ? in[2] : nullptr;
  const DType compute = float_compute(x);
  Value y = reshaped_to(
      reduce(body.id(), full, red, ReduceKind::Sum, acc_, 1, n.op + " (loops)", bias ? compute : x.dtype, compute),
      out);
  if (!bias) {
    values_[n.outputs[0]] = std::move(y);
    return true;
  }
  const ir::Sym with_bias = sym(leaf(y.view)) + sym(channel(*bias, out));
  std::vector<Value*> none;
  set_pending(n, none, out, x.dtype, with_bias.id(), 1, 0, compute);
  return true;
}

}  // namespace saturn::lower
