#include "lower/llvm_jit.hpp"

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "ir/cache_dir.hpp"

namespace saturn::lower {

namespace {

Diagnostic jit_failure(std::string message) {
  Diagnostic d;
  d.message = "LLVM JIT: " + std::move(message);
  return d;
}
Diagnostic jit_error(const std::string& what, llvm::Error e) {
  return jit_failure(what + ": " + llvm::toString(std::move(e)));
}

// Emits the scalar expression DAG of a kernel as LLVM IR in its compute
// type: f32 (exp, tanh and erf inline, the rest from the C library), f64
// (the C library's double functions throughout) or i64 (wrapping integer
// arithmetic, comparisons as 0/1: what int_kernel_expression accepts).
// Integer division, remainder and power never trap: a zero divisor (or 0 to
// a negative power) gives 0 and is reported by fault(), INT64_MIN / -1
// wraps (ir::int_quotient).
class ExprEmitter {
 public:
  // `fault_bits`: the bit each integer division sets (LoopKernel::fault_bits).
  ExprEmitter(llvm::IRBuilder<>& b, llvm::Module& m, const ir::SymContext& ctx, ir::DType compute,
              const std::map<ir::SymId, std::uint32_t>& fault_bits)
      : b_(b),
        m_(m),
        ctx_(ctx),
        fault_bits_(fault_bits),
        f64_(compute == ir::DType::F64),
        int_(compute == ir::DType::I64) {
    f32_ = f64_ ? b_.getDoubleTy() : b_.getFloatTy();
    i32_ = b_.getInt32Ty();
  }

  llvm::Value* c(double v) {
    return f64_ ? llvm::ConstantFP::get(f32_, v) : llvm::ConstantFP::get(f32_, static_cast<float>(v));
  }

  // `leaf(var)` loads the value a variable reads; memoized per call.
  template <class LeafFn>
  llvm::Value* emit(ir::SymId root, LeafFn leaf) {
    std::unordered_map<ir::SymId, llvm::Value*> memo;
    fault_ = nullptr;
    // Operands before users, so that the recursive emit below finds every
    // operand memoized and never nests deeper than one level (a fused chain
    // of 20,000 elementwise ops would overflow the stack). A node's operands
    // were made before it: ascending ids are such an order.
    const ir::SymId roots[] = {root};
    std::vector<ir::SymId> order = ctx_.reachable(roots);
    std::sort(order.begin(), order.end());
    for (ir::SymId id : order) emit(id, leaf, memo);
    return emit(root, leaf, memo);
  }
  // The last emit's i32 fault bits (those of the divisions by zero that
  // happened), or nullptr when it divides nothing.
  llvm::Value* fault() const { return fault_; }

  // NaN when either is (the quiet NaN, also lane by lane for vectors).
  llvm::Value* max_nan(llvm::Value* a, llvm::Value* bb) {
    llvm::Value* r = b_.CreateSelect(b_.CreateFCmpOLT(a, bb), bb, a);
    return b_.CreateSelect(b_.CreateFCmpUNO(a, bb), llvm::ConstantFP::getNaN(a->getType()), r);
  }
  llvm::Value* min_nan(llvm::Value* a, llvm::Value* bb) {
    llvm::Value* r = b_.CreateSelect(b_.CreateFCmpOLT(bb, a), bb, a);
    return b_.CreateSelect(b_.CreateFCmpUNO(a, bb), llvm::ConstantFP::getNaN(a->getType()), r);
  }

 private:
  llvm::Value* call(llvm::Intrinsic::ID id, std::initializer_list<llvm::Value*> args) {
    return b_.CreateIntrinsic(id, {f32_}, std::vector<llvm::Value*>(args));
  }
  llvm::Value* fma(llvm::Value* a, llvm::Value* x, llvm::Value* y) { return call(llvm::Intrinsic::fmuladd, {a, x, y}); }
  // Horner's rule: c[0] + x*(c[1] + x*(...)).
  llvm::Value* poly(llvm::Value* x, std::initializer_list<double> coeffs) {
    std::vector<double> cs(coeffs);
    llvm::Value* acc = c(cs.back());
    for (std::size_t i = cs.size() - 1; i-- > 0;) acc = fma(acc, x, c(cs[i]));
    return acc;
  }
  // The C library's `name`f (f32) or `name` (f64).
  llvm::Value* libm(const char* name, llvm::Value* x) {
    auto callee = m_.getOrInsertFunction(f64_ ? std::string(name) : std::string(name) + "f",
                                         llvm::FunctionType::get(f32_, {f32_}, false));
    return b_.CreateCall(callee, {x});
  }

