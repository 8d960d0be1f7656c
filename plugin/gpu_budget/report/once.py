"""What a failing case's report leaves out because it was said already: each piece of a failure is printed once.

A message's first line is its headline; the lines after it are its detail (a
command's stderr tail, a launcher fault's advice). The failure's own report
(pytest's longrepr: the terminal's failure section, junitxml, IDEs) holds the
whole message; the gpu-budget section's line and the detail's `child failed`
line repeat only its first line. A traceback made of the plugin's own frames (a
command that failed is raised as CommandFailed in the measuring child) says
nothing the message does not, so it is left out, as the plugin's exception type is.
"""

from __future__ import annotations

import re

FRAME = re.compile(r'^\s*File "([^"]+)"', re.MULTILINE)
OWN = "gpu_budget"  # the plugin's package, in another environment's path too (isolate/remote.py)
MORE = " (more in the test's failure report)"


def first_line(message: str) -> str:
    return message.partition("\n")[0]


def headline(message: str) -> str:
    """A message's first line; where lines follow, a pointer to the report that holds them."""
    first = first_line(message)
    return first + (MORE if first != message else "")


def own_traceback(traceback: str, type_name: str | None = None) -> bool:
    """Whether every frame of a traceback is the plugin's own (none of the user's code ran in it). The frames are read
    above the line naming the exception (`type_name`): its message may quote a user's traceback (a failed command's
    stderr), whose frames ran in another process."""
    frames = FRAME.findall(_above_exception(traceback, type_name))
    return bool(frames) and all(OWN in re.split(r"[\\/]", path) for path in frames)


def _above_exception(traceback: str, type_name: str | None) -> str:
    """The traceback up to the line that names its exception (as Python prints it: a builtin's bare name); all of it
    where that line is not found."""
    if not type_name:
        return traceback
    printed = type_name.removeprefix("builtins.").removeprefix("__main__.")
    found = re.search(rf"^{re.escape(printed)}(:|$)", traceback, re.MULTILINE)
    return traceback if found is None else traceback[:found.start()]


def user_type(type_name: str | None) -> str | None:
    """The exception's type as the detail names it: None for the plugin's own (CommandFailed names no cause)."""
    return None if type_name is None or type_name.split(".")[0] == OWN else type_name
