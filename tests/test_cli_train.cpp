// `saturn grad` and `saturn train` end to end: the step graph and its memory
// report, training to a held accuracy, the trained weights written back, and
// bad input named with exit status 2.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "helpers.hpp"
#include "ir/sat_format.hpp"

namespace fs = std::filesystem;
using saturn::test::run_cli;
using saturn::test::temp_path;

namespace {

// Three separable clusters in 4-D: x [n 4] f32, labels [n] i64, and a
// linear classifier over them as .sat (x [N 4] -> logits [N 3]).
struct Blobs {
  fs::path model, x, y;
};
Blobs blobs(int n) {
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0, 0.3f);
  std::string xs, ys;
  const float centers[3][4] = {{2, 0, 0, 1}, {0, 2, 0, -1}, {0, 0, 2, 0}};
  for (int i = 0; i < n; ++i) {
    std::int64_t label = i % 3;
    for (int d = 0; d < 4; ++d) {
      float v = centers[label][d] + noise(rng);
      xs.append(reinterpret_cast<const char*>(&v), 4);
    }
    ys.append(reinterpret_cast<const char*>(&label), 8);
  }
  Blobs b{temp_path("saturn-train-", "linear.sat"), temp_path("saturn-train-", "x.npy"),
          temp_path("saturn-train-", "y.npy")};
  // (Built by append: GCC 12 warns falsely on "(" + s.)
  std::string rows = std::to_string(n), x_shape = "(", y_shape = "(";
  x_shape.append(rows).append(", 4)");
  y_shape.append(rows).append(",)");
  saturn::test::write_npy(b.x, "<f4", x_shape, xs);
  saturn::test::write_npy(b.y, "<i8", y_shape, ys);
  std::ofstream(b.model) << "(graph linear (input x f32 [N 4])\n"
                            "  (init w f32 [4 3] [0.1 -0.2 0.05 0.0 0.1 -0.1 0.2 0.0 0.1 -0.05 0.1 0.0])\n"
                            "  (init b f32 [3] [0.0 0.0 0.0])\n"
                            "  (node mm matmul (h) (x w)) (node bias add (logits) (h b)) (output logits))\n";
  return b;
}

}  // namespace

TEST_CASE("grad writes the training step and prices its memory") {
  Blobs b = blobs(30);
  auto step = temp_path("saturn-train-", "step.sat"), report = temp_path("saturn-train-", "plan.json");
  auto r = run_cli("grad " + b.model.string() + " --loss cross-entropy --optimizer adam --batch 6 -o " + step.string() +
                   " --report " + report.string() + " --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto s = nlohmann::json::parse(r.out);
  CHECK(s["weights"] == 2);
  CHECK(s["parameters"] == 15);
  CHECK(s["state"] == 2 * 3 + 1);  // weights, two moments each, the step count
  CHECK(s["backward_nodes"].get<int>() > 0);
  auto g = saturn::ir::read_sat_file(step.string());
  REQUIRE(g);
  // Data, labels, then the state in order; loss, prediction, then the next state.
  REQUIRE(g->inputs.size() == 2 + 7);
  CHECK(g->inputs[0].name == "x");
  CHECK(saturn::ir::to_string(g->inputs[0].type.shape) == "[6 4]");
  CHECK(g->inputs[1].name == "labels");
  CHECK(g->outputs[0] == "loss");
  CHECK(g->outputs[1] == "logits");
  CHECK(g->outputs[2] == g->inputs[2].name + ".next");
  std::ifstream f(report);
  auto plan = nlohmann::json::parse(f);
  CHECK(plan["arena_bytes"].get<long>() > 0);
  CHECK(plan["arena_bytes"].get<long>() <= plan["naive_bytes"].get<long>());
  CHECK(plan["liveness_bound_bytes"].get<long>() <= plan["arena_bytes"].get<long>());
}

TEST_CASE("train learns separable clusters and writes the trained weights") {
  Blobs b = blobs(60);
  auto out = temp_path("saturn-train-", "trained.sat");
  for (const char* optimizer : {"sgd", "momentum", "adam", "adamw"}) {
    auto r = run_cli("train " + b.model.string() + " --data " + b.x.string() + " --labels " + b.y.string() +
                     " --loss cross-entropy --optimizer " + optimizer + " --lr 0.1 --epochs 8 --batch 6 -o " +
                     out.string() + " --json");
    INFO(optimizer << ": " << r.err);
    REQUIRE(r.status == 0);
    auto s = nlohmann::json::parse(r.out);
    CHECK(s["steps"] == 8 * 10);
    CHECK(s["evaluated_on"] == "training data");
    CHECK(s["eval_accuracy"].get<double>() >= 0.95);
    CHECK(s["final_loss"].get<double>() < s["epoch_losses"][0].get<double>());
    CHECK(s["step_ms_median"].get<double>() > 0);
    CHECK(s["arena_bytes"].get<long>() <= s["naive_bytes"].get<long>());
    // The weights and moments are updated in place (Adam's step count,
    // read again after its next value is written, is not).
    const int slots = s["state_slots"];
    CHECK(s["state_updated_in_place"].get<int>() >= slots - 1);
    auto trained = saturn::ir::read_sat_file(out.string());
    REQUIRE(trained);
    // The weights moved; the model's shape (symbolic batch) did not.
    CHECK(trained->initializers.at("w").at(0) != Approx(0.1));
    CHECK(saturn::ir::to_string(trained->inputs[0].type.shape) == "[N 4]");
  }
  // The interpreter trains the same step (no optimization, reference kernels).
  auto r = run_cli("train " + b.model.string() + " --data " + b.x.string() + " --labels " + b.y.string() +
                   " --loss cross-entropy --lr 0.1 --epochs 8 --batch 6 --target interp --json");
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["eval_accuracy"].get<double>() >= 0.95);
}

