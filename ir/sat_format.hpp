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
// width, so write(read(text)) == text and values survive exactly. An
// initializer's values may instead be (data FILE OFFSET): raw bytes in a
// file beside the .sat (write_sat_file puts large weights there).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ir/diagnostic.hpp"
#include "ir/graph.hpp"

namespace saturn::ir {

std::string write_sat(const Graph& g);
// Writes PATH; an initializer of more than external_above bytes goes to
// PATH.data instead, as (init w f32 [768 3072] (data "m.sat.data" 64)): its
// bytes at that offset (aligned to 64), little-endian as in memory. Text
// cannot carry a large model's weights fast (vit_b_32's 88 M floats are
// 1.1 GB of digits, 9 s to write).
struct SatFileOptions {
  std::size_t external_above = std::size_t{1} << 16;  // bytes; SIZE_MAX keeps every value in the text
};
Expected<bool> write_sat_file(const Graph& g, const std::string& path, const SatFileOptions& options = {});
// A (data FILE OFFSET) value names FILE relative to path's folder.
Expected<Graph> read_sat(std::string_view text, const std::string& path);
Expected<Graph> read_sat_file(const std::string& path);
// An attribute value as the format writes it (`3`, `3.0`, `[1 2]`, ...).
std::string attr_text(const AttrValue& v);

}  // namespace saturn::ir
