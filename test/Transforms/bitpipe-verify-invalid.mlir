// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-verify=transport=mpi -o /dev/null
//
// Checked with MPI's rules: the programs carry no transfer batches, which
// NCCL's rules need (bitpipe-verify-nccl.mlir checks those).

// One case per diagnostic of bitpipe-verify, on hand-written 2-rank
// programs that every op verifier accepts. A backward before its forward,
// a weight gradient before its backward and an optimizer step before a wait
// cannot be written at all: the op verifiers reject them (test/Dialect/
// BitPipe/invalid.mlir).

// A receive that no send matches.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %g1 = recv gradient from 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    // expected-error @+1 {{rank 1 receives the activation of stage 0 micro-batch 1 (F1.s0) from rank 0, but rank 0 has no matching send (bitpipe.send activation to 1 stage 0 microbatch 1)}}
    %x1 = recv activation from 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    optimizer_step
  }
}

// -----

// A hand-off that two pairs of ranks move is two transfers: rank 0 keeps
// the activation of micro-batch 1 with a local copy, so the receive on
// rank 1 still has no send.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    %c1 = local_copy activation %y1 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %g1 = recv gradient from 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    // expected-error @+1 {{rank 1 receives the activation of stage 0 micro-batch 1 (F1.s0) from rank 0, but rank 0 has no matching send (bitpipe.send activation to 1 stage 0 microbatch 1)}}
    %x1 = recv activation from 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    optimizer_step
  }
}

// -----

// A send that no receive matches (rank 1 feeds both forwards from one receive).
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    // expected-error @+1 {{rank 0 sends the activation of stage 0 micro-batch 1 (F1.s0) to rank 1, but rank 1 has no matching receive (bitpipe.recv activation from 0 stage 0 microbatch 1)}}
    send activation %y1 to 1 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %g1 = recv gradient from 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x0, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    optimizer_step
  }
}

// -----

// Both ends of a hand-off agree on everything but the tensor type.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xbf16>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    // expected-note @+1 {{send here}}
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    // expected-error @+1 {{rank 1 receives the activation of stage 0 micro-batch 0 (F0.s0) as (tensor<2x4x8xbf16>), but rank 0 sends (tensor<2x4x8xf32>)}}
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xbf16>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xbf16>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    optimizer_step
  }
}

// -----

// Rank 1 receives micro-batch 1 before micro-batch 0; rank 0 sends them in order.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, 0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    // expected-note @+1 {{rank 0's 1st send on the channel}}
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y1 to 1 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %g1 = recv gradient from 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    // expected-error @+1 {{channel rank 0 -> rank 1: rank 1's 1st receive expects the activation of stage 0 micro-batch 1 (F1.s0), but rank 0's 1st send carries the activation of stage 0 micro-batch 0 (F0.s0); the two ranks order this channel differently}}
    %x1 = recv activation from 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    optimizer_step
  }
}

// -----

// Rank 0 waits for the gradient of micro-batch 0 before it sends the activation that rank 1 needs to compute it.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    // expected-error @+4 {{deadlock under mpi's rules: no rank can make progress; a cycle of 2 waits, each on the next and the last on the first (see the notes)}}
    // The cycle, then where each rank is blocked.
    // expected-note @+2 {{rank 0 at step 2 (B0.s0) waits for the gradient of B0.s1 from rank 1, which rank 1 has not produced yet}}
    // expected-note @+1 {{blocked: rank 0: B0.s0 (backward of stage 0 for micro-batch 0) waits for the gradient of B0.s1 from rank 1, which has not run (rank 1 is itself blocked at F0.s1)}}
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    // expected-note @+2 {{rank 1 at step 1 (F0.s1) waits for the activation of F0.s0 from rank 0, which rank 0 has not sent yet}}
    // expected-note @+1 {{blocked: rank 1: F0.s1 (forward of stage 1 for micro-batch 0) waits for the activation of F0.s0 from rank 0, which was never sent}}
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    optimizer_step
  }
}

// -----

// The members of group [0, 1] start their all-reduces in different orders.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2, pipelines = [[0, 1], [1, 0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "chimera", microbatches = 2, microbatch_pipelines = [0, 1], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %x1 = recv activation from 1 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    %a1 = allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %a0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
    allreduce_wait %a1
    allreduce_wait %a0
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y1 to 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    %g1 = recv gradient from 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    // expected-error @+1 {{rank 1's 1st all-reduce with group [0, 1] (bucket 0) carries stages [0], but rank 0's carries stages [1]; members must start the same all-reduces in the same order}}
    %a0 = allreduce_start stages [0] group [0, 1] bucket 0 : !bitpipe.token
    %a1 = allreduce_start stages [1] group [0, 1] bucket 1 : !bitpipe.token
    allreduce_wait %a0
    allreduce_wait %a1
    optimizer_step
  }
}