  // exp(x) = p(r) * 2^n with n = round(x / ln 2), r = x - n ln 2 (|r| <= ln2/2),
  // p a degree-6 minimax polynomial (relative error 3.7e-8 with its f32
  // coefficients, a third of the Taylor polynomial's: exp is within 1 ulp).
  // n is read from the bits of x / ln 2 + 1.5 * 2^23, which rounds to the
  // nearest integer without a rounding or a conversion instruction. 2^n is
  // applied in two halves, the first added to p's exponent (p 2^(n/2) is
  // always normal) and the second a product, so that results down to the
  // subnormals are rounded once. Beyond the bounds the integer arithmetic
  // wraps, and the result is replaced by 0 or inf; NaN stays NaN. `base2`:
  // 2^x, with r = (x - n) ln 2 (x - n is exact). (These kernels are bound by
  // their arithmetic, not by memory: a SiLU pass took 3.5x a plain product
  // over the same floats.)
  llvm::Value* exp(llvm::Value* x, bool base2 = false) {
    const double round_shift = 12582912.0;  // 1.5 * 2^23
    llvm::Value* t = base2 ? b_.CreateFAdd(x, c(round_shift)) : fma(x, c(1.4426950408889634), c(round_shift));
    llvm::Value* n = b_.CreateFSub(t, c(round_shift));
    llvm::Value* r;
    if (base2) {
      r = b_.CreateFMul(b_.CreateFSub(x, n), c(0.6931471805599453));
    } else {
      r = fma(n, c(-0.693145751953125), x);      // ln2 split in a high part exact in f32 ...
      r = fma(n, c(-1.428606765330187e-06), r);  // ... and the rest
    }
    llvm::Value* p = poly(r, {1.0, 1.0, 0.4999999403953552, 0.16666805744171143, 0.04167912155389786,
                              0.00834562722593546, 0.001292351633310318});
    llvm::Value* ni = b_.CreateSub(b_.CreateBitCast(t, i32_), b_.CreateBitCast(c(round_shift), i32_));
    llvm::Value* n1 = b_.CreateAShr(ni, 1);
    llvm::Value* n2 = b_.CreateSub(ni, n1);
    llvm::Value* half = b_.CreateBitCast(b_.CreateAdd(b_.CreateBitCast(p, i32_), b_.CreateShl(n1, 23)), f32_);
    llvm::Value* y = b_.CreateFMul(half, b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(n2, b_.getInt32(127)), 23), f32_));
    llvm::Value* over = base2 ? b_.CreateFCmpOGE(x, c(128.0)) : b_.CreateFCmpOGT(x, c(88.72283935546875));
    llvm::Value* under = base2 ? b_.CreateFCmpOLT(x, c(-150.0)) : b_.CreateFCmpOLT(x, c(-104.0));
    y = b_.CreateSelect(over, c(std::numeric_limits<double>::infinity()), y);
    y = b_.CreateSelect(under, c(0.0), y);
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
  }
  // log(x) = e ln2 + log(m) with x = m 2^e, m in [sqrt(1/2), sqrt(2)):
  // log(m) = f - f^2/2 + f^3 P(f) for f = m - 1, Cephes' degree-8 P (about
  // 1 ulp). Subnormals are scaled by 2^23 first. Inline, so that the loop
  // vectorizes: the C library's logf, a call per element, kept it scalar
  // (1 M floats: 1.2-1.9 ms against 0.26 inline, 2 threads).
  // `base2`: log2(x) = e + log(m) log2(e), exact at powers of two.
  llvm::Value* log(llvm::Value* x, bool base2 = false) {
    llvm::Value* tiny = b_.CreateFCmpOLT(x, c(1.17549435082228750797e-38));  // below the normals
    llvm::Value* xs = b_.CreateSelect(tiny, b_.CreateFMul(x, c(8388608.0)), x);
    llvm::Value* bits = b_.CreateBitCast(xs, i32_);
    llvm::Value* e = b_.CreateSub(b_.CreateLShr(bits, 23), b_.getInt32(127));
    e = b_.CreateSelect(tiny, b_.CreateSub(e, b_.getInt32(23)), e);
    llvm::Value* m = b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, b_.getInt32(0x007fffff)), b_.getInt32(0x3f800000)),
                                      f32_);  // in [1, 2)
    llvm::Value* big = b_.CreateFCmpOGT(m, c(1.41421356237309504880));
    m = b_.CreateSelect(big, b_.CreateFMul(m, c(0.5)), m);
    e = b_.CreateSelect(big, b_.CreateAdd(e, b_.getInt32(1)), e);
    llvm::Value* ef = b_.CreateSIToFP(e, f32_);
    llvm::Value* f = b_.CreateFSub(m, c(1.0));
    llvm::Value* z = b_.CreateFMul(f, f);
    llvm::Value* p = poly(f, {3.3333331174e-1, -2.4999993993e-1, 2.0000714765e-1, -1.6668057665e-1, 1.4249322787e-1,
                              -1.2420140846e-1, 1.1676998740e-1, -1.1514610310e-1, 7.0376836292e-2});
    llvm::Value* y = fma(z, c(-0.5), b_.CreateFMul(b_.CreateFMul(f, z), p));
    llvm::Value* r;
    if (base2) {
      r = b_.CreateFAdd(ef, b_.CreateFMul(b_.CreateFAdd(f, y), c(1.44269504088896340736)));
    } else {
      // ln2 in two parts, the first exact in f32 times any exponent.
      r = fma(ef, c(0.693359375), b_.CreateFAdd(f, fma(ef, c(-2.12194440e-4), y)));
    }
    const double inf = std::numeric_limits<double>::infinity();
    r = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(inf)), c(inf), r);
    r = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(0.0)), c(-inf), r);
    r = b_.CreateSelect(b_.CreateFCmpOLT(x, c(0.0)), c(std::numeric_limits<double>::quiet_NaN()), r);
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, r);
  }
  // log1p(x) = log(u) x / (u - 1) for u = 1 + x rounded (the quotient
  // corrects u's rounding), x itself where u is 1, inf at inf.
  llvm::Value* log1p(llvm::Value* x) {
    llvm::Value* u = b_.CreateFAdd(c(1.0), x);
    llvm::Value* r = b_.CreateFMul(log(u), b_.CreateFDiv(x, b_.CreateFSub(u, c(1.0))));
    r = b_.CreateSelect(b_.CreateFCmpOEQ(u, c(1.0)), x, r);
    return b_.CreateSelect(b_.CreateFCmpOEQ(x, c(std::numeric_limits<double>::infinity())), x, r);
  }

  // tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)); below |x| = 0.1 its odd
  // Taylor series (the subtraction would cancel there).
  llvm::Value* tanh(llvm::Value* x) {
    llvm::Value* ax = call(llvm::Intrinsic::fabs, {x});
    llvm::Value* big =
        b_.CreateFSub(c(1.0), b_.CreateFDiv(c(2.0), b_.CreateFAdd(exp(b_.CreateFMul(ax, c(2.0))), c(1.0))));
    llvm::Value* x2 = b_.CreateFMul(x, x);
    llvm::Value* small = b_.CreateFMul(x, poly(x2, {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315}));
    llvm::Value* r = b_.CreateSelect(b_.CreateFCmpOLT(ax, c(0.1)), small, call(llvm::Intrinsic::copysign, {big, x}));
    return r;
  }
  // erf(x) = x P(x^2) / Q(x^2), P and Q of degrees 6 and 5, a minimax fit of
  // erf(x) / x on |x| <= 3.92 (relative error 5.2e-8 with its f32 coefficients;
  // evaluated in f32 within 5 ulps, as the Abramowitz & Stegun 7.1.26 form
  // with its Taylor series near 0 that it replaced, at a third of the
  // instructions: no exp and one division); +-1 beyond, where erf rounds
  // to +-1 in f32. NaN stays NaN.
  llvm::Value* erf(llvm::Value* x) {
    llvm::Value* u = b_.CreateFMul(x, x);
    llvm::Value* p = poly(u, {1.128379225730896, 0.18588638305664062, 0.054498471319675446, 0.0038919993676245213,
                              0.000384253216907382, 4.778836228069849e-06, -1.3688357114460814e-08});
    llvm::Value* q = poly(u, {1.0, 0.4980708658695221, 0.11432155966758728, 0.015559353865683079, 0.001322912867181003,
                              6.40613361611031e-05});
    llvm::Value* r = b_.CreateFDiv(b_.CreateFMul(x, p), q);
    llvm::Value* beyond = b_.CreateFCmpOGT(call(llvm::Intrinsic::fabs, {x}), c(3.92));
    return b_.CreateSelect(beyond, call(llvm::Intrinsic::copysign, {c(1.0), x}), r);
  }

  template <class LeafFn>
  llvm::Value* emit(ir::SymId id, LeafFn& leaf, std::unordered_map<ir::SymId, llvm::Value*>& memo) {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const ir::SymNode& n = ctx_.node(id);
    auto arg = [&](ir::SymId s) { return emit(s, leaf, memo); };
    auto flag = [&](llvm::Value* cond) { return b_.CreateSelect(cond, c(1.0), c(0.0)); };
    llvm::Value* v = nullptr;
    using ir::SymOp;
    if (int_ && n.op != SymOp::Var) {
      v = int_op(id, n, arg);
      memo.emplace(id, v);
      return v;
    }
    switch (n.op) {
      case SymOp::Var:
        v = leaf(id);
        break;
      case SymOp::Const:
        v = c(n.value);
        break;
      case SymOp::Add:
        v = b_.CreateFAdd(arg(n.a), arg(n.b));
        break;
      case SymOp::Mul:
        v = b_.CreateFMul(arg(n.a), arg(n.b));
        break;
      case SymOp::Div:
        v = b_.CreateFDiv(arg(n.a), arg(n.b));
        break;
      case SymOp::Neg:
        v = b_.CreateFNeg(arg(n.a));
        break;
      case SymOp::Max:
        v = max_nan(arg(n.a), arg(n.b));
        break;
      case SymOp::Min:
        v = min_nan(arg(n.a), arg(n.b));
        break;
      case SymOp::Abs:
        v = call(llvm::Intrinsic::fabs, {arg(n.a)});
        break;
      case SymOp::Less:
        v = flag(b_.CreateFCmpOLT(arg(n.a), arg(n.b)));
        break;
      case SymOp::LessEq:
        v = flag(b_.CreateFCmpOLE(arg(n.a), arg(n.b)));
        break;
      case SymOp::Equal:
        v = flag(b_.CreateFCmpOEQ(arg(n.a), arg(n.b)));
        break;
      case SymOp::Select:
        v = b_.CreateSelect(b_.CreateFCmpUNE(arg(n.a), c(0.0)), arg(n.b), arg(n.c));
        break;
      case SymOp::Floor:
        v = call(llvm::Intrinsic::floor, {arg(n.a)});
        break;
      case SymOp::Ceil:
        v = call(llvm::Intrinsic::ceil, {arg(n.a)});
        break;
      case SymOp::Sqrt:
        v = call(llvm::Intrinsic::sqrt, {arg(n.a)});
        break;
      case SymOp::Exp:
        v = f64_ ? libm("exp", arg(n.a)) : exp(arg(n.a));
        break;
      case SymOp::Tanh:
        v = f64_ ? libm("tanh", arg(n.a)) : tanh(arg(n.a));
        break;
      case SymOp::Erf:
        v = f64_ ? libm("erf", arg(n.a)) : erf(arg(n.a));
        break;
      case SymOp::Log:
        v = f64_ ? libm("log", arg(n.a)) : log(arg(n.a));
        break;
      case SymOp::Exp2:
        v = f64_ ? libm("exp2", arg(n.a)) : exp(arg(n.a), true);
        break;
      case SymOp::Log2:
        v = f64_ ? libm("log2", arg(n.a)) : log(arg(n.a), true);
        break;
      case SymOp::Sin:
        v = libm("sin", arg(n.a));
        break;
      case SymOp::Cos:
        v = libm("cos", arg(n.a));
        break;
      case SymOp::Log1p:
        v = f64_ ? libm("log1p", arg(n.a)) : log1p(arg(n.a));
        break;
      case SymOp::Pow: {
        auto callee = m_.getOrInsertFunction(f64_ ? "pow" : "powf", llvm::FunctionType::get(f32_, {f32_, f32_}, false));
        v = b_.CreateCall(callee, {arg(n.a), arg(n.b)});
        break;
      }
      case SymOp::FMod:  // LLVM's frem is C's fmod
        v = b_.CreateFRem(arg(n.a), arg(n.b));
        break;
      case SymOp::IntDiv:
      case SymOp::IntRem:
      case SymOp::IntPow:
        throw std::logic_error("llvm codegen: integer arithmetic in a float kernel: " + ctx_.to_string(id));
    }
    memo.emplace(id, v);
    return v;
  }

  // Node `n` of an i64 kernel over its operands' values (`arg`).
  template <class Arg>
  llvm::Value* int_op(ir::SymId id, const ir::SymNode& n, Arg& arg) {
    llvm::Value* zero = b_.getInt64(0);
    auto flag = [&](llvm::Value* cond) { return b_.CreateZExt(cond, b_.getInt64Ty()); };
    using ir::SymOp;
    switch (n.op) {
      case SymOp::Const:
        return b_.getInt64(static_cast<std::uint64_t>(static_cast<std::int64_t>(n.value)));
      case SymOp::Add:
        return b_.CreateAdd(arg(n.a), arg(n.b));
      case SymOp::Mul:
        return b_.CreateMul(arg(n.a), arg(n.b));
      case SymOp::Neg:
        return b_.CreateSub(zero, arg(n.a));
      case SymOp::Max:
      case SymOp::Min: {
        llvm::Value *x = arg(n.a), *y = arg(n.b);
        return n.op == SymOp::Max ? b_.CreateSelect(b_.CreateICmpSLT(x, y), y, x)
                                  : b_.CreateSelect(b_.CreateICmpSLT(y, x), y, x);
      }
      case SymOp::Abs: {
        llvm::Value* x = arg(n.a);
        return b_.CreateSelect(b_.CreateICmpSLT(x, zero), b_.CreateSub(zero, x), x);
      }
      case SymOp::Less:
        return flag(b_.CreateICmpSLT(arg(n.a), arg(n.b)));
      case SymOp::LessEq:
        return flag(b_.CreateICmpSLE(arg(n.a), arg(n.b)));
      case SymOp::Equal:
        return flag(b_.CreateICmpEQ(arg(n.a), arg(n.b)));
      case SymOp::Select:
        return b_.CreateSelect(b_.CreateICmpNE(arg(n.a), zero), arg(n.b), arg(n.c));
      case SymOp::IntDiv:
      case SymOp::IntRem: {
        llvm::Value *x = arg(n.a), *d = arg(n.b);
        llvm::Value* by_zero = b_.CreateICmpEQ(d, zero);
        llvm::Value* by_minus_one = b_.CreateICmpEQ(d, b_.getInt64(static_cast<std::uint64_t>(-1)));
        add_fault(id, by_zero);
        // x86's idiv traps on both: divide by 1 there instead.
        llvm::Value* safe = b_.CreateSelect(b_.CreateOr(by_zero, by_minus_one), b_.getInt64(1), d);
        if (n.op == SymOp::IntDiv) return b_.CreateSelect(by_minus_one, b_.CreateSub(zero, x), b_.CreateSDiv(x, safe));
        return b_.CreateSelect(by_minus_one, zero, b_.CreateSRem(x, safe));
      }
      case SymOp::IntPow: {
        llvm::Value *x = arg(n.a), *e = arg(n.b);
        add_fault(id, b_.CreateAnd(b_.CreateICmpEQ(x, zero), b_.CreateICmpSLT(e, zero)));
        return b_.CreateCall(int_power(), {x, e});
      }
      default:
        throw std::logic_error("llvm codegen: no i64 form of " + ctx_.to_string(id));
    }
  }

  void add_fault(ir::SymId id, llvm::Value* cond) {
    auto it = fault_bits_.find(id);
    if (it == fault_bits_.end()) throw std::logic_error("llvm codegen: a division without a fault bit");
    llvm::Value* bits = b_.CreateSelect(cond, b_.getInt32(it->second), b_.getInt32(0));
    fault_ = fault_ ? b_.CreateOr(fault_, bits) : bits;
  }

  // `i64 saturn.int_power(i64 x, i64 n)`, ir::int_power, defined once per
  // module: squaring for n >= 0; 1, +-1 or 0 for n < 0 (0 for x = 0, which
  // the caller reports).
  llvm::Function* int_power() {
    if (llvm::Function* f = m_.getFunction("saturn.int_power")) return f;
    llvm::LLVMContext& ctx = m_.getContext();
    llvm::Type* i64 = b_.getInt64Ty();
    auto* f = llvm::Function::Create(llvm::FunctionType::get(i64, {i64, i64}, false), llvm::Function::InternalLinkage,
                                     "saturn.int_power", m_);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::IRBuilder<> b(ctx);
    auto block = [&](const char* name) { return llvm::BasicBlock::Create(ctx, name, f); };
    llvm::BasicBlock *entry = block("entry"), *negative = block("negative"), *loop = block("loop"),
                     *done = block("done");
    llvm::Value *x = f->getArg(0), *n = f->getArg(1);
    b.SetInsertPoint(entry);
    b.CreateCondBr(b.CreateICmpSLT(n, b.getInt64(0)), negative, loop);
    b.SetInsertPoint(negative);  // 1 / x^n truncated: x = 1 -> 1, x = -1 -> (-1)^n, else 0
    llvm::Value* minus_one = b.getInt64(static_cast<std::uint64_t>(-1));
    llvm::Value* odd = b.CreateICmpNE(b.CreateAnd(n, b.getInt64(1)), b.getInt64(0));
    llvm::Value* of_minus_one = b.CreateSelect(odd, minus_one, b.getInt64(1));
    b.CreateRet(b.CreateSelect(b.CreateICmpEQ(x, b.getInt64(1)), b.getInt64(1),
                               b.CreateSelect(b.CreateICmpEQ(x, minus_one), of_minus_one, b.getInt64(0))));
    b.SetInsertPoint(loop);  // r *= base where e is odd; base *= base; e >>= 1
    llvm::PHINode* r = b.CreatePHI(i64, 2, "r");
    llvm::PHINode* base = b.CreatePHI(i64, 2, "base");
    llvm::PHINode* e = b.CreatePHI(i64, 2, "e");
    r->addIncoming(b.getInt64(1), entry);
    base->addIncoming(x, entry);
    e->addIncoming(n, entry);
    llvm::Value* is_zero = b.CreateICmpEQ(e, b.getInt64(0));
    llvm::Value* bit = b.CreateICmpNE(b.CreateAnd(e, b.getInt64(1)), b.getInt64(0));
    llvm::Value* r2 = b.CreateSelect(bit, b.CreateMul(r, base), r);
    r->addIncoming(r2, loop);
    base->addIncoming(b.CreateMul(base, base), loop);
    e->addIncoming(b.CreateLShr(e, 1), loop);
    b.CreateCondBr(is_zero, done, loop);
    b.SetInsertPoint(done);
    b.CreateRet(r);
    return f;
  }

  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
  const ir::SymContext& ctx_;
  const std::map<ir::SymId, std::uint32_t>& fault_bits_;
  bool f64_, int_;
  llvm::Type* f32_;  // the float compute type
  llvm::Type* i32_;
  llvm::Value* fault_ = nullptr;
};

