// LSTM, GRU and RNN imported as their equations (the ONNX operator
// definitions), unrolled over the sequence, whose length is static: the
// input projection X W^T + biases is one product over every step, then each
// step is a product with the recurrent weights and elementwise gates, in
// primitives the targets already fuse and call libraries for. Nothing here
// decides how the steps run: the e-graph and the lowering see ordinary
// products, slices and elementwise ops.
//
// Invariants: every value is in the graph's time-major form ([seq, batch,
// ...]) until the results, which layout 1 transposes back; a step past a
// batch row's sequence_lens keeps that row's state and writes zeros to Y,
// as ONNX Runtime does.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ir/onnx_importer.hpp"

namespace saturn::ir::onnx_detail {

namespace {

struct Recurrence {
  const char* name;  // "LSTM", "GRU", "RNN"
  std::int64_t gates;
  std::vector<std::string> default_activations;  // per direction
};

// One activation of the `activations` attribute, with its alpha and beta
// where it takes them (defaults as the ONNX op of that name).
struct Activation {
  std::string name;  // lower case
  double alpha = 0, beta = 0;
};

// Affine, ScaledTanh and ThresholdedRelu have no default that runtimes
// agree on (the ONNX definition says "as the op of that name", which for
// the first two was never fixed; ONNX Runtime takes 0 for all three):
// they must be given.
constexpr double kNoDefault = std::numeric_limits<double>::quiet_NaN();

// ONNX consumes activation_alpha / activation_beta in the order of the
// activations, each function taking the values it uses (ONNX Runtime's
// reading of the definition).
std::vector<Activation> read_activations(Importer& im, const Recurrence& r, std::int64_t directions) {
  std::vector<std::string> names;
  if (auto* a = im.typed_attr("activations", onnx::AttributeProto::STRINGS))
    names.assign(a->strings().begin(), a->strings().end());
  else
    for (std::int64_t d = 0; d < directions; ++d)
      names.insert(names.end(), r.default_activations.begin(), r.default_activations.end());
  const auto per = static_cast<std::int64_t>(r.default_activations.size());
  if (static_cast<std::int64_t>(names.size()) != per * directions)
    im.unsupported("activations lists " + std::to_string(names.size()) + " functions, " + std::string(r.name) +
                   " with " + std::to_string(directions) + " direction(s) takes " + std::to_string(per * directions));
  std::vector<double> alphas, betas;
  if (auto* a = im.typed_attr("activation_alpha", onnx::AttributeProto::FLOATS))
    alphas.assign(a->floats().begin(), a->floats().end());
  if (auto* a = im.typed_attr("activation_beta", onnx::AttributeProto::FLOATS))
    betas.assign(a->floats().begin(), a->floats().end());
  std::size_t next_alpha = 0, next_beta = 0;
  auto take = [](const std::vector<double>& v, std::size_t& k, double fallback) {
    return k < v.size() ? v[k++] : fallback;
  };
  std::vector<Activation> out;
  for (std::string n : names) {
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    Activation f{n};
    if (n == "leakyrelu") {
      f.alpha = take(alphas, next_alpha, 0.01);
    } else if (n == "elu") {
      f.alpha = take(alphas, next_alpha, 1.0);
    } else if (n == "thresholdedrelu") {
      f.alpha = take(alphas, next_alpha, kNoDefault);
    } else if (n == "hardsigmoid") {
      f.alpha = take(alphas, next_alpha, 0.2);
      f.beta = take(betas, next_beta, 0.5);
    } else if (n == "affine" || n == "scaledtanh") {
      f.alpha = take(alphas, next_alpha, kNoDefault);
      f.beta = take(betas, next_beta, kNoDefault);
    } else if (n != "sigmoid" && n != "tanh" && n != "relu" && n != "softsign" && n != "softplus") {
      im.unsupported("activation '" + n + "' is not one ONNX defines for recurrent ops");
    }
    if (std::isnan(f.alpha) || std::isnan(f.beta))
      im.unsupported("activation '" + n + "' needs its alpha" + (n == "thresholdedrelu" ? "" : " and beta") +
                     " in activation_alpha / activation_beta: the defaults are not agreed on (ONNX Runtime uses 0)");
    out.push_back(f);
  }
  return out;
}

// The most steps unrolled for one node (directions together): some 25
// nodes a step, so a graph of about 1.6 million nodes, which saturation
// and extraction already take minutes over. (A mutated model's sequence
// of 2^31 had the import allocate until the machine's memory ran out.)
constexpr std::int64_t kMostSteps = 1 << 16;

class Unroller {
 public:
  Unroller(Importer& im, const Recurrence& r) : im_(im), r_(r) {}

