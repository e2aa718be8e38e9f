/*===- bitpipe/program.h - C ABI of a compiled per-rank program ---*- C -*-===*\
|*                                                                            *|
|* What bitpipe-lower-to-runtime emits for the ops of a `bitpipe.program`,    *|
|* and the symbols a compiled model object defines for the runtime's main().  *|
|* docs/runtime-abi.md gives the overview; abi/*.def is the one description   *|
|* of the calls, symbols and manifest words that both sides build from.      *|
|*                                                                            *|
|* Division of work. The compiler turns every stage function (forward,        *|
|* backward, input/weight-gradient halves) into machine code that calls the   *|
|* kernels of runtime.h, and every rank's program into a function of the      *|
|* bp_rt_* calls below, in the schedule's order (loops where it repeats).     *|
|* The runtime (the "executor") owns everything with state: parameters,       *|
|* their gradients and AdamW moments, the buffers of values in flight, the    *|
|* saved handles, communication requests, data loading, checkpoints, logs     *|
|* and traces.                                                                *|
|*                                                                            *|
|* Values. Within one rank's program every SSA value (a tensor, a saved       *|
|* handle, an all-reduce token) has a dense id in [0, num_values) assigned    *|
|* by the compiler. Tensors are immutable once produced. The compiler emits   *|
|* bp_rt_release(id) after the last use of a tensor value (right after the    *|
|* op that defines it when nothing reads it, as the loss); the runtime frees  *|
|* its buffer once nothing else (a saved handle, a pending send, a local      *|
|* copy) holds it.                                                            *|
|* Saved handles are released by the backward that consumes them (or by the   *|
|* weight-gradient half when the backward is split).                          *|
|*                                                                            *|
|* Errors. None of these calls returns a status: the generated code has no    *|
|* caller to hand an error to. On any error (a failed kernel, a timeout, a    *|
|* dead peer, a short data file) the runtime prints                           *|
|* "bitpipe: rank R: fatal: ..." naming the op, stage and micro-batch, and    *|
|* stops every rank of the job with a non-zero exit (bp_comm_abort).          *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef BITPIPE_PROGRAM_H
#define BITPIPE_PROGRAM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The executor state of one rank; opaque to generated code. */
typedef struct bp_rt_context bp_rt_context;

/*===-----------------------------------------------------------------------===
 * Symbols a compiled model object defines (bitpipe-lower-to-runtime,
 * bitpipe-emit-entry-points). The runtime's main() (libBitPipeRuntimeMain)
 * reads them.
 *===----------------------------------------------------------------------===*/

/* Uniform entry of a compiled stage function with A arguments and R results:
 * buffers[0 .. A-1] are its arguments (read), buffers[A .. A+R-1] receive its
 * results: fresh malloc'd buffers that the caller owns (free()), except a
 * parameter's gradient ("param" result), whose slot the caller fills with
 * the accumulator the function adds into. The order and meaning of
 * arguments and results are the manifest's "functions". */
typedef void (*bp_stage_entry_t)(void **buffers);

/* One pipeline rank's program: the bp_rt_* calls of one training step in
 * order (ending with bp_rt_optimizer_step), the repeated steady state of
 * the schedule as loops. */
typedef void (*bp_rank_program_t)(bp_rt_context *ctx);

/* bitpipe_stage_entries[i] is function i of the manifest. */
extern const bp_stage_entry_t bitpipe_stage_entries[];
extern const int32_t bitpipe_num_stage_entries;
/* Ranks: D = the manifest's schedule.devices PIPELINE ranks p in [0, D),
 * K = schedule.data_parallel DATA-PARALLEL copies c in [0, K) of them, and
 * the D x K = schedule.world_size processes of the job, WORLD rank
 * w = c * D + p. bitpipe_rank_programs[p] is the program of pipeline rank
 * p, and bitpipe_num_ranks is D: every copy runs the same D programs
 * (world rank w runs program w % D as copy w / D), so the executable does
 * not depend on K. The copy selects the samples a program's bp_rt_load_input
 * reads and the world ranks its bp_rt_send / bp_rt_recv and all-reduces
 * reach. */
