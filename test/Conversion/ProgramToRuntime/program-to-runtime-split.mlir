// RUN: bitpipe-opt %s --bitpipe-lower-program-to-runtime="manifest-file=%t.json loops=false" | FileCheck %s
// RUN: FileCheck %s --input-file=%t.json --check-prefix=MANIFEST

// Two stages on one device (a local copy between them), the backward split
// into input and weight halves, and two data-parallel copies of that
// device: world ranks 0 and 1 run the one program of pipeline rank 0 on
// their own data and sum their gradients over group [0], which stands for
// pipeline rank 0 in both copies (docs/data-parallel.md).
module attributes {
  bitpipe.data_parallel = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0, 0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "zb-h1", microbatches = 1, microbatch_pipelines = [0], split_backward = true>,
  bitpipe.world_size = 2 : i64} {
  func.func private @s0(tensor<8x4xf32> {nn.param = "wte", nn.init = #nn.init<normal, std = 2.0e-02>},
                        tensor<2x4xi32> {nn.input = "tokens"})
      -> (tensor<2x4x4xf32>, tensor<2x4x4xf32> {bitpipe.saved = 0 : i64})
      attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd_input(tensor<2x4x4xf32> {bitpipe.saved = 0 : i64},
                                  tensor<2x4x4xf32> {bitpipe.grad_of_result = 0 : i64})
      -> (tensor<2x4x4xf32> {bitpipe.stash = 0 : i64})
      attributes {bitpipe.backward_of = @s0}
  func.func private @s0_bwd_weight(tensor<2x4xi32> {bitpipe.forward_arg = 1 : i64, nn.input = "tokens"},
                                   tensor<2x4x4xf32> {bitpipe.stash = 0 : i64})
      -> (tensor<8x4xf32> {bitpipe.grad_of_arg = 0 : i64, nn.param = "wte"})
      attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x4xf32>,
                        tensor<4x4xf32> {nn.param = "head.weight", nn.init = #nn.init<normal, std = 2.0e-02>},
                        tensor<4xf32> {nn.param = "head.bias", nn.init = #nn.init<zeros>},
                        tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32>
      attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd_input(tensor<2x4x4xf32> {bitpipe.forward_arg = 0 : i64},
                                  tensor<4x4xf32> {bitpipe.forward_arg = 1 : i64, nn.param = "head.weight"},
                                  tensor<2x4xi32> {bitpipe.forward_arg = 3 : i64, nn.input = "labels"})
      -> (tensor<2x4x4xf32> {bitpipe.grad_of_arg = 0 : i64}, tensor<2x4x4xf32> {bitpipe.stash = 0 : i64})
      attributes {bitpipe.backward_of = @s1}
  func.func private @s1_bwd_weight(tensor<2x4x4xf32> {bitpipe.forward_arg = 0 : i64},
                                   tensor<2x4x4xf32> {bitpipe.stash = 0 : i64})
      -> (tensor<4x4xf32> {bitpipe.grad_of_arg = 1 : i64, nn.param = "head.weight"},
          tensor<4xf32> {bitpipe.grad_of_arg = 2 : i64, nn.param = "head.bias"})
      attributes {bitpipe.backward_of = @s1}
  func.func private @tiny(tensor<8x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<f32>
      attributes {nn.model = #nn.model<family = "bert", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}

  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %a, %s0 = forward @s0(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x4xf32>, !bitpipe.saved)
    %b = local_copy activation %a stage 0 microbatch 0 : tensor<2x4x4xf32>
    %l = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss, %s1 = forward @s1(%b, %l) stage 1 microbatch 0 : (tensor<2x4x4xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %g = backward @s1_bwd_input(%s1) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x4xf32>
    %h = local_copy gradient %g stage 1 microbatch 0 : tensor<2x4x4xf32>
    backward @s0_bwd_input(%s0, %h) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x4xf32>) -> ()
    weight_grad @s1_bwd_weight(%s1) stage 1 microbatch 0
    weight_grad @s0_bwd_weight(%s0) stage 0 microbatch 0
    %tok = allreduce_start stages [0, 1] group [0] bucket 0 grads ["head.bias", "head.weight", "wte"] bytes 208 : !bitpipe.token
    allreduce_wait %tok
    optimizer_step
  }
}

// Functions by stage, then forward, input half, weight half: s0 0,
// s0_bwd_input 1, s0_bwd_weight 2, s1 3, s1_bwd_input 4, s1_bwd_weight 5.
// CHECK: bitpipe.entry_points = {functions = [@s0, @s0_bwd_input, @s0_bwd_weight, @s1, @s1_bwd_input, @s1_bwd_weight], ranks = [@bitpipe_rank0]}

// Ids: %t 0, %a 1, %s0 2, %b 3, %l 4, %loss 5, %s1 6, %g 7, %h 8, %tok 9.
// A local copy is a hand-off, not a transfer: no batch to end. The weight
// halves take only the handle. Without a micro-batch count the step
// gets -1 (none): it takes the gradients as they are.
// CHECK-LABEL: func.func @bitpipe_rank0(
// CHECK-SAME:      %[[CTX:[^:]*]]: !llvm.ptr) attributes {passthrough = ["noinline", "optnone"]} {
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[C0L:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[NONEL:.*]] = arith.constant -1 : i64
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : i32
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : i32
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : i32
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : i32
// CHECK-DAG:     %[[C7:.*]] = arith.constant 7 : i32
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : i32
// CHECK-DAG:     %[[C9:.*]] = arith.constant 9 : i32
// CHECK-DAG:     %[[NONE:.*]] = arith.constant -1 : i32
// CHECK:         call @bp_rt_load_input(%[[CTX]], %[[C0]], %[[C0]], %[[C0L]], %{{.*}})
// CHECK-NEXT:    call @bp_rt_forward(%[[CTX]], %[[C0]], %[[C0L]], %[[C0]], %[[NONE]], %[[C1]], %[[C2]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C0]])
// CHECK-NEXT:    call @bp_rt_local_copy(%[[CTX]], %[[C1]], %[[C3]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C1]])
// CHECK-NEXT:    call @bp_rt_load_input(%[[CTX]], %[[C4]], %[[C1]], %[[C0L]], %{{.*}})
// CHECK-NEXT:    call @bp_rt_forward(%[[CTX]], %[[C3]], %[[C0L]], %[[C3]], %[[C4]], %[[C5]], %[[C6]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C3]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C4]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C5]])
// CHECK-NEXT:    call @bp_rt_backward(%[[CTX]], %[[C4]], %[[C0L]], %[[C6]], %[[NONE]], %[[C7]])
// CHECK-NEXT:    call @bp_rt_local_copy(%[[CTX]], %[[C7]], %[[C8]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C7]])
// CHECK-NEXT:    call @bp_rt_backward(%[[CTX]], %[[C1]], %[[C0L]], %[[C2]], %[[C8]], %[[NONE]])
// CHECK-NEXT:    call @bp_rt_release(%[[CTX]], %[[C8]])
// CHECK-NEXT:    call @bp_rt_weight_grad(%[[CTX]], %[[C5]], %[[C0L]], %[[C6]])
// CHECK-NEXT:    call @bp_rt_weight_grad(%[[CTX]], %[[C2]], %[[C0L]], %[[C2]])
// CHECK-NEXT:    call @bp_rt_allreduce_start(%[[CTX]], %[[C0]], %[[C9]])
// CHECK-NEXT:    call @bp_rt_allreduce_wait(%[[CTX]], %[[C9]])
// CHECK-NEXT:    call @bp_rt_optimizer_step(%[[CTX]], %[[NONEL]])
// CHECK-NEXT:    return
// CHECK-NOT: func.func @bitpipe_rank1(

// MANIFEST:      "model":{"name":"tiny","family":"bert","vocab":8,"seq_len":4,"microbatch_size":2,"mask_token":7,"heads":1,"max_positions":4,"norm_position":"pre"},
// MANIFEST-SAME: "schedule":{"name":"zb-h1","microbatches":1,"devices":1,"data_parallel":2,"world_size":2,"transfer_streams":"shared","channels":[],"gradient_sync":"flat"},
// MANIFEST-SAME: "params":[{"name":"wte",{{.*}}},{"name":"head.weight",{{.*}}"decay":true},{"name":"head.bias",{{.*}}"decay":false}],
// MANIFEST-SAME: "functions":[{"name":"s0","kind":"forward","stage":0,
// MANIFEST-SAME:   {"name":"s0_bwd_input","kind":"backward_input","stage":0,
// MANIFEST-SAME:    "args":[{"role":"saved","index":0,{{[^}]*}}},{"role":"grad_of_result","index":0,{{[^}]*}}}],
// MANIFEST-SAME:    "results":[{"role":"stash","index":0,"shape":[2,4,4],"dtype":"f32"}]},
// MANIFEST-SAME:   {"name":"s0_bwd_weight","kind":"backward_weight","stage":0,
// MANIFEST-SAME:    "args":[{"role":"forward_arg","index":1,"shape":[2,4],"dtype":"i32"},{"role":"stash","index":0,"shape":[2,4,4],"dtype":"f32"}],
// MANIFEST-SAME:    "results":[{"role":"param","param":"wte","shape":[8,4],"dtype":"f64"}]},
// MANIFEST-SAME:   {"name":"s1","kind":"forward","stage":1,
// MANIFEST-SAME:   {"name":"s1_bwd_input","kind":"backward_input","stage":1,
// MANIFEST-SAME:   {"name":"s1_bwd_weight","kind":"backward_weight","stage":1,
// MANIFEST-SAME: "groups":{{\[\[0\]\]}},
// MANIFEST-SAME: "ranks":[{"num_values":10,"peak_handles":2,"peak_saved_bytes":128,"params":["wte","head.weight","head.bias"],"buckets":[{"group":0,"params":["head.bias","head.weight","wte"]}]}]}
