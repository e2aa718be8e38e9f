//===- CudnnSdpaGraph.cpp - cuDNN operation graphs of fused attention -----===//
//
// See CudnnSdpaGraph.h for which graph and why. Forward (s = scaled,
// masked scores, all [B, nh, T, T] virtual fp32 unless said):
//
//   s0 = Q @ K^T;  s1 = s0 * scale;  s = causal ? select(row >= col, s1, -inf) : s1
//   m = rowmax(s);  e = exp(s - m);  l = rowsum(e)
//   stats = m + log(l)                        (non-virtual, fp32)
//   p = e / l                                 (virtual bf16: the second
//   O = p @ V                                  matmul's operand type)
//
// Backward (P recomputed from stats, as FlashAttention-2):
//
//   softmax_sum = rowsum(dO * O) * 1          (fp32, in the workspace)
//   s = mask((Q @ K^T) * scale - stats);  p = exp(s)
//   dV = p^T @ dO                             (p^T: a bf16 transposed view)
//   ds = (dO @ V^T - softmax_sum) * p * scale
//   dK = ds^T @ Q
//   dq_accum = ds @ K (fp32, in the workspace);  dQ = identity(dq_accum)
//
// Data types, compute types and the order of the masked subtraction follow
// cudnn-frontend's composite SDPA nodes for cuDNN 9.19, which the fused
// engines are written to match.
//
//===----------------------------------------------------------------------===//

#include "CudnnSdpaGraph.h"


namespace bitpipe::runtime::cuda::cudnn {

std::string SdpaShape::describe() const {
  return "B=" + std::to_string(B) + " T=" + std::to_string(T) +
         " H=" + std::to_string(H) + " nh=" + std::to_string(nh) +
         (causal ? " causal" : " bidirectional");
}

const char *directionName(SdpaDirection direction) {
  return direction == SdpaDirection::Forward ? "forward" : "backward";
}

namespace {

using Dims = std::vector<int64_t>;

/// Every tensor starts at a 16-byte boundary: the pool's blocks are 256-byte
/// aligned and k, v (and dk, dv) start H bf16 elements further, H a
/// multiple of 8 (CudnnAttention.cpp checks both).
constexpr int64_t kAlignment = 16;
/// Virtual tensors are numbered from here, clear of SdpaUid.
constexpr int64_t kFirstVirtualUid = 100;

/// Appends tensors and operations to one SdpaGraph through one Builder.
class GraphWriter {
public:
  GraphWriter(Builder &b, SdpaGraph &g) : b_(b), g_(g) {}

  /// A tensor in memory (or, byValue, a host scalar), named by `uid`.
  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t type,
                                  const Dims &dims, const Dims &strides,
                                  bool byValue = false) {
    g_.uids.push_back(uid);
    return makeTensor(uid, type, dims, strides, /*isVirtual=*/false, byValue);
  }

  /// An intermediate the engine keeps in registers or shared memory.
  cudnnBackendDescriptor_t virtualTensor(cudnnDataType_t type,
                                         const Dims &dims,
                                         const Dims &strides) {
    return makeTensor(nextVirtualUid_++, type, dims, strides,
                      /*isVirtual=*/true, /*byValue=*/false);
  }

