func.func private @stage_1_bwd()
"bitpipe.program"() <{rank = 0 : i64, sym_name = "rank0"}> ({
^bb0(%s: !bitpipe.saved):
  bitpipe.backward @stage_1_bwd(%s) stage 1 microbatch 0 : (!bitpipe.saved) -> ()
}) : () -> ()
