// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// #bitpipe.placement and the module attributes
//===----------------------------------------------------------------------===//

// expected-error @+1 {{#bitpipe.placement puts stage 1 of pipeline 0 on device 4, expected a device in [0, 4)}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 4, pipelines = [[0, 4, 2, 3]]>} {}

// -----

// expected-error @+1 {{#bitpipe.placement expects every pipeline to have the same number of stages, but pipeline 1 has 3 and pipeline 0 has 4}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 4, pipelines = [[0, 1, 2, 3], [3, 2, 1]]>} {}

// -----

// expected-error @+1 {{#bitpipe.placement of kind "bidirectional-v" expects 2 pipeline(s), got 1}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "bidirectional-v", devices = 2, pipelines = [[0, 1, 1, 0]]>} {}

// -----

// expected-error @+2 {{#bitpipe.placement: unknown placement 'zigzag' (expected loop, v, bidirectional or bidirectional-v)}}
// expected-error @+1 {{failed to parse BitPipe_PlacementAttr parameter 'kind'}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "zigzag", devices = 2, pipelines = [[0, 1]]>} {}

// -----

// expected-error @+1 {{'bitpipe.placement' expects a #bitpipe.placement, got "v"}}
module attributes {bitpipe.placement = "v"} {}

// -----

// expected-error @+1 {{'bitpipe.world_size' expects a positive integer of at most 1048576 (the schedule registry's limit), got 0 : i64}}
module attributes {bitpipe.world_size = 0 : i64} {}

// -----

// The schedule registry's limits hold for hand-written IR too (Registry.h).
// expected-error @+1 {{'bitpipe.world_size' expects a positive integer of at most 1048576 (the schedule registry's limit), got 9223372036854775807 : i64}}
module attributes {bitpipe.world_size = 9223372036854775807 : i64} {}

// -----

// expected-error @+1 {{'bitpipe.world_size' expects a positive integer of at most 1048576 (the schedule registry's limit), got 100000000000000000000000 : i128}}
module attributes {bitpipe.world_size = 100000000000000000000000 : i128} {}

// -----

// expected-error @+1 {{'bitpipe.data_parallel' expects a positive integer of at most 65536 (the schedule registry's limit), got 70000 : i64}}
module attributes {bitpipe.data_parallel = 70000 : i64} {}

// -----

// expected-error @+1 {{'bitpipe.data_parallel_copy' expects a copy number below 'bitpipe.data_parallel' = 2, got 2 : i64}}
module attributes {bitpipe.data_parallel = 2 : i64, bitpipe.data_parallel_copy = 2 : i64} {}

// -----

// expected-error @+1 {{'bitpipe.data_parallel_copy' expects a copy number below 'bitpipe.data_parallel' = 1, got -1 : i64}}
module attributes {bitpipe.data_parallel_copy = -1 : i64} {}

// -----

// expected-error @+1 {{#bitpipe.placement expects at most 4096 devices (the schedule registry's limit), got 2147483647}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2147483647, pipelines = [[0]]>} {}

// -----

// expected-error @+1 {{'bitpipe.world_size' = 6 is not a multiple of the placement's 4 devices}}
module attributes {bitpipe.world_size = 6 : i64, bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 4, pipelines = [[0, 1, 2, 3]]>} {}

//===----------------------------------------------------------------------===//
// bitpipe.program
//===----------------------------------------------------------------------===//

// -----

bitpipe.program @a rank 0 {}
// expected-error @+1 {{'bitpipe.program' op has rank 0, which program @a already has; expected one program per rank}}
bitpipe.program @b rank 0 {}

// -----

module attributes {bitpipe.world_size = 2 : i64} {
  // expected-error @+1 {{'bitpipe.program' op has rank 2, expected a rank below bitpipe.world_size = 2}}
  bitpipe.program @rank2 rank 2 {}
}

// -----

// expected-error @+1 {{'bitpipe.program' op expects a body without arguments}}
"bitpipe.program"() <{rank = 0 : i64, sym_name = "rank0"}> ({
^bb0(%arg0: tensor<4xf32>):
}) : () -> ()

// -----

func.func @not_in_a_program() {
  // expected-error @+1 {{'bitpipe.optimizer_step' op expects parent op 'bitpipe.program'}}
  bitpipe.optimizer_step
  return
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.load_input' op attribute 'microbatch' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %x = bitpipe.load_input tokens microbatch -1 : tensor<2x16xi32>
}

