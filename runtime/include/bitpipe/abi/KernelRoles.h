/*===- bitpipe/abi/KernelRoles.h - Parameter roles of the kernels -*- C -*-===*\
|*                                                                            *|
|* Every parameter of a kernel in bitpipe/abi/Kernels.h is written as a       *|
|* (ROLE, name) pair. The role says what the parameter holds, and with the    *|
|* precision of the call that fixes its C type, its ABI kind (ArgKinds.def)   *|
|* and the check every implementation makes before it touches memory:         *|
|*                                                                            *|
|*   role          holds                               C type          check  *|
|*   ACT_IN        an activation or its gradient, read const E *       != 0   *|
|*   ACT_OUT       the same, written                   E *             != 0   *|
|*   WEIGHT        a weight, read                      const E *       != 0   *|
|*   WEIGHT_OPT    a weight that may be NULL (absent)  const E *              *|
|*   GRAD_ACC      a parameter gradient, accumulated   G *             != 0   *|
|*   GRAD_ACC_OPT  one that may be NULL                G *                    *|
|*   STAT_IN       a saved statistic, read             const float *   != 0   *|
|*   STAT_OUT      a statistic, written                float *         != 0   *|
|*   LOSS_IN       the loss's gradient (one float)     const float *   != 0   *|
|*   LOSS_OUT      the loss (one float), written       float *         != 0   *|
|*   IDS           token ids or labels                 const int32_t * != 0   *|
|*   RNG_KEY       a micro-batch's random key (4 words) const int32_t * != 0 *|
|*   DIM           a size                              int64_t         > 0    *|
|*   SCALAR        a real parameter (eps, base)        float                  *|
|*   INT           an integer parameter (causal)       int32_t                *|
|*                                                                            *|
|* E is the element type of the call's precision P: float for F32 and        *|
|* F32_G64, bp_bf16_t for BF16. G is the element type of the parameter        *|
|* gradients it accumulates into: float, except under F32_G64 (the CPU        *|
|* target's float64 accumulators, which a stage function's gradient kernels   *|
|* add into directly: Kernels.h's BP_GRAD_KERNELS). Statistics and the loss   *|
|* are fp32 in all three. Checks beyond these (eps >= 0, heads that divide    *|
|* H, ids in range) are each kernel's own.                                    *|
|*                                                                            *|
|* The macros at the end turn a kernel's list into a parameter list, an       *|
|* argument list, a list of ABI kinds or the conjunction of the checks, so    *|
|* that runtime.h, cuda.h, the CUDA dispatchers, the kernels' prologues and   *|
|* the compiler's view of the ABI are all spelled from the one list. Plain    *|
|* C99 preprocessor: the header is included by C callers too.                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef BITPIPE_ABI_KERNELROLES_H
#define BITPIPE_ABI_KERNELROLES_H

/* The precisions of a call: the element type of activations and weights
 * (ELEM) with their ABI kinds (IN, OUT), and the element type of the
 * parameter gradients it accumulates into (GRAD) with its ABI kind
 * (GRAD_OUT). */
#define BP_PREC_ELEM_F32 float
#define BP_PREC_IN_F32 F32_IN
#define BP_PREC_OUT_F32 F32_OUT
#define BP_PREC_GRAD_F32 float
#define BP_PREC_GRAD_OUT_F32 F32_OUT

#define BP_PREC_ELEM_BF16 bp_bf16_t
#define BP_PREC_IN_BF16 BF16_IN
#define BP_PREC_OUT_BF16 BF16_OUT
#define BP_PREC_GRAD_BF16 float
#define BP_PREC_GRAD_OUT_BF16 F32_OUT

#define BP_PREC_ELEM_F32_G64 float
#define BP_PREC_IN_F32_G64 F32_IN
#define BP_PREC_OUT_F32_G64 F32_OUT
#define BP_PREC_GRAD_F32_G64 double
#define BP_PREC_GRAD_OUT_F32_G64 F64_OUT

/* The roles: C type and ABI kind (P: the call's precision), check (x: the
 * parameter): a condition and &&, or nothing. */
#define BP_ROLE_CTYPE_ACT_IN(P) const BP_PREC_ELEM_##P *
#define BP_ROLE_KIND_ACT_IN(P) BP_PREC_IN_##P
#define BP_ROLE_CHECK_ACT_IN(x) (x) != 0 &&

#define BP_ROLE_CTYPE_ACT_OUT(P) BP_PREC_ELEM_##P *
#define BP_ROLE_KIND_ACT_OUT(P) BP_PREC_OUT_##P
#define BP_ROLE_CHECK_ACT_OUT(x) (x) != 0 &&