  /// y = mode(x[, b[, t]]); `axis` only for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t mathPrec,
                 cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t bIn,
                 cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y,
                 int64_t axis = -1) {
    Descriptor pw = b_.create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    b_.setPointwiseMode(pw, CUDNN_ATTR_POINTWISE_MODE, mode,
                        "CUDNN_ATTR_POINTWISE_MODE");
    b_.setDataType(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, mathPrec,
                   "CUDNN_ATTR_POINTWISE_MATH_PREC");
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      b_.setInt64(pw, CUDNN_ATTR_POINTWISE_AXIS, axis,
                  "CUDNN_ATTR_POINTWISE_AXIS");
    b_.finalize(pw, "pointwise");

    Descriptor op =
        b_.create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw.get(),
                     "CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x,
                     "CUDNN_ATTR_OPERATION_POINTWISE_XDESC");
    if (bIn)
      b_.setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, bIn,
                       "CUDNN_ATTR_OPERATION_POINTWISE_BDESC");
    if (t)
      b_.setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t,
                       "CUDNN_ATTR_OPERATION_POINTWISE_TDESC");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y,
                     "CUDNN_ATTR_OPERATION_POINTWISE_YDESC");
    b_.setFloat(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 1.0f,
                "CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1");
    b_.setFloat(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 1.0f,
                "CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2");
    b_.finalize(op, "pointwise op");
    keep(std::move(pw), std::move(op));
  }

  /// c = a @ b over the last two dims, batched over the first two, fp32
  /// accumulation.
  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t bIn,
              cudnnBackendDescriptor_t c) {
    Descriptor mm = b_.create(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
    b_.setDataType(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT,
                   "CUDNN_ATTR_MATMUL_COMP_TYPE");
    b_.finalize(mm, "matmul");

    Descriptor op =
        b_.create(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul op");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a,
                     "CUDNN_ATTR_OPERATION_MATMUL_ADESC");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, bIn,
                     "CUDNN_ATTR_OPERATION_MATMUL_BDESC");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c,
                     "CUDNN_ATTR_OPERATION_MATMUL_CDESC");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm.get(),
                     "CUDNN_ATTR_OPERATION_MATMUL_DESC");
    b_.finalize(op, "matmul op");
    keep(std::move(mm), std::move(op));
  }

  /// y = reduce(x) over the dims where y has extent 1, fp32.
  void reduction(cudnnReduceTensorOp_t reduceOp, cudnnBackendDescriptor_t x,
                 cudnnBackendDescriptor_t y) {
    Descriptor red = b_.create(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
    b_.setDataType(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT,
                   "CUDNN_ATTR_REDUCTION_COMP_TYPE");
    b_.setReduceOp(red, CUDNN_ATTR_REDUCTION_OPERATOR, reduceOp,
                   "CUDNN_ATTR_REDUCTION_OPERATOR");
    b_.finalize(red, "reduction");

    Descriptor op =
        b_.create(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction op");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red.get(),
                     "CUDNN_ATTR_OPERATION_REDUCTION_DESC");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x,
                     "CUDNN_ATTR_OPERATION_REDUCTION_XDESC");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y,
                     "CUDNN_ATTR_OPERATION_REDUCTION_YDESC");
    b_.finalize(op, "reduction op");
    keep(std::move(red), std::move(op));
  }

  /// y: x seen through other dims and strides (a transpose, no copy).
  void reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    Descriptor op =
        b_.create(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape op");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x,
                     "CUDNN_ATTR_OPERATION_RESHAPE_XDESC");
    b_.setDescriptor(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y,
                     "CUDNN_ATTR_OPERATION_RESHAPE_YDESC");
    b_.finalize(op, "reshape op");
    g_.operations.push_back(std::move(op));
  }

  /// The operation graph of every operation appended so far.
  bool finish(cudnnHandle_t handle) {
    std::vector<cudnnBackendDescriptor_t> ops;
    for (const Descriptor &op : g_.operations)
      ops.push_back(op.get());
    g_.graph = b_.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                         "operation graph");
    b_.setDescriptors(g_.graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, ops,
                      "CUDNN_ATTR_OPERATIONGRAPH_OPS");
    // Deprecated in 9.19 (the handle now comes with execution) but still
    // accepted, and required by earlier 9.x; cudnn-frontend sets it too
    // whenever it has one.
    if (handle)
      b_.setHandle(g_.graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle,
                   "CUDNN_ATTR_OPERATIONGRAPH_HANDLE");
    b_.finalize(g_.graph, "operation graph");
    return b_.ok();
  }

