"""`python -m twin.nvue.nvued LAB`: serve lab LAB's NVUE API until SIGTERM (or its lab is gone)."""

import sys

from twin.nvue.nvued.serve import main

sys.exit(main(sys.argv[1:]))
