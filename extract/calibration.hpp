// Measured prices: how long an op took on this machine, at the shapes a
// model needs it, keyed by its signature (op, attributes, operand types and
// which operands are weights). The cost model prices a timed op (a library
// call, a plain contraction or a pooling loop: the ops a roofline predicts
// worst) by its measurement when the calibration has one, and by the
// roofline otherwise; elementwise and reduction kernels stay modeled, so
// that fused chains are priced as they fuse (docs/cost-model.md).
//
// A calibration belongs to one target on one machine: its file's name
// carries both, and a file written for another machine is never read.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/diagnostic.hpp"
#include "ir/op.hpp"

namespace saturn::extract {

struct Calibration {
  // Bumped when what a signature or a measurement means changes (6: loops
  // over short rows and maxima of fused bodies compile to faster code; 7:
  // each timed copy reads weights of its own, and reduce_sum is timed).
  static constexpr int kFormat = 7;
  std::string target;
  std::string machine;               // CPU model, threads (pipeline's machine_id)
  std::map<std::string, double> us;  // signature -> median measured microseconds

  const double* find(const std::string& signature) const {
    auto it = us.find(signature);
    return it == us.end() ? nullptr : &it->second;
  }

  // The file for a target and machine in a folder: $SATURN_CACHE_DIR, else
  // $XDG_CACHE_HOME/saturn, else $HOME/.cache/saturn.
  static std::string default_path(const std::string& target, const std::string& machine);
  // A missing file is an empty calibration; a malformed one an error naming it;
  // one for another target, machine or format is ignored (empty). An empty
  // `machine` takes the file's own (pricing for a machine that is not this
  // one: a GPU's measurements on a build machine without it).
  static Expected<Calibration> load(const std::string& path, const std::string& target, const std::string& machine);
  // Writes the whole table (creating the folder), atomically: a temporary file renamed.
  Expected<bool> save(const std::string& path) const;
};

// Which operands of a node were given and which are weights (constants):
// what a measured price's signature needs beyond the types.
struct OperandFacts {
  std::vector<bool> given;   // per operand slot
  std::vector<bool> weight;  // per given operand
  // The node reads weights and the program's weights are too many to stay
  // in the cache from one run to the next (CostModel::weights_stream): it
  // reads them from memory, and is timed so.
  bool weights_from_memory = false;
};

// The bytes of the operands of `in` that `facts` marks as weights.
double weight_bytes(std::span<const ir::ValueType> in, const OperandFacts& facts);

// An op to measure: what a one-node program of it needs.
struct TimedOp {
  const ir::OpDef* def = nullptr;
  ir::Attrs attrs;
  std::vector<ir::ValueType> in;  // the given operands
  OperandFacts facts;
  ir::ValueType out;
};

// "op :attr value ... (f32[1 64 56 56] w:f32[64 64 3 3]) -> f32[1 64 56 56]":
// `w:` marks a weight (a constant operand the library prepares at compile
// time), `-` an omitted operand (trailing ones are left out); " weights
// from memory" follows when the facts say so. Empty when a shape is
// symbolic (such ops are not measured).
std::string op_signature(const ir::OpDef& def, const ir::Attrs& attrs, std::span<const ir::ValueType> in,
                         const OperandFacts& facts, const ir::ValueType& out);

}  // namespace saturn::extract