//===----------------------------------------------------------------------===//
// bitpipe.forward, bitpipe.backward, bitpipe.weight_grad
//===----------------------------------------------------------------------===//

// -----

bitpipe.program @rank0 rank 0 {
  %x = bitpipe.load_input tokens microbatch 0 : tensor<2x16xi32>
  // expected-error @+1 {{'bitpipe.forward' op expects @stage_0 to be a stage function, but the module has no function of that name}}
  %y, %s = bitpipe.forward @stage_0(%x) stage 0 microbatch 0 : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
}

// -----

// expected-note @+1 {{stage function declared here}}
func.func private @stage_0(tensor<2x16xi32>) -> tensor<2x16x64xf32>
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.load_input tokens microbatch 0 : tensor<2x16xi32>
  // expected-error @+1 {{'bitpipe.forward' op expects stage function @stage_0 of type '(tensor<2x16xi32>) -> tensor<2x16x32xf32>', but it has type '(tensor<2x16xi32>) -> tensor<2x16x64xf32>'}}
  %y, %s = bitpipe.forward @stage_0(%x) stage 0 microbatch 0 : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
}

// -----

func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_1_bwd(tensor<4xf32>) -> tensor<4xf32>
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 2 : tensor<4xf32>
  // expected-note @+1 {{forward here}}
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 2 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  %g = bitpipe.recv gradient from 1 stage 2 microbatch 3 : tensor<4xf32>
  // expected-error @+1 {{'bitpipe.backward' op of stage 1 micro-batch 3 expects the saved state of the same stage and micro-batch, but it comes from the forward of stage 1 micro-batch 2}}
  %gx = bitpipe.backward @stage_1_bwd(%s, %g) stage 1 microbatch 3 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
}

// -----

// Only a forward makes saved state; anything else (here an argument, which a
// program may not have either) is rejected at the use.
func.func private @stage_1_bwd()
"bitpipe.program"() <{rank = 0 : i64, sym_name = "rank0"}> ({
^bb0(%s: !bitpipe.saved):
  // expected-error @+1 {{'bitpipe.backward' op expects its !bitpipe.saved operand to be produced by a bitpipe.forward}}
  bitpipe.backward @stage_1_bwd(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
}) : () -> ()

// -----

func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_2_bwd(tensor<4xf32>) -> tensor<4xf32>
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 2 : tensor<4xf32>
  // expected-note @+1 {{forward here}}
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 2 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  %g = bitpipe.recv gradient from 1 stage 3 microbatch 2 : tensor<4xf32>
  // expected-error @+1 {{'bitpipe.backward' op of stage 2 micro-batch 2 expects the saved state of the same stage and micro-batch, but it comes from the forward of stage 1 micro-batch 2}}
  %gx = bitpipe.backward @stage_2_bwd(%s, %g) stage 2 microbatch 2 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
}

// -----

func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_1_bwd(tensor<4xf32>) -> tensor<4xf32>
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{'bitpipe.forward' op of stage 1 micro-batch 0 has its saved state consumed by 2 bitpipe.backward and 0 bitpipe.weight_grad ops; expected at most one of each}}
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  %gx = bitpipe.backward @stage_1_bwd(%s, %x) stage 1 microbatch 0 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
  %gx2 = bitpipe.backward @stage_1_bwd(%s, %x) stage 1 microbatch 0 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
}

// -----

func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32>
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 0 : tensor<4xf32>
  // expected-note @+1 {{first forward here}}
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  // expected-error @+1 {{'bitpipe.forward' op runs stage 1 micro-batch 0 a second time; expected one forward per stage and micro-batch in a program}}
  %y2, %s2 = bitpipe.forward @stage_1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
}

// -----

func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_1_igrad(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_1_wgrad()
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 0 : tensor<4xf32>
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  // expected-error @+1 {{'bitpipe.weight_grad' op of stage 1 micro-batch 0 expects the bitpipe.backward of the same saved state to run before it}}
  bitpipe.weight_grad @stage_1_wgrad(%s) stage 1 microbatch 0
  %gx = bitpipe.backward @stage_1_igrad(%s, %x) stage 1 microbatch 0 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
}

// -----

