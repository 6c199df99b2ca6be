"""``python -m ikp``: the ``ikp`` command (see ``ikp._cli``)."""

from ._cli import main

main()
