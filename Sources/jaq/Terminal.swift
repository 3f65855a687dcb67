import Glibc

/// True when standard output is a terminal (live display), false for scripts and logs.
var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
