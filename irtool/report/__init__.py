"""`irtool summarize`: the summary of a dump or a dump folder as data (`summary`, from the records
of `irtool.parallel`) and its answer tables (`answers`), written with `irtool.present`."""
