"""``python -m sourcecheckup`` runs the command line."""
import os
import sys

from .cli import main
from .cli.cluster import SHARD_PARENT, watch_parent

_parent = os.environ.pop(SHARD_PARENT, "")   # not inherited by the processes the audit starts
if _parent:   # a shard of `audit --cluster`: it must not outlive its worker
    watch_parent(int(_parent))
sys.exit(main())
