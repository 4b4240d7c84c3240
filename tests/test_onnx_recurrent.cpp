// LSTM, GRU and RNN imported as their unrolled equations
// (ir/onnx_recurrent.cpp): values against the ONNX definitions spelled out
// here as loops, for each option the import reads; errors name the node.
#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "onnx_model_builder.hpp"
#include "runtime/interp.hpp"

using namespace saturn;
using namespace saturn::ir;
using saturn::test::attr_int;
using saturn::test::ModelBuilder;

namespace {

void attr_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void attr_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void attr_strings(onnx::NodeProto* n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const auto& s : v) a->add_strings(s);
}
void attr_floats(onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float f : v) a->add_floats(f);
}

Tensor filled(std::vector<std::int64_t> dims, double step, double scale = 0.8) {
  Tensor t(DType::F32, std::move(dims));
  for (std::size_t i = 0; i < t.numel(); ++i) t.set(i, std::sin(static_cast<double>(i + 1) * step) * scale);
  return t;
}
std::vector<std::string> dims(std::vector<std::int64_t> d) {
  std::vector<std::string> s;
  for (auto x : d) s.push_back(std::to_string(x));
  return s;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// One direction of the ONNX equations over time-major X [seq, batch, input],
// for gate count g (LSTM 4: i o f c; GRU 3: z r h; RNN 1). Returns Y
// [seq][batch][hidden] and the final h and c.
struct Reference {
  Reference(std::int64_t gates, std::int64_t s, std::int64_t b, std::int64_t i, std::int64_t h)
      : g(gates), seq(s), batch(b), input(i), hidden(h) {}
  std::int64_t g, seq, batch, input, hidden;
  bool reverse = false, linear_before_reset = false;
  double clip = 0;
  std::vector<std::int64_t> lens;  // empty: the whole sequence
  std::function<double(double)> f = sigmoid, gf = [](double x) { return std::tanh(x); },
                                hf = [](double x) { return std::tanh(x); };
  // weights of this direction: W [g*H, I], R [g*H, H], B [2*g*H] (or empty), P [3H] (or empty)
  std::vector<double> y, h, c;

  void run(const Tensor& x, const Tensor& w, const Tensor& r, const Tensor* b, const Tensor* h0, const Tensor* c0,
           const Tensor* p, std::int64_t d) {
    const std::int64_t G = g * hidden;
    auto W = [&](std::int64_t row, std::int64_t k) {
      return w.at(static_cast<std::size_t>((d * G + row) * input + k));
    };
    auto R = [&](std::int64_t row, std::int64_t k) {
      return r.at(static_cast<std::size_t>((d * G + row) * hidden + k));
    };
    auto Wb = [&](std::int64_t row) { return b ? b->at(static_cast<std::size_t>(d * 2 * G + row)) : 0.0; };
    auto Rb = [&](std::int64_t row) { return b ? b->at(static_cast<std::size_t>(d * 2 * G + G + row)) : 0.0; };
    auto P = [&](std::int64_t k, std::int64_t j) {
      return p ? p->at(static_cast<std::size_t>(d * 3 * hidden + k * hidden + j)) : 0.0;
    };
    auto cl = [&](double v) { return clip > 0 ? std::clamp(v, -clip, clip) : v; };
    h.assign(static_cast<std::size_t>(batch * hidden), 0.0);
    c = h;
    for (std::size_t k = 0; k < h.size(); ++k) {
      if (h0) h[k] = h0->at(static_cast<std::size_t>(d) * h.size() + k);
      if (c0) c[k] = c0->at(static_cast<std::size_t>(d) * h.size() + k);
    }
    y.assign(static_cast<std::size_t>(seq * batch * hidden), 0.0);
    for (std::int64_t s = 0; s < seq; ++s) {
      const std::int64_t t = reverse ? seq - 1 - s : s;
      std::vector<double> hn = h, cn = c;
      for (std::int64_t bi = 0; bi < batch; ++bi) {
        if (!lens.empty() && t >= lens[static_cast<std::size_t>(bi)]) continue;
        auto xw = [&](std::int64_t row) {
          double v = Wb(row);
          for (std::int64_t k = 0; k < input; ++k)
            v += x.at(static_cast<std::size_t>((t * batch + bi) * input + k)) * W(row, k);
          return v;
        };
        auto hr = [&](std::int64_t row, const std::vector<double>& hv) {
          double v = 0;
          for (std::int64_t k = 0; k < hidden; ++k) v += hv[static_cast<std::size_t>(bi * hidden + k)] * R(row, k);
          return v;
        };
        for (std::int64_t j = 0; j < hidden; ++j) {
          const auto at = static_cast<std::size_t>(bi * hidden + j);
          if (g == 4) {
            auto pre = [&](std::int64_t k) { return xw(k * hidden + j) + hr(k * hidden + j, h) + Rb(k * hidden + j); };
            const double i = f(cl(pre(0) + P(0, j) * c[at])), fg = f(cl(pre(2) + P(2, j) * c[at]));
            cn[at] = fg * c[at] + i * gf(cl(pre(3)));
            hn[at] = f(cl(pre(1) + P(1, j) * cn[at])) * hf(cn[at]);
          } else if (g == 3) {
            const double z = f(cl(xw(j) + hr(j, h) + Rb(j)));
            const double rr = f(cl(xw(hidden + j) + hr(hidden + j, h) + Rb(hidden + j)));
            double pre;
            if (linear_before_reset) {
              pre = xw(2 * hidden + j) + rr * (hr(2 * hidden + j, h) + Rb(2 * hidden + j));
            } else {
              std::vector<double> rh = h;
              for (std::int64_t k = 0; k < hidden; ++k) {
                const auto a = static_cast<std::size_t>(bi * hidden + k);
                rh[a] = f(cl(xw(hidden + k) + hr(hidden + k, h) + Rb(hidden + k))) * h[a];
              }
              pre = xw(2 * hidden + j) + hr(2 * hidden + j, rh) + Rb(2 * hidden + j);
            }
            const double hh = gf(cl(pre));
            hn[at] = (1 - z) * hh + z * h[at];
          } else {
            hn[at] = f(cl(xw(j) + hr(j, h) + Rb(j)));
          }
          y[static_cast<std::size_t>((t * batch + bi) * hidden + j)] = hn[at];
        }
      }
      h = hn;
      c = cn;
    }
  }
};

// Y [seq, dirs, batch, hidden] of direction d at (t, b, j).
double y_at(const Tensor& y, std::int64_t dirs, std::int64_t batch, std::int64_t hidden, std::int64_t t, std::int64_t d,
            std::int64_t b, std::int64_t j) {
  return y.at(static_cast<std::size_t>(((t * dirs + d) * batch + b) * hidden + j));
}

}  // namespace