// The binding rule: parameters and saved values are left out of the type a
// bound forward must match, so the mismatch is in what remains.
// expected-note @+1 {{stage function declared here}}
func.func private @stage_0(tensor<2x16xi32> {nn.input = "tokens"}, tensor<64x32xf32> {nn.param = "wte"}) -> (tensor<2x16x64xf32>, tensor<2x16x32xf32> {bitpipe.saved = 0 : i64})
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.load_input tokens microbatch 0 : tensor<2x16xi32>
  // expected-error @+1 {{'bitpipe.forward' op expects stage function @stage_0 of type '(tensor<2x16xi32>) -> tensor<2x16x32xf32>' once stage state is left out, but it has type '(tensor<2x16xi32>) -> tensor<2x16x64xf32>' (in full '(tensor<2x16xi32>, tensor<64x32xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x32xf32>)')}}
  %y, %s = bitpipe.forward @stage_0(%x) stage 0 microbatch 0 : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
}

// -----

// expected-note @+1 {{stage function declared here}}
func.func private @stage_0(tensor<4xf32>) -> tensor<4xf32> attributes {bitpipe.stage = 0 : i64}
bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{'bitpipe.forward' op of stage 1 calls @stage_0, a stage function of stage 0}}
  %y, %s = bitpipe.forward @stage_0(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
}

// -----

func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32> attributes {bitpipe.stage = 1 : i64}
func.func private @stage_2(tensor<4xf32>) -> tensor<4xf32> attributes {bitpipe.stage = 2 : i64}
// expected-note @+1 {{backward function declared here}}
func.func private @stage_2_bwd(tensor<4xf32> {bitpipe.grad_of_result = 0 : i64}) -> tensor<4xf32> attributes {bitpipe.backward_of = @stage_2}
bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 : tensor<4xf32>
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  %g = bitpipe.recv gradient from 0 stage 2 microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{'bitpipe.backward' op of stage 1 calls @stage_2_bwd, a backward function of stage 2}}
  %gx = bitpipe.backward @stage_2_bwd(%s, %g) stage 1 microbatch 0 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
}

// -----

// Everything a weight half reads is behind the handle; an argument without
// a state role would have to be passed, and weight_grad passes nothing.
func.func private @stage_1(tensor<4xf32>) -> tensor<4xf32>
func.func private @stage_1_bwd_input(tensor<4xf32> {bitpipe.grad_of_result = 0 : i64}) -> tensor<4xf32>
// expected-note @+1 {{weight-gradient function declared here}}
func.func private @stage_1_bwd_weight(tensor<4xf32> {bitpipe.stash = 0 : i64}, tensor<4xf32>) -> (tensor<4x4xf32> {nn.param = "w"})
bitpipe.program @rank0 rank 0 {
  %x = bitpipe.recv activation from 1 stage 0 microbatch 0 : tensor<4xf32>
  %y, %s = bitpipe.forward @stage_1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, !bitpipe.saved)
  %gx = bitpipe.backward @stage_1_bwd_input(%s, %x) stage 1 microbatch 0 : (!bitpipe.saved, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'bitpipe.weight_grad' op expects weight-gradient function @stage_1_bwd_weight of type '() -> ()' once stage state is left out, but it has type '(tensor<4xf32>) -> ()' (in full '(tensor<4xf32>, tensor<4xf32>) -> tensor<4x4xf32>')}}
  bitpipe.weight_grad @stage_1_bwd_weight(%s) stage 1 microbatch 0
}

//===----------------------------------------------------------------------===//
// Transfers
//===----------------------------------------------------------------------===//

// -----

bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{'bitpipe.send' op sends to its own rank 1; expected another rank (use bitpipe.local_copy between stages of one rank)}}
  bitpipe.send activation %x to 1 stage 1 microbatch 0 : tensor<4xf32>
}

// -----

bitpipe.program @rank1 rank 1 {
  // expected-error @+1 {{'bitpipe.recv' op receives from its own rank 1; expected another rank (use bitpipe.local_copy between stages of one rank)}}
  %x = bitpipe.recv activation from 1 stage 0 microbatch 0 : tensor<4xf32>
}

// -----

module attributes {bitpipe.world_size = 4 : i64} {
  bitpipe.program @rank1 rank 1 {
    %x = bitpipe.recv activation from 0 stage 0 microbatch 0 : tensor<4xf32>
    // expected-error @+1 {{'bitpipe.send' op sends to rank 4, expected a rank below bitpipe.world_size = 4}}
    bitpipe.send activation %x to 4 stage 1 microbatch 0 : tensor<4xf32>
  }
}

