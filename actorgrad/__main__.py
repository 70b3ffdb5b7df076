"""`python -m actorgrad`: the same command as the `actorgrad` console script."""

import sys

from actorgrad.cli import main

sys.exit(main())
