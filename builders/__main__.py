import sys

from builders.cli import main

sys.exit(main())
