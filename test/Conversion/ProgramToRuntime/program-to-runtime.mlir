// RUN: bitpipe-opt %s --bitpipe-lower-program-to-runtime="manifest-file=%t.json loops=false" | FileCheck %s
// RUN: FileCheck %s --input-file=%t.json --check-prefix=MANIFEST

// GPipe on two ranks, two micro-batches, a tied embedding "wte" on both
// stages (so one bucket over [0, 1]). Stage functions are declarations: the
// pass reads only their signatures and role attributes.
module attributes {
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>,
  bitpipe.world_size = 2 : i64} {
  func.func private @m_stage0(tensor<8x4xf32> {nn.param = "wte", nn.init = #nn.init<normal, std = 2.0e-02>},
                              tensor<4xf32> {nn.param = "ln.bias", nn.init = #nn.init<zeros>},
                              tensor<2x4xi32> {nn.input = "tokens"})
      -> (tensor<2x4x4xf32>, tensor<2x4x4xf32> {bitpipe.saved = 0 : i64})
      attributes {bitpipe.stage = 0 : i64, bitpipe.backward = @m_stage0_bwd}
  func.func private @m_stage0_bwd(tensor<2x4xi32> {bitpipe.forward_arg = 2 : i64, nn.input = "tokens"},
                                  tensor<2x4x4xf32> {bitpipe.saved = 0 : i64},
                                  tensor<2x4x4xf32> {bitpipe.grad_of_result = 0 : i64})
      -> (tensor<8x4xf32> {bitpipe.grad_of_arg = 0 : i64, nn.param = "wte"},
          tensor<4xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "ln.bias"})
      attributes {bitpipe.backward_of = @m_stage0}
  func.func private @m_stage1(tensor<2x4x4xf32>,
                              tensor<8x4xf32> {nn.param = "wte", nn.init = #nn.init<normal, std = 2.0e-02>},
                              tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32>
      attributes {bitpipe.stage = 1 : i64, bitpipe.backward = @m_stage1_bwd}
  func.func private @m_stage1_bwd(tensor<2x4x4xf32> {bitpipe.forward_arg = 0 : i64},
                                  tensor<8x4xf32> {bitpipe.forward_arg = 1 : i64, nn.param = "wte"},
                                  tensor<2x4xi32> {bitpipe.forward_arg = 2 : i64, nn.input = "labels"})
      -> (tensor<2x4x4xf32> {bitpipe.grad_of_arg = 0 : i64},
          tensor<8x4xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "wte"})
      attributes {bitpipe.backward_of = @m_stage1}
  func.func private @m(tensor<8x4xf32>, tensor<4xf32>, tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<f32>
      attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}

  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %a0, %s0 = forward @m_stage0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x4xf32>, !bitpipe.saved)
    send activation %a0 to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x4xf32>
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %a1, %s1 = forward @m_stage0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x4xf32>, !bitpipe.saved)
    send activation %a1 to 1 stage 0 microbatch 1 batch 1 : tensor<2x4x4xf32>
    %g1 = recv gradient from 1 stage 1 microbatch 1 batch 1 : tensor<2x4x4xf32>
    backward @m_stage0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x4xf32>) -> ()
    %g0 = recv gradient from 1 stage 1 microbatch 0 batch 2 : tensor<2x4x4xf32>
    backward @m_stage0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x4xf32>) -> ()
    %tok = allreduce_start stages [0] group [0, 1] bucket 0 grads ["wte"] bytes 128 : !bitpipe.token
    allreduce_wait %tok
    optimizer_step microbatches 2
  }
  bitpipe.program @rank1 rank 1 {
    %x0 = recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x4x4xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @m_stage1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x4xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %x1 = recv activation from 0 stage 0 microbatch 1 batch 1 : tensor<2x4x4xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @m_stage1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x4xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %g1 = backward @m_stage1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x4xf32>
    send gradient %g1 to 0 stage 1 microbatch 1 batch 2 : tensor<2x4x4xf32>
    %g0 = backward @m_stage1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x4xf32>
    send gradient %g0 to 0 stage 1 microbatch 0 batch 3 : tensor<2x4x4xf32>
    %tok = allreduce_start stages [1] group [0, 1] bucket 0 grads ["wte"] bytes 128 : !bitpipe.token
    allreduce_wait %tok
    optimizer_step microbatches 2
  }
}