TEST_CASE("LSTM bidirectional - biases - initial states - peepholes - clip - every result") {
  const std::int64_t seq = 3, batch = 2, input = 3, hidden = 2;
  ModelBuilder m(14);
  m.input("X", 1, dims({seq, batch, input}));
  m.input("W", 1, dims({2, 4 * hidden, input}));
  m.input("R", 1, dims({2, 4 * hidden, hidden}));
  m.input("B", 1, dims({2, 8 * hidden}));
  m.input("H0", 1, dims({2, batch, hidden}));
  m.input("C0", 1, dims({2, batch, hidden}));
  m.input("P", 1, dims({2, 3 * hidden}));
  auto* n = m.node("LSTM", {"X", "W", "R", "B", "", "H0", "C0", "P"}, {"Y", "Yh", "Yc"}, "lstm");
  attr_int(n, "hidden_size", hidden);
  attr_string(n, "direction", "bidirectional");
  attr_float(n, "clip", 0.9f);
  for (const char* o : {"Y", "Yh", "Yc"}) m.output(o);
  auto g = m.import();
  if (!g) FAIL(g.error().to_string());
  const Tensor x = filled({seq, batch, input}, 0.7, 1.5), w = filled({2, 4 * hidden, input}, 1.3),
               r = filled({2, 4 * hidden, hidden}, 0.9), b = filled({2, 8 * hidden}, 2.1, 0.5),
               h0 = filled({2, batch, hidden}, 1.7), c0 = filled({2, batch, hidden}, 0.4, 1.2),
               p = filled({2, 3 * hidden}, 2.9);
  auto got = runtime::interpret(*g, std::vector<Tensor>{x, w, r, b, h0, c0, p});
  if (!got) FAIL(got.error().to_string());
  REQUIRE(got->size() == 3);
  CHECK((*got)[0].dims() == std::vector<std::int64_t>{seq, 2, batch, hidden});
  for (std::int64_t d = 0; d < 2; ++d) {
    Reference ref(4, seq, batch, input, hidden);
    ref.reverse = d == 1;
    ref.clip = 0.9;
    ref.run(x, w, r, &b, &h0, &c0, &p, d);
    for (std::int64_t t = 0; t < seq; ++t)
      for (std::int64_t bi = 0; bi < batch; ++bi)
        for (std::int64_t j = 0; j < hidden; ++j)
          CHECK(y_at((*got)[0], 2, batch, hidden, t, d, bi, j) ==
                Approx(ref.y[static_cast<std::size_t>((t * batch + bi) * hidden + j)]).epsilon(1e-5).margin(1e-6));
    for (std::size_t k = 0; k < ref.h.size(); ++k) {
      CHECK((*got)[1].at(static_cast<std::size_t>(d) * ref.h.size() + k) == Approx(ref.h[k]).epsilon(1e-5));
      CHECK((*got)[2].at(static_cast<std::size_t>(d) * ref.c.size() + k) == Approx(ref.c[k]).epsilon(1e-5));
    }
  }
}