// Whether LLVM may unroll a loop (Never: it stays a loop for the
// vectorizer, see short_vector_row).
enum class Unroll { Allowed, Never };

// `for (iv = lo; iv < hi; ++iv) body(iv)`, in the canonical form the loop
// vectorizer expects; the builder is left after the loop.
template <class Body>
void emit_loop(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, const char* name, Unroll unroll, Body body) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, name, f);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, std::string(name).append(".end"), f);
  b.CreateCondBr(b.CreateICmpSLT(lo, hi), loop, exit);
  b.SetInsertPoint(loop);
  llvm::PHINode* iv = b.CreatePHI(b.getInt64Ty(), 2, name);
  iv->addIncoming(lo, pre);
  body(static_cast<llvm::Value*>(iv));
  llvm::Value* next = b.CreateAdd(iv, b.getInt64(1), "", true, true);
  iv->addIncoming(next, b.GetInsertBlock());
  llvm::BranchInst* latch = b.CreateCondBr(b.CreateICmpSLT(next, hi), loop, exit);
  if (unroll == Unroll::Never) {
    llvm::MDNode* disable = llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable"));
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx, {nullptr, disable});
    id->replaceOperandWith(0, id);  // a loop's metadata names itself first
    latch->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  b.SetInsertPoint(exit);
}
template <class Body>
void emit_loop(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, const char* name, Body body) {
  emit_loop(b, lo, hi, name, Unroll::Allowed, std::move(body));
}