// What the programs were described by is gone; what the next passes need is
// recorded. The functions are numbered by stage, forward before backward.
// CHECK:       module attributes {bitpipe.entry_points = {functions = [@m_stage0, @m_stage0_bwd, @m_stage1, @m_stage1_bwd], ranks = [@bitpipe_rank0, @bitpipe_rank1]}} {
// CHECK-DAG:   func.func private @bp_rt_load_input(!llvm.ptr, i32, i32, i64, i64){{$}}
// CHECK-DAG:   func.func private @bp_rt_forward(!llvm.ptr, i32, i64, i32, i32, i32, i32){{$}}
// CHECK-DAG:   func.func private @bp_rt_backward(!llvm.ptr, i32, i64, i32, i32, i32){{$}}
// CHECK-DAG:   func.func private @bp_rt_send(!llvm.ptr, i32, i64, i32, i32){{$}}
// CHECK-DAG:   func.func private @bp_rt_recv(!llvm.ptr, i32, i64, i32, i32){{$}}
// CHECK-DAG:   func.func private @bp_rt_end_batch(!llvm.ptr, i32){{$}}
// CHECK-DAG:   func.func private @bp_rt_allreduce_start(!llvm.ptr, i32, i32){{$}}
// CHECK-DAG:   func.func private @bp_rt_allreduce_wait(!llvm.ptr, i32){{$}}
// CHECK-DAG:   func.func private @bp_rt_optimizer_step(!llvm.ptr, i64){{$}}
// CHECK-DAG:   func.func private @bp_rt_release(!llvm.ptr, i32){{$}}
// CHECK-NOT:   func.func private @m(
// CHECK-NOT:   bitpipe.program

