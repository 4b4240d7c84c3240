// The probe `saturn calibrate` measures when it is given no model: typical
// layers of each family of library calls whose measured ratio to the
// roofline the cost model uses to price the calls a calibration lacks
// (extract/calibration.hpp): 3x3, 1x1, depthwise and grouped convolutions
// at the sizes of ImageNet networks' stages, each with its ReLU, and
// products of rows and of one row at transformers' and classifiers'
// sizes. Measured once, they give every model's library calls prices near
// this machine's without measuring that model.
//
// Invariant: every layer is independent (an input of its own), so the
// e-graph holds for each only its own alternatives; the layers' weights
// take 27 MB, under the cost model's weight cache on cpu, unless
// `weights_from_memory` adds a product whose weights take 33.6 MB more, so
// that every call is measured reading its weights from memory (a model
// with more weights than the cache keeps between runs: a family of its
// own, CostModel::weights_stream).
#pragma once

#include "ir/graph.hpp"

namespace saturn::cli {

ir::Graph calibration_probe(bool weights_from_memory);

}  // namespace saturn::cli
