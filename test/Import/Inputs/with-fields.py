"""Writes a copy of a JSON config with some fields set: with-fields.py IN OUT FIELDS_JSON."""
import json
import sys

with open(sys.argv[1]) as f:
    config = json.load(f)
config.update(json.loads(sys.argv[3]))
with open(sys.argv[2], "w") as f:
    json.dump(config, f)