// -----

bitpipe.program @rank1 rank 1 {
  // expected-error @+1 {{unknown kind 'weights'}}
  %x = bitpipe.recv weights from 0 stage 0 microbatch 0 : tensor<4xf32>
}

// -----

bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 batch 1 : tensor<4xf32>
  // expected-error @+1 {{'bitpipe.recv' op is in transfer batch 0 after batch 1; expected batch numbers to grow along the program}}
  %y = bitpipe.recv activation from 0 stage 0 microbatch 1 batch 0 : tensor<4xf32>
}

// -----

bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<4xf32>
  // expected-note @+1 {{compute step here}}
  %s = bitpipe.forward stage 1 microbatch 0 : () -> !bitpipe.saved
  // expected-error @+1 {{'bitpipe.recv' op is in transfer batch 0, which a compute step splits; expected the transfers of a batch between two compute steps}}
  %y = bitpipe.recv activation from 0 stage 0 microbatch 1 batch 0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// bitpipe.allreduce_start, bitpipe.allreduce_wait, bitpipe.optimizer_step
//===----------------------------------------------------------------------===//

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects stages sorted, unique and non-negative, got [7, 4]}}
  %t = bitpipe.allreduce_start stages [7, 4] group [0, 3] bucket 0 : !bitpipe.token
  bitpipe.allreduce_wait %t
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects group sorted, unique and non-negative, got [3, 0]}}
  %t = bitpipe.allreduce_start stages [4, 7] group [3, 0] bucket 0 : !bitpipe.token
  bitpipe.allreduce_wait %t
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects group sorted, unique and non-negative, got [0, 0]}}
  %t = bitpipe.allreduce_start stages [4, 7] group [0, 0] bucket 0 : !bitpipe.token
  bitpipe.allreduce_wait %t
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects a group of at least 2 ranks, got [0]; stages without replicas need no all-reduce}}
  %t = bitpipe.allreduce_start stages [4, 7] group [0] bucket 0 : !bitpipe.token
  bitpipe.allreduce_wait %t
}

// -----

// One copy: a group of one pipeline rank is one rank.
module attributes {bitpipe.data_parallel = 1 : i64} {
  bitpipe.program @rank0 rank 0 {
    // expected-error @+1 {{'bitpipe.allreduce_start' op expects a group of at least 2 ranks, got [0]; stages without replicas need no all-reduce}}
    %t = bitpipe.allreduce_start stages [4, 7] group [0] bucket 0 : !bitpipe.token
    bitpipe.allreduce_wait %t
  }
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects a group of at least 2 ranks, got []; stages without replicas need no all-reduce}}
  %t = bitpipe.allreduce_start stages [4, 7] group [] bucket 0 : !bitpipe.token
  bitpipe.allreduce_wait %t
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects group [1, 2] to contain the rank of its program, 0}}
  %t = bitpipe.allreduce_start stages [4, 7] group [1, 2] bucket 0 : !bitpipe.token
  bitpipe.allreduce_wait %t
}

// -----

module attributes {bitpipe.world_size = 4 : i64} {
  bitpipe.program @rank0 rank 0 {
    // expected-error @+1 {{'bitpipe.allreduce_start' op expects group [0, 7] within bitpipe.world_size = 4}}
    %t = bitpipe.allreduce_start stages [4, 7] group [0, 7] bucket 0 : !bitpipe.token
    bitpipe.allreduce_wait %t
  }
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects its token to be waited exactly once by bitpipe.allreduce_wait, but it is waited 0 times}}
  %t = bitpipe.allreduce_start stages [4, 7] group [0, 3] bucket 0 : !bitpipe.token
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects its token to be waited exactly once by bitpipe.allreduce_wait, but it is waited 2 times}}
  %t = bitpipe.allreduce_start stages [4, 7] group [0, 3] bucket 0 : !bitpipe.token
  bitpipe.allreduce_wait %t
  bitpipe.allreduce_wait %t
}

// -----

