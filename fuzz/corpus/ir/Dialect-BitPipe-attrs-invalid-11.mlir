module attributes {bitpipe.partition = #bitpipe.partition<chunks = 1, starts = [0], costs = [1], balance = 0.5>} {}