// The LLVM type a buffer of `t` holds (bf16 as its bits; the minifloats
// and 4-bit integers, which kernels only copy, as their byte).
llvm::Type* element_type(llvm::IRBuilder<>& b, ir::DType t) {
  switch (t) {
    case ir::DType::F32:
      return b.getFloatTy();
    case ir::DType::F64:
      return b.getDoubleTy();
    case ir::DType::F16:
      return b.getHalfTy();
    default:
      return b.getIntNTy(static_cast<unsigned>(8 * ir::dtype_size(t)));
  }
}

// A loaded element of `t` as the kernel's compute type `ct` (loop_kernel.hpp;
// into i64, integers and bools widened).
llvm::Value* to_compute(llvm::IRBuilder<>& b, llvm::Value* v, ir::DType t, llvm::Type* ct) {
  const bool zero_extended = ir::is_unsigned(t) || t == ir::DType::Bool;
  if (ct->isIntegerTy()) return zero_extended ? b.CreateZExtOrBitCast(v, ct) : b.CreateSExtOrBitCast(v, ct);
  switch (t) {
    case ir::DType::F32:
    case ir::DType::F64:
    case ir::DType::F16:
      return b.CreateFPCast(v, ct);
    case ir::DType::BF16:  // the high half of an f32
      return b.CreateFPCast(b.CreateBitCast(b.CreateShl(b.CreateZExt(v, b.getInt32Ty()), 16), b.getFloatTy()), ct);
    case ir::DType::I64:  // through double, as the reference cast rounds
      return b.CreateFPCast(b.CreateSIToFP(v, b.getDoubleTy()), ct);
    default:
      if (!ir::is_integer(t) && t != ir::DType::Bool)
        throw std::logic_error(std::string("llvm codegen: no loop-kernel leaf of type ") + ir::dtype_name(t));
      return zero_extended ? b.CreateUIToFP(v, ct) : b.CreateSIToFP(v, ct);
  }
}