// The bucketed form names its gradients and their size together.
bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects 'grads' and 'bytes' together (the bucketed form) or neither (a schedule marker)}}
  %t = "bitpipe.allreduce_start"() {stages = array<i64: 4>, group = array<i64: 0, 3>, bucket = 0 : i64, grads = ["h4.w"]} : () -> !bitpipe.token
  bitpipe.allreduce_wait %t
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects a bucket with at least one gradient}}
  %t = bitpipe.allreduce_start stages [4] group [0, 3] bucket 0 grads [] bytes 0 : !bitpipe.token
  bitpipe.allreduce_wait %t
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.allreduce_start' op expects a positive bucket size in bytes, got 0}}
  %t = bitpipe.allreduce_start stages [4] group [0, 3] bucket 0 grads ["h4.w"] bytes 0 : !bitpipe.token
  bitpipe.allreduce_wait %t
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.optimizer_step' op expects a positive micro-batch count to average over, got 0}}
  bitpipe.optimizer_step microbatches 0
}

// -----

// A wait on anything but a token does not type-check.
bitpipe.program @rank0 rank 0 {
  // expected-note @+1 {{prior use here}}
  %x = bitpipe.recv activation from 1 stage 0 microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{use of value '%x' expects different type than prior uses: '!bitpipe.token' vs 'tensor<4xf32>'}}
  bitpipe.allreduce_wait %x
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-note @+1 {{all-reduce started here}}
  %t = bitpipe.allreduce_start stages [4, 7] group [0, 3] bucket 2 : !bitpipe.token
  // expected-error @+1 {{'bitpipe.optimizer_step' op runs before the all-reduce of stages [4, 7] (bucket 2) is waited for; expected a bitpipe.allreduce_wait of its token before it}}
  bitpipe.optimizer_step
  bitpipe.allreduce_wait %t
}

//===----------------------------------------------------------------------===//
// The unbound form (no callee): no tensors between stages yet
//===----------------------------------------------------------------------===//

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.forward' op without a callee returns only its !bitpipe.saved handle, but it has 1 more result(s); bind the stage function to return tensors}}
  %y, %s = bitpipe.forward stage 0 microbatch 0 : () -> (tensor<2x16x32xf32>, !bitpipe.saved)
}

// -----

bitpipe.program @rank1 rank 1 {
  %x = bitpipe.recv activation from 0 stage 0 microbatch 0 : tensor<2x16x32xf32>
  // expected-error @+1 {{'bitpipe.forward' op without a callee takes only training inputs from bitpipe.load_input; bind the stage function to pass other tensors}}
  %s = bitpipe.forward(%x) stage 1 microbatch 0 : (tensor<2x16x32xf32>) -> !bitpipe.saved
}

// -----

bitpipe.program @rank1 rank 1 {
  %s = bitpipe.forward stage 1 microbatch 0 : () -> !bitpipe.saved
  %g = bitpipe.recv gradient from 0 stage 2 microbatch 0 : tensor<2x16x32xf32>
  // expected-error @+1 {{'bitpipe.backward' op without a callee takes only its !bitpipe.saved handle and returns nothing; bind the backward function to pass gradients}}
  bitpipe.backward(%s, %g) stage 1 microbatch 0 : (!bitpipe.saved, tensor<2x16x32xf32>) -> ()
}

// -----

// The unbound form keeps the handle check: a backward of another forward.
bitpipe.program @rank0 rank 0 {
  // expected-note @+1 {{forward here}}
  %s = bitpipe.forward stage 0 microbatch 0 : () -> !bitpipe.saved
  // expected-error @+1 {{'bitpipe.backward' op of stage 0 micro-batch 1 expects the saved state of the same stage and micro-batch, but it comes from the forward of stage 0 micro-batch 0}}
  bitpipe.backward(%s) stage 0 microbatch 1 : (!bitpipe.saved) -> ()
}

// -----

// expected-error @+1 {{'bitpipe.schedule' expects the 'bitpipe.placement' the schedule runs on}}
module attributes {
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
}

// -----

// A tensor whose byte count leaves int64 (bitpipe/Support/BoundedTensors.h).
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>
} {
  bitpipe.program @rank0 rank 0 {
    // expected-error @+1 {{'bitpipe.load_input' op result #0 of type 'tensor<4294967296x4294967296xi32>' has more elements or bytes than 2^63-1 (9223372036854775807)}}
    %ids = bitpipe.load_input tokens microbatch 0 : tensor<4294967296x4294967296xi32>
  }
}

