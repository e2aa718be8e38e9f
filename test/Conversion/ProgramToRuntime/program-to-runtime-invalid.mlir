// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics --bitpipe-lower-program-to-runtime -o /dev/null
// RUN: not bitpipe-opt %S/program-to-runtime.mlir --bitpipe-lower-program-to-runtime=manifest-file=%t.missing/manifest.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=FILE
// The CPU runtime has fp32 kernels only.
// RUN: not bitpipe-opt %S/program-to-runtime.mlir --bitpipe-lower-program-to-runtime=precision=bf16 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16-CPU
// BF16-CPU: error: precision=bf16 needs target=cuda; the cpu runtime has fp32 kernels only
// An unknown word is named by the option parser.
// RUN: not bitpipe-opt %S/program-to-runtime.mlir --bitpipe-lower-program-to-runtime=target=tpu -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-TARGET
// BAD-TARGET: Cannot find option named 'tpu'!

// Every error of bitpipe-lower-program-to-runtime, one module each. Stage
// functions are declarations with the role attributes of
// bitpipe-generate-backward.

// FILE: error: cannot write the manifest to '{{.*}}manifest.json': {{.*}}

// Nothing to lower.
// expected-error @+1 {{has no bitpipe.program; expected the per-rank programs of bitpipe-pipeline}}
module {
  func.func private @f()
}

// -----

// A world of two ranks with one program.
// expected-error @+1 {{has no bitpipe.program for pipeline rank 1; expected one per device of the placement's 2, run bitpipe-pipeline first}}
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// No schedule attribute.
// expected-error @+1 {{has no 'bitpipe.schedule'; run bitpipe-schedule first}}
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// No model function.
// expected-error @+1 {{has no function with 'nn.model'; expected the model function of bitpipe-import, whose configuration the manifest records}}
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// An unbound program (before bitpipe-insert-transfers).
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    // expected-error @+1 {{has no callee; expected a bound program (run bitpipe-insert-transfers first)}}
    %s = forward(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
  }
}

// -----

// Three bound inputs: bp_rt_forward has two.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}, tensor<2x4xi32> {nn.input = "labels"}, tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    // expected-error @+1 {{of stage 0 passes 3 bound inputs; expected at most 2, the in0 and in1 of bp_rt_forward}}
    %loss, %s = forward @f(%t, %t, %t) stage 0 microbatch 0 : (tensor<2x4xi32>, tensor<2x4xi32>, tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// Two bound outputs: bp_rt_forward has one.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}) -> (tensor<f32>, tensor<f32>) attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    // expected-error @+1 {{of stage 0 returns 2 bound outputs; expected at most 1, the out0 of bp_rt_forward}}
    %a, %b, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, tensor<f32>, !bitpipe.saved)
  }
}

// -----

// Two output gradients: bp_rt_backward has one.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<4xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @f_bwd(tensor<4xf32> {bitpipe.grad_of_result = 0 : i64}, tensor<4xf32> {bitpipe.grad_of_result = 0 : i64}) attributes {bitpipe.backward_of = @f}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %a, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<4xf32>, !bitpipe.saved)
    // expected-error @+1 {{of stage 0 passes 2 output gradients; expected at most 1, the grad0 of bp_rt_backward}}
    backward @f_bwd(%s, %a, %a) stage 0 microbatch 0 : (!bitpipe.saved, tensor<4xf32>, tensor<4xf32>) -> ()
  }
}

// -----

// Two input gradients: bp_rt_backward has one.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<4xf32>, tensor<4xf32>) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  func.func private @f_bwd() -> (tensor<4xf32> {bitpipe.grad_of_arg = 0 : i64}, tensor<4xf32> {bitpipe.grad_of_arg = 1 : i64}) attributes {bitpipe.backward_of = @f}
  bitpipe.program @rank0 rank 0 {
    %x = load_input tokens microbatch 0 : tensor<4xf32>
    %loss, %s = forward @f(%x, %x) stage 0 microbatch 0 : (tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, !bitpipe.saved)
    // expected-error @+1 {{of stage 0 returns 2 input gradients; expected at most 1, the out0 of bp_rt_backward}}
    %g0, %g1 = backward @f_bwd(%s) stage 0 microbatch 0 : (!bitpipe.saved) -> (tensor<4xf32>, tensor<4xf32>)
  }
}