// A computed value stored as `t`: rounded once (f16 and bf16 through f32, as
// Tensor::set rounds them), a bool as value != 0 (NaN included: unordered or
// not equal), an integer as Tensor::set converts it; from i64, an integer
// keeps its low bits.
llvm::Value* from_compute(llvm::IRBuilder<>& b, llvm::Value* v, ir::DType t, llvm::Type* out_type) {
  if (v->getType()->isIntegerTy())
    return t == ir::DType::Bool ? b.CreateZExt(b.CreateICmpNE(v, b.getInt64(0)), out_type) : b.CreateTrunc(v, out_type);
  switch (t) {
    case ir::DType::Bool:
      return b.CreateZExt(b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0)), out_type);
    case ir::DType::F32:
    case ir::DType::F64:
      return b.CreateFPCast(v, out_type);
    case ir::DType::F16:
      return b.CreateFPTrunc(b.CreateFPCast(v, b.getFloatTy()), out_type);
    case ir::DType::I64:
    case ir::DType::I32:
    case ir::DType::I16:
    case ir::DType::U16:
    case ir::DType::U32:
    case ir::DType::I8:
    case ir::DType::U8: {  // truncated, NaN 0, saturated to int64 (ir::Tensor::set), then the low bits
      // fptosi.sat's own expansion does not vectorize on x86 (about 10x
      // slower): the same function as a conversion of the value clamped
      // into range (AVX-512's vcvttps2qq), the top and NaN selected after.
      llvm::Type* ft = v->getType();
      auto real = [&](double x) { return llvm::ConstantFP::get(ft, x); };
      const double top = 9223372036854775808.0;  // 2^63
      const double below = ft->isFloatTy() ? static_cast<double>(std::nextafter(static_cast<float>(top), 0.0f))
                                           : std::nextafter(top, 0.0);
      llvm::Value* in_range = b.CreateMinNum(b.CreateMaxNum(v, real(-top)), real(below));
      llvm::Value* wide = b.CreateFPToSI(in_range, b.getInt64Ty());
      wide = b.CreateSelect(b.CreateFCmpOGE(v, real(top)), b.getInt64(std::numeric_limits<std::int64_t>::max()), wide);
      wide = b.CreateSelect(b.CreateFCmpUNO(v, v), b.getInt64(0), wide);
      return b.CreateTrunc(wide, out_type);
    }
    case ir::DType::BF16: {
      // Round to nearest even on the bits; a NaN keeps its high bits, quieted.
      llvm::Value* x = b.CreateBitCast(b.CreateFPCast(v, b.getFloatTy()), b.getInt32Ty());
      llvm::Value* odd = b.CreateAnd(b.CreateLShr(x, 16), b.getInt32(1));
      llvm::Value* rounded = b.CreateLShr(b.CreateAdd(x, b.CreateAdd(odd, b.getInt32(0x7FFF))), 16);
      llvm::Value* nan = b.CreateOr(b.CreateLShr(x, 16), b.getInt32(0x40));
      return b.CreateTrunc(b.CreateSelect(b.CreateFCmpUNO(v, v), nan, rounded), out_type);
    }
    default:
      throw std::logic_error(std::string("llvm codegen: no loop-kernel result of type ") + ir::dtype_name(t));
  }
}

// `if (bits) *fault |= bits` (an i32 flag; threads may race to set it,
// hence the atomic or).
void set_fault(llvm::IRBuilder<>& b, llvm::Value* bad, llvm::Value* fault, const std::string& kernel) {
  if (!fault) throw std::logic_error("llvm codegen: " + kernel + " divides integers but has no fault flag");
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* set = llvm::BasicBlock::Create(b.getContext(), "fault", f);
  llvm::BasicBlock* next = llvm::BasicBlock::Create(b.getContext(), "fault.end", f);
  b.CreateCondBr(b.CreateICmpNE(bad, b.getInt32(0)), set, next);
  b.SetInsertPoint(set);
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Or, fault, bad, llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic);
  b.CreateBr(next);
  b.SetInsertPoint(next);
}

// How a maximum or minimum along its innermost reduced dimension keeps
// vector lanes (emit_kernel): `w`, one 512-bit vector's (half of one for a
// staged row shorter than 128), when that dimension has at least one
// vector's elements (else 0: one accumulator). Read from
// the leaf itself when the body is one leaf of the compute type read
// contiguously; else `staged`: the row's values are computed into a buffer
// first, by a loop the vectorizer takes like any elementwise one (a masked
// softmax's x + mask), for rows of at most kStagedRow elements; the last
// elements that w does not divide are then taken one by one.
struct MinMaxLanes {
  std::int64_t w = 0;
  bool staged = false;
};
constexpr std::int64_t kStagedRow = 4096;  // 16 KB of floats (32 of doubles) on the stack
// The leaf the kernel's body is, when the body reads one operand of the
// compute type as it is and that operand is contiguous along loop `axis`
// (an index into the leaf's strides): its values can be loaded as vectors.
std::optional<std::size_t> contiguous_body_leaf(const LoopKernel& k,
                                                const std::unordered_map<ir::SymId, std::size_t>& leaf_of,
                                                std::size_t axis) {
  const auto it = leaf_of.find(k.body);
  if (k.ctx->node(k.body).op != ir::SymOp::Var || it == leaf_of.end()) return std::nullopt;
  const Leaf& leaf = k.leaves[it->second];
  if (leaf.dtype != k.compute || leaf.strides[axis] != 1) return std::nullopt;
  return it->second;
}

MinMaxLanes minmax_lanes(const LoopKernel& k, const std::unordered_map<ir::SymId, std::size_t>& leaf_of) {
  if ((k.reduce != ReduceKind::Max && k.reduce != ReduceKind::Min) || k.red_dims.empty()) return {};
  if (k.compute != ir::DType::F32 && k.compute != ir::DType::F64) return {};
  const std::int64_t w = k.compute == ir::DType::F64 ? 8 : 16;
  const std::int64_t n = k.red_dims.back();
  if (n < w) return {};
  const std::size_t last = k.dims.size() + k.red_dims.size() - 1;
  if (contiguous_body_leaf(k, leaf_of, last)) return {w, false};
  if (n > kStagedRow) return {};
  // Half a vector below 128 elements: a load of a whole 512-bit vector just
  // stored is not forwarded (Zen 4 stores it as two halves) and waits
  // for the store, which in a short row is most of the time (rows of 16:
  // 49.7 us against 9.4 with 8 lanes, [3136 16]; rows of 384: 89 against
  // 181 us).
  return {n >= 128 ? w : w / 2, true};
}

