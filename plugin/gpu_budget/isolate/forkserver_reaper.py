"""Imported by the session's forkserver only (its preload, forkserver.py): makes the forkserver a subreaper.

A measured child ends what it started as it ends (child.main), but a child
that dies first (SIGKILLed by the kernel's OOM killer, a runner's os._exit, a
command that kills it) ends nothing: its descendants re-parent, and one in a
session of its own (a daemon) leaves its process group too, so a group kill
misses it and it would run on under init. With the forkserver a subreaper they
re-parent to the forkserver instead, whose only children are the one measured
child it runs at a time: once that child has ended, the session ends every
descendant of the forkserver (forkserver._end_orphans).

The forkserver reaps what re-parents to it (its SIGCHLD loop waits for any
child) and warns of each pid it did not fork; those warnings are expected here.
"""

import warnings

from gpu_budget.isolate.lifecycle import become_subreaper

SUBREAPER = become_subreaper()
warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid")
