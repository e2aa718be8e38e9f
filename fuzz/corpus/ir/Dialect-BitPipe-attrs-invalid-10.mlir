module attributes {bitpipe.partition = #bitpipe.partition<chunks = 2, starts = [0, 0], costs = [1, 2], balance = 1.5>} {}