// -----

// The members agree on the order but not on the size of the buffer.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2, pipelines = [[0, 1], [1, 0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "chimera", microbatches = 2, microbatch_pipelines = [0, 1], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %x1 = recv activation from 1 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    // expected-note @+1 {{rank 0's all-reduce here}}
    %a1 = allreduce_start stages [1] group [0, 1] bucket 0 grads ["w1"] bytes 512 : !bitpipe.token
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %a0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
    allreduce_wait %a1
    allreduce_wait %a0
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y1 to 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    // expected-error @+1 {{rank 1's 1st all-reduce with group [0, 1] (bucket 0) has bytes 256 : i64, but rank 0's has bytes 512 : i64; members must all-reduce buffers of the same size}}
    %a1 = allreduce_start stages [1] group [0, 1] bucket 0 grads ["w1"] bytes 256 : !bitpipe.token
    %g1 = recv gradient from 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %a0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
    allreduce_wait %a1
    allreduce_wait %a0
    optimizer_step
  }
}

// -----

// Rank 1 never all-reduces stage 0.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2, pipelines = [[0, 1], [1, 0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "chimera", microbatches = 2, microbatch_pipelines = [0, 1], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %x1 = recv activation from 1 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    %a1 = allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    // expected-error @+1 {{rank 0 starts 2 all-reduces with group [0, 1], rank 1 1: its 2nd (stages [0]) has no partner on rank 1}}
    %a0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
    allreduce_wait %a1
    allreduce_wait %a0
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y1 to 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    %a1 = allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token
    %g1 = recv gradient from 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    allreduce_wait %a1
    optimizer_step
  }
}

// -----

// Rank 0 starts the all-reduce of stage 1 before its last backward of stage 1.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2, pipelines = [[0, 1], [1, 0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "chimera", microbatches = 2, microbatch_pipelines = [0, 1], split_backward = false>
} {
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}, tensor<16x8xf32> {nn.param = "wte"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s0_bwd(tensor<2x4x8xf32> {bitpipe.grad_of_result = 0 : i64}) -> (tensor<16x8xf32> {nn.param = "wte"}) attributes {bitpipe.backward_of = @s0}
  func.func private @s1(tensor<2x4x8xf32>, tensor<2x4xi32> {nn.input = "labels"}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  func.func private @s1_bwd() -> (tensor<2x4x8xf32> {bitpipe.grad_of_arg = 0 : i64}) attributes {bitpipe.backward_of = @s1}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %y0, %s0 = forward @s0(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y0 to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %x1 = recv activation from 1 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %l1 = load_input targets microbatch 1 : tensor<2x4xi32>
    %loss1, %s1 = forward @s1(%x1, %l1) stage 1 microbatch 1 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    // expected-note @+1 {{all-reduce started here}}
    %a1 = allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token
    // expected-error @+1 {{rank 0: the backward of stage 1 micro-batch 1 adds to the gradients of stage 1 while their all-reduce (bucket 0) is in flight; expected every backward of the stage before its allreduce_start}}
    %gx1 = backward @s1_bwd(%s1) stage 1 microbatch 1 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx1 to 1 stage 1 microbatch 1 : tensor<2x4x8xf32>
    %g0 = recv gradient from 1 stage 1 microbatch 0 : tensor<2x4x8xf32>
    backward @s0_bwd(%s0, %g0) stage 0 microbatch 0 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %a0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
    allreduce_wait %a1
    allreduce_wait %a0
    optimizer_step
  }
  bitpipe.program @rank1 rank 1 {
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %y1, %s1 = forward @s0(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %y1 to 0 stage 0 microbatch 1 : tensor<2x4x8xf32>
    %x0 = recv activation from 0 stage 0 microbatch 0 : tensor<2x4x8xf32>
    %l0 = load_input targets microbatch 0 : tensor<2x4xi32>
    %loss0, %s0 = forward @s1(%x0, %l0) stage 1 microbatch 0 : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %gx0 = backward @s1_bwd(%s0) stage 1 microbatch 0 : (!bitpipe.saved) -> tensor<2x4x8xf32>
    send gradient %gx0 to 0 stage 1 microbatch 0 : tensor<2x4x8xf32>
    %a1 = allreduce_start stages [1] group [0, 1] bucket 0 : !bitpipe.token
    %g1 = recv gradient from 0 stage 1 microbatch 1 : tensor<2x4x8xf32>
    backward @s0_bwd(%s1, %g1) stage 0 microbatch 1 : (!bitpipe.saved, tensor<2x4x8xf32>) -> ()
    %a0 = allreduce_start stages [0] group [0, 1] bucket 1 : !bitpipe.token
    allreduce_wait %a1
    allreduce_wait %a0
    optimizer_step
  }
}