// -----

// Repeats (docs/repetition.md): numbers advance only inside one.
bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{'bitpipe.forward' op advances a number per repetition ('step'), but is not in a bitpipe.repeat}}
  %s = bitpipe.forward stage 0 microbatch 0 step 1 : () -> !bitpipe.saved
}

// -----

bitpipe.program @rank0 rank 0 {
  // expected-error @+1 {{expects a repetition count of at least 1, got 0}}
  bitpipe.repeat 0 {
  }
}

// -----

// All-reduces and the optimizer step happen once per training step.
bitpipe.program @rank0 rank 0 {
  bitpipe.repeat 2 {
    // expected-error @+1 {{'bitpipe.optimizer_step' op expects parent op 'bitpipe.program'}}
    bitpipe.optimizer_step
  }
}

// -----

// A number that a later repetition takes below zero.
bitpipe.program @rank0 rank 0 {
  bitpipe.repeat 3 {
    // expected-error @+1 {{'bitpipe.forward' op reaches micro-batch -2 in the last repetition (2); expected numbers that stay non-negative}}
    %s = bitpipe.forward stage 0 microbatch 2 step -2 : () -> !bitpipe.saved
    bitpipe.backward(%s) stage 0 microbatch 2 step -2 : (!bitpipe.saved) -> ()
  }
}

// -----

// The same forward in two repetitions: its micro-batch does not advance.
bitpipe.program @rank0 rank 0 {
  bitpipe.repeat 2 {
    // expected-error @+2 {{'bitpipe.forward' op runs stage 0 micro-batch 5 in repetition 1 of its bitpipe.repeat a second time; expected one forward per stage and micro-batch in a program}}
    // expected-note @+1 {{first forward here}}
    %s = bitpipe.forward stage 0 microbatch 5 : () -> !bitpipe.saved
    bitpipe.backward(%s) stage 0 microbatch 5 : (!bitpipe.saved) -> ()
  }
}

// -----

// A forward after the repeat that runs a micro-batch one of the repeat's
// middle repetitions ran already: found on the micro-batch progressions,
// not by unrolling (the verifier reads a repeat by its ends).
bitpipe.program @rank0 rank 0 {
  bitpipe.repeat 10 {
    // expected-note @+1 {{first forward here}}
    %s = bitpipe.forward stage 0 microbatch 0 step 1 : () -> !bitpipe.saved
    bitpipe.backward(%s) stage 0 microbatch 0 step 1 : (!bitpipe.saved) -> ()
  }
  // expected-error @+1 {{'bitpipe.forward' op runs stage 0 micro-batch 5 a second time; expected one forward per stage and micro-batch in a program}}
  %t = bitpipe.forward stage 0 microbatch 5 : () -> !bitpipe.saved
  bitpipe.backward(%t) stage 0 microbatch 5 : (!bitpipe.saved) -> ()
}

// -----

// Two repeats whose micro-batches meet in the middle of both.
bitpipe.program @rank0 rank 0 {
  bitpipe.repeat 10 {
    // expected-note @+1 {{first forward here}}
    %s = bitpipe.forward stage 1 microbatch 0 step 2 : () -> !bitpipe.saved
    bitpipe.backward(%s) stage 1 microbatch 0 step 2 : (!bitpipe.saved) -> ()
  }
  bitpipe.repeat 10 {
    // expected-error @+1 {{'bitpipe.forward' op runs stage 1 micro-batch 4 in repetition 1 of its bitpipe.repeat a second time; expected one forward per stage and micro-batch in a program}}
    %s = bitpipe.forward stage 1 microbatch 1 step 3 : () -> !bitpipe.saved
    bitpipe.backward(%s) stage 1 microbatch 1 step 3 : (!bitpipe.saved) -> ()
  }
}

// -----