private:
  cudnnBackendDescriptor_t makeTensor(int64_t uid, cudnnDataType_t type,
                                      const Dims &dims, const Dims &strides,
                                      bool isVirtual, bool byValue) {
    Descriptor t = b_.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    b_.setDataType(t, CUDNN_ATTR_TENSOR_DATA_TYPE, type,
                   "CUDNN_ATTR_TENSOR_DATA_TYPE");
    b_.setInt64s(t, CUDNN_ATTR_TENSOR_DIMENSIONS, dims,
                 "CUDNN_ATTR_TENSOR_DIMENSIONS");
    b_.setInt64s(t, CUDNN_ATTR_TENSOR_STRIDES, strides,
                 "CUDNN_ATTR_TENSOR_STRIDES");
    b_.setInt64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, uid,
                "CUDNN_ATTR_TENSOR_UNIQUE_ID");
    b_.setInt64(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, kAlignment,
                "CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT");
    if (isVirtual)
      b_.setBool(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, true,
                 "CUDNN_ATTR_TENSOR_IS_VIRTUAL");
    if (byValue)
      b_.setBool(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, true,
                 "CUDNN_ATTR_TENSOR_IS_BY_VALUE");
    b_.finalize(t, "tensor");
    cudnnBackendDescriptor_t raw = t.get();
    g_.tensors.push_back(std::move(t));
    return raw;
  }

  void keep(Descriptor part, Descriptor op) {
    g_.parts.push_back(std::move(part));
    g_.operations.push_back(std::move(op));
  }

  Builder &b_;
  SdpaGraph &g_;
  int64_t nextVirtualUid_ = kFirstVirtualUid;
};

/// The dims and strides every graph uses.
struct Layout {
  Dims qkv, qkvStrides;   // Q, K, V, dQ, dK, dV: [B, nh, T, d] in qkv
  Dims qkvT, qkvTStrides; // K^T, V^T: [B, nh, d, T] in qkv
  Dims o, oStrides;       // O, dO: [B, nh, T, d] in [B, T, H]
  Dims rows, rowStrides;  // stats and row reductions: [B, nh, T, 1]
  Dims scores, scoreStrides;   // [B, nh, T, T], row-major
  Dims scoresT, scoreTStrides; // the same memory seen transposed
  Dims packed, packedStrides;  // [B, nh, T, d] fp32, dense (dq accumulator)
  Dims scalar, scalarStrides;  // [1, 1, 1, 1]

  explicit Layout(const SdpaShape &s) {
    const int64_t B = s.B, T = s.T, H = s.H, nh = s.nh, d = s.d();
    qkv = {B, nh, T, d};
    qkvStrides = {T * 3 * H, d, 3 * H, 1};
    qkvT = {B, nh, d, T};
    qkvTStrides = {T * 3 * H, d, 1, 3 * H};
    o = {B, nh, T, d};
    oStrides = {T * H, d, H, 1};
    rows = {B, nh, T, 1};
    rowStrides = {nh * T, T, 1, 1};
    scores = {B, nh, T, T};
    scoreStrides = {nh * T * T, T * T, T, 1};
    scoresT = {B, nh, T, T};
    scoreTStrides = {nh * T * T, T * T, 1, T};
    packed = {B, nh, T, d};
    packedStrides = {nh * T * d, T * d, d, 1};
    scalar = {1, 1, 1, 1};
    scalarStrides = {1, 1, 1, 1};
  }
};

