"""`python -m api` runs the jido-kg command."""

from api.cli import main

main()
