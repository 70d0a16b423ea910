"""``python -m roofline`` runs the command-line tool."""

from .cli import main

main()