/// Top-left causal mask: keeps s[i, j] where row i >= column j (query t
/// sees keys 0..t), else -inf; the subgraph cudnn-frontend uses for a
/// right bound of 0 (GEN_INDEX in fp32 math with int32 output, the
/// comparison in boolean math).
cudnnBackendDescriptor_t causalMask(GraphWriter &w, const Layout &l,
                                    cudnnBackendDescriptor_t s) {
  auto row = w.virtualTensor(CUDNN_DATA_INT32, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, nullptr, nullptr,
              row, /*axis=*/2);
  auto col = w.virtualTensor(CUDNN_DATA_INT32, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s, nullptr, nullptr,
              col, /*axis=*/3);
  auto keep = w.virtualTensor(CUDNN_DATA_BOOLEAN, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, nullptr,
              keep);
  auto negInf = w.tensor(kUidNegInf, CUDNN_DATA_FLOAT, l.scalar,
                         l.scalarStrides, /*byValue=*/true);
  auto masked = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  // BINARY_SELECT: y = t ? x : b.
  w.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, negInf, keep,
              masked);
  return masked;
}

void writeForward(GraphWriter &w, const SdpaShape &shape) {
  const Layout l(shape);
  auto q = w.tensor(kUidQ, CUDNN_DATA_BFLOAT16, l.qkv, l.qkvStrides);
  auto kT = w.tensor(kUidK, CUDNN_DATA_BFLOAT16, l.qkvT, l.qkvTStrides);
  auto v = w.tensor(kUidV, CUDNN_DATA_BFLOAT16, l.qkv, l.qkvStrides);
  auto o = w.tensor(kUidO, CUDNN_DATA_BFLOAT16, l.o, l.oStrides);
  auto stats = w.tensor(kUidStats, CUDNN_DATA_FLOAT, l.rows, l.rowStrides);
  auto scale = w.tensor(kUidScale, CUDNN_DATA_FLOAT, l.scalar, l.scalarStrides,
                        /*byValue=*/true);

  auto s0 = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.matmul(q, kT, s0);
  auto s = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s0, scale, nullptr, s);
  if (shape.causal)
    s = causalMask(w, l, s);

  auto m = w.virtualTensor(CUDNN_DATA_FLOAT, l.rows, l.rowStrides);
  w.reduction(CUDNN_REDUCE_TENSOR_MAX, s, m);
  auto centred = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s, m, nullptr, centred);
  auto e = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, centred, nullptr, nullptr,
              e);
  auto sum = w.virtualTensor(CUDNN_DATA_FLOAT, l.rows, l.rowStrides);
  w.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  auto logSum = w.virtualTensor(CUDNN_DATA_FLOAT, l.rows, l.rowStrides);
  w.pointwise(CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, sum, nullptr, nullptr,
              logSum);
  w.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, m, logSum, nullptr,
              stats);
  // The probabilities are bf16: the second matmul takes both operands in
  // the I/O type.
  auto p = w.virtualTensor(CUDNN_DATA_BFLOAT16, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, e, sum, nullptr, p);
  w.matmul(p, v, o);
}

