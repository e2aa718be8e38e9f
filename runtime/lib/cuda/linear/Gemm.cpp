//===- Gemm.cpp - One cuBLASLt product, its algorithm cached --------------===//
//
// The product that Gemm.h describes, and its cache of algorithms.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace bitpipe::runtime::cuda::linear {
namespace {

cudaDataType_t cudaTypeOf(Element e) {
  return e == Element::Bf16 ? CUDA_R_16BF : CUDA_R_32F;
}

bool epilogueHasBias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

bool epilogueHasAux(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU;
}

/// The cache key: the description and how aligned each operand is (the
/// heuristic's answer depends on both).
struct PlanKey {
  GemmDesc desc;
  uint32_t alignA, alignB, alignD, alignBias, alignAux;

  bool operator==(const PlanKey &o) const {
    const GemmDesc &a = desc, &b = o.desc;
    return a.ab == b.ab && a.cd == b.cd && a.transA == b.transA &&
           a.transB == b.transB && a.m == b.m && a.n == b.n && a.k == b.k &&
           a.lda == b.lda && a.ldb == b.ldb && a.ldd == b.ldd &&
           a.epilogue == b.epilogue && a.auxLd == b.auxLd &&
           alignA == o.alignA && alignB == o.alignB && alignD == o.alignD &&
           alignBias == o.alignBias && alignAux == o.alignAux;
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey &key) const {
    const GemmDesc &d = key.desc;
    size_t h = 0;
    auto mix = [&h](uint64_t v) {
      h ^= std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) +
           (h >> 2);
    };
    for (uint64_t v :
         {uint64_t(d.ab), uint64_t(d.cd), uint64_t(d.transA),
          uint64_t(d.transB), uint64_t(d.m), uint64_t(d.n), uint64_t(d.k),
          uint64_t(d.lda), uint64_t(d.ldb), uint64_t(d.ldd),
          uint64_t(d.epilogue), uint64_t(d.auxLd), uint64_t(key.alignA),
          uint64_t(key.alignB), uint64_t(key.alignD), uint64_t(key.alignBias),
          uint64_t(key.alignAux)})
      mix(v);
    return h;
  }
};

/// The descriptors and the chosen algorithm of one key. Kept for the
/// process's life, like the handle.
struct Plan {
  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspaceBytes = 0;
  /// False when the heuristic offered nothing (remembered, so that a
  /// declined epilogue is not asked about again every call).
  bool hasAlgo = false;
  cublasStatus_t heuristicStatus = CUBLAS_STATUS_SUCCESS;

  ~Plan() {
    if (matmul)
      cublasLtMatmulDescDestroy(matmul);
    if (a)
      cublasLtMatrixLayoutDestroy(a);
    if (b)
      cublasLtMatrixLayoutDestroy(b);
    if (d)
      cublasLtMatrixLayoutDestroy(d);
  }
};

template <typename T>
cublasStatus_t setDescAttribute(cublasLtMatmulDesc_t desc,
                                cublasLtMatmulDescAttributes_t attribute,
                                const T &value) {
  return cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value));
}

/// Points the descriptor at this call's bias and aux. The pointers are
/// attributes of the descriptor, not arguments of cublasLtMatmul.
bp_status_t bindEpilogueOperands(const Plan &plan, const GemmDesc &desc,
                                 const GemmOperands &ops,
                                 const CallSite &site) {
  if (epilogueHasBias(desc.epilogue))
    if (bp_status_t s = checkCublas(
            setDescAttribute(plan.matmul, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                             ops.bias),
            "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", site);
        s != BP_OK)
      return s;
  if (epilogueHasAux(desc.epilogue))
    if (bp_status_t s = checkCublas(
            setDescAttribute(plan.matmul,
                             CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                             ops.aux),
            "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)", site);
        s != BP_OK)
      return s;
  return BP_OK;
}

