// Measured prices: how long an op took on this machine, at the shapes a
// model needs it, keyed by its signature (op, attributes, operand types and
// which operands are weights). The cost model prices a timed op (a library
// call, a plain contraction or a pooling loop: the ops a roofline predicts
// worst) by its measurement when the calibration has one, and by the
// roofline otherwise; elementwise and reduction kernels stay modeled, so
// that fused chains are priced as they fuse (docs/cost-model.md).
//
// A measurement also keeps the roofline's price of the op when it was
// measured, and, for a library call, its family (extract::op_family): its
// library ("dnnl.") and its shape class (a convolution's depthwise,
// grouped, pointwise or spatial; a product's one row or rows). A family
// with kFamilySize or more measured calls has a ratio, the median of
// measured over modeled among them: how far this machine is from the
// roofline's rates for such calls (on a Zen 5 oneDNN's 3x3 convolutions
// take 0.27-0.31 of their price, its depthwise ones 0.94-1.36, OpenBLAS's
// products of rows 0.33, of one row 1.18, and 0.21 reading its weights
// from memory). The cost model prices a call the
// calibration lacks as the roofline times its family's ratio when under 1
// (CostModel::family_scale), so that a calibration of some models prices
// others about right. The family has no
// op name in it: the alternatives the e-graph holds for one computation
// (a convolution with or without its ReLU, direct or Winograd) are of one
// family, scaled alike, so the extractor chooses among them as the
// roofline does (per op name, their medians differ by less than the
// shapes within each, and densenet121's program came out 1.10x slower).
//
// Invariant: `family` holds, for each family, the median ratio over its
// entries in `us`, `roofline_us` and `family_of`, when there are at least
// kFamilySize of them; record() and load() keep it so (a direct write to
// `us` leaves the ratios as they were).
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

// The fewest measured calls that give a family its ratio.
inline constexpr std::size_t kFamilySize = 3;

struct Calibration {
  // Bumped when what a signature or a measurement means changes (6: loops
  // over short rows and maxima of fused bodies compile to faster code; 7:
  // each timed copy reads weights of its own, and reduce_sum is timed).
  // The roofline prices kept with the measurements are those of the build
  // that measured: a change to the roofline's constants bumps it too.
  static constexpr int kFormat = 7;
  std::string target;
  std::string machine;                           // CPU model, threads (pipeline's machine_id)
  std::map<std::string, double> us;              // signature -> median measured microseconds
  std::map<std::string, double> roofline_us;     // signature -> the roofline's price when measured
  std::map<std::string, std::string> family_of;  // signature of a library call -> its family
  std::map<std::string, double> family;          // family -> median measured / roofline

  const double* find(const std::string& signature) const {
    auto it = us.find(signature);
    return it == us.end() ? nullptr : &it->second;
  }
  // A family's ratio (op_family); nullptr when it has none.
  const double* family_ratio(const std::string& key) const {
    auto it = family.find(key);
    return it == family.end() ? nullptr : &it->second;
  }
  // Sets a measurement, the roofline's price for it (none when not
  // positive and finite) and its family (none when empty), and updates
  // that family's ratio.
  void record(const std::string& signature, double measured_us, double modeled_us, const std::string& family_key);
  // Another measurement of a recorded op: the faster of the two is kept,
  // with the roofline's price and the family it was recorded with.
  void keep_faster(const std::string& signature, double measured_us);

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

 private:
  void update_ratio(const std::string& key);
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
