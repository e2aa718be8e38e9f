//===- BitPipeDialect.td - The bitpipe dialect -------------*- tablegen -*-===//
//
// The dialect definition and the base classes of its ops, types and
// attributes. Types, attributes/enums and ops each live in their own file.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_BITPIPEDIALECT_TD
#define BITPIPE_DIALECT_BITPIPE_BITPIPEDIALECT_TD

include "mlir/IR/OpBase.td"

def BitPipe_Dialect : Dialect {
  let name = "bitpipe";
  let cppNamespace = "::bitpipe::bp";
  let summary = "Pipeline stages, placement and per-rank training programs";
  let description = [{
    The `bitpipe` dialect describes one pipeline-parallel training step as one
    ordered program per rank, so that the IR reads like the schedule it came
    from. The text schedule

    ```
    P0: F0.s0 F1.s1 B1.s1 AR(1) B0.s0 AR(0)
    ```

    becomes, for rank 0,

    ```mlir
    bitpipe.program @rank0 rank 0 {
      %y, %saved = forward @stage_0(%ids) stage 0 microbatch 0 : ...
      ...
      %t = allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token
      ...
      allreduce_wait %t
      optimizer_step
    }
    ```

    Stages are outlined functions on tensors (`func.func`). Their visible
    signature is the data that flows between stages; the stage's parameters,
    its gradient accumulators and the activations its forward keeps for its
    backward are stage state that the lowering binds. The last of these is
    made visible in the program as a `!bitpipe.saved` handle, so that the
    memory a schedule keeps alive is explicit and a backward cannot be
    written before its forward.

    Gradient all-reduce is asynchronous: `allreduce_start` returns a
    `!bitpipe.token` (as IREE's stream dialect returns timepoints) that must
    be waited for before the optimizer step.

    Module-level discardable attributes:
    - `bitpipe.world_size = N : i64`: number of ranks (pipeline x data
      parallel); every program rank and peer is below it.
    - `bitpipe.data_parallel = K : i64`: the number of data-parallel copies
      of the pipeline (bitpipe-place `dp=K`); `bitpipe.world_size` is then
      D * K for the placement's D devices. World rank w is pipeline rank
      `w mod D` of copy `w div D`. The module holds ONE program per
      pipeline rank (`rank` in 0..D-1), which every copy runs: its peers
      are pipeline ranks (copy c talks to c * D + peer) and an all-reduce
      `group` lists pipeline ranks, standing for those ranks in every copy
      (so a group of one pipeline rank is a real group when K > 1). The IR
      therefore does not grow with K (docs/data-parallel.md).
      Micro-batch numbers are per copy: micro-batch m of copy c reads the
      training data of global micro-batch `c * N + m` (N the schedule's
      micro-batch count), so the K copies train on K * N distinct
      micro-batches per step.
    - `bitpipe.data_parallel_copy = c : i64`: the module holds copy c's
      programs written out with world ranks (ranks, peers and every copy's
      members of each group), for reading; bitpipe-instantiate-copy
      writes it from the module above, and passes and the lowering refuse
      it.
    - `bitpipe.placement = #bitpipe.placement<...>`: the stage-to-device map.
    - `bitpipe.schedule = #bitpipe.schedule<...>`: the schedule the
      programs were built from (bitpipe-schedule): its name, micro-batch
      count and the pipeline of each micro-batch; the programs are the only
      record of the order.
    - `bitpipe.transfer_streams = #bitpipe.transfer_streams<...>`: how the
      CUDA runtime lays the programs' transfers on NCCL communicators and
      streams, which the `batch` numbers of the sends and receives follow
      (bitpipe-insert-transfers; docs/nccl-transfers.md). Absent: `shared`.
  }];

  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;

  let extraClassDeclaration = [{
    /// Discardable attributes the dialect understands on a module.
    static constexpr ::llvm::StringLiteral kWorldSizeAttrName =
        "bitpipe.world_size";
    static constexpr ::llvm::StringLiteral kPlacementAttrName =
        "bitpipe.placement";
    static constexpr ::llvm::StringLiteral kScheduleAttrName =
        "bitpipe.schedule";
    static constexpr ::llvm::StringLiteral kTransferStreamsAttrName =
        "bitpipe.transfer_streams";
    static constexpr ::llvm::StringLiteral kGradientSyncAttrName =
        "bitpipe.gradient_sync";
    static constexpr ::llvm::StringLiteral kRecomputeAttrName =
        "bitpipe.recompute";
    static constexpr ::llvm::StringLiteral kDataParallelAttrName =
        "bitpipe.data_parallel";
    static constexpr ::llvm::StringLiteral kDataParallelCopyAttrName =
        "bitpipe.data_parallel_copy";

  private:
    void registerTypes();
    void registerAttributes();

  public:
  }];
}

// Every op's tensors have element and byte counts that fit in int64
// (bitpipe/Support/BoundedTensors.h; docs/models.md, "Limits").
def BitPipe_BoundedTensors : NativeOpTrait<"BoundedTensors"> {
  let cppNamespace = "::bitpipe";
}

class BitPipe_Op<string mnemonic, list<Trait> traits = []>
    : Op<BitPipe_Dialect, mnemonic, traits # [BitPipe_BoundedTensors]>;

#endif // BITPIPE_DIALECT_BITPIPE_BITPIPEDIALECT_TD
