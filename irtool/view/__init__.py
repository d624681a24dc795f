"""Interactive viewing in Google's Model Explorer: dumps as its graphs and node data (`graphs`,
`models`), served by `irtool view` (`serve`), and an adapter extension (`main`) for
`model-explorer FILE --extensions=irtool.view`. Model Explorer itself is the `irtool[view]` extra."""

# Operators of one graph beyond which it is split. Model Explorer processes a whole graph before it
# draws any of it (every node, namespace and edge, then again to find identical layers): about 3 s
# for the 43 758 nodes of the 68 MB dump on this machine (bench/view_bench.py), 0.3 s for 5 000.
# Here, not in `graphs`, so that the CLI's options need not import the viewer.
PART_SIZE = 5000
