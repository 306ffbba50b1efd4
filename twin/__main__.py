"""`python -m twin`: the `twin` command."""

from twin.cli import main

main(prog_name="twin")
