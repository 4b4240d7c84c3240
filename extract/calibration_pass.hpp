// One calibration pass: each op a model needs timed once, within a budget,
// and the measurements a spell of load may have stretched timed again.
//
// Invariant: an op's entry is the smallest of the times taken for it in the
// pass; an op that could not be timed gets no entry (the roofline prices
// it), and the report names it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "extract/calibration.hpp"

namespace saturn::extract {

class CostModel;

// A measurement over this many times the roofline's price is suspect: it is
// timed again once the pass's other ops are done, and the faster of the two
// kept. A measurement lasts about 0.1 s, and on a shared machine a spell of
// load that long (another process on one of the thread pool's cores) can
// stretch it many times over, after which the extractor avoids the op
// everywhere. (A batched 128x128x64 sgemm, priced 58 us, measured 585 and
// 1071 us in two calibrations of eight models on this project's 2-core VM
// and 45-84 us in six others; transformer_encoder's attention products had
// then been extracted as plain loops: 1.9 ms each in the program, 14.7 ms
// for the model against 4.8-6.1.)
inline constexpr double kSecondLookRatio = 3.0;
// The roofline's constants were fitted on one machine; on another a whole
// family of ops (every oneDNN product) runs faster or slower than it
// prices, and a spell can stretch one of them 4x while staying under 3x
// the roofline. So a measurement is also suspect when its ratio to the
// roofline is over kSecondLookRatio times the median ratio of the ops of
// its name in the pass, where kFamilySize or more were timed. (On an
// Intel Xeon VM, 2026-11-28: transformer_encoder's 128x256x1024 product
// measured 876 us in one calibration, 206 in the next and 211 in its
// program; priced 447, the family's median ratio about 0.5.)

// Whether other processes took CPU time a timing needed: `begin` is called
// before each timing and `crowded` after it. An op timed while crowded is
// suspect whatever its ratio to the roofline: a spell of load stretches
// every op it covers alike, and when it covers most of a pass, their median
// ratios with them (a calibration of eight models on this project's 2-core
// VM once measured whole families 700x their price), so that no ratio looks
// unusual. Either function may be empty: nothing is known of the load.
struct LoadWatch {
  std::function<void()> begin;
  std::function<bool()> crowded;
};

struct CalibrationPass {
  struct Failure {
    std::string op;  // signature
    std::string why;
  };
  struct SecondLook {
    std::string op;
    double first_us = 0, second_us = 0;
  };
  int measured = 0;
  std::vector<Failure> failed;
  std::vector<SecondLook> second_looks;
  int crowded = 0;          // first timings that other processes crowded (each timed again)
  int crowded_again = 0;    // second looks crowded as well (the faster time kept all the same)
  bool budget_hit = false;  // some ops (or second looks) were left out
};

// Microseconds one application of an op takes on the target, or why it
// could not be timed.
using OpTimer = std::function<Expected<double>(const TimedOp&)>;

// Times each of `ops` (signature -> op) into `c` with `time` until
// `budget_s` seconds have passed (checked before each timing), then gives
// the suspect ones (timed while `load` says crowded, over kSecondLookRatio
// times `roofline`'s price, or times its name's median ratio to it; none of
// the last two when it is null) a second look within the same budget. Each
// measurement is recorded with `roofline`'s price and family
// (Calibration::record).
CalibrationPass run_calibration_pass(const std::map<std::string, TimedOp>& ops, Calibration& c, const OpTimer& time,
                                     const CostModel* roofline, double budget_s, const LoadWatch& load = {});

}  // namespace saturn::extract