void emit_kernel(llvm::Module& m, const LoopKernel& k, const std::string& cpu, const std::string& features) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type* i64 = b.getInt64Ty();
  check_kernel_types(k);
  llvm::Type* ct = element_type(b, k.compute);
  llvm::Type* ptr = b.getPtrTy();
  const std::size_t nleaves = k.leaves.size();

  // The body: (leaf pointers..., out, [fault,] row_begin, row_end), noalias
  // pointers.
  const std::size_t npointers = nleaves + 1 + (k.fault >= 0 ? 1 : 0);
  std::vector<llvm::Type*> params(npointers, ptr);
  params.push_back(i64);
  params.push_back(i64);
  auto* body_fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), params, false),
                                         llvm::Function::InternalLinkage, k.name + ".body", m);
  for (std::size_t i = 0; i < npointers; ++i) {
    body_fn->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
    body_fn->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoCapture);
  }
  for (llvm::Function* f : {body_fn}) {
    f->addFnAttr("target-cpu", cpu);
    f->addFnAttr("target-features", features);
    f->addFnAttr(llvm::Attribute::NoUnwind);
  }
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", body_fn));
  std::vector<llvm::Value*> leaf_ptr;
  for (std::size_t i = 0; i < nleaves; ++i) leaf_ptr.push_back(body_fn->getArg(static_cast<unsigned>(i)));
  llvm::Value* out = body_fn->getArg(static_cast<unsigned>(nleaves));
  llvm::Value* fault = k.fault >= 0 ? body_fn->getArg(static_cast<unsigned>(nleaves + 1)) : nullptr;
  llvm::Value* row_begin = body_fn->getArg(static_cast<unsigned>(npointers));
  llvm::Value* row_end = body_fn->getArg(static_cast<unsigned>(npointers + 1));

  const std::size_t rank = k.dims.size();
  const std::int64_t inner = rank ? k.dims.back() : 1;
  std::unordered_map<ir::SymId, std::size_t> leaf_of;
  for (std::size_t i = 0; i < nleaves; ++i) leaf_of[k.leaf_vars[i]] = i;
  std::vector<llvm::Type*> leaf_type;
  for (const Leaf& l : k.leaves) leaf_type.push_back(element_type(b, l.dtype));
  llvm::Type* out_type = element_type(b, k.out_dtype);
  const bool copy = is_copy(k);
  // A loop of one to four vectors of a body without functions (exp, erf,
  // ...) stays a loop for the vectorizer. LLVM unrolls such short loops
  // fully before it vectorizes, and the loop around the scalar copies then
  // takes gathers and scatters or stays scalar: elementwise rows of 16 to 40
  // floats (an SE scale of NHWC data) ran 3-13x slower per element than
  // rows of 64, and sums over rows of 16 to 64 up to 8x slower than over
  // rows of 128. Longer loops, and loops of a function's long expansion,
  // are not unrolled fully, and run 2-5% faster with the unrolling LLVM
  // does after it vectorizes (rows of 100 and 128, softmax's exp sums).
  const std::vector<ir::SymId> body_nodes = k.ctx->reachable(std::span<const ir::SymId>(&k.body, 1));
  const bool cheap_body = std::none_of(body_nodes.begin(), body_nodes.end(),
                                       [&](ir::SymId id) { return ir::sym_op_is_function(k.ctx->node(id).op); });
  auto short_vector_row = [&](std::int64_t n) {
    const std::int64_t bytes = n * static_cast<std::int64_t>(ir::dtype_size(k.compute));
    return cheap_body && bytes >= 64 && bytes <= 256 ? Unroll::Never : Unroll::Allowed;
  };
  ExprEmitter ex(b, m, *k.ctx, k.compute, k.fault_bits);

  emit_loop(b, row_begin, row_end, "row", [&](llvm::Value* row) {
    // Element offsets of this row in every leaf: the row's multi-index over
    // dims[0 .. rank-2] (constant divisors), times the leaf's strides.
    std::vector<llvm::Value*> base(nleaves);
    for (std::size_t l = 0; l < nleaves; ++l) base[l] = b.getInt64(k.leaves[l].offset);
    llvm::Value* rem = row;
    for (std::size_t d = rank - 1; d-- > 0;) {
      llvm::Value* dim = b.getInt64(k.dims[d]);
      llvm::Value* idx = d == 0 ? rem : b.CreateURem(rem, dim);
      if (d > 0) rem = b.CreateUDiv(rem, dim);
      for (std::size_t l = 0; l < nleaves; ++l)
        if (k.leaves[l].strides[d] != 0)
          base[l] = b.CreateAdd(base[l], b.CreateMul(idx, b.getInt64(k.leaves[l].strides[d])));
    }
    llvm::Value* out_row = b.CreateMul(row, b.getInt64(inner));
    // Each leaf's element offset at inner index i and reduction indices
    // `extra` (strides from `first` on).
    auto offsets_at = [&](llvm::Value* i, const std::vector<llvm::Value*>& extra, std::size_t first) {
      std::vector<llvm::Value*> off(nleaves);
      for (std::size_t l = 0; l < nleaves; ++l) {
        off[l] = base[l];
        if (rank && k.leaves[l].strides[rank - 1] != 0)
          off[l] = b.CreateAdd(off[l], b.CreateMul(i, b.getInt64(k.leaves[l].strides[rank - 1])));
        for (std::size_t j = 0; j < extra.size(); ++j)
          if (k.leaves[l].strides[first + j] != 0)
            off[l] = b.CreateAdd(off[l], b.CreateMul(extra[j], b.getInt64(k.leaves[l].strides[first + j])));
      }
      return off;
    };
    auto body_at = [&](const std::vector<llvm::Value*>& off) {
      return ex.emit(k.body, [&](ir::SymId var) -> llvm::Value* {
        std::size_t l = leaf_of.at(var);
        llvm::Type* t = leaf_type[l];
        return to_compute(b, b.CreateLoad(t, b.CreateInBoundsGEP(t, leaf_ptr[l], off[l])), k.leaves[l].dtype, ct);
      });
    };
    // A maximum's or minimum's step, of scalars or vectors.
    auto extreme = [&](llvm::Value* x, llvm::Value* y) {
      return k.reduce == ReduceKind::Max ? ex.max_nan(x, y) : ex.min_nan(x, y);
    };
    // One step of the reduction: the accumulator at `acc` combined with v;
    // `lanes`: sums reassociable, so that the vectorizer can split one
    // accumulator into lanes (a column reduction's are lanes already, and
    // keep the reference's order).
    auto accumulate = [&](llvm::Value* acc, llvm::Value* v, bool lanes) {
      llvm::Value* a = b.CreateLoad(v->getType(), acc);
      llvm::Value* r = nullptr;
      if (k.reduce == ReduceKind::Sum || k.reduce == ReduceKind::Prod) {
        r = k.reduce == ReduceKind::Sum ? b.CreateFAdd(a, v) : b.CreateFMul(a, v);
        if (lanes) {
          llvm::FastMathFlags fm;
          fm.setAllowReassoc();
          llvm::cast<llvm::Instruction>(r)->setFastMathFlags(fm);
        }
      } else {
        r = extreme(a, v);
      }
      b.CreateStore(r, acc);
    };
    // The reduction loops around `inside`, their indices in jv. `lanes`: the
    // last loop is innermost (`inside` emits none) and its reduction
    // reassociates, so the vectorizer splits it into lanes when it is left
    // a loop (a max or min chain it does not vectorize runs faster unrolled).
    std::vector<llvm::Value*> jv;
    std::function<void(std::size_t, std::size_t, bool, const std::function<void()>&)> nest_to =
        [&](std::size_t level, std::size_t end, bool lanes, const std::function<void()>& inside) {
          if (level == end) return inside();
          const std::int64_t n = k.red_dims[level];
          const Unroll unroll = lanes && level + 1 == end ? short_vector_row(n) : Unroll::Allowed;
          emit_loop(b, b.getInt64(0), b.getInt64(n), "r", unroll, [&](llvm::Value* j) {
            jv.push_back(j);
            nest_to(level + 1, end, lanes, inside);
            jv.pop_back();
          });
        };
    auto nest = [&](std::size_t level, bool lanes, const std::function<void()>& inside) {
      nest_to(level, k.red_dims.size(), lanes, inside);
    };
    auto store_result = [&](llvm::Value* i, llvm::Value* total) {
      llvm::Value* res = ex.emit(k.post, [&](ir::SymId) -> llvm::Value* { return total; });
      b.CreateStore(from_compute(b, res, k.out_dtype, out_type),
                    b.CreateInBoundsGEP(out_type, out, b.CreateAdd(out_row, i)));
    };
    auto new_accumulators = [&](std::int64_t n, llvm::Type* t = nullptr) {
      llvm::IRBuilder<> eb(&body_fn->getEntryBlock(), body_fn->getEntryBlock().begin());
      return eb.CreateAlloca(t ? t : ct, eb.getInt64(n));  // promoted to registers by SROA
    };
    if (k.reduce != ReduceKind::None && inner > 1) {
      // A column reduction (reduce_by_columns): `inner` accumulators, each
      // reduced in the same order as one row's, the reduction loops outside
      // and a loop over the contiguous columns inside. LLVM unrolls a short
      // one into scalar sums, which the SLP vectorizer makes vectors again
      // (a plain operand's columns were one vector load here before SLP ran:
      // efficientnet_b0's 27 pools take 0.059-0.063 ms either way); a body
      // with a function such as exp stays a loop, vectorized as one.
      llvm::AllocaInst* accs = new_accumulators(inner);
      auto acc_at = [&](llvm::Value* i) { return b.CreateInBoundsGEP(ct, accs, i); };
      emit_loop(b, b.getInt64(0), b.getInt64(inner), "c.init",
                [&](llvm::Value* i) { b.CreateStore(ex.c(reduce_init(k.reduce)), acc_at(i)); });
      nest(0, false, [&] {
        emit_loop(b, b.getInt64(0), b.getInt64(inner), "c",
                  [&](llvm::Value* i) { accumulate(acc_at(i), body_at(offsets_at(i, jv, rank)), false); });
      });
      emit_loop(b, b.getInt64(0), b.getInt64(inner), "c.post",
                [&](llvm::Value* i) { store_result(i, b.CreateLoad(ct, acc_at(i))); });
      return;
    }
    const Unroll row_unroll = k.reduce == ReduceKind::None ? short_vector_row(inner) : Unroll::Allowed;
    emit_loop(b, b.getInt64(0), b.getInt64(inner), "i", row_unroll, [&](llvm::Value* i) {
      llvm::Value* dst = b.CreateInBoundsGEP(out_type, out, b.CreateAdd(out_row, i));
      if (k.reduce == ReduceKind::None) {
        if (copy) {  // the element as it is, of any type
          const std::vector<llvm::Value*> off = offsets_at(i, {}, rank);
          b.CreateStore(b.CreateLoad(out_type, b.CreateInBoundsGEP(out_type, leaf_ptr[0], off[0])), dst);
        } else {
          b.CreateStore(from_compute(b, body_at(offsets_at(i, {}, rank)), k.out_dtype, out_type), dst);
          if (llvm::Value* bad = ex.fault()) set_fault(b, bad, fault, k.name);
        }
        return;
      }
      if (const MinMaxLanes lanes = minmax_lanes(k, leaf_of); lanes.w > 0) {
        // A maximum or minimum of contiguous elements: a vector of w lanes,
        // lane l taking elements l, l + w, ..., then halved down to one.
        // LLVM 16 vectorizes no NaN-propagating select chain (it recognizes
        // no such reduction). An element taken twice counts as once (the
        // last w elements close a row that w does not divide); the order
        // only decides which of -0 and +0 a tie between them keeps.
        const std::int64_t w = lanes.w;
        const std::size_t last = k.red_dims.size() - 1;
        const std::int64_t n = k.red_dims[last];
        auto* vt = llvm::FixedVectorType::get(ct, static_cast<unsigned>(w));
        llvm::AllocaInst* acc = new_accumulators(1, vt);
        b.CreateStore(llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(static_cast<unsigned>(w)),
                                                     llvm::ConstantFP::get(ct, reduce_init(k.reduce))),
                      acc);
        const llvm::Align align(ir::dtype_size(k.compute));
        llvm::AllocaInst* stage = lanes.staged ? new_accumulators(n) : nullptr;
        llvm::AllocaInst* tail = stage && n % w ? new_accumulators(1) : nullptr;  // taken one by one
        if (tail) b.CreateStore(ex.c(reduce_init(k.reduce)), tail);
        auto take = [&](llvm::Value* j) {
          llvm::Value* at = nullptr;
          if (stage) {
            at = b.CreateInBoundsGEP(ct, stage, j);
          } else {
            const std::size_t leaf = leaf_of.at(k.body);
            jv.push_back(j);
            at = b.CreateInBoundsGEP(ct, leaf_ptr[leaf], offsets_at(i, jv, rank)[leaf]);
            jv.pop_back();
          }
          b.CreateStore(extreme(b.CreateLoad(vt, acc), b.CreateAlignedLoad(vt, at, align)), acc);
        };
        nest_to(0, last, false, [&] {
          if (stage)
            emit_loop(b, b.getInt64(0), b.getInt64(n), "stage", short_vector_row(n), [&](llvm::Value* j) {
              jv.push_back(j);
              b.CreateStore(body_at(offsets_at(i, jv, rank)), b.CreateInBoundsGEP(ct, stage, j));
              jv.pop_back();
            });
          emit_loop(b, b.getInt64(0), b.getInt64(n / w), "lc",
                    [&](llvm::Value* chunk) { take(b.CreateMul(chunk, b.getInt64(w))); });
          if (n % w == 0) return;
          if (!tail) return take(b.getInt64(n - w));
          // (A vector load over the fill loop's last scalar stores would
          // wait for them, as above.)
          for (std::int64_t j = n - n % w; j < n; ++j)
            b.CreateStore(
                extreme(b.CreateLoad(ct, tail), b.CreateLoad(ct, b.CreateInBoundsGEP(ct, stage, b.getInt64(j)))), tail);
        });
        llvm::Value* v = b.CreateLoad(vt, acc);
        for (std::int64_t half = w / 2; half >= 1; half /= 2) {
          std::vector<int> lo, hi;
          for (std::int64_t l = 0; l < half; ++l) {
            lo.push_back(static_cast<int>(l));
            hi.push_back(static_cast<int>(l + half));
          }
          v = extreme(b.CreateShuffleVector(v, lo), b.CreateShuffleVector(v, hi));
        }
        llvm::Value* result = b.CreateExtractElement(v, std::uint64_t{0});
        store_result(i, tail ? extreme(result, b.CreateLoad(ct, tail)) : result);
        return;
      }
      // Reduction: one accumulator for the element.
      llvm::AllocaInst* acc = new_accumulators(1);
      b.CreateStore(ex.c(reduce_init(k.reduce)), acc);
      const bool lanes = k.reduce == ReduceKind::Sum || k.reduce == ReduceKind::Prod;
      nest(0, lanes, [&] { accumulate(acc, body_at(offsets_at(i, jv, rank)), true); });
      store_result(i, b.CreateLoad(ct, acc));
    });
  });
  b.CreateRetVoid();

  // The entry point: unpacks the buffer array and calls the body (inlined).
  auto* entry = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr, i64, i64}, false),
                                       llvm::Function::ExternalLinkage, k.name, m);
  entry->addFnAttr("target-cpu", cpu);
  entry->addFnAttr("target-features", features);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<llvm::Value*> args;
  for (std::size_t i = 0; i < npointers; ++i)
    args.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i)));
  args.push_back(entry->getArg(1));
  args.push_back(entry->getArg(2));
  b.CreateCall(body_fn, args);
  b.CreateRetVoid();
}

}  // namespace

