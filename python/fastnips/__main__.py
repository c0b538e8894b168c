"""``python -m fastnips``: the ``fastnips`` command."""

from fastnips.cli import main

if __name__ == "__main__":
    main()
