"""The ``ikp`` console script of the wheel: the ikp command (the CLI crate's ``run``,
compiled into the native module), so ``pip install ikp`` gives the same ``ikp`` as
``cargo install``: the same subcommands, output and exit codes."""

import signal
import sys


def main() -> None:
    # Ctrl-C and a closed pipe act as they do on the binary: the native command holds no
    # Python frame that could see a KeyboardInterrupt, so SIGINT ends the process, and
    # SIGPIPE stays ignored (Rust's runtime ignores it too; the command treats EPIPE).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from . import _ikp

    # "ikp" as the program's name, however it was started (`python -m ikp` included):
    # clap prints it in usage lines.
    sys.exit(_ikp.cli_main(["ikp", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