TEST_CASE("GRU - linear_before_reset 0 and 1 - reverse - sequence_lens shorter than the sequence") {
  const std::int64_t seq = 4, batch = 3, input = 2, hidden = 3;
  const Tensor x = filled({seq, batch, input}, 0.6, 1.5), w = filled({1, 3 * hidden, input}, 1.1),
               r = filled({1, 3 * hidden, hidden}, 0.8), b = filled({1, 6 * hidden}, 1.9, 0.5);
  for (const bool lbr : {false, true})
    for (const bool reverse : {false, true})
      for (const bool short_lens : {false, true}) {
        if (reverse && short_lens) continue;  // an error: below
        INFO("linear_before_reset " << lbr << " reverse " << reverse << " sequence_lens " << short_lens);
        ModelBuilder m(14);
        m.input("X", 1, dims({seq, batch, input}));
        m.input("W", 1, dims({1, 3 * hidden, input}));
        m.input("R", 1, dims({1, 3 * hidden, hidden}));
        m.input("B", 1, dims({1, 6 * hidden}));
        if (short_lens) m.input("L", 6, dims({batch}));  // INT32
        auto* n = m.node("GRU", {"X", "W", "R", "B", short_lens ? "L" : ""}, {"Y", "Yh"}, "gru");
        attr_int(n, "hidden_size", hidden);
        if (lbr) attr_int(n, "linear_before_reset", 1);
        if (reverse) attr_string(n, "direction", "reverse");
        m.output("Y");
        m.output("Yh");
        auto g = m.import();
        if (!g) FAIL(g.error().to_string());
        Tensor lens = Tensor::of_ints(DType::I32, {batch}, {4, 1, 2});
        std::vector<Tensor> ins{x, w, r, b};
        if (short_lens) ins.push_back(lens);
        auto got = runtime::interpret(*g, ins);
        if (!got) FAIL(got.error().to_string());
        Reference ref(3, seq, batch, input, hidden);
        ref.reverse = reverse;
        ref.linear_before_reset = lbr;
        if (short_lens) ref.lens = {4, 1, 2};
        ref.run(x, w, r, &b, nullptr, nullptr, nullptr, 0);
        for (std::size_t k = 0; k < ref.y.size(); ++k)  // steps past a row's length are 0 in both
          CHECK((*got)[0].at(k) == Approx(ref.y[k]).epsilon(1e-5).margin(1e-6));
        for (std::size_t k = 0; k < ref.h.size(); ++k) CHECK((*got)[1].at(k) == Approx(ref.h[k]).epsilon(1e-5));
      }
}

TEST_CASE("RNN - layout 1 (batch first) - activations take activation_alpha in their order") {
  const std::int64_t seq = 3, batch = 2, input = 2, hidden = 3;
  ModelBuilder m(14);
  m.input("X", 1, dims({batch, seq, input}));
  m.input("W", 1, dims({2, hidden, input}));
  m.input("R", 1, dims({2, hidden, hidden}));
  auto* n = m.node("RNN", {"X", "W", "R"}, {"Y", "Yh"}, "rnn");
  attr_int(n, "hidden_size", hidden);
  attr_int(n, "layout", 1);
  attr_string(n, "direction", "bidirectional");
  // Relu takes no alpha: LeakyRelu takes the first value, Affine the second and the first beta.
  attr_strings(n, "activations", {"Relu", "LeakyRelu"});
  attr_floats(n, "activation_alpha", {0.3f});
  m.output("Y");
  m.output("Yh");
  auto g = m.import();
  if (!g) FAIL(g.error().to_string());
  const Tensor xb = filled({batch, seq, input}, 0.5, 2.0), w = filled({2, hidden, input}, 1.2),
               r = filled({2, hidden, hidden}, 0.7);
  auto got = runtime::interpret(*g, std::vector<Tensor>{xb, w, r});
  if (!got) FAIL(got.error().to_string());
  CHECK((*got)[0].dims() == std::vector<std::int64_t>{batch, seq, 2, hidden});
  CHECK((*got)[1].dims() == std::vector<std::int64_t>{batch, 2, hidden});
  Tensor x(DType::F32, {seq, batch, input});  // time-major for the reference
  for (std::int64_t t = 0; t < seq; ++t)
    for (std::int64_t bi = 0; bi < batch; ++bi)
      for (std::int64_t k = 0; k < input; ++k)
        x.set(static_cast<std::size_t>((t * batch + bi) * input + k),
              xb.at(static_cast<std::size_t>((bi * seq + t) * input + k)));
  for (std::int64_t d = 0; d < 2; ++d) {
    Reference ref(1, seq, batch, input, hidden);
    ref.reverse = d == 1;
    if (d == 0)
      ref.f = [](double v) { return std::max(v, 0.0); };
    else
      ref.f = [](double v) { return v >= 0 ? v : 0.3 * v; };
    ref.run(x, w, r, nullptr, nullptr, nullptr, nullptr, d);
    for (std::int64_t t = 0; t < seq; ++t)
      for (std::int64_t bi = 0; bi < batch; ++bi)
        for (std::int64_t j = 0; j < hidden; ++j) {
          const double want = ref.y[static_cast<std::size_t>((t * batch + bi) * hidden + j)];
          CHECK((*got)[0].at(static_cast<std::size_t>(((bi * seq + t) * 2 + d) * hidden + j)) ==
                Approx(want).epsilon(1e-5).margin(1e-6));
        }
    for (std::int64_t bi = 0; bi < batch; ++bi)
      for (std::int64_t j = 0; j < hidden; ++j)
        CHECK((*got)[1].at(static_cast<std::size_t>((bi * 2 + d) * hidden + j)) ==
              Approx(ref.h[static_cast<std::size_t>(bi * hidden + j)]).epsilon(1e-5));
  }
}