void writeBackward(GraphWriter &w, const SdpaShape &shape) {
  const Layout l(shape);
  auto q = w.tensor(kUidQ, CUDNN_DATA_BFLOAT16, l.qkv, l.qkvStrides);
  auto kT = w.tensor(kUidK, CUDNN_DATA_BFLOAT16, l.qkvT, l.qkvTStrides);
  auto vT = w.tensor(kUidV, CUDNN_DATA_BFLOAT16, l.qkvT, l.qkvTStrides);
  auto o = w.tensor(kUidO, CUDNN_DATA_BFLOAT16, l.o, l.oStrides);
  auto dO = w.tensor(kUidDO, CUDNN_DATA_BFLOAT16, l.o, l.oStrides);
  auto stats = w.tensor(kUidStats, CUDNN_DATA_FLOAT, l.rows, l.rowStrides);
  auto dQ = w.tensor(kUidDQ, CUDNN_DATA_BFLOAT16, l.qkv, l.qkvStrides);
  auto dK = w.tensor(kUidDK, CUDNN_DATA_BFLOAT16, l.qkv, l.qkvStrides);
  auto dV = w.tensor(kUidDV, CUDNN_DATA_BFLOAT16, l.qkv, l.qkvStrides);
  auto scale = w.tensor(kUidScale, CUDNN_DATA_FLOAT, l.scalar, l.scalarStrides,
                        /*byValue=*/true);
  auto one = w.tensor(kUidOne, CUDNN_DATA_FLOAT, l.scalar, l.scalarStrides,
                      /*byValue=*/true);
  auto softmaxSum =
      w.tensor(kUidSoftmaxSum, CUDNN_DATA_FLOAT, l.rows, l.rowStrides);
  auto dQAccum =
      w.tensor(kUidDQAccum, CUDNN_DATA_FLOAT, l.packed, l.packedStrides);

  // softmax_sum_i = dO_i . O_i (the FlashAttention-2 "D" term); the product
  // by one stands where dropout's scale would.
  auto dOxO = w.virtualTensor(CUDNN_DATA_FLOAT, l.o, l.oStrides);
  w.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dO, o, nullptr, dOxO);
  auto rowDot = w.virtualTensor(CUDNN_DATA_FLOAT, l.rows, l.rowStrides);
  w.reduction(CUDNN_REDUCE_TENSOR_ADD, dOxO, rowDot);
  w.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, rowDot, one, nullptr,
              softmaxSum);

  // p = exp(scale * Q K^T - stats), masked: the forward's probabilities.
  auto s0 = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.matmul(q, kT, s0);
  auto s1 = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s0, scale, nullptr, s1);
  auto s = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s1, stats, nullptr, s);
  if (shape.causal)
    s = causalMask(w, l, s);
  auto p = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, s, nullptr, nullptr, p);

  // dV = p^T dO.
  auto pT = w.virtualTensor(CUDNN_DATA_BFLOAT16, l.scoresT, l.scoreTStrides);
  w.reshape(p, pT);
  w.matmul(pT, dO, dV);

  // ds = p * (dO V^T - softmax_sum) * scale.
  auto dP = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.matmul(dO, vT, dP);
  auto centred = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, dP, softmaxSum, nullptr,
              centred);
  auto dS0 = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, centred, p, nullptr, dS0);
  auto dS = w.virtualTensor(CUDNN_DATA_FLOAT, l.scores, l.scoreStrides);
  w.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dS0, scale, nullptr, dS);

  // dK = ds^T Q.
  auto dST = w.virtualTensor(CUDNN_DATA_BFLOAT16, l.scoresT, l.scoreTStrides);
  w.reshape(dS, dST);
  w.matmul(dST, q, dK);

  // dQ = ds K, accumulated in fp32 and rounded once. K is K^T seen
  // untransposed (dims [B, nh, T, d], strides [T*3H, d, 3H, 1]); the view is
  // fp32-typed as the frontend types it (an intermediate).
  auto k = w.virtualTensor(CUDNN_DATA_FLOAT, l.qkv, l.qkvStrides);
  w.reshape(kT, k);
  w.matmul(dS, k, dQAccum);
  w.pointwise(CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, dQAccum, nullptr,
              nullptr, dQ);
}

int64_t roundUp256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

} // namespace

bool buildSdpaGraph(Builder &builder, const SdpaShape &shape,
                    SdpaDirection direction, cudnnHandle_t handle,
                    SdpaGraph &out) {
  out = SdpaGraph();
  GraphWriter w(builder, out);
  if (direction == SdpaDirection::Forward)
    writeForward(w, shape);
  else
    writeBackward(w, shape);
  return w.finish(handle);
}

int64_t sdpaDQAccumOffset(const SdpaShape &shape) {
  return roundUp256(shape.B * shape.nh * shape.T *
                    static_cast<int64_t>(sizeof(float)));
}

int64_t sdpaScratchBytes(const SdpaShape &shape, SdpaDirection direction) {
  if (direction == SdpaDirection::Forward)
    return 0;
  return sdpaDQAccumOffset(shape) +
         roundUp256(shape.B * shape.nh * shape.T * shape.d() *
                    static_cast<int64_t>(sizeof(float)));
}

} // namespace bitpipe::runtime::cuda::cudnn