struct KernelJit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::optional<llvm::orc::JITTargetMachineBuilder> jtmb;  // a TargetMachine per compiling thread
  std::string cpu, features;
  int modules = 0;
};

Expected<std::shared_ptr<KernelJit>> KernelJit::create() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return jit_error("detecting the host", jtmb.takeError());
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm) return jit_error("creating a target machine", tm.takeError());
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
  if (!jit) return jit_error("creating LLJIT", jit.takeError());
  // The C library's math functions (logf, powf, ...) come from this process.
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!gen) return jit_error("searching this process's symbols", gen.takeError());
  (*jit)->getMainJITDylib().addGenerator(std::move(*gen));
  std::shared_ptr<KernelJit> k(new KernelJit());
  k->impl_ = std::make_unique<Impl>();
  k->impl_->cpu = (*tm)->getTargetCPU().str();
  k->impl_->features = (*tm)->getTargetFeatureString().str();
  k->impl_->jtmb = std::move(*jtmb);
  k->impl_->jit = std::move(*jit);
  return k;
}

KernelJit::~KernelJit() = default;

std::string KernelJit::target_description() const { return impl_->cpu + " " + impl_->features; }

namespace {

// Kernels per module: below twice this, one module on this thread.
constexpr std::size_t kKernelsPerModule = 16;

// One module of distinct kernels, compiled to an object file on its own
// thread (its own LLVMContext and TargetMachine: nothing LLVM keeps is
// shared between threads).
struct ModuleJob {
  std::vector<const LoopKernel*> kernels;  // named
  std::unique_ptr<llvm::MemoryBuffer> object;
  std::string ir;       // the optimized IR, when kept
  bool cached = false;  // the object came from the disk cache
  std::optional<Diagnostic> failure;
  std::exception_ptr thrown;  // a code generator's logic_error (check_kernel_types), rethrown on the caller's thread
};

// What a cached object depends on besides its module's IR: bump it when
// build_module's pipeline or code generation options change.
constexpr const char* kObjectCacheFormat = "saturn object cache 2: O3 with SLP, CGFT_ObjectFile";

void build_module(ModuleJob& job, llvm::orc::JITTargetMachineBuilder jtmb, const std::string& cpu,
                  const std::string& features, const std::string& name, bool keep_ir, const ir::DiskCache& disk) {
  try {
    auto tm = jtmb.createTargetMachine();
    if (!tm) {
      job.failure = jit_error("creating a target machine", tm.takeError());
      return;
    }
    llvm::LLVMContext ctx;
    llvm::Module m(name, ctx);
    m.setDataLayout((*tm)->createDataLayout());
    m.setTargetTriple((*tm)->getTargetTriple().str());
    for (const LoopKernel* k : job.kernels) emit_kernel(m, *k, cpu, features);
    std::string err;
    llvm::raw_string_ostream es(err);
    if (llvm::verifyModule(m, &es)) {
      job.failure = jit_failure("generated IR is invalid: " + es.str());
      return;
    }
    std::string key;
    if (disk.enabled() && !keep_ir) {
      llvm::raw_string_ostream ks(key);
      ks << kObjectCacheFormat << "\n" << LLVM_VERSION_STRING << "\n" << cpu << "\n" << features << "\n";
      m.print(ks, nullptr);
      ks.flush();
      if (auto object = disk.get(key)) {
        job.object = llvm::MemoryBuffer::getMemBufferCopy(*object, name);
        job.cached = true;
        return;
      }
    }
    {
      llvm::LoopAnalysisManager lam;
      llvm::FunctionAnalysisManager fam;
      llvm::CGSCCAnalysisManager cgam;
      llvm::ModuleAnalysisManager mam;
      // (The SLP vectorizer is off in PassBuilder's default options; clang
      // turns it on at -O2 and up.)
      llvm::PipelineTuningOptions tuning;
      tuning.SLPVectorization = true;
      llvm::PassBuilder pb(tm->get(), tuning);
      pb.registerModuleAnalyses(mam);
      pb.registerCGSCCAnalyses(cgam);
      pb.registerFunctionAnalyses(fam);
      pb.registerLoopAnalyses(lam);
      pb.crossRegisterProxies(lam, fam, cgam, mam);
      llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
      mpm.run(m, mam);
    }
    if (keep_ir) {
      llvm::raw_string_ostream os(job.ir);
      m.print(os, nullptr);
    }
    llvm::SmallVector<char, 0> object;
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager codegen;
    if ((*tm)->addPassesToEmitFile(codegen, os, nullptr, llvm::CGFT_ObjectFile)) {
      job.failure = jit_failure("the target cannot emit object files");
      return;
    }
    codegen.run(m);
    job.object = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), name);
    if (!key.empty()) disk.put(key, std::string_view(object.data(), object.size()));
  } catch (...) {
    job.thrown = std::current_exception();
  }
}

}  // namespace