/// Creates the descriptors of \p key and asks the heuristic for its best
/// algorithm, with \p ops bound (the heuristic reads the bias and aux
/// pointers' alignment from the descriptor).
bp_status_t buildPlan(cublasLtHandle_t handle, const PlanKey &key,
                      const GemmOperands &ops, const CallSite &site,
                      Plan &plan) {
  const GemmDesc &g = key.desc;
  auto check = [&](cublasStatus_t status, const char *call) {
    return checkCublas(status, call, site);
  };
  if (bp_status_t s = check(cublasLtMatmulDescCreate(
                                &plan.matmul, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                            "cublasLtMatmulDescCreate");
      s != BP_OK)
    return s;
  const int32_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t epilogue = g.epilogue;
  if (bp_status_t s =
          check(setDescAttribute(plan.matmul, CUBLASLT_MATMUL_DESC_TRANSA, opA),
                "cublasLtMatmulDescSetAttribute(TRANSA)");
      s != BP_OK)
    return s;
  if (bp_status_t s =
          check(setDescAttribute(plan.matmul, CUBLASLT_MATMUL_DESC_TRANSB, opB),
                "cublasLtMatmulDescSetAttribute(TRANSB)");
      s != BP_OK)
    return s;
  if (bp_status_t s =
          check(setDescAttribute(plan.matmul, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                 epilogue),
                "cublasLtMatmulDescSetAttribute(EPILOGUE)");
      s != BP_OK)
    return s;
  if (epilogueHasAux(g.epilogue))
    if (bp_status_t s = check(
            setDescAttribute(plan.matmul, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                             g.auxLd),
            "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
        s != BP_OK)
      return s;
  if (bp_status_t s = bindEpilogueOperands(plan, g, ops, site); s != BP_OK)
    return s;

  // The stored matrices (before op): op(A) is [m, k], so A is [k, m] when
  // transposed; likewise B.
  const uint64_t aRows = g.transA ? g.k : g.m, aCols = g.transA ? g.m : g.k;
  const uint64_t bRows = g.transB ? g.n : g.k, bCols = g.transB ? g.k : g.n;
  if (bp_status_t s = check(cublasLtMatrixLayoutCreate(
                                &plan.a, cudaTypeOf(g.ab), aRows, aCols, g.lda),
                            "cublasLtMatrixLayoutCreate(A)");
      s != BP_OK)
    return s;
  if (bp_status_t s = check(cublasLtMatrixLayoutCreate(
                                &plan.b, cudaTypeOf(g.ab), bRows, bCols, g.ldb),
                            "cublasLtMatrixLayoutCreate(B)");
      s != BP_OK)
    return s;
  if (bp_status_t s = check(cublasLtMatrixLayoutCreate(
                                &plan.d, cudaTypeOf(g.cd), g.m, g.n, g.ldd),
                            "cublasLtMatrixLayoutCreate(D)");
      s != BP_OK)
    return s;

  cublasLtMatmulPreference_t pref = nullptr;
  if (bp_status_t s = check(cublasLtMatmulPreferenceCreate(&pref),
                            "cublasLtMatmulPreferenceCreate");
      s != BP_OK)
    return s;
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t,
                  cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      prefOwner(pref, cublasLtMatmulPreferenceDestroy);
  const uint64_t workspace = kWorkspaceBytes;
  struct {
    cublasLtMatmulPreferenceAttributes_t attribute;
    uint32_t value;
  } alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.alignA},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.alignB},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.alignD},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.alignD},
  };
  if (bp_status_t s =
          check(cublasLtMatmulPreferenceSetAttribute(
                    pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                    sizeof(workspace)),
                "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
      s != BP_OK)
    return s;
  for (const auto &[attribute, value] : alignments)
    if (bp_status_t s =
            check(cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value,
                                                       sizeof(value)),
                  "cublasLtMatmulPreferenceSetAttribute(alignment)");
        s != BP_OK)
      return s;

  // One result: the heuristic's first choice is its best.
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  plan.heuristicStatus =
      cublasLtMatmulAlgoGetHeuristic(handle, plan.matmul, plan.a, plan.b,
                                     plan.d, plan.d, pref, 1, &result, &count);
  plan.hasAlgo = plan.heuristicStatus == CUBLAS_STATUS_SUCCESS && count > 0 &&
                 result.state == CUBLAS_STATUS_SUCCESS &&
                 result.workspaceSize <= kWorkspaceBytes;
  if (plan.hasAlgo) {
    plan.algo = result.algo;
    plan.workspaceBytes = result.workspaceSize;
  }
  return BP_OK;
}