extern const bp_rank_program_t bitpipe_rank_programs[];
extern const int32_t bitpipe_num_ranks;
/* The manifest: JSON text (not NUL-terminated), described below. */
extern const char bitpipe_manifest[];
extern const int64_t bitpipe_manifest_size;

/*===-----------------------------------------------------------------------===
 * The manifest (JSON, version BP_MANIFEST_VERSION). Everything the
 * executor needs to know about the compiled model that is not in the order
 * of calls. Its words (keys and enumerated values) are those of
 * bitpipe/abi/ManifestKeys.def; its structure, below, is defined once in
 * C++ by bitpipe/base/ManifestFormat.h (the structs, the one writer the
 * compiler uses and the one reader the runtime uses):
 *
 * {
 *   "version": 6,                   // BP_MANIFEST_VERSION
 *   "target": {"name": "cpu" | "cuda",       // which runtime library the
 *              "precision": "fp32" | "bf16"},// stage functions were built
 *                                   // for, and their element type: with
 *                                   // "bf16" (cuda only) activations, their
 *                                   // gradients and the weights the stage
 *                                   // functions read are bf16 (roles say
 *                                   // "bf16"); parameter gradients, the
 *                                   // loss and statistics stay f32
 *   "model": {"name": "gpt_tiny", "family": "gpt" | "bert" | "llama",
 *             "vocab": 256, "seq_len": 32, "microbatch_size": 4,
 *             "mask_token": 255,
 *             "heads": 4, "max_positions": 64,  // for a Hugging Face
 *             "norm_epsilon": 1e-05,            // config.json
 *             "rope_theta": 10000.0,            // (docs/huggingface.md);
 *             "gelu": "tanh" | "erf",           // the last three only
 *                                   // when the model has a norm / a
 *                                   // rotary op / a GELU
 *             "norm_position": "pre" | "post"}, // "post": a post-LN BERT
 *   "schedule": {"name": "bitpipe", "microbatches": 8, "devices": 4,
 *                "data_parallel": 1, "world_size": 4,
 *                "transfer_streams": "channel" | "shared",
 *                "channels": [[0, 1], [1, 0], ...],
 *                "gradient_sync": "flat" | "hierarchical"},
 *                                   // microbatches: per data-parallel copy
 *                                   // (a rank program's mb are in [0, 8));
 *                                   // devices: pipeline ranks D (= the
 *                                   // number of rank programs);
 *                                   // data_parallel: copies K;
 *                                   // world_size = D x K (the MPI job's);
 *                                   // transfer_streams: how the CUDA
 *                                   // target issues the transfers
 *                                   // (docs/nccl-transfers.md); channels:
 *                                   // every [sender, receiver] pair of
 *                                   // PIPELINE ranks that some transfer
 *                                   // crosses, distinct, sorted, in every
 *                                   // copy alike; gradient_sync: how a
 *                                   // group of two or more pipeline
 *                                   // ranks sums across copies when
 *                                   // data_parallel > 1 (one all-reduce,
 *                                   // or reduce-scatter in the copy,
 *                                   // all-reduce of the shards across
 *                                   // copies, all-gather in the copy:
 *                                   // docs/data-parallel.md)
 *   "params": [                     // every parameter of the model, once
 *     {"name": "embed.tokens", "shape": [256, 64],
 *      "init": {"kind": "normal", "std": 0.02} | {"kind": "zeros"} |
 *              {"kind": "ones"},
 *      "decay": true}               // AdamW weight decay (false: biases,
 *   ],                              //  layer-norm gains and biases)
 *   "functions": [                  // index i <-> bitpipe_stage_entries[i]
 *     {"name": "gpt_tiny_stage0", "kind": "forward" | "backward" |
 *        "backward_input" | "backward_weight",
 *      "stage": 0,
 *      "args": [ROLE...], "results": [ROLE...]}
 *   ],
 *   "groups": [[0, 3], [1]],        // every all-reduce group of the job,
 *                                   // as PIPELINE ranks (each < devices,
 *                                   // distinct, increasing). Group g
 *                                   // stands for the world group
 *                                   // {c * D + p : c < K, p in g}, sorted,
 *                                   // of at least 2 ranks (so one member
 *                                   // only when K > 1: a stage that one
 *                                   // pipeline rank holds, replicated
 *                                   // across copies). Created once at
 *                                   // start on all ranks, in this order
 *   "ranks": [                      // index p <-> bitpipe_rank_programs[p]:
 *                                   // exactly D entries, one per pipeline
 *                                   // rank, the same for all its copies
 *     {"num_values": 57,
 *      "peak_handles": 7,           // the schedule's saved activations in
 *      "peak_saved_bytes": 2129920, // flight at their peak on rank p: most
 *                                   // forward handles alive at once in
 *                                   // program order, most bytes of their
 *                                   // "saved" results (optional; the
 *                                   // runtime measures both and reports)
 *      "params": ["embed.tokens", ...],   // parameters rank p holds
 *      "buckets": [{"group": 0, "params": ["final_ln.weight", ...]}]}
 *                                   // a bucket's group contains p, and
 *                                   // every member of a group lists the
 *                                   // same buckets for it (parameters and
 *                                   // order): its all-reduce sums them
 *                                   // over the world group
 *   ]
 * }
 *
 * A ROLE says what one argument or result of a stage function is:
 *   {"role": "param", "param": "layers.0.ln1.weight"}
 *       argument: the parameter; result (of a backward): its gradient,
 *       accumulated (+=) in place into the rank's gradient of that
 *       parameter: the caller puts the address of the rank's accumulator
 *       in the result's slot before the call, and the function adds into
 *       it and writes nothing there. Its "dtype" is the accumulators' of
 *       the target: "f64" on the cpu, "f32" on cuda;
 *   {"role": "input", "input": "tokens" | "labels" | "dropout_key"}
 *                                   forward argument: the micro-batch's
 *                                   ids ([microbatch_size, seq_len] i32)
 *                                   or its dropout key ([4] i32)
 *   {"role": "activation"}          forward argument from the previous stage
 *   {"role": "output"}              forward result passed on (or the loss,
 *                                   a scalar, on the last stage)
 *   {"role": "saved", "index": k}   forward result kept for the backward;
 *                                   backward argument k of those
 *   {"role": "forward_arg", "index": i}  backward argument: the forward's
 *                                   argument i (a parameter, an input or the
 *                                   activation), bound from the saved handle
 *   {"role": "grad_of_result", "index": j}  backward argument: the gradient
 *                                   of the forward's result j (grad0; for a
 *                                   weight half, the grad0 its input half
 *                                   received, kept with the handle)
 *   {"role": "grad_of_arg", "index": i}  backward result: the gradient of
 *                                   the forward's (activation) argument i
 *   {"role": "stash", "index": k}   result of the input half / argument of
 *                                   the weight half (split backward)
 * Every ROLE also has "shape" (list of int) and "dtype" ("f32" | "i32" |
 * "bf16" | "f64").
 *===----------------------------------------------------------------------===*/