// -----

// A transfer outside any batch.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s1(tensor<2x4x8xf32>) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %a, %s = forward @s0(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    // expected-error @+1 {{has no transfer batch; expected 'batch', which bitpipe-insert-transfers assigns, so that the runtime can post a batch before it waits}}
    send activation %a to 1 stage 0 microbatch 0 : tensor<2x4x8xf32>
  }
  bitpipe.program @rank1 rank 1 {
    %x = recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %l, %s = forward @s1(%x) stage 1 microbatch 0 : (tensor<2x4x8xf32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// The same activation sent twice on one channel: the receiver cannot tell
// which message is which.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s1(tensor<2x4x8xf32>) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %a, %s = forward @s0(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    // expected-note @+1 {{first transfer here}}
    send activation %a to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    // expected-error @+1 {{sends to rank 1 the activation of stage 0 micro-batch 0 a second time in the step; expected one transfer of each on a channel}}
    send activation %a to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
  }
  bitpipe.program @rank1 rank 1 {
    %x = recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %l, %s = forward @s1(%x) stage 1 microbatch 0 : (tensor<2x4x8xf32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// A schedule marker left where a bucket belongs.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @s0(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  func.func private @s1(tensor<2x4x8xf32>) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %a, %s = forward @s0(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %a to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    // expected-error @+1 {{is a schedule marker without gradients; expected the bucketed form (run bitpipe-insert-allreduce first)}}
    %tok = allreduce_start stages [0] group [0, 1] bucket 0 : !bitpipe.token
    allreduce_wait %tok
  }
  bitpipe.program @rank1 rank 1 {
    %x = recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %l, %s = forward @s1(%x) stage 1 microbatch 0 : (tensor<2x4x8xf32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// Bucket numbers of a rank repeat.
module attributes {
  bitpipe.world_size = 2 : i64, bitpipe.data_parallel = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<4xf32> {nn.param = "b", nn.init = #nn.init<zeros>}, tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    // expected-note @+1 {{first bucket here}}
    %t0 = allreduce_start stages [0] group [0] bucket 0 grads ["b"] bytes 16 : !bitpipe.token
    // expected-error @+1 {{is bucket 0 a second time; expected the buckets of a rank numbered 0, 1, ... once each}}
    %t1 = allreduce_start stages [0] group [0] bucket 0 grads ["b"] bytes 16 : !bitpipe.token
    allreduce_wait %t0
    allreduce_wait %t1
  }
}

// -----

// Bucket numbers of a rank leave a gap.
module attributes {
  bitpipe.world_size = 2 : i64, bitpipe.data_parallel = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<4xf32> {nn.param = "b", nn.init = #nn.init<zeros>}, tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %t0 = allreduce_start stages [0] group [0] bucket 0 grads ["b"] bytes 16 : !bitpipe.token
    // expected-error @+1 {{is bucket 2, but program @rank0 has no bucket 1; expected the buckets of a rank numbered 0, 1, ... once each}}
    %t1 = allreduce_start stages [0] group [0] bucket 2 grads ["b"] bytes 16 : !bitpipe.token
    allreduce_wait %t0
    allreduce_wait %t1
  }
}

// -----

// A bucket with the gradient of a parameter the rank does not hold.
module attributes {
  bitpipe.world_size = 2 : i64, bitpipe.data_parallel = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<4xf32> {nn.param = "b", nn.init = #nn.init<zeros>}, tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    // expected-error @+1 {{carries the gradient of "w", which no forward of rank 0 takes; expected gradients of the rank's parameters}}
    %t0 = allreduce_start stages [0] group [0] bucket 0 grads ["w"] bytes 16 : !bitpipe.token
    allreduce_wait %t0
  }
}

// -----

// One backward function called as a whole backward and as an input half.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  func.func private @f_bwd() attributes {bitpipe.backward_of = @f}
  func.func private @f_wgt() attributes {bitpipe.backward_of = @f}
  bitpipe.program @rank0 rank 0 {
    %t0 = load_input tokens microbatch 0 : tensor<2x4xi32>
    %l0, %s0 = forward @f(%t0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %t1 = load_input tokens microbatch 1 : tensor<2x4xi32>
    %l1, %s1 = forward @f(%t1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    // expected-note @+1 {{other call here}}
    backward @f_bwd(%s0) stage 0 microbatch 0 : (!bitpipe.saved) -> ()
    // expected-error @+1 {{calls @f_bwd as the backward_input of stage 0, but another op calls it as the backward of stage 0; expected one role per function}}
    backward @f_bwd(%s1) stage 0 microbatch 1 : (!bitpipe.saved) -> ()
    weight_grad @f_wgt(%s1) stage 0 microbatch 1
  }
}

// -----

// A backward argument with no role: the runtime could not bind it.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  // expected-error @+1 {{has argument #0 without a role; expected a backward argument to carry 'bitpipe.forward_arg', 'bitpipe.saved', 'bitpipe.grad_of_result', 'bitpipe.stash' or 'nn.param'}}
  func.func private @f_bwd(tensor<f32>) attributes {bitpipe.backward_of = @f}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    backward @f_bwd(%s, %loss) stage 0 microbatch 0 : (!bitpipe.saved, tensor<f32>) -> ()
  }
}

// -----

// A backward result with no role.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @f(tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  // expected-error @+1 {{has result #1 without a role; expected a backward result to carry 'nn.param', 'bitpipe.grad_of_arg' or 'bitpipe.stash'}}
  func.func private @f_bwd() -> (tensor<4xf32> {bitpipe.stash = 0 : i64}, tensor<4xf32>) attributes {bitpipe.backward_of = @f}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
    %g = backward @f_bwd(%s) stage 0 microbatch 0 : (!bitpipe.saved) -> tensor<4xf32>
  }
}

// -----

// A parameter the runtime has no buffer type for.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  // expected-error @+1 {{has argument #0 of type 'tensor<4xf16>'; expected a statically shaped tensor of f32 or i32, which the runtime can hold}}
  func.func private @f(tensor<4xf16> {nn.param = "b", nn.init = #nn.init<zeros>}, tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// A parameter without an initialiser.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  // expected-error @+1 {{has parameter "b" (argument #0) with no 'nn.init'; expected #nn.init<normal, std = ...>, #nn.init<zeros> or #nn.init<ones>}}
  func.func private @f(tensor<4xf32> {nn.param = "b"}, tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<f32> attributes {bitpipe.stage = 0 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %loss, %s = forward @f(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// One parameter, two shapes.
module attributes {
  bitpipe.world_size = 2 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 2, pipelines = [[0, 1]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  func.func private @s0(tensor<4xf32> {nn.param = "b", nn.init = #nn.init<zeros>}, tensor<2x4xi32> {nn.input = "tokens"}) -> tensor<2x4x8xf32> attributes {bitpipe.stage = 0 : i64}
  // expected-error @+1 {{takes parameter "b" as 'tensor<8xf32>', but an earlier function takes it with shape [4]; expected one shape per parameter}}
  func.func private @s1(tensor<2x4x8xf32>, tensor<8xf32> {nn.param = "b", nn.init = #nn.init<zeros>}) -> tensor<f32> attributes {bitpipe.stage = 1 : i64}
  bitpipe.program @rank0 rank 0 {
    %t = load_input tokens microbatch 0 : tensor<2x4xi32>
    %a, %s = forward @s0(%t) stage 0 microbatch 0 : (tensor<2x4xi32>) -> (tensor<2x4x8xf32>, !bitpipe.saved)
    send activation %a to 1 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
  }
  bitpipe.program @rank1 rank 1 {
    %x = recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x4x8xf32>
    %l, %s = forward @s1(%x) stage 1 microbatch 0 : (tensor<2x4x8xf32>) -> (tensor<f32>, !bitpipe.saved)
  }
}

// -----

// A callee that is a function, but not a func.func on tensors.
module attributes {
  bitpipe.world_size = 1 : i64,
  bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>,
  bitpipe.schedule = #bitpipe.schedule<name = "gpipe", microbatches = 1, microbatch_pipelines = [0], split_backward = false>
} {
  func.func private @m() attributes {nn.model = #nn.model<family = "gpt", layers = 1, hidden = 4, heads = 1, vocab = 8, max_positions = 4, seq_len = 4, microbatch_size = 2>}
  llvm.func @g()
  bitpipe.program @rank0 rank 0 {
    // expected-error @+1 {{calls @g, which is not a func.func of the module}}
    %s = forward @g stage 0 microbatch 0 : () -> !bitpipe.saved
  }
}