// Rank 0. Ids in program order: %t0 0, %a0 1, %s0 2, %t1 3, %a1 4, %s1 5,
// %g1 6, %g0 7, %tok 8. Tokens are read by the forward that saves them and
// released right after it (the handle keeps what it needs). Tag of a
// transfer: its position on its channel, so the sends to rank 1 (F0.s0,
// F1.s0) get 0 and 1, and the receives from rank 1 (B1.s1, B0.s1) 0 and 1,
// as rank 1's receives and sends do; each batch ends after its last
// transfer.
// CHECK-LABEL: func.func @bitpipe_rank0(
// CHECK-SAME:      %[[CTX:[^:]*]]: !llvm.ptr) attributes {passthrough = ["noinline", "optnone"]} {
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[C0L:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[C1L:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[C2L:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : i32
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : i32
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : i32
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : i32
// CHECK-DAG:     %[[C7:.*]] = arith.constant 7 : i32
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : i32
// CHECK-DAG:     %[[NONE:.*]] = arith.constant -1 : i32
// CHECK-DAG:     %[[TOKENS:.*]] = arith.constant 8 : i64
// CHECK-DAG:     %[[ACT:.*]] = arith.constant 32 : i64
// CHECK:         call @bp_rt_load_input(%[[CTX]], %[[C0]], %[[C0]], %[[C0L]], %[[TOKENS]])
// CHECK-NEXT:    call @bp_rt_forward(%[[CTX]], %[[C0]], %[[C0L]], %[[C0]], %[[NONE]], %[[C1]], %[[C2]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C0]])
// CHECK-NEXT:    call @bp_rt_send(%[[CTX]], %[[C1]], %[[ACT]], %[[C1]], %[[C0]])
// CHECK-NEXT:    call @bp_rt_end_batch(%[[CTX]], %[[C0]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C1]])
// CHECK-NEXT:    call @bp_rt_load_input(%[[CTX]], %[[C3]], %[[C0]], %[[C1L]], %[[TOKENS]])
// CHECK-NEXT:    call @bp_rt_forward(%[[CTX]], %[[C0]], %[[C1L]], %[[C3]], %[[NONE]], %[[C4]], %[[C5]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C3]])
// CHECK-NEXT:    call @bp_rt_send(%[[CTX]], %[[C4]], %[[ACT]], %[[C1]], %[[C1]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C4]])
// CHECK-NEXT:    call @bp_rt_recv(%[[CTX]], %[[C6]], %[[ACT]], %[[C1]], %[[C0]])
// CHECK-NEXT:    call @bp_rt_end_batch(%[[CTX]], %[[C1]])
// CHECK-NEXT:    call @bp_rt_backward(%[[CTX]], %[[C1]], %[[C1L]], %[[C5]], %[[C6]], %[[NONE]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C6]])
// CHECK-NEXT:    call @bp_rt_recv(%[[CTX]], %[[C7]], %[[ACT]], %[[C1]], %[[C1]])
// CHECK-NEXT:    call @bp_rt_end_batch(%[[CTX]], %[[C2]])
// CHECK-NEXT:    call @bp_rt_backward(%[[CTX]], %[[C1]], %[[C0L]], %[[C2]], %[[C7]], %[[NONE]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C7]])
// CHECK-NEXT:    call @bp_rt_allreduce_start(%[[CTX]], %[[C0]], %[[C8]])
// CHECK-NEXT:    call @bp_rt_allreduce_wait(%[[CTX]], %[[C8]])
// CHECK-NEXT:    call @bp_rt_optimizer_step(%[[CTX]], %[[C2L]])
// CHECK-NEXT:    return

// Rank 1: the loss (never read) is released right after its forward; the
// labels and the received activation after the forward that reads them.
// Ids: %x0 0, %l0 1, %loss0 2, %s0 3, %x1 4, %l1 5, %loss1 6, %s1 7, %g1 8,
// %g0 9, %tok 10.
// CHECK-LABEL: func.func @bitpipe_rank1(
// CHECK-SAME:      %[[CTX:[^:]*]]: !llvm.ptr) attributes {passthrough = ["noinline", "optnone"]} {
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[C0L:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[C1L:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : i32
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : i32
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : i32
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : i32
// CHECK-DAG:     %[[C7:.*]] = arith.constant 7 : i32
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : i32
// CHECK-DAG:     %[[C9:.*]] = arith.constant 9 : i32
// CHECK-DAG:     %[[C10:.*]] = arith.constant 10 : i32
// CHECK-DAG:     %[[NONE:.*]] = arith.constant -1 : i32
// CHECK-DAG:     %[[ACT:.*]] = arith.constant 32 : i64
// CHECK-DAG:     %[[TOKENS:.*]] = arith.constant 8 : i64
// CHECK:         call @bp_rt_recv(%[[CTX]], %[[C0]], %[[ACT]], %[[C0]], %[[C0]])
// CHECK-NEXT:    call @bp_rt_end_batch(%[[CTX]], %[[C0]])
// CHECK-NEXT:    call @bp_rt_load_input(%[[CTX]], %[[C1]], %[[C1]], %[[C0L]], %[[TOKENS]])
// CHECK-NEXT:    call @bp_rt_forward(%[[CTX]], %[[C2]], %[[C0L]], %[[C0]], %[[C1]], %[[C2]], %[[C3]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C0]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C1]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C2]])
// CHECK-NEXT:    call @bp_rt_recv(%[[CTX]], %[[C4]], %[[ACT]], %[[C0]], %[[C1]])
// CHECK-NEXT:    call @bp_rt_end_batch(%[[CTX]], %[[C1]])
// CHECK-NEXT:    call @bp_rt_load_input
// CHECK-NEXT:    call @bp_rt_forward(%[[CTX]], %[[C2]], %[[C1L]], %[[C4]], %[[C5]], %[[C6]], %[[C7]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C4]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C5]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C6]])
// CHECK-NEXT:    call @bp_rt_backward(%[[CTX]], %[[C3]], %[[C1L]], %[[C7]], %[[NONE]], %[[C8]])
// CHECK-NEXT:    call @bp_rt_send(%[[CTX]], %[[C8]], %[[ACT]], %[[C0]], %[[C0]])
// CHECK-NEXT:    call @bp_rt_end_batch(%[[CTX]], %[[C2]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C8]])
// CHECK-NEXT:    call @bp_rt_backward(%[[CTX]], %[[C3]], %[[C0L]], %[[C3]], %[[NONE]], %[[C9]])
// CHECK-NEXT:    call @bp_rt_send(%[[CTX]], %[[C9]], %[[ACT]], %[[C0]], %[[C1]])
// CHECK-NEXT:    call @bp_rt_end_batch(%[[CTX]], %[[C3]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C9]])
// CHECK-NEXT:    call @bp_rt_allreduce_start(%[[CTX]], %[[C0]], %[[C10]])
// CHECK-NEXT:    call @bp_rt_allreduce_wait(%[[CTX]], %[[C10]])
// CHECK-NEXT:    call @bp_rt_optimizer_step

// The manifest, embedded (bytes, no NUL: the type, an array of as many
// i8 as the string has bytes, is implied) with its size: 2123 bytes, the
// file's text less its newline.
// CHECK:       llvm.mlir.global external constant @bitpipe_manifest("{\22version\22:{{[0-9]+}},\22target\22:{{.*}}]}") {addr_space = 0 : i32}{{$}}
// CHECK:       llvm.mlir.global external constant @bitpipe_manifest_size(2199 : i64) {addr_space = 0 : i32} : i64
// RUN: wc -c < %t.json | FileCheck %s --check-prefix=BYTES
// BYTES: {{^}}2200{{$}}

// The same text (compact JSON, program.h's key order). Parameters once, in
// order of first appearance; only matrices decay. The backward's parameter
// argument is a forward_arg (bound from the handle), its parameter result a
// "param" gradient. Rank 1 holds only "wte".
// MANIFEST:      {"version":6,
// MANIFEST-SAME: "target":{"name":"cpu","precision":"fp32"},
// MANIFEST-SAME: "model":{"name":"m","family":"gpt","vocab":8,"seq_len":4,"microbatch_size":2,"mask_token":7,"heads":1,"max_positions":4,"norm_position":"pre"},
// MANIFEST-SAME: "schedule":{"name":"gpipe","microbatches":2,"devices":2,"data_parallel":1,"world_size":2,"transfer_streams":"shared","channels":{{\[\[0,1\],\[1,0\]\]}},"gradient_sync":"flat"},
// MANIFEST-SAME: "params":[{"name":"wte","shape":[8,4],"init":{"kind":"normal","std":0.02},"decay":true},
// MANIFEST-SAME:           {"name":"ln.bias","shape":[4],"init":{"kind":"zeros"},"decay":false}],
// MANIFEST-SAME: "functions":[
// MANIFEST-SAME:   {"name":"m_stage0","kind":"forward","stage":0,
// MANIFEST-SAME:    "args":[{"role":"param","param":"wte","shape":[8,4],"dtype":"f32"},
// MANIFEST-SAME:            {"role":"param","param":"ln.bias","shape":[4],"dtype":"f32"},
// MANIFEST-SAME:            {"role":"input","input":"tokens","shape":[2,4],"dtype":"i32"}],
// MANIFEST-SAME:    "results":[{"role":"output","shape":[2,4,4],"dtype":"f32"},
// MANIFEST-SAME:               {"role":"saved","index":0,"shape":[2,4,4],"dtype":"f32"}]},
// MANIFEST-SAME:   {"name":"m_stage0_bwd","kind":"backward","stage":0,
// MANIFEST-SAME:    "args":[{"role":"forward_arg","index":2,"shape":[2,4],"dtype":"i32"},
// MANIFEST-SAME:            {"role":"saved","index":0,"shape":[2,4,4],"dtype":"f32"},
// MANIFEST-SAME:            {"role":"grad_of_result","index":0,"shape":[2,4,4],"dtype":"f32"}],
// MANIFEST-SAME:    "results":[{"role":"param","param":"wte","shape":[8,4],"dtype":"f64"},
// MANIFEST-SAME:               {"role":"param","param":"ln.bias","shape":[4],"dtype":"f64"}]},
// MANIFEST-SAME:   {"name":"m_stage1","kind":"forward","stage":1,
// MANIFEST-SAME:    "args":[{"role":"activation","shape":[2,4,4],"dtype":"f32"},
// MANIFEST-SAME:            {"role":"param","param":"wte","shape":[8,4],"dtype":"f32"},
// MANIFEST-SAME:            {"role":"input","input":"labels","shape":[2,4],"dtype":"i32"}],
// MANIFEST-SAME:    "results":[{"role":"output","shape":[],"dtype":"f32"}]},
// MANIFEST-SAME:   {"name":"m_stage1_bwd","kind":"backward","stage":1,
// MANIFEST-SAME:    "args":[{"role":"forward_arg","index":0,"shape":[2,4,4],"dtype":"f32"},
// MANIFEST-SAME:            {"role":"forward_arg","index":1,"shape":[8,4],"dtype":"f32"},
// MANIFEST-SAME:            {"role":"forward_arg","index":2,"shape":[2,4],"dtype":"i32"}],
// MANIFEST-SAME:    "results":[{"role":"grad_of_arg","index":0,"shape":[2,4,4],"dtype":"f32"},
// MANIFEST-SAME:               {"role":"param","param":"wte","shape":[8,4],"dtype":"f64"}]}],
// MANIFEST-SAME: "groups":{{\[\[0,1\]\]}},
// MANIFEST-SAME: "ranks":[
// MANIFEST-SAME:   {"num_values":9,"peak_handles":2,"peak_saved_bytes":256,"params":["wte","ln.bias"],"buckets":[{"group":0,"params":["wte"]}]},
// MANIFEST-SAME:   {"num_values":11,"peak_handles":2,"peak_saved_bytes":0,"params":["wte"],"buckets":[{"group":0,"params":["wte"]}]}]}

// The CUDA target in bf16 (bitpipe/Conversion/Target/StorageType.h): the
// weights the stage functions read, activations, saved values and their
// gradients are bf16; parameter gradients, the loss and token ids are not.
// The saved bytes in flight halve.
// RUN: bitpipe-opt %s --bitpipe-lower-program-to-runtime="manifest-file=%t.bf16.json target=cuda precision=bf16" -o /dev/null
// RUN: FileCheck %s --input-file=%t.bf16.json --check-prefix=BF16
// BF16:      {"version":6,
// BF16-SAME: "target":{"name":"cuda","precision":"bf16"},
// BF16-SAME:   {"name":"m_stage0","kind":"forward","stage":0,
// BF16-SAME:    "args":[{"role":"param","param":"wte","shape":[8,4],"dtype":"bf16"},
// BF16-SAME:            {"role":"param","param":"ln.bias","shape":[4],"dtype":"bf16"},
// BF16-SAME:            {"role":"input","input":"tokens","shape":[2,4],"dtype":"i32"}],
// BF16-SAME:    "results":[{"role":"output","shape":[2,4,4],"dtype":"bf16"},
// BF16-SAME:               {"role":"saved","index":0,"shape":[2,4,4],"dtype":"bf16"}]},
// BF16-SAME:   {"name":"m_stage0_bwd","kind":"backward","stage":0,
// BF16-SAME:    "args":[{"role":"forward_arg","index":2,"shape":[2,4],"dtype":"i32"},
// BF16-SAME:            {"role":"saved","index":0,"shape":[2,4,4],"dtype":"bf16"},
// BF16-SAME:            {"role":"grad_of_result","index":0,"shape":[2,4,4],"dtype":"bf16"}],
// BF16-SAME:    "results":[{"role":"param","param":"wte","shape":[8,4],"dtype":"f32"},
// BF16-SAME:               {"role":"param","param":"ln.bias","shape":[4],"dtype":"f32"}]},
// BF16-SAME:    "results":[{"role":"output","shape":[],"dtype":"f32"}]},
// BF16-SAME:    "results":[{"role":"grad_of_arg","index":0,"shape":[2,4,4],"dtype":"bf16"},
// BF16-SAME:               {"role":"param","param":"wte","shape":[8,4],"dtype":"f32"}]}],
// BF16-SAME:   {"num_values":9,"peak_handles":2,"peak_saved_bytes":128,

// The CUDA target in fp32: only the target differs.
// RUN: bitpipe-opt %s --bitpipe-lower-program-to-runtime="manifest-file=%t.cuda.json target=cuda" -o /dev/null
// RUN: FileCheck %s --input-file=%t.cuda.json --check-prefix=CUDA-FP32
// CUDA-FP32:     {"version":6,"target":{"name":"cuda","precision":"fp32"},
// CUDA-FP32-NOT: bf16