/* The version of the manifest's grammar above. The compiler writes it and
 * the runtime reads no other (it stops, naming both versions): change it
 * with any change of the grammar that an older reader would misread. */
#define BP_MANIFEST_VERSION 6

/* The manifest's vocabularies, from bitpipe/abi/ManifestKeys.def: one
 * spelling for the compiler that writes them and the runtime that reads
 * them. Each enum indexes its name table. */
typedef enum bp_function_kind {
#define BP_FUNCTION_KIND(id, word) BP_FUNCTION_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_FUNCTION_KINDS
} bp_function_kind;
static const char *const bp_function_kind_names[BP_NUM_FUNCTION_KINDS] = {
#define BP_FUNCTION_KIND(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_role_kind {
#define BP_ROLE_KIND(id, word) BP_ROLE_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_ROLE_KINDS
} bp_role_kind;
static const char *const bp_role_kind_names[BP_NUM_ROLE_KINDS] = {
#define BP_ROLE_KIND(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

/* An "input" role's input; also bp_rt_load_input's `kind`. */
typedef enum bp_input_kind {
#define BP_INPUT_KIND(id, word) BP_INPUT_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_INPUT_KINDS
} bp_input_kind;
static const char *const bp_input_kind_names[BP_NUM_INPUT_KINDS] = {
#define BP_INPUT_KIND(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_dtype {
#define BP_DTYPE(id, word) BP_DTYPE_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_DTYPES
} bp_dtype;
static const char *const bp_dtype_names[BP_NUM_DTYPES] = {
#define BP_DTYPE(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_init_kind {
#define BP_INIT_KIND(id, word) BP_INIT_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_INIT_KINDS
} bp_init_kind;
static const char *const bp_init_kind_names[BP_NUM_INIT_KINDS] = {
#define BP_INIT_KIND(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_target_kind {
#define BP_TARGET_KIND(id, word) BP_TARGET_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_TARGET_KINDS
} bp_target_kind;
static const char *const bp_target_kind_names[BP_NUM_TARGET_KINDS] = {
#define BP_TARGET_KIND(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_precision {
#define BP_PRECISION(id, word) BP_PRECISION_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_PRECISIONS
} bp_precision;
static const char *const bp_precision_names[BP_NUM_PRECISIONS] = {
#define BP_PRECISION(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_gelu_form {
#define BP_GELU_FORM(id, word) BP_GELU_FORM_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_GELU_FORMS
} bp_gelu_form;
static const char *const bp_gelu_form_names[BP_NUM_GELU_FORMS] = {
#define BP_GELU_FORM(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_norm_position {
#define BP_NORM_POSITION(id, word) BP_NORM_POSITION_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_NORM_POSITIONS
} bp_norm_position;
static const char *const bp_norm_position_names[BP_NUM_NORM_POSITIONS] = {
#define BP_NORM_POSITION(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_transfer_streams {
#define BP_TRANSFER_STREAMS(id, word) BP_TRANSFER_STREAMS_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_TRANSFER_STREAMS
} bp_transfer_streams;
static const char *const bp_transfer_streams_names[BP_NUM_TRANSFER_STREAMS] = {
#define BP_TRANSFER_STREAMS(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_gradient_sync {
#define BP_GRADIENT_SYNC(id, word) BP_GRADIENT_SYNC_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_GRADIENT_SYNCS
} bp_gradient_sync;
static const char *const bp_gradient_sync_names[BP_NUM_GRADIENT_SYNCS] = {
#define BP_GRADIENT_SYNC(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

typedef enum bp_model_family {
#define BP_MODEL_FAMILY(id, word) BP_MODEL_FAMILY_##id,
#include "bitpipe/abi/ManifestKeys.def"
  BP_NUM_MODEL_FAMILIES
} bp_model_family;
static const char *const bp_model_family_names[BP_NUM_MODEL_FAMILIES] = {
#define BP_MODEL_FAMILY(id, word) word,
#include "bitpipe/abi/ManifestKeys.def"
};

/*===-----------------------------------------------------------------------===
 * The calls of a rank program. `value`, `in*`, `out*`, `saved`, `token` are
 * value ids; -1 means "none". `fn` indexes the manifest's functions.
 * bitpipe/abi/RuntimeCalls.def lists them with their parameter kinds for the
 * compiler; the runtime's build checks that the two agree.
 *===----------------------------------------------------------------------===*/

/* bitpipe.load_input: fills value with `count` int32 of micro-batch `mb` of
 * this step (kind: a bp_input_kind, BP_INPUT_TOKENS or BP_INPUT_LABELS, the
 * targets), read for this rank's data-parallel copy.
 * count = microbatch_size x seq_len. A dropout key is not loaded: see
 * bp_rt_forward. */
void bp_rt_load_input(bp_rt_context *ctx, int32_t value, int32_t kind,
                      int64_t mb, int64_t count);

/* bitpipe.forward: runs function fn (kind "forward") on micro-batch mb. Its
 * bound arguments (activation and inputs, in signature order) are in0, in1;
 * an input "dropout_key" is not bound: the runtime passes the micro-batch's
 * key, four int32 [seed low, seed high, g low, g high] of the run's seed
 * and the micro-batch's sample group g (the index its tokens are sampled
 * by; docs/training-semantics.md, "Dropout"), as it passes parameters;
 * its bound output is out0; saved receives the handle. An output of shape []
 * and dtype f32 is the micro-batch's loss: the runtime adds it to the step's
 * loss whether out0 binds it or is -1. */
void bp_rt_forward(bp_rt_context *ctx, int32_t fn, int64_t mb, int32_t in0,
                   int32_t in1, int32_t out0, int32_t saved);

/* bitpipe.backward: runs fn (kind "backward" or "backward_input") with the
 * handle `saved` and the output gradient grad0 (-1 on the loss stage); out0
 * receives the input gradient (-1 on a first stage). A "backward" releases
 * the handle; a "backward_input" keeps it, with its stash and grad0, for the
 * weight half (which may then take grad_of_result too). On the loss stage a
 * grad_of_result argument of shape [] f32 receives 1.0 (d loss / d loss; the
 * optimizer step does the averaging). */
void bp_rt_backward(bp_rt_context *ctx, int32_t fn, int64_t mb, int32_t saved,
                    int32_t grad0, int32_t out0);

/* bitpipe.weight_grad: runs fn (kind "backward_weight") and releases the
 * handle. */
void bp_rt_weight_grad(bp_rt_context *ctx, int32_t fn, int64_t mb,
                       int32_t saved);

/* bitpipe.send / bitpipe.recv: post a non-blocking transfer of `count`
 * elements of the target's compute precision (the manifest's
 * target.precision: f32, or bf16 under "bf16") to / from pipeline rank
 * `peer` (< schedule.devices) of the caller's own data-parallel copy c:
 * world rank c * devices + peer (see bitpipe_rank_programs). A
 * send completes on its own (its buffer is held until then); a received
 * value is complete before it is first read (on CUDA: its reader's stream
 * waits for it, the host does not). `tag` tells transfers apart where the
 * transport matches by tag (MPI): the compiler gives each transfer its
 * position on its (sender, receiver) channel in the step, modulo 32768,
 * which both ends agree on because the compiler's verifier guarantees they
 * order the channel alike (MPI keeps one tag's messages in order). NCCL
 * has no tags and matches a pair's transfers in posting order, the same
 * order.
 * bp_rt_end_batch marks the end of a batch of transfers (`batch`
 * attribute): everything posted since the previous one is one group
 * (NCCL: one ncclGroupStart/End), posted before any later op waits, so
 * crossed transfers cannot deadlock. */
void bp_rt_send(bp_rt_context *ctx, int32_t value, int64_t count,
                int32_t peer, int32_t tag);
void bp_rt_recv(bp_rt_context *ctx, int32_t value, int64_t count,
                int32_t peer, int32_t tag);
void bp_rt_end_batch(bp_rt_context *ctx, int32_t batch);

/* bitpipe.local_copy: dst holds the same tensor as src (the V's bottom,
 * where two consecutive stages are on one rank). */
void bp_rt_local_copy(bp_rt_context *ctx, int32_t src, int32_t dst);

/* bitpipe.allreduce_start / wait: the sum of bucket `bucket` (of the
 * manifest's ranks[p].buckets) over its group's world group (every copy
 * of its pipeline ranks), started asynchronously;
 * token names it until the wait. */
void bp_rt_allreduce_start(bp_rt_context *ctx, int32_t bucket, int32_t token);
void bp_rt_allreduce_wait(bp_rt_context *ctx, int32_t token);

/* bitpipe.optimizer_step: AdamW on this rank's parameters with the summed
 * gradients divided by `microbatches` (all micro-batches of the step over
 * all data-parallel copies: schedule.microbatches x data_parallel, checked;
 * <= 0 when the op has no count: the gradients are taken as they are), then
 * zeroes the gradients. Pending sends complete first. */
void bp_rt_optimizer_step(bp_rt_context *ctx, int64_t microbatches);

/* End of a value's life in the program (see "Values"). Releasing a value
 * that holds nothing, or an all-reduce token, is an error. Tensors still
 * held at the end of the step are freed; a saved handle or token still held
 * then is an error (a forward without its backward, a start without its
 * wait). */
void bp_rt_release(bp_rt_context *ctx, int32_t value);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BITPIPE_PROGRAM_H */