Expected<std::vector<KernelFn>> KernelJit::compile(const std::vector<LoopKernel>& kernels) {
  if (kernels.empty()) return std::vector<KernelFn>{};
  const int module = impl_->modules++;
  // Kernels that differ only in their buffers share one function.
  std::vector<std::size_t> which;  // each kernel's distinct one
  std::unordered_map<std::string, std::size_t> by_signature;
  std::vector<LoopKernel> distinct;
  for (const LoopKernel& k : kernels) {
    auto [it, fresh] = by_signature.try_emplace(kernel_signature(k), distinct.size());
    if (fresh) {
      distinct.push_back(k);
      distinct.back().name = "k" + std::to_string(module) + "_" + std::to_string(it->second);
    }
    which.push_back(it->second);
  }
  // Compiling is most of a big model's start-up: the distinct kernels are
  // spread over a module per hardware thread (round robin: neighbours are
  // alike in size), each compiled on its own thread.
  const std::size_t threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  std::vector<ModuleJob> jobs(std::clamp<std::size_t>(distinct.size() / kKernelsPerModule, 1, threads));
  for (std::size_t i = 0; i < distinct.size(); ++i) jobs[i % jobs.size()].kernels.push_back(&distinct[i]);
  const ir::DiskCache disk(cache_dir, "obj-", ".o");
  std::mutex told;
  std::size_t done = 0;
  auto tell = [&] {
    if (!progress) return;
    std::lock_guard<std::mutex> lock(told);
    progress(++done, jobs.size(), distinct.size());
  };
  if (progress) progress(0, jobs.size(), distinct.size());
  {
    std::vector<std::jthread> workers;
    for (std::size_t j = 1; j < jobs.size(); ++j)
      workers.emplace_back([&, j] {
        build_module(jobs[j], *impl_->jtmb, impl_->cpu, impl_->features,
                     "saturn_kernels_" + std::to_string(module) + "_" + std::to_string(j), keep_ir, disk);
        tell();
      });
    build_module(jobs[0], *impl_->jtmb, impl_->cpu, impl_->features, "saturn_kernels_" + std::to_string(module) + "_0",
                 keep_ir, disk);
    tell();
  }
  if (keep_ir) last_ir_.clear();
  cached_modules_ = 0;
  for (ModuleJob& job : jobs) {
    cached_modules_ += job.cached;
    if (job.thrown) std::rethrow_exception(job.thrown);
    if (job.failure) return *job.failure;
    if (keep_ir) last_ir_ += job.ir;
    if (auto e = impl_->jit->addObjectFile(std::move(job.object)))
      return jit_error("adding the object file", std::move(e));
  }
  std::vector<KernelFn> compiled;
  for (const LoopKernel& k : distinct) {
    auto addr = impl_->jit->lookup(k.name);
    if (!addr) return jit_error("looking up " + k.name, addr.takeError());
    compiled.push_back(addr->toPtr<KernelFn>());
  }
  std::vector<KernelFn> fns;
  for (std::size_t d : which) fns.push_back(compiled[d]);
  return fns;
}

}  // namespace saturn::lower
