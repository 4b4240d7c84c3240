// Cost models per target: modeled microseconds of one op application.
//
// A roofline per node: the larger of arithmetic time (OpDef work over the
// target's throughput for that kind of op) and memory time (bytes read and
// written over bandwidth), plus a fixed overhead per kernel or library call.
// Library calls are priced from the measured throughput of the real library
// (bench/calibrate_cpu; docs/cost-model.md says how each number was
// obtained); a library call of another target, or an op the target cannot
// lower, costs infinity. Views (reshape, squeeze, ...) move no data. A node
// computable from constants alone costs nothing: it is evaluated once, at
// load time, unless evaluating it would materialize a large broadcast.
// Symbolic dimensions are priced at `symbol_size`. Loop kernels also say
// how their cost splits (`price`), so that a program's cost prices the
// elementwise chains the lowering fuses once (extract/problem.hpp).
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "extract/calibration.hpp"
#include "extract/problem.hpp"
#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"
#include "ir/op.hpp"

namespace saturn::extract {

struct TargetSpec {
  std::string name;
  double loop_gflops = 0;              // elementwise/reduction code we generate
  double naive_contract_gflops = 0;    // matmul/conv lowered as plain loop nests
  double library_gflops = 0;           // the target's BLAS/DNN library
  double gbytes_per_s = 0;             // memory bandwidth
  double kernel_overhead_us = 0;       // per generated kernel (fused chains share it)
  double call_overhead_us = 0;         // per library call
  std::vector<std::string> libraries;  // op-name prefixes this target lowers ("blas.", "dnnl.")
  // Library calls measured slower than library_gflops: the fraction of it
  // they reach (op name -> fraction; the others reach all of it).
  std::map<std::string, double> library_efficiency;
  // Plain ops whose kernel reaches less than loop_gflops (a window op run
  // by a scalar host loop): op name -> the fraction of it they reach.
  std::map<std::string, double> loop_efficiency;
  // An op that moves at most cache_bytes (its operands and result) finds
  // them in the last-level cache, read at cache_gbytes_per_s: in a
  // program, an activation is mostly read right after it was written.
  // 0: no such cache level priced.
  double cache_bytes = 0;
  double cache_gbytes_per_s = 0;
  // Library calls whose fixed cost is not call_overhead_us: op-name prefix
  // ("cudnn.") -> microseconds per call.
  std::map<std::string, double> library_call_us = {};
  // A grouped convolution (not depthwise) that the library computes in its
  // own blocked layout reorders the program's channels-last source and
  // result at every call: priced as grouped_conv_reorder_us more, plus
  // both moved (read and written) at reorder_gbytes_per_s. 0: no reorders.
  double grouped_conv_reorder_us = 0;
  double reorder_gbytes_per_s = 0;
  // The library's channels-last grouped kernels (OpDef::channels_last)
  // reach this fraction of library_gflops; the second when the group count
  // is a multiple of 16.
  double channels_last_efficiency = 1.0;
  double channels_last_g16_efficiency = 1.0;
  // An activation post-op of a depthwise convolution (as many groups as
  // input channels) costs this many times its arithmetic at the loop rate
  // (1: as any post-op).
  double depthwise_post_op_factor = 1.0;
  // A copy the lowering makes to lay a value out (a reshape that no
  // strided view of a transposed value describes): copy_call_us plus the
  // bytes read and written at copy_gbytes_per_s. 0: a loop kernel's
  // overhead and the streaming rate.
  double copy_call_us = 0;
  double copy_gbytes_per_s = 0;
  // A program whose weights (its constants) take more than
  // weight_cache_bytes finds none of them in the cache when a run reaches
  // them: the rest of the run evicted them. Its library calls then read
  // their weights at weight_gbytes_per_s, `weight_expansion` times the
  // bytes where the library holds them in a larger form of its own (op-name
  // prefix -> factor). 0: weights priced as any operand.
  double weight_cache_bytes = 0;
  double weight_gbytes_per_s = 0;
  std::map<std::string, double> weight_expansion = {};
  // A reduce_sum that keeps its operand's innermost axis (summing rows
  // of elements apart in memory) runs, with the chain fused into it, at
  // this fraction of its loop rate. 0: at its loop rate.
  double across_rows_reduce_efficiency = 0;
  // Library calls that compute in a blocked layout of their own (op-name
  // prefixes), so that each call converts every activation it reads and
  // its result: priced per such value as blocked_reorder_us plus its bytes
  // at blocked_reorder_gbytes_per_s.
  std::vector<std::string> blocked_layout_calls = {};
  double blocked_reorder_us = 0;
  double blocked_reorder_gbytes_per_s = 0;
  // Library convolutions keep their weights in a blocked layout of their
  // own: constant weights are converted once, when the program loads;
  // weights computed at run time (a scale folded into them) at every run,
  // priced as run_weights_reorder_us plus their bytes at
  // run_weights_reorder_gbytes_per_s (0: weights are read as they are).
  double run_weights_reorder_us = 0;
  double run_weights_reorder_gbytes_per_s = 0;
  // Library calls that read their source once more at every run (op-name
  // prefixes): a scan for the NaN or infinity the library's kernel would
  // lose. Priced as one more read of operand 0.
  std::vector<std::string> source_scan_calls = {};
  // A plain max_pool whose windows reach past its operand (explicit
  // padding, or ceil_mode's last window) copies the operand padded with
  // -inf first (Lowerer::lower_max_pool): priced as a copy (copy_us) of the
  // operand into the padded value.
  bool max_pool_pad_copy = false;
};

class CostModel {
 public:
  explicit CostModel(TargetSpec spec) : spec_(std::move(spec)) {}
  // "cpu" or "cuda"; nullopt for other names.
  static std::optional<CostModel> for_target(const std::string& name);

