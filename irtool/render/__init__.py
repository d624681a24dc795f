"""`irtool render`: select part of a dump, fold it by name scope (`graph`) and draw it with
Graphviz (`export`)."""
