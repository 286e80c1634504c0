"""A whole model (`tvm-suite model`, the whole-model benchmarks): its calls (:mod:`.calls`), its
weights and images (:mod:`.weights`), every call run on a target against float64 and the error
attributed to the calls (:mod:`.accuracy`), what it found, typed (:mod:`.results`), kept in the
cache input by input (:mod:`.store`), and the benchmarks' grid (:mod:`.grid`).

A layer above :mod:`suite.core`: it imports core; core never imports it."""
