"""Session: one pytest session's state, its cases, options, fixture, xdist and end-of-session outputs."""