TEST_CASE("what the recurrent import cannot take is an error naming the node") {
  auto error_of = [](const std::function<void(onnx::NodeProto*)>& edit, std::vector<std::int64_t> wdims, const char* op,
                     bool lens) {
    ModelBuilder m(14);
    m.input("X", 1, dims({2, 1, 2}));
    m.input("W", 1, dims(wdims));
    m.input("R", 1, dims({1, wdims[1], 2}));
    m.input("L", 6, dims({1}));
    auto* n = m.node(op, {"X", "W", "R", "", lens ? "L" : ""}, {"Y"}, "rec");
    attr_int(n, "hidden_size", 2);
    edit(n);
    m.output("Y");
    auto g = m.import();
    REQUIRE_FALSE(g);
    CHECK(g.error().message.find(std::string("node 'rec' (") + op + ", opset 14)") != std::string::npos);
    return g.error().message;
  };
  auto none = [](onnx::NodeProto*) {};
  // An RNN of X [seq, batch, 2] whose size the import refuses.
  auto too_large = [](std::int64_t seq, std::int64_t batch) {
    ModelBuilder m(14);
    m.input("X", 1, dims({seq, batch, 2}));
    m.input("W", 1, dims({1, 2, 2}));
    m.input("R", 1, dims({1, 2, 2}));
    attr_int(m.node("RNN", {"X", "W", "R"}, {"Y"}, "rec"), "hidden_size", 2);
    m.output("Y");
    auto g = m.import();
    REQUIRE_FALSE(g);
    return g.error().message;
  };
  CHECK_THAT(too_large(std::int64_t{1} << 31, 1),
             Catch::Contains("node 'rec' (RNN, opset 14): unrolled, its 2147483648 steps would be more than 65536: "
                             "the IR has no loop"));
  // A batch too large for the zero initial state: refused before it is
  // allocated (a mutated GRU's batch of 2^31 had the import abort).
  CHECK_THAT(too_large(1, std::int64_t{1} << 40), Catch::Contains("node 'rec' (RNN, opset 14): out of memory:"));
  CHECK_THAT(error_of(none, {1, 6, 2}, "LSTM", false),
             Catch::Contains("W (operand 'W') is [1 6 2], LSTM with these X, hidden_size and direction needs [1 8 2]"));
  CHECK_THAT(error_of([](onnx::NodeProto* n) { attr_string(n, "direction", "reverse"); }, {1, 6, 2}, "GRU", true),
             Catch::Contains("sequence_lens shorter than the sequence is supported for direction forward only"));
  CHECK_THAT(error_of([](onnx::NodeProto* n) { attr_strings(n, "activations", {"Affine"}); }, {1, 2, 2}, "RNN", false),
             Catch::Contains("activation 'affine' needs its alpha and beta"));
  CHECK_THAT(error_of([](onnx::NodeProto* n) { attr_strings(n, "activations", {"Gelu"}); }, {1, 2, 2}, "RNN", false),
             Catch::Contains("activation 'gelu' is not one ONNX defines"));
  CHECK_THAT(error_of(
                 [](onnx::NodeProto* n) {
                   attr_strings(n, "activations", {"Tanh", "Tanh"});
                 },
                 {1, 2, 2}, "RNN", false),
             Catch::Contains("activations lists 2 functions, RNN with 1 direction(s) takes 1"));
}
