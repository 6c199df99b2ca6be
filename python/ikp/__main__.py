"""``python -m ikp``: the ``ikp`` command (see ``ikp._cli``)."""

if __name__ == "__main__":
    from ._cli import main

    main()
