// The 8- and 4-bit floating types of ONNX (float8 e4m3fn, e4m3fnuz, e5m2,
// e5m2fnuz and float4 e2m1; float8 e8m0, the exponent-only scale type,
// converts as Cast's default round_mode "up" does, see minifloat.cpp), converted to and from double exactly as ONNX's
// Cast specifies: round to nearest, ties to even; a value beyond the largest
// finite one saturates to it (Cast's default, `saturate = 1`) or becomes
// infinity where the type has one (e5m2) and NaN where it has none; NaN
// stays NaN where the type has one (f4e2m1 has none: NaN and infinities
// saturate to the largest magnitude, as ONNX's reference does).
//
// Invariant: decoding an encoded value gives it back when it is
// representable, and the codes of a type, sign apart, are ordered as their
// values (so rounding is a choice between two neighbouring codes).
#pragma once

#include <cstdint>

#include "ir/dtype.hpp"

namespace saturn::ir {

// The value of the code `bits` of minifloat type `t` (is_minifloat).
double minifloat_value(DType t, std::uint8_t bits);
// The code of minifloat type `t` nearest `v` (see above).
std::uint8_t minifloat_code(DType t, double v, bool saturate = true);

}  // namespace saturn::ir