#define BP_ROLE_CTYPE_WEIGHT(P) const BP_PREC_ELEM_##P *
#define BP_ROLE_KIND_WEIGHT(P) BP_PREC_IN_##P
#define BP_ROLE_CHECK_WEIGHT(x) (x) != 0 &&

#define BP_ROLE_CTYPE_WEIGHT_OPT(P) const BP_PREC_ELEM_##P *
#define BP_ROLE_KIND_WEIGHT_OPT(P) BP_PREC_IN_##P
#define BP_ROLE_CHECK_WEIGHT_OPT(x)

#define BP_ROLE_CTYPE_GRAD_ACC(P) BP_PREC_GRAD_##P *
#define BP_ROLE_KIND_GRAD_ACC(P) BP_PREC_GRAD_OUT_##P
#define BP_ROLE_CHECK_GRAD_ACC(x) (x) != 0 &&

#define BP_ROLE_CTYPE_GRAD_ACC_OPT(P) BP_PREC_GRAD_##P *
#define BP_ROLE_KIND_GRAD_ACC_OPT(P) BP_PREC_GRAD_OUT_##P
#define BP_ROLE_CHECK_GRAD_ACC_OPT(x)

#define BP_ROLE_CTYPE_STAT_IN(P) const float *
#define BP_ROLE_KIND_STAT_IN(P) F32_IN
#define BP_ROLE_CHECK_STAT_IN(x) (x) != 0 &&

#define BP_ROLE_CTYPE_STAT_OUT(P) float *
#define BP_ROLE_KIND_STAT_OUT(P) F32_OUT
#define BP_ROLE_CHECK_STAT_OUT(x) (x) != 0 &&

#define BP_ROLE_CTYPE_LOSS_IN(P) const float *
#define BP_ROLE_KIND_LOSS_IN(P) F32_IN
#define BP_ROLE_CHECK_LOSS_IN(x) (x) != 0 &&

#define BP_ROLE_CTYPE_LOSS_OUT(P) float *
#define BP_ROLE_KIND_LOSS_OUT(P) F32_OUT
#define BP_ROLE_CHECK_LOSS_OUT(x) (x) != 0 &&

#define BP_ROLE_CTYPE_IDS(P) const int32_t *
#define BP_ROLE_KIND_IDS(P) I32_IN
#define BP_ROLE_CHECK_IDS(x) (x) != 0 &&

#define BP_ROLE_CTYPE_RNG_KEY(P) const int32_t *
#define BP_ROLE_KIND_RNG_KEY(P) I32_IN
#define BP_ROLE_CHECK_RNG_KEY(x) (x) != 0 &&

#define BP_ROLE_CTYPE_DIM(P) int64_t
#define BP_ROLE_KIND_DIM(P) I64
#define BP_ROLE_CHECK_DIM(x) (x) > 0 &&

#define BP_ROLE_CTYPE_SCALAR(P) float
#define BP_ROLE_KIND_SCALAR(P) F32
#define BP_ROLE_CHECK_SCALAR(x)

#define BP_ROLE_CTYPE_INT(P) int32_t
#define BP_ROLE_KIND_INT(P) I32
#define BP_ROLE_CHECK_INT(x)

/*===-----------------------------------------------------------------------===
 * Spelling a kernel's list. `kernel` is the name after bp_ (layer_norm_fwd),
 * P a precision (F32, BF16 or F32_G64).
 *===----------------------------------------------------------------------===*/

