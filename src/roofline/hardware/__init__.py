"""Devices as data: ``spec`` (the validated, immutable ``HardwareSpec`` and its parts),
``catalog`` (bundled ``hwdb/`` entries plus the user directory) and ``links.yaml`` (named
host links and interconnects)."""