  const TargetSpec& spec() const { return spec_; }
  double symbol_size = 16;
  // Measured prices, used for the ops `timed` selects when the calibration
  // has their signature; a library call it lacks costs the roofline's price
  // times its family's ratio when the calibration has one
  // (Calibration::family_ratio; not owned; may be null).
  const Calibration* calibration = nullptr;
  // When set, timed ops the calibration lacks are listed here by signature
  // as they are priced (to be measured; not owned).
  std::map<std::string, TimedOp>* unmeasured = nullptr;
  // What the roofline's price of a library call the calibration lacks is
  // multiplied by: its family's ratio (Calibration::family_ratio, with
  // `facts` as its signature's; for a family read from memory without one,
  // the ratio of its family in the cache) when under 1; nullopt when that
  // price stands.
  std::optional<double> family_scale(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                                     const ir::ValueType& out, const OperandFacts& facts) const;
  // Whether the op is one a calibration measures: the target's library
  // calls, plain contractions and loops priced below the loop rate.
  bool timed(const ir::OpDef& def) const;
  // The bytes of the weights of the program being priced (the model's
  // constants), and whether they are too many to stay in the cache between
  // runs (TargetSpec::weight_cache_bytes): then every node reading a weight
  // is priced, and timed, with its weights read from memory.
  double program_weight_bytes = 0;
  bool weights_stream() const {
    return spec_.weight_cache_bytes > 0 && program_weight_bytes > spec_.weight_cache_bytes;
  }

  // Modeled microseconds; infinity when the target cannot run the op.
  double cost(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in, const ir::ValueType& out,
              bool constant) const;
  // The same cost, with its split for fusion (read_us per operand of `in`;
  // role None for anything but a loop kernel).
  // With `facts`, a timed op the calibration measured costs what it measured,
  // and a library call's weights are read from memory when they stream
  // (weights_stream(), or facts->weights_from_memory).
  NodePrice price(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                  const ir::ValueType& out, bool constant, const OperandFacts* facts = nullptr) const;
  // What the node costs instead of price()'s when its operand 0 is the
  // result of `producer` (applied to `producer_in`), the way the lowering
  // lays that result out; nullopt when that changes nothing:
  //  - a reshape (or flatten) of a transposed value is a view when every
  //    run of dims it merges or splits stays row-major, and a copy
  //    otherwise (ShuffleNet's channel shuffle);
  //  - a concat that extends a concat along the same axis writes only its
  //    other operands, into the buffer they share (DenseNet's blocks).
  // Whether price_after can differ from price() for nodes of `def`: the
  // callers look for the producer only then.
  static bool priced_after_producer(const ir::OpDef& def);
  std::optional<double> price_after(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                                    const ir::ValueType& out, const ir::OpDef& producer,
                                    const ir::Attrs& producer_attrs, std::span<const ir::ValueType> producer_in) const;
  // Whether a node computable from constants is folded at load time (the
  // same test fold_constant_nodes applies).
  static bool is_folded(double in_elems, double out_elems) { return out_elems <= 2 * in_elems + 4096; }

 private:
  ir::ValueType priced(const ir::ValueType& t) const;
  // Streaming bytes per microsecond for an op moving `bytes` in all.
  double bytes_per_us(double bytes) const;
  // A copy moving `moved` bytes (read and written): a reshape that cannot
  // be a view.
  double copy_us(double moved) const;
  bool runs_library(const std::string& op) const;  // a call of this target's libraries
  TargetSpec spec_;
};

// The family of a library call's measurements (Calibration::family_ratio):
// its library ("dnnl.") and, for a convolution, " depthwise", " grouped",
// " pointwise" or " spatial", for a product " one row" or " rows", then "
// weights from memory" when `facts` say so ("blas. one row weights from
// memory"). Empty for an op of no library, and for a convolution whose
// weights `facts` say are computed at run time.
std::string op_family(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                      const ir::ValueType& out, const OperandFacts& facts);

// Modeled cost of a whole graph: each node the outputs need once (dead
// nodes are not run), fused chains priced as the lowering fuses them
// (infinity when the target cannot run one of its nodes). `node_costs`, when
// given, gets each node's own price (as if run alone: a fused chain costs
// less than its nodes' sum).
Expected<double> graph_cost(const ir::Graph& g, const CostModel& m, std::vector<double>* node_costs = nullptr);

}  // namespace saturn::extract