const char *epilogueName(cublasLtEpilogue_t e) {
  switch (e) {
  case CUBLASLT_EPILOGUE_DEFAULT:
    return "DEFAULT";
  case CUBLASLT_EPILOGUE_BIAS:
    return "BIAS";
  case CUBLASLT_EPILOGUE_GELU_AUX:
    return "GELU_AUX";
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    return "GELU_AUX_BIAS";
  case CUBLASLT_EPILOGUE_DGELU:
    return "DGELU";
  default:
    return "other";
  }
}

} // namespace

bp_status_t runGemm(const GemmDesc &desc, const GemmOperands &ops,
                    cudaStream_t stream, const CallSite &site, bool mayDecline,
                    bool *ran) {
  *ran = false;
  // One lock over the cache, the descriptor's bias/aux pointers (shared by
  // every call of a key) and the enqueue: a rank calls from one thread, so
  // it is never contended there, and it keeps two threads correct.
  static std::mutex mutex;
  static auto *plans =
      new std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash>();
  std::lock_guard<std::mutex> lock(mutex);

  cublasLtHandle_t handle = ltHandle(site);
  if (!handle)
    return BP_ERR_DEVICE;
  const PlanKey key{desc,
                    alignmentOf(ops.a),
                    alignmentOf(ops.b),
                    alignmentOf(ops.d),
                    epilogueHasBias(desc.epilogue) ? alignmentOf(ops.bias) : 0u,
                    epilogueHasAux(desc.epilogue) ? alignmentOf(ops.aux) : 0u};
  Plan *plan = nullptr;
  if (auto it = plans->find(key); it != plans->end()) {
    plan = it->second.get();
    if (plan->hasAlgo)
      if (bp_status_t s = bindEpilogueOperands(*plan, desc, ops, site);
          s != BP_OK)
        return s;
  } else {
    auto fresh = std::make_unique<Plan>();
    if (bp_status_t s = buildPlan(handle, key, ops, site, *fresh); s != BP_OK)
      return s;
    plan = fresh.get();
    plans->emplace(key, std::move(fresh));
  }

  if (!plan->hasAlgo) {
    if (mayDecline)
      return BP_OK;
    char what[256];
    std::snprintf(what, sizeof(what),
                  "cublasLtMatmulAlgoGetHeuristic found no algorithm (%s) for "
                  "m=%lld n=%lld k=%lld, epilogue %s",
                  cublasLtGetStatusName(plan->heuristicStatus),
                  static_cast<long long>(desc.m),
                  static_cast<long long>(desc.n),
                  static_cast<long long>(desc.k), epilogueName(desc.epilogue));
    reportError(site, what);
    return BP_ERR_DEVICE;
  }

  void *workspace = nullptr;
  if (plan->workspaceBytes > 0) {
    workspace = workspaceFor(stream, site);
    if (!workspace)
      return BP_ERR_OUT_OF_MEMORY;
  }
  const float alpha = 1.0f;
  const cublasStatus_t status =
      cublasLtMatmul(handle, plan->matmul, &alpha, ops.a, plan->a, ops.b,
                     plan->b, &ops.beta, ops.d, plan->d, ops.d, plan->d,
                     &plan->algo, workspace, plan->workspaceBytes, stream);
  // An epilogue the heuristic offered but cublasLtMatmul then refuses (it
  // checks its arguments before enqueueing anything): remember the refusal
  // and let the caller take its unfused path, now and for this key later.
  if (mayDecline && (status == CUBLAS_STATUS_NOT_SUPPORTED ||
                     status == CUBLAS_STATUS_INVALID_VALUE)) {
    char what[256];
    std::snprintf(what, sizeof(what),
                  "cublasLtMatmul refused the %s epilogue (%s); this shape "
                  "takes the unfused path",
                  epilogueName(desc.epilogue), cublasLtGetStatusName(status));
    reportError(site, what);
    plan->hasAlgo = false;
    return BP_OK;
  }
  if (bp_status_t s = checkCublas(status, "cublasLtMatmul", site); s != BP_OK)
    return s;
  *ran = true;
  return BP_OK;
}

} // namespace bitpipe::runtime::cuda::linear