TEST_CASE("bad input to grad and train exits 2 naming what is wrong") {
  Blobs b = blobs(12);
  const std::string m = b.model.string(), data = " --data " + b.x.string() + " --labels " + b.y.string();
  auto bad = [](const std::string& args) {
    auto r = run_cli(args);
    INFO(args << "\n" << r.err);
    CHECK(r.status == 2);
    return r.err;
  };
  CHECK_THAT(bad("grad " + m + " --loss hinge"), Catch::Contains("--loss"));
  CHECK_THAT(bad("grad " + m + " --loss mse --prediction nope"), Catch::Contains("no value 'nope'"));
  CHECK_THAT(bad("grad " + m + " --loss mse --freeze nope"), Catch::Contains("no weight 'nope'"));
  CHECK_THAT(bad("grad " + m + " --loss mse --freeze w --freeze b"), Catch::Contains("no weight to train"));
  auto rules = temp_path("saturn-train-", "bad.rules");
  std::ofstream(rules) << "(defgrad (matmul ?a ?b) (?y) (?dy)\n  (d ?c ?dy))\n";
  CHECK_THAT(bad("grad " + m + " --loss mse --grad-rules " + rules.string()),
             Catch::Contains("bad.rules:2:6") && Catch::Contains("'?c' is not an operand"));
  // A path through an op without a gradient names the node.
  auto scatter = temp_path("saturn-train-", "scatter.sat");
  std::ofstream(scatter) << "(graph s (input x f32 [4 3]) (init w f32 [2 3] [1.0 2.0 3.0 4.0 5.0 6.0])\n"
                            "  (init i i64 [2 1] [0 2]) (node put scatter_nd (y) (x i w)) (output y))\n";
  CHECK_THAT(bad("grad " + scatter.string() + " --loss mse --batch 4"),
             Catch::Contains("node 'put' (scatter_nd)") && Catch::Contains("has no gradient"));
  // A composite without a gradient rule goes through its decomposition.
  auto lrn = temp_path("saturn-train-", "lrn.sat");
  std::ofstream(lrn) << "(graph l (input x f32 [2 3 2 2]) (init w f32 [3 1 1 1] [1.0 2.0 3.0])\n"
                        "  (node c conv (h) (x w) :group 3) (node norm lrn (y) (h) :size 3) (output y))\n";
  auto through = run_cli("grad " + lrn.string() + " --loss mse --batch 2 --json");
  REQUIRE(through.status == 0);
  CHECK(nlohmann::json::parse(through.out)["decomposed"] == nlohmann::json::array({"node 'norm' (lrn)"}));
  // Data that does not fit the model.
  auto wide = temp_path("saturn-train-", "wide.npy");
  saturn::test::write_npy(wide, "<f4", "(12, 5)", std::string(12 * 5 * 4, '\0'));
  CHECK_THAT(bad("train " + m + " --loss cross-entropy --data " + wide.string() + " --labels " + b.y.string()),
             Catch::Contains("wide.npy") && Catch::Contains("[12 5]") && Catch::Contains("[N 4]"));
  auto few = temp_path("saturn-train-", "few.npy");
  saturn::test::write_npy(few, "<i8", "(11,)", std::string(11 * 8, '\0'));
  CHECK_THAT(bad("train " + m + " --loss cross-entropy --data " + b.x.string() + " --labels " + few.string()),
             Catch::Contains("holds 11 samples"));
  auto frac = temp_path("saturn-train-", "frac.npy");
  float halves[12];
  for (float& h : halves) h = 0.5f;
  saturn::test::write_npy(frac, "<f4", "(12,)", std::string(reinterpret_cast<const char*>(halves), sizeof halves));
  CHECK_THAT(bad("train " + m + " --loss cross-entropy --data " + b.x.string() + " --labels " + frac.string()),
             Catch::Contains("not a class index"));
  CHECK_THAT(bad("train " + m + " --loss cross-entropy --batch 64" + data), Catch::Contains("fewer than one batch"));
  CHECK_THAT(bad("train " + m + " --loss cross-entropy --eval-data " + b.x.string() + data),
             Catch::Contains("--eval-data and --eval-labels together"));
  // A loss that diverges stops the run: exit 1, saying where.
  auto zeros = temp_path("saturn-train-", "zeros.npy");
  saturn::test::write_npy(zeros, "<f4", "(12, 3)", std::string(12 * 3 * 4, '\0'));
  auto r = run_cli("train " + m + " --loss mse --lr 1e38 --epochs 3 --batch 6 --data " + b.x.string() + " --labels " +
                   zeros.string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("the loss is") && Catch::Contains("lower --lr"));
}
