module attributes {
  bitpipe.partition = #bitpipe.partition<chunks = 2, starts = [0, 4],
                                         costs = [6528, 6912], balance = 1.0286>
} {}
