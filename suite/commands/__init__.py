"""The ``tvm-suite`` commands, one module each (:mod:`suite.commands.base` says what a command
module holds); :mod:`suite.cli` assembles the parser from them."""
