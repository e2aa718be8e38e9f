module attributes {bitpipe.partition = {chunks = 2 : i64}} {}