// Batch numbers that fall behind only in later repetitions (the receive's
// advance by 3, the send's by 2, from 0 and 1): a linear order holds for
// every repetition exactly when it holds at both ends of the range, so the
// repetitions the verifier reads show it.
module attributes {
  bitpipe.world_size = 2 : i64
} {
  bitpipe.program @rank0 rank 0 {
    %s0 = bitpipe.forward stage 0 microbatch 0 : () -> !bitpipe.saved
    %last = bitpipe.repeat 20 (%c = %s0) : (!bitpipe.saved) -> !bitpipe.saved {
      %g = bitpipe.recv gradient from 1 stage 1 microbatch 0 step 1 batch 0 step 3 : tensor<2x4xf32>
      // expected-error @+1 {{'bitpipe.send' op is in transfer batch 5 in repetition 2 of its bitpipe.repeat after batch 6; expected batch numbers to grow along the program}}
      bitpipe.send gradient %g to 1 stage 1 microbatch 0 step 1 batch 1 step 2 : tensor<2x4xf32>
      %s = bitpipe.forward stage 0 microbatch 1 step 1 : () -> !bitpipe.saved
      bitpipe.backward(%c) stage 0 microbatch 0 step 1 : (!bitpipe.saved) -> ()
      bitpipe.yield %s : !bitpipe.saved
    }
    bitpipe.backward(%last) stage 0 microbatch 20 : (!bitpipe.saved) -> ()
  }
}

// -----

// A carried handle that reaches the backward of another micro-batch: the
// window holds the handle of repetition k - 1 (micro-batch k - 1 + 1 = k),
// but the backward of repetition k is that of micro-batch k + 1.
bitpipe.program @rank0 rank 0 {
  // expected-note @+1 {{forward here}}
  %s0 = bitpipe.forward stage 0 microbatch 0 : () -> !bitpipe.saved
  %last = bitpipe.repeat 3 (%c = %s0) : (!bitpipe.saved) -> !bitpipe.saved {
    %s = bitpipe.forward stage 0 microbatch 1 step 1 : () -> !bitpipe.saved
    // expected-error @+1 {{'bitpipe.backward' op of stage 0 micro-batch 1 in repetition 0 of its bitpipe.repeat expects the saved state of the same stage and micro-batch, but it carries the forward of stage 0 micro-batch 0}}
    bitpipe.backward(%c) stage 0 microbatch 1 step 1 : (!bitpipe.saved) -> ()
    bitpipe.yield %s : !bitpipe.saved
  }
  bitpipe.backward(%last) stage 0 microbatch 3 : (!bitpipe.saved) -> ()
}

// -----

// A forward outside the repeat, consumed in every repetition.
bitpipe.program @rank0 rank 0 {
  %s0 = bitpipe.forward stage 0 microbatch 0 : () -> !bitpipe.saved
  bitpipe.repeat 2 {
    // expected-error @+1 {{'bitpipe.backward' op uses the saved state of a forward outside its bitpipe.repeat in every repetition; expected it carried in as a body argument}}
    bitpipe.backward(%s0) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
  }
}

// -----

// Carried values must keep their type from one repetition to the next.
module attributes {
  bitpipe.world_size = 2 : i64
} {
  bitpipe.program @rank0 rank 0 {
    %g = bitpipe.recv gradient from 1 stage 1 microbatch 0 batch 0 : tensor<2x4xf32>
    // expected-error @+1 {{'bitpipe.repeat' op carries value 0 as 'tensor<2x4xf32>', but its init is 'tensor<2x4xf32>' and the yield gives 'tensor<4x4xf32>'}}
    %last = bitpipe.repeat 2 (%c = %g) : (tensor<2x4xf32>) -> tensor<4x4xf32> {
      %h = bitpipe.recv gradient from 1 stage 1 microbatch 1 step 1 batch 1 step 1 : tensor<4x4xf32>
      bitpipe.yield %h : tensor<4x4xf32>
    }
  }
}

// -----

// A batch must advance with the repetitions: one that does not would be
// split by the compute steps between them.
module attributes {
  bitpipe.world_size = 2 : i64
} {
  bitpipe.program @rank0 rank 0 {
    bitpipe.repeat 2 {
      // expected-error @+1 {{'bitpipe.recv' op is in transfer batch 3 in repetition 1 of its bitpipe.repeat, which a compute step splits; expected the transfers of a batch between two compute steps}}
      %a = bitpipe.recv gradient from 1 stage 1 microbatch 0 step 1 batch 3 : tensor<2x4xf32>
      // expected-note @+1 {{compute step here}}
      %s = bitpipe.forward stage 0 microbatch 0 step 1 : () -> !bitpipe.saved
      bitpipe.backward(%s) stage 0 microbatch 0 step 1 : (!bitpipe.saved) -> ()
    }
  }
}