  void run() {
    im_.ignore({"output_sequence"});  // opsets 1-6: the results present say it
    const std::string direction = im_.as("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
      im_.unsupported("direction '" + direction + "' is not forward, reverse or bidirectional");
    const std::int64_t directions = direction == "bidirectional" ? 2 : 1;
    const bool batch_major = im_.ai("layout", 0) != 0;
    clip_ = im_.af("clip", 0.0);
    if (im_.has_attr("clip") && !(clip_ > 0)) im_.unsupported("clip must be positive");
    acts_ = read_activations(im_, r_, directions);
    base_ = im_.fresh(im_.out(0).empty() ? im_.out(1).empty() ? std::string(r_.name) : im_.out(1) : im_.out(0));

    const ValueType& xt = im_.type_of(im_.in(0));
    dt_ = xt.dtype;
    if (!is_float(dt_)) im_.unsupported("X must be a floating type, it is " + std::string(dtype_name(dt_)));
    const std::vector<std::int64_t> xd = dims_of(im_.in(0), "X", 3);
    seq_ = batch_major ? xd[1] : xd[0];
    batch_ = batch_major ? xd[0] : xd[1];
    if (seq_ < 1) im_.unsupported("X holds no step (its sequence length is 0)");
    if (seq_ * directions > kMostSteps)
      im_.unsupported("unrolled, its " + std::to_string(seq_) + " steps" +
                      (directions > 1 ? " in each direction" : std::string()) + " would be more than " +
                      std::to_string(kMostSteps) + ": the IR has no loop to run a sequence that long");
    input_ = xd[2];
    const std::int64_t input = input_;
    hidden_ = im_.ai("hidden_size", -1);
    const std::vector<std::int64_t> wd = dims_of(im_.in(1), "W", 3), rd = dims_of(im_.in(2), "R", 3);
    if (hidden_ <= 0) hidden_ = rd[2];
    const std::int64_t gh = r_.gates * hidden_;
    expect(im_.in(1), "W", wd, {directions, gh, input});
    expect(im_.in(2), "R", rd, {directions, gh, hidden_});
    if (im_.has_in(3)) expect(im_.in(3), "B", dims_of(im_.in(3), "B", 2), {directions, 2 * gh});
    const std::vector<std::int64_t> state = batch_major ? std::vector<std::int64_t>{batch_, directions, hidden_}
                                                        : std::vector<std::int64_t>{directions, batch_, hidden_};
    if (im_.has_in(5)) expect(im_.in(5), "initial_h", dims_of(im_.in(5), "initial_h", 3), state);
    if (lstm() && im_.has_in(6)) expect(im_.in(6), "initial_c", dims_of(im_.in(6), "initial_c", 3), state);
    if (lstm() && im_.has_in(7)) expect(im_.in(7), "P", dims_of(im_.in(7), "P", 2), {directions, 3 * hidden_});
    for (int k : {1, 2, 3, 5, 6, 7})
      if (im_.has_in(k) && im_.type_of(im_.in(k)).dtype != dt_ && (k <= 5 || lstm()))
        im_.unsupported("operand '" + im_.in(k) + "' is " + dtype_name(im_.type_of(im_.in(k)).dtype) + ", X is " +
                        dtype_name(dt_));
    input_forget_ = lstm() && im_.ai("input_forget", 0) != 0;
    linear_before_reset_ = r_.gates == 3 && im_.ai("linear_before_reset", 0) != 0;
    read_sequence_lens(direction);

    const std::string x = batch_major ? op("transpose", {im_.in(0)}, list_attr("perm", {1, 0, 2})) : im_.in(0);
    auto state_in = [&](int k) {
      if (!im_.has_in(k)) return std::string();
      return batch_major ? op("transpose", {im_.in(k)}, list_attr("perm", {1, 0, 2})) : im_.in(k);
    };
    const std::string h0 = state_in(5), c0 = lstm() ? state_in(6) : std::string();

    std::vector<std::string> ys, hs, cs;
    for (std::int64_t d = 0; d < directions; ++d) {
      const bool reverse = direction == "reverse" || d == 1;
      Direction out = unroll(x, d, reverse, h0, c0);
      ys.push_back(out.y);
      hs.push_back(out.h);
      cs.push_back(out.c);
    }
    auto joined = [&](const std::vector<std::string>& parts, std::int64_t axis) {
      return parts.size() == 1 ? parts[0] : op("concat", parts, int_attr("axis", axis));
    };
    if (!im_.out(0).empty()) {  // [seq, dirs, batch, hidden]; layout 1: [batch, seq, dirs, hidden]
      const std::string y = joined(ys, 1);
      result(0, batch_major ? op("transpose", {y}, list_attr("perm", {2, 0, 1, 3})) : y);
    }
    auto final_state = [&](int k, const std::vector<std::string>& parts) {
      if (im_.out(k).empty()) return;
      std::vector<std::string> rows;
      for (const std::string& p : parts) rows.push_back(op("unsqueeze", {p}, list_attr("axes", {0})));
      const std::string s = joined(rows, 0);  // [dirs, batch, hidden]
      result(k, batch_major ? op("transpose", {s}, list_attr("perm", {1, 0, 2})) : s);
    };
    final_state(1, hs);
    if (lstm()) final_state(2, cs);
  }

 private:
  struct Direction {
    std::string y, h, c;
  };

  bool lstm() const { return r_.gates == 4; }

  std::vector<std::int64_t> dims_of(const std::string& v, const char* what, std::size_t rank) {
    const Shape& s = im_.type_of(v).shape;
    if (!is_static(s)) im_.unsupported(std::string(what) + " (operand '" + v + "') needs a static shape");
    if (s.size() != rank)
      im_.unsupported(std::string(what) + " (operand '" + v + "') must have rank " + std::to_string(rank) + ", it is " +
                      to_string(s));
    return static_dims(s);
  }
  void expect(const std::string& v, const char* what, const std::vector<std::int64_t>& got,
              const std::vector<std::int64_t>& want) {
    if (got != want)
      im_.unsupported(std::string(what) + " (operand '" + v + "') is " + to_string(shape_of(got)) + ", " + r_.name +
                      " with these X, hidden_size and direction needs " + to_string(shape_of(want)));
  }

  // A step past a row's length keeps the row's state: with sequence_lens a
  // constant equal to the sequence everywhere, there is none.
  void read_sequence_lens(const std::string& direction) {
    if (!im_.has_in(4)) return;
    const std::string v = im_.in(4);
    const std::vector<std::int64_t> d = dims_of(v, "sequence_lens", 1);
    if (d[0] != batch_) im_.unsupported("sequence_lens (operand '" + v + "') must hold one length per batch row");
    if (const Tensor* t = im_.const_value(v)) {
      const std::vector<std::int64_t> lens = t->to_ints();
      for (std::int64_t n : lens)
        if (n < 0 || n > seq_)
          im_.unsupported("sequence_lens holds " + std::to_string(n) + ", outside 0.." + std::to_string(seq_));
      if (std::all_of(lens.begin(), lens.end(), [&](std::int64_t n) { return n == seq_; })) return;
    }
    // A reversed row starts at its own last element: not expressible as
    // these steps over the whole sequence.
    if (direction != "forward")
      im_.unsupported("sequence_lens shorter than the sequence is supported for direction forward only");
    lens_ = op("reshape", {op("cast", {v}, text_attr("to", "i64"))}, list_attr("shape", {batch_, 1}));
  }

  Direction unroll(const std::string& x, std::int64_t d, bool reverse, const std::string& h0, const std::string& c0) {
    const std::int64_t gh = r_.gates * hidden_;
    auto of_direction = [&](const std::string& v, std::vector<std::int64_t> shape) {
      return op("reshape", {slice(v, 0, d, d + 1)}, list_attr("shape", std::move(shape)));
    };
    const std::string w = op("transpose", {of_direction(im_.in(1), {gh, input_})});    // [input, G*H]
    const std::string rt = op("transpose", {of_direction(im_.in(2), {gh, hidden_})});  // [H, G*H]
    // Biases: Wb + Rb join the input projection, except GRU's recurrent
    // h-gate bias under linear_before_reset, which the reset gate scales.
    // X as the rows of one 2-D product: X often arrives transposed from
    // batch-first (torch's export), and a 3-D product of a transposed X
    // is one library call per step (a 2-layer GRU's first layer: 24 calls,
    // 45 us, against one 48-row call after a 12 KB copy).
    std::string xw = op("matmul", {op("reshape", {x}, list_attr("shape", {seq_ * batch_, input_})), w});
    xw = op("reshape", {xw}, list_attr("shape", {seq_, batch_, gh}));  // [seq, batch, G*H]
    std::string rbh;
    if (im_.has_in(3)) {
      const std::string b = of_direction(im_.in(3), {2 * gh});
      const std::string wb = slice(b, 0, 0, gh), rb = slice(b, 0, gh, 2 * gh);
      std::string bias = op("add", {wb, rb});
      if (linear_before_reset_) {
        bias = op("concat", {slice(bias, 0, 0, 2 * hidden_), slice(wb, 0, 2 * hidden_, gh)},
                  int_attr("axis", std::int64_t{0}));
        rbh = slice(rb, 0, 2 * hidden_, gh);
      }
      xw = op("add", {xw, bias});
    }
    auto initial = [&](const std::string& v) {
      // (a broadcast, which the import folds only after asking whether it fits in memory)
      return v.empty()
                 ? op("expand", {constant("zero", Tensor::scalar(dt_, 0.0))}, list_attr("shape", {batch_, hidden_}))
                 : of_direction(v, {batch_, hidden_});
    };
    std::string h = initial(h0), c = lstm() ? initial(c0) : std::string();
    std::vector<std::string> peep;
    if (lstm() && im_.has_in(7)) {
      const std::string p = of_direction(im_.in(7), {3 * hidden_});
      for (std::int64_t k = 0; k < 3; ++k) peep.push_back(slice(p, 0, k * hidden_, (k + 1) * hidden_));
    }
    const auto fn = [&](std::size_t k) {
      return acts_[static_cast<std::size_t>(d) * r_.default_activations.size() + k];
    };
    std::vector<std::string> y(static_cast<std::size_t>(seq_));
    for (std::int64_t s = 0; s < seq_; ++s) {
      const std::int64_t t = reverse ? seq_ - 1 - s : s;
      const std::string xt = op("reshape", {slice(xw, 0, t, t + 1)}, list_attr("shape", {batch_, gh}));
      std::string h_new, c_new;
      if (lstm()) {
        const std::string g = op("add", {xt, op("matmul", {h, rt})});
        auto gate = [&](std::int64_t k) { return slice(g, 1, k * hidden_, (k + 1) * hidden_); };
        std::string i_pre = gate(0), o_pre = gate(1), f_pre = gate(2), c_pre = gate(3);
        if (!peep.empty()) {
          i_pre = op("add", {i_pre, op("mul", {peep[0], c})});
          f_pre = op("add", {f_pre, op("mul", {peep[2], c})});
        }
        const std::string i = activate(fn(0), i_pre);
        const std::string f =
            input_forget_ ? op("sub", {constant("one", Tensor::scalar(dt_, 1.0)), i}) : activate(fn(0), f_pre);
        c_new = op("add", {op("mul", {f, c}), op("mul", {i, activate(fn(1), c_pre)})});
        if (!peep.empty()) o_pre = op("add", {o_pre, op("mul", {peep[1], c_new})});
        // ONNX Runtime does not clip the cell state on its way into h.
        h_new = op("mul", {activate(fn(0), o_pre), activate(fn(2), c_new, false)});
      } else if (r_.gates == 3) {
        const std::string zr_x = slice(xt, 1, 0, 2 * hidden_), h_x = slice(xt, 1, 2 * hidden_, gh);
        std::string zr, hh;
        if (linear_before_reset_) {
          const std::string hr = op("matmul", {h, rt});
          zr = op("add", {zr_x, slice(hr, 1, 0, 2 * hidden_)});
          std::string rec = slice(hr, 1, 2 * hidden_, gh);
          if (!rbh.empty()) rec = op("add", {rec, rbh});
          zr = activate(fn(0), zr);
          hh = op("add", {h_x, op("mul", {slice(zr, 1, hidden_, 2 * hidden_), rec})});
        } else {
          zr = activate(fn(0), op("add", {zr_x, op("matmul", {h, slice(rt, 1, 0, 2 * hidden_)})}));
          const std::string reset = op("mul", {slice(zr, 1, hidden_, 2 * hidden_), h});
          hh = op("add", {h_x, op("matmul", {reset, slice(rt, 1, 2 * hidden_, gh)})});
        }
        hh = activate(fn(1), hh);
        const std::string z = slice(zr, 1, 0, hidden_);
        h_new = op("add", {hh, op("mul", {z, op("sub", {h, hh})})});  // (1 - z) hh + z h
      } else {
        h_new = activate(fn(0), op("add", {xt, op("matmul", {h, rt})}));
      }
      std::string y_t = h_new;
      if (!lens_.empty()) {
        const std::string live = op("less", {constant("step", Tensor::of_ints(DType::I64, {}, {t})), lens_});
        h_new = op("where", {live, h_new, h});
        if (lstm()) c_new = op("where", {live, c_new, c});
        y_t = op("where", {live, y_t, constant("zero", Tensor::scalar(dt_, 0.0))});
      }
      h = h_new;
      c = c_new;
      y[static_cast<std::size_t>(t)] = op("reshape", {y_t}, list_attr("shape", {1, 1, batch_, hidden_}));
    }
    return {seq_ == 1 ? y[0] : op("concat", y, int_attr("axis", std::int64_t{0})), h, c};
  }

  // The pre-activation clipped to [-clip, clip] when clip is set (ONNX
  // clips every gate's input), then the function.
  std::string activate(const Activation& f, std::string v, bool clipped = true) {
    if (clipped && clip_ > 0) {
      Attrs a;
      a.set("min", -clip_);
      a.set("max", clip_);
      v = op("clip", {v}, std::move(a));
    }
    const std::string& n = f.name;
    auto alpha = [&](const char* opname, Attrs extra = {}) {
      extra.set("alpha", f.alpha);
      return op(opname, {v}, std::move(extra));
    };
    if (n == "sigmoid" || n == "tanh" || n == "relu" || n == "softsign" || n == "softplus") return op(n.c_str(), {v});
    if (n == "leakyrelu") return alpha("leaky_relu");
    if (n == "elu") return alpha("elu");
    if (n == "thresholdedrelu") return alpha("thresholded_relu");
    if (n == "hardsigmoid") {
      Attrs b;
      b.set("beta", f.beta);
      return alpha("hard_sigmoid", std::move(b));
    }
    const std::string a = constant("alpha", Tensor::scalar(dt_, f.alpha)),
                      b = constant("beta", Tensor::scalar(dt_, f.beta));
    if (n == "affine") return op("add", {op("mul", {v, a}), b});
    return op("mul", {op("tanh", {op("mul", {v, b})}), a});  // scaledtanh: alpha tanh(beta x)
  }

  std::string op(const char* name, std::vector<std::string> ins, Attrs a = {}) {
    return im_.emit_fresh(base_, name, std::move(ins), std::move(a));
  }
  std::string constant(const char* what, Tensor t) { return im_.add_fresh_const(base_, what, std::move(t)); }
  void result(int k, const std::string& v) { im_.emit("identity", {v}, {im_.out(k)}); }
  std::string slice(const std::string& v, std::int64_t axis, std::int64_t begin, std::int64_t end) {
    Attrs a;
    a.set("starts", std::vector<std::int64_t>{begin});
    a.set("ends", std::vector<std::int64_t>{end});
    a.set("axes", std::vector<std::int64_t>{axis});
    return op("slice", {v}, std::move(a));
  }
  Importer& im_;
  const Recurrence& r_;
  std::vector<Activation> acts_;
  std::string base_, lens_;
  DType dt_ = DType::F32;
  std::int64_t seq_ = 0, batch_ = 0, input_ = 0, hidden_ = 0;
  double clip_ = 0;
  bool input_forget_ = false, linear_before_reset_ = false;
};

}  // namespace

void import_recurrent(ImportTable& t) {
  static const Recurrence lstm{"LSTM", 4, {"sigmoid", "tanh", "tanh"}};
  static const Recurrence gru{"GRU", 3, {"sigmoid", "tanh"}};
  static const Recurrence rnn{"RNN", 1, {"tanh"}};
  t["LSTM"] = [](Importer& im) { Unroller(im, lstm).run(); };
  t["GRU"] = [](Importer& im) { Unroller(im, gru).run(); };
  t["RNN"] = [](Importer& im) { Unroller(im, rnn).run(); };
}

}  // namespace saturn::ir::onnx_detail
