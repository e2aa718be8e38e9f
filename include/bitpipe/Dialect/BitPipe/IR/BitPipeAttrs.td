//===- BitPipeAttrs.td - bitpipe attributes ----------------*- tablegen -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_BITPIPEATTRS_TD
#define BITPIPE_DIALECT_BITPIPE_BITPIPEATTRS_TD

include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.td"
include "bitpipe/Dialect/BitPipe/IR/BitPipeEnums.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

class BitPipe_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<BitPipe_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Enum attributes: `#bitpipe.transfer_kind<activation>` on their own (and in
// the generic form); ops print them as a bare keyword through
// `custom<Kind>`: `bitpipe.send activation %y to 1 ...`.
//===----------------------------------------------------------------------===//

class BitPipe_EnumAttr<EnumAttrInfo info, string name>
    : EnumAttr<BitPipe_Dialect, info, name> {
  let assemblyFormat = "`<` $value `>`";
}

def BitPipe_TransferKindAttr
    : BitPipe_EnumAttr<BitPipe_TransferKind, "transfer_kind">;
def BitPipe_InputKindAttr
    : BitPipe_EnumAttr<BitPipe_InputKind, "input_kind">;

//===----------------------------------------------------------------------===//
// Placement
//===----------------------------------------------------------------------===//

// The schedule library's kind (its one definition), spelled as the library
// spells it; printed quoted, because `bidirectional-v` is not a keyword.
def BitPipe_PlacementKindParameter
    : AttrOrTypeParameter<"::bitpipe::sched::PlacementKind", "placement kind"> {
  let parser = "::bitpipe::bp::parsePlacementKind($_parser)";
  let printer = "$_printer << '\"' << "
                "::bitpipe::sched::placementKindName($_self) << '\"'";
}

// One stage -> device array per pipeline, printed as `[[0, 1], [1, 0]]`.
def BitPipe_PipelinesParameter
    : ArrayRefParameter<"::mlir::DenseI64ArrayAttr",
                        "stage-to-device map of each pipeline"> {
  let parser = "::bitpipe::bp::parsePipelines($_parser)";
  let printer = "::bitpipe::bp::printPipelines($_printer, $_self)";
}

def BitPipe_PlacementAttr : BitPipe_Attr<"Placement", "placement"> {
  let summary = "where each stage of each pipeline runs";
  let description = [{
    The IR form of the schedule library's `sched::Placement` (the attribute
    converts to and from it, and asks the library what follows from it).
    `pipelines[p][s]` is the device that runs stage `s` of pipeline `p`.
    `loop` and `v` have one pipeline; `bidirectional` and `bidirectional-v`
    have two (BitPipe's "down" and "up"), and the devices that hold the same
    stage in different pipelines are replicas that all-reduce its gradients.

    BitPipe on 4 devices (8 stages, a V per direction):

    ```mlir
    #bitpipe.placement<kind = "bidirectional-v", devices = 4,
                       pipelines = [[0, 1, 2, 3, 3, 2, 1, 0],
                                    [3, 2, 1, 0, 0, 1, 2, 3]]>
    ```
  }];

  let parameters = (ins BitPipe_PlacementKindParameter:$kind,
                        "int64_t":$devices,
                        BitPipe_PipelinesParameter:$pipelines);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;

  let builders = [
    // The library's placement, as an attribute.
    AttrBuilder<(ins "const ::bitpipe::sched::Placement &":$placement)>,
  ];

  let extraClassDeclaration = [{
    /// The library's placement.
    ::bitpipe::sched::Placement toSched() const;

    unsigned getNumPipelines() const { return getPipelines().size(); }
    /// Stages per pipeline (the verifier makes it the same for all).
    unsigned getNumStages() const {
      return getPipelines().empty() ? 0 : getPipelines().front().size();
    }
    /// The device that runs `stage` of `pipeline`.
    int64_t getDevice(unsigned pipeline, unsigned stage) const {
      return getPipelines()[pipeline][stage];
    }
    /// The devices that hold a replica of `stage`, sorted and unique: the
    /// group that all-reduces its gradients (without data parallelism), as
    /// the library's Placement::replicaGroups() defines it.
    ::llvm::SmallVector<int64_t> getReplicaGroup(unsigned stage) const;
    /// getReplicaGroup for every stage, indexed by stage.
    ::llvm::SmallVector<::llvm::SmallVector<int64_t>> getReplicaGroups() const;
    /// The (pipeline, stage) chunks held by `device`, pipeline-major.
    ::llvm::SmallVector<std::pair<unsigned, unsigned>>
    getChunks(int64_t device) const;
  }];
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

// `true` or `false`.
def BitPipe_BoolParameter : AttrOrTypeParameter<"bool", "true or false"> {
  let parser = "::bitpipe::bp::parseBool($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}

// Integers in brackets, `[0, 0, 1, 1]`, as #bitpipe.placement prints a
// pipeline.
def BitPipe_IntListParameter
    : ArrayRefParameter<"int64_t", "a list of integers"> {
  let parser = "::bitpipe::bp::parseIntList($_parser)";
  let printer = "::bitpipe::bp::printIntList($_printer, $_self)";
}

def BitPipe_ScheduleAttr : BitPipe_Attr<"Schedule", "schedule"> {
  let summary = "the schedule a module's per-rank programs were built from";
  let description = [{
    What the programs do not say about the schedule they hold (written by
    bitpipe-schedule; read back with the programs by ScheduleFromIR.h):
    its `name` in the schedule registry (Registry.h), the number of
    micro-batches per step `microbatches`, `microbatch_pipelines[m]`, the
    pipeline of the placement that micro-batch `m` travels through,
    whether the backward is split (`split_backward`: weight-gradient steps
    exist), and, when the schedule departs from its textbook form, a
    `note` that says how (elided when empty). The order itself is the
    programs'.

    ```mlir
    bitpipe.schedule = #bitpipe.schedule<name = "bitpipe", microbatches = 4,
        microbatch_pipelines = [0, 0, 1, 1], split_backward = false>
    ```

    The dialect checks, on the module, that the pipelines exist in its
    `#bitpipe.placement`.
  }];
  let parameters = (ins
      StringRefParameter<"the schedule's name in the registry">:$name,
      "int64_t":$microbatches,
      BitPipe_IntListParameter:$microbatch_pipelines,
      BitPipe_BoolParameter:$split_backward,
      StringRefParameter<"how the schedule departs from its textbook form",
                         "\"\"">:$note);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;

  let builders = [
    // What `schedule` says beyond its per-rank order.
    AttrBuilder<(ins "const ::bitpipe::sched::Schedule &":$schedule)>,
  ];

  let extraClassDeclaration = [{
    /// Fills the fields of `schedule` the attribute records (name,
    /// micro-batches and their pipelines, split backward, note).
    void applyTo(::bitpipe::sched::Schedule &schedule) const;
  }];
}

//===----------------------------------------------------------------------===//
// Transfer streams
//===----------------------------------------------------------------------===//

// The schedule library's layout (its one definition, whose names are the
// manifest's words), printed as a bare keyword.
def BitPipe_TransferStreamsParameter
    : AttrOrTypeParameter<"::bitpipe::sched::TransferStreams",
                          "transfer streams"> {
  let parser = "::bitpipe::bp::parseTransferStreams($_parser)";
  let printer = "$_printer << ::bitpipe::sched::transferStreamsName($_self)";
}

def BitPipe_TransferStreamsAttr
    : BitPipe_Attr<"TransferStreams", "transfer_streams"> {
  let summary = "how the CUDA runtime lays a rank's transfers on streams";
  let description = [{
    Written by bitpipe-insert-transfers on the module
    (`bitpipe.transfer_streams`), with the `batch` numbers of the sends and
    receives it writes; read by bitpipe-verify, which checks the programs
    under NCCL's rules as they will be issued, and by the lowering, which
    passes it to the runtime in the manifest (docs/nccl-transfers.md).

    - `channel`: one NCCL communicator and stream per directed channel
      (sender -> receiver); each hand-off is a batch of its own. Programs
      that run with buffered sends run so too.
    - `shared`: every transfer of a rank on one communicator and stream; a
      batch is the transfers between two compute steps. A module without
      the attribute means this.
    ```mlir
    bitpipe.transfer_streams = #bitpipe.transfer_streams<channel>
    ```
  }];
  let parameters = (ins BitPipe_TransferStreamsParameter:$value);
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Gradient sync
//===----------------------------------------------------------------------===//

// The schedule library's scheme (its one definition, whose names are the
// manifest's words), printed as a bare keyword.
def BitPipe_GradientSyncParameter
    : AttrOrTypeParameter<"::bitpipe::sched::GradientSync", "gradient sync"> {
  let parser = "::bitpipe::bp::parseGradientSync($_parser)";
  let printer = "$_printer << ::bitpipe::sched::gradientSyncName($_self)";
}

def BitPipe_GradientSyncAttr : BitPipe_Attr<"GradientSync", "gradient_sync"> {
  let summary = "how a group of several pipeline ranks sums across copies";
  let description = [{
    Written by bitpipe-insert-allreduce on the module
    (`bitpipe.gradient_sync`, its `sync` option); read by bitpipe-simulate,
    which charges it, and by the lowering, which passes it to the runtime
    in the manifest (docs/data-parallel.md, "Two levels").

    - `flat`: each bucket is one all-reduce over its group in every copy.
    - `hierarchical`: a group of two or more pipeline ranks (BitPipe's and
      Chimera's mirror pairs, a tied embedding's first and last rank) with
      two or more data-parallel copies reduce-scatters each bucket among
      its members of one copy, all-reduces each member's shard across the
      copies, and all-gathers in the copy; other groups sum flat. A
      module without the attribute means `flat`.
    ```mlir
    bitpipe.gradient_sync = #bitpipe.gradient_sync<hierarchical>
    ```
  }];
  let parameters = (ins BitPipe_GradientSyncParameter:$value);
  let assemblyFormat = "`<` $value `>`";
}

// The schedule library's recomputation mode (its one definition), printed
// as a bare keyword.
def BitPipe_RecomputeParameter
    : AttrOrTypeParameter<"::bitpipe::sched::Recompute", "recomputation"> {
  let parser = "::bitpipe::bp::parseRecompute($_parser)";
  let printer = "$_printer << ::bitpipe::sched::recomputeName($_self)";
}

def BitPipe_RecomputeAttr : BitPipe_Attr<"Recompute", "recompute"> {
  let summary = "what the backwards compute again";
  let description = [{
    Written by bitpipe-generate-backward on the module (`bitpipe.recompute`)
    when it keeps less than everything (docs/recompute.md): `selective`
    (the statistics are computed again) or `full` (each stage's forward
    runs again in its backward). A module without it keeps everything.
    Read by the costs bitpipe-simulate and the lowering take from the IR,
    which then count the memory a stage keeps and the work its backward
    does as the planner does.

    ```mlir
    bitpipe.recompute = #bitpipe.recompute<full>
    ```
  }];
  let parameters = (ins BitPipe_RecomputeParameter:$value);
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Partition
//===----------------------------------------------------------------------===//

// A ratio, printed as a plain number; held as an APFloat, which the
// attribute storage can hash.
def BitPipe_RatioParameter : APFloatParameter<"ratio"> {
  let parser = "::bitpipe::bp::parseRatio($_parser)";
  let printer = "::bitpipe::bp::printRatio($_printer, $_self)";
}

def BitPipe_PartitionAttr : BitPipe_Attr<"Partition", "partition"> {
  let summary = "what bitpipe-partition chose";
  let description = [{
    A record on the module of how the model was cut: `chunks` stages,
    stage k starting at layer `starts[k]` (`starts[0]` = 0, increasing),
    `costs[k]` the stage's forward plus backward FLOPs, and `balance`, the
    largest cost over the mean (1 is perfectly balanced). Nothing reads it
    back: the stages themselves are the outlined functions
    (`bitpipe.stage`); this says why they are what they are.

    ```mlir
    bitpipe.partition = #bitpipe.partition<chunks = 2, starts = [0, 4],
        costs = [6528, 6912], balance = 1.0286>
    ```
  }];

  let parameters = (ins "int64_t":$chunks,
                        BitPipe_IntListParameter:$starts,
                        BitPipe_IntListParameter:$costs,
                        BitPipe_RatioParameter:$balance);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // BITPIPE_DIALECT_BITPIPE_BITPIPEATTRS_TD
