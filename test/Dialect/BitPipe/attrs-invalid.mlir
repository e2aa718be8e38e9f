// RUN: bitpipe-opt %s -split-input-file -verify-diagnostics

// #bitpipe.schedule checks its own fields when it is built (parsed or
// created); the dialect checks it against the module's placement.

// expected-error @+1 {{#bitpipe.schedule names unknown schedule 'zigzag'; expected one of gpipe, 1f1b, interleaved-1f1b, chimera, bitpipe, bitpipe-periodic, zb-h1}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>, bitpipe.schedule = #bitpipe.schedule<name = "zigzag", microbatches = 1, microbatch_pipelines = [0], split_backward = false>} {}

// -----

// expected-error @+1 {{#bitpipe.schedule expects at least one micro-batch, got 0}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>, bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 0, microbatch_pipelines = [], split_backward = false>} {}

// -----

// expected-error @+1 {{#bitpipe.schedule expects at most 65536 micro-batches (the schedule registry's limit), got 9223372036854775807}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>, bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 9223372036854775807, microbatch_pipelines = [0], split_backward = false>} {}

// -----

// expected-error @+1 {{#bitpipe.schedule expects one entry of microbatch_pipelines per micro-batch (3), got 2}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>, bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 3, microbatch_pipelines = [0, 0], split_backward = false>} {}

// -----

// expected-error @+1 {{#bitpipe.schedule sends micro-batch 1 through pipeline -1; expected a pipeline index >= 0}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>, bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 2, microbatch_pipelines = [0, -1], split_backward = false>} {}

// -----

// expected-error @+2 {{expected 'true' or 'false'}}
// expected-error @+1 {{failed to parse BitPipe_ScheduleAttr parameter 'split_backward'}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>, bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0], split_backward = 1>} {}

// -----

// Every field but the note is required.
// expected-error @+1 {{struct is missing required parameter: split_backward}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>, bitpipe.schedule = #bitpipe.schedule<name = "1f1b", microbatches = 1, microbatch_pipelines = [0]>} {}

// -----

// The dialect: the attribute's type, and its pipelines against the placement.
// expected-error @+1 {{'bitpipe.schedule' expects a #bitpipe.schedule, got {microbatches = 1 : i64, name = "1f1b"}}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "loop", devices = 1, pipelines = [[0]]>, bitpipe.schedule = {name = "1f1b", microbatches = 1 : i64}} {}

// -----

// expected-error @+1 {{'bitpipe.schedule' sends micro-batch 2 through pipeline 2, but the placement has 2}}
module attributes {bitpipe.placement = #bitpipe.placement<kind = "bidirectional", devices = 2, pipelines = [[0, 1], [1, 0]]>, bitpipe.schedule = #bitpipe.schedule<name = "chimera", microbatches = 3, microbatch_pipelines = [0, 1, 2], split_backward = false>} {}

// -----

// #bitpipe.partition: one start and one cost per chunk, starts from layer 0
// upwards, a balance of at least 1.

// expected-error @+1 {{#bitpipe.partition of 2 chunks expects one start and one cost per chunk, got 1 starts and 2 costs}}
module attributes {bitpipe.partition = #bitpipe.partition<chunks = 2, starts = [0], costs = [1, 2], balance = 1.5>} {}

// -----

// expected-error @+1 {{#bitpipe.partition expects starts that begin at layer 0 and increase, got starts[1] = 0}}
module attributes {bitpipe.partition = #bitpipe.partition<chunks = 2, starts = [0, 0], costs = [1, 2], balance = 1.5>} {}

// -----

// expected-error @+1 {{#bitpipe.partition expects a balance (the largest cost over the mean) of at least 1, got 5.000000e-01}}
module attributes {bitpipe.partition = #bitpipe.partition<chunks = 1, starts = [0], costs = [1], balance = 0.5>} {}

// -----

// expected-error @+1 {{'bitpipe.partition' expects a #bitpipe.partition, got {chunks = 2 : i64}}}
module attributes {bitpipe.partition = {chunks = 2 : i64}} {}

// -----

// expected-error @+2 {{#bitpipe.recompute: unknown mode 'some'; expected 'none', 'selective' or 'full'}}
// expected-error @+1 {{failed to parse BitPipe_RecomputeAttr parameter 'value'}}
module attributes {bitpipe.recompute = #bitpipe.recompute<some>} {}

// -----

// expected-error @+1 {{'bitpipe.recompute' expects a #bitpipe.recompute, got "full"}}
module attributes {bitpipe.recompute = "full"} {}

// -----

// expected-error @+2 {{#bitpipe.gradient_sync: unknown scheme 'ring'; expected 'flat' or 'hierarchical'}}
// expected-error @+1 {{failed to parse BitPipe_GradientSyncAttr parameter 'value'}}
module attributes {bitpipe.gradient_sync = #bitpipe.gradient_sync<ring>} {}

// -----

// expected-error @+1 {{'bitpipe.gradient_sync' expects a #bitpipe.gradient_sync, got "flat"}}
module attributes {bitpipe.gradient_sync = "flat"} {}
