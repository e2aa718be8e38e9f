"bitpipe.program"() <{rank = 0 : i64, sym_name = "rank0"}> ({
^bb0(%arg0: tensor<4xf32>):
}) : () -> ()
