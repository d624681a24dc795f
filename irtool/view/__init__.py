"""Interactive viewing in Google's Model Explorer: dumps as its graphs and node data (`graphs`,
`models`), served by `irtool view` (`serve`), and an adapter extension (`main`) for
`model-explorer FILE --extensions=irtool.view`. Model Explorer itself is the `irtool[view]` extra."""
