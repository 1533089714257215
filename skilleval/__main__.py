"""``python -m skilleval`` runs the command line."""

from skilleval.cli import main

main()
