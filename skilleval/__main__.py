"""``python -m skilleval`` runs the command line."""

import sys

try:
    from skilleval.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line is still being imported
    sys.exit(130)

main()
