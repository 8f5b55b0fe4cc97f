"""`python -m swiftbert ARGS`: the `bert` command shipped inside the wheel (`bert --help`)."""
import os
import sys
from pathlib import Path

from swiftbert import _variant


def bert_path() -> Path:
    """The wheel's `bert` of the build this CPU runs (`_variant`)."""
    return _variant.folder() / "bert"


def main() -> None:
    path = bert_path()
    if not path.exists():
        sys.exit(f"swiftbert: {path} not found; reinstall the swiftbert wheel")
    os.execv(str(path), ["bert", *sys.argv[1:]])


if __name__ == "__main__":
    main()
