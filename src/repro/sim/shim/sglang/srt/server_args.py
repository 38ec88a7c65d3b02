"""SGLang's server arguments, as the simulator parses them (not SGLang's implementation).

`ServerArgs.add_cli_args(parser)` adds every option of the option catalog the simulator
carries for the version sglang.version reports (0.5.23's unless a patch changed it), plus
`--speculative-ddtree-budget` when spec_info registers DDTREE, so dumping the options of
this image gives its real command-line surface.
"""

import argparse

from repro.sim.registry import load_registry
from repro.sim.server_argparser import add_cli_args, load_catalog


class ServerArgs:
    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> None:
        catalog = load_catalog()
        builtin = list(catalog.get("builtin_speculative_algorithms") or [])
        add_cli_args(parser, catalog, load_registry(builtin, "catalog").names)


def prepare_server_args(argv):
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return parser.parse_args(argv)