/* `const float *x, const float *gamma, ..., float eps` */
#define BP_KERNEL_PARAMS(P, kernel)                                            \
  BP_PP_MAP_LIST(BP_PARAM_DECL_, BP_PP_COMMA_, P, BP_KERNEL_##kernel)
/* `x, gamma, ..., eps`: forwarding a call. */
#define BP_KERNEL_ARG_NAMES(kernel)                                            \
  BP_PP_MAP_LIST(BP_PARAM_NAME_, BP_PP_COMMA_, ~, BP_KERNEL_##kernel)
/* `F32_IN, F32_IN, ..., F32`: the ABI kinds (ArgKinds.def) of the call. */
#define BP_KERNEL_KINDS(P, kernel)                                             \
  BP_PP_MAP_LIST(BP_PARAM_KIND_, BP_PP_COMMA_, P, BP_KERNEL_##kernel)
/* Whether the arguments in scope pass the roles' checks: an expression for
 * a kernel's prologue, with the parameters named as in the list. */
#define BP_KERNEL_ARGS_VALID(kernel)                                           \
  (BP_PP_MAP_LIST(BP_PARAM_CHECK_, BP_PP_NOTHING_, ~, BP_KERNEL_##kernel) 1)

/* `ACT_IN, WEIGHT, ..., SCALAR`: the roles, for tables of them. */
#define BP_KERNEL_ROLES_OF(kernel)                                             \
  BP_PP_MAP_LIST(BP_PARAM_ROLE_, BP_PP_COMMA_, ~, BP_KERNEL_##kernel)
/* `"x", "gamma", ..., "eps"`: the parameters' names, for messages. */
#define BP_KERNEL_PARAM_NAMES(kernel)                                          \
  BP_PP_MAP_LIST(BP_PARAM_NAME_STRING_, BP_PP_COMMA_, ~, BP_KERNEL_##kernel)

/* Every role, for X(ROLE) tables. */
#define BP_KERNEL_ROLES(X)                                                     \
  X(ACT_IN)                                                                    \
  X(ACT_OUT)                                                                   \
  X(WEIGHT)                                                                    \
  X(WEIGHT_OPT)                                                                \
  X(GRAD_ACC)                                                                  \
  X(GRAD_ACC_OPT)                                                              \
  X(STAT_IN)                                                                   \
  X(STAT_OUT)                                                                  \
  X(LOSS_IN)                                                                   \
  X(LOSS_OUT)                                                                  \
  X(IDS)                                                                       \
  X(RNG_KEY)                                                                   \
  X(DIM)                                                                       \
  X(SCALAR)                                                                    \
  X(INT)

#define BP_PARAM_DECL_(P, role, name) BP_ROLE_CTYPE_##role(P) name
#define BP_PARAM_NAME_(unused, role, name) name
#define BP_PARAM_KIND_(P, role, name) BP_ROLE_KIND_##role(P)
#define BP_PARAM_ROLE_(unused, role, name) role
#define BP_PARAM_NAME_STRING_(unused, role, name) #name
#define BP_PARAM_CHECK_(unused, role, name) BP_ROLE_CHECK_##role(name)

/*===-----------------------------------------------------------------------===
 * The map underneath: F(C, role, name) for each (role, name) of a list,
 * with SEP() between, for lists of 1 to 16 entries.
 *===----------------------------------------------------------------------===*/

#define BP_PP_COMMA_() ,
#define BP_PP_NOTHING_()
/* The list is a macro's name: expanded here, before it is counted. */
#define BP_PP_MAP_LIST(F, SEP, C, ...) BP_PP_MAP_(F, SEP, C, __VA_ARGS__)
#define BP_PP_MAP_(F, SEP, C, ...)                                             \
  BP_PP_MAP_N_(BP_PP_COUNT_(__VA_ARGS__))(F, SEP, C, __VA_ARGS__)
#define BP_PP_MAP_N_(n) BP_PP_MAP_N_I_(n)
#define BP_PP_MAP_N_I_(n) BP_PP_MAP_##n##_
#define BP_PP_COUNT_(...)                                                      \
  BP_PP_COUNT_I_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, \
                 2, 1, 0)
#define BP_PP_COUNT_I_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, \
                       _14, _15, _16, n, ...)                                  \
  n
/* One entry: (role, name) unparenthesised into F's arguments. */
#define BP_PP_APPLY_(F, C, entry) BP_PP_APPLY_I_(F, C, BP_PP_UNPAREN_ entry)
#define BP_PP_APPLY_I_(F, C, ...) F(C, __VA_ARGS__)
#define BP_PP_UNPAREN_(...) __VA_ARGS__

#define BP_PP_MAP_1_(F, S, C, a) BP_PP_APPLY_(F, C, a)
#define BP_PP_MAP_2_(F, S, C, a, ...)                                          \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_1_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_3_(F, S, C, a, ...)                                          \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_2_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_4_(F, S, C, a, ...)                                          \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_3_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_5_(F, S, C, a, ...)                                          \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_4_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_6_(F, S, C, a, ...)                                          \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_5_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_7_(F, S, C, a, ...)                                          \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_6_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_8_(F, S, C, a, ...)                                          \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_7_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_9_(F, S, C, a, ...)                                          \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_8_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_10_(F, S, C, a, ...)                                         \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_9_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_11_(F, S, C, a, ...)                                         \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_10_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_12_(F, S, C, a, ...)                                         \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_11_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_13_(F, S, C, a, ...)                                         \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_12_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_14_(F, S, C, a, ...)                                         \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_13_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_15_(F, S, C, a, ...)                                         \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_14_(F, S, C, __VA_ARGS__)
#define BP_PP_MAP_16_(F, S, C, a, ...)                                         \
  BP_PP_APPLY_(F, C, a) S() BP_PP_MAP_15_(F, S, C, __VA_ARGS__)

#endif /* BITPIPE_ABI_KERNELROLES_H */
