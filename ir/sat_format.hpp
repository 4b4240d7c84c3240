// The .sat text format: an ir::Graph as s-expressions, exact both ways.
//
//   (graph NAME
//     (input x f32 [N 3 224 224])
//     (init w f32 [2 2] [0.5 1.0 -2.0 3.25])
//     (node conv1 conv (y) (x w "") :pads [1 1 1 1] :epsilon 1e-05 :auto_pad "SAME_UPPER")
//     (output y))
//
// Names are atoms, or strings when they hold spaces, brackets or quotes ("" is
// an omitted operand). Attribute values: an integer (3), a real (always with
// a '.' or an exponent: 3.0), a string, a list of integers [1 2], a list of
// reals (floats 1.0 2.5), a tensor (tensor f32 [2] [1.0 2.0]). Reals print
// with the fewest digits that read back to the same value at their own
// width, so write(read(text)) == text and values survive exactly.
#pragma once

#include <string>
#include <string_view>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"

namespace saturn::ir {

std::string write_sat(const Graph& g);
Expected<Graph> read_sat(std::string_view text, const std::string& path);
Expected<Graph> read_sat_file(const std::string& path);
// An attribute value as the format writes it (`3`, `3.0`, `[1 2]`, ...).
std::string attr_text(const AttrValue& v);

}  // namespace saturn::ir
