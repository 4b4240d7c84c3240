// Rematerialization and the memory order of a step: the graph computes the
// same values, a cheap value read much later is computed again there, and
// the order takes each branch's consumer before the next branch's producer.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "pipeline/memory_order.hpp"
#include "pipeline/rematerialize.hpp"
#include "runtime/interp.hpp"

using namespace saturn;

namespace {

ir::Node node(std::string op, std::vector<std::string> in, std::string out) {
  return ir::Node{out, std::move(op), std::move(in), {std::move(out)}, {}, ""};
}

// "h3" (built by append: GCC 12 warns falsely on "h" + s).
std::string saturn_h(int i) { return std::string("h").append(std::to_string(i)); }

ir::Tensor random_tensor(std::vector<std::int64_t> dims, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(ir::numel(dims)));
  for (double& x : v) x = d(rng);
  return ir::Tensor::of_doubles(ir::DType::F32, std::move(dims), v);
}

// Every operand is computed before it is read.
bool in_dependency_order(const ir::Graph& g) {
  std::set<std::string> known;
  for (const auto& in : g.inputs) known.insert(in.name);
  for (const auto& [name, t] : g.initializers) known.insert(name);
  for (const ir::Node& n : g.nodes) {
    for (const std::string& x : n.inputs)
      if (!x.empty() && !known.count(x)) return false;
    known.insert(n.outputs.begin(), n.outputs.end());
  }
  return true;
}

std::vector<ir::Tensor> run(const ir::Graph& g, const std::vector<ir::Tensor>& in) {
  auto out = runtime::interpret(g, in);
  if (!out) FAIL(out.error().to_string());
  return *out;
}

}  // namespace

TEST_CASE("A cheap value read much later is computed again there") {
  // a = x + 1 is read by the first product, then again after a chain of 20
  // products: computed again before that read, it dies after the first.
  ir::Graph g;
  g.inputs.push_back({"x", ir::ValueType{ir::DType::F32, ir::shape_of({128, 128})}});
  g.initializers.emplace("one", ir::Tensor::scalar(ir::DType::F32, 1));
  g.initializers.emplace("w", random_tensor({128, 128}, 1));
  g.nodes.push_back(node("add", {"x", "one"}, "a"));
  g.nodes.push_back(node("matmul", {"a", "w"}, "h0"));
  for (int i = 1; i <= 20; ++i) g.nodes.push_back(node("matmul", {saturn_h(i - 1), "w"}, saturn_h(i)));
  g.nodes.push_back(node("mul", {"a", "h20"}, "y"));
  g.outputs = {"y"};
  std::vector<ir::Tensor> in = {random_tensor({128, 128}, 2)};
  const auto before = run(g, in);
  pipeline::RematReport r = pipeline::rematerialize(g);
  CHECK(r.values == 1);
  CHECK(r.bytes == 128 * 128 * 4);
  REQUIRE(in_dependency_order(g));
  // The copy comes right before its reader, which reads it; the first
  // product still reads the original.
  REQUIRE(g.nodes.size() == 24);
  CHECK(g.nodes[22].op == "add");
  CHECK(g.nodes[22].outputs[0] != "a");
  CHECK(g.nodes[23].inputs[0] == g.nodes[22].outputs[0]);
  CHECK(g.nodes[1].inputs[0] == "a");
  const auto after = run(g, in);
  for (std::size_t i = 0; i < before[0].numel(); i += 97) CHECK(after[0].at(i) == before[0].at(i));
}

TEST_CASE("Values whose recomputation would be dear, or keep others alive longer, are kept") {
  ir::Graph g;
  g.inputs.push_back({"x", ir::ValueType{ir::DType::F32, ir::shape_of({128, 128})}});
  g.initializers.emplace("w", random_tensor({128, 128}, 1));
  g.nodes.push_back(node("erf", {"x"}, "a"));  // 10 operations an element: not recomputed
  g.nodes.push_back(node("matmul", {"a", "w"}, "h0"));
  for (int i = 1; i <= 20; ++i) g.nodes.push_back(node("matmul", {saturn_h(i - 1), "w"}, saturn_h(i)));
  g.nodes.push_back(node("mul", {"a", "h20"}, "y"));
  g.outputs = {"y"};
  CHECK(pipeline::rematerialize(g).values == 0);
  // b = h0 + h0 read late: recomputing it would keep h0 alive as long.
  ir::Graph k = g;
  k.nodes[0] = node("relu", {"x"}, "a");
  k.nodes.insert(k.nodes.begin() + 2, node("add", {"h0", "h0"}, "b"));
  k.nodes.back() = node("mul", {"b", "h20"}, "y");
  CHECK(pipeline::rematerialize(k).values == 0);
}

TEST_CASE("The memory order takes each branch's reader before the next branch's producer") {
  // Written: p1 = x w, p2 = x w2, then q1 = sum(p1), q2 = sum(p2): both
  // products alive at once. Ordered: p1, q1, p2, q2.
  ir::Graph g;
  g.inputs.push_back({"x", ir::ValueType{ir::DType::F32, ir::shape_of({64, 64})}});
  g.initializers.emplace("w", random_tensor({64, 64}, 3));
  g.initializers.emplace("w2", random_tensor({64, 64}, 4));
  g.nodes.push_back(node("matmul", {"x", "w"}, "p1"));
  g.nodes.push_back(node("matmul", {"x", "w2"}, "p2"));
  g.nodes.push_back(node("reduce_sum", {"p1"}, "q1"));
  g.nodes.push_back(node("reduce_sum", {"p2"}, "q2"));
  g.nodes.push_back(node("add", {"q1", "q2"}, "y"));
  g.outputs = {"y"};
  std::vector<ir::Tensor> in = {random_tensor({64, 64}, 5)};
  const auto before = run(g, in);
  REQUIRE(pipeline::order_for_memory(g));
  REQUIRE(in_dependency_order(g));
  std::vector<std::string> order;
  for (const ir::Node& n : g.nodes) order.push_back(n.outputs[0]);
  CHECK(order == std::vector<std::string>{"p1", "q1", "p2", "q2", "y"});
  CHECK(run(g, in)[0].at(0) == before[0].at(0));
}

TEST_CASE("The memory order puts a view just before its first reader") {
  // r views p1; the greedy would take it as soon as p1 exists (it costs
  // nothing), where a value recomputed for its reader would be computed
  // early too.
  ir::Graph g;
  g.inputs.push_back({"x", ir::ValueType{ir::DType::F32, ir::shape_of({64, 64})}});
  g.initializers.emplace("w", random_tensor({64, 64}, 3));
  g.nodes.push_back(node("matmul", {"x", "w"}, "p1"));
  ir::Node r = node("reshape", {"p1"}, "r");
  r.attrs.set("shape", std::vector<std::int64_t>{4096});
  g.nodes.push_back(r);
  g.nodes.push_back(node("matmul", {"p1", "w"}, "p2"));
  g.nodes.push_back(node("reduce_sum", {"p2"}, "q2"));
  g.nodes.push_back(node("reduce_sum", {"r"}, "q1"));
  g.nodes.push_back(node("add", {"q1", "q2"}, "y"));
  g.outputs = {"y"};
  REQUIRE(pipeline::order_for_memory(g));
  REQUIRE(in_dependency_order(g));
  std::size_t view = 0, reader = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].outputs[0] == "r") view = i;
    if (g.nodes[i].outputs[0] == "q1") reader = i;
  }
  CHECK(view + 1 == reader);
}
