import FoundationEssentials
import Glibc

// What the live displays (play's progress line, record's meters) need of the terminal.

/// True when standard output is a terminal (live display), false for scripts and logs. Asked
/// once: the main loops look at it on every pass.
let stdoutIsTerminal = isatty(STDOUT_FILENO) == 1

/// A one-line progress display, redrawn in place on a terminal.
final class ProgressLine {
    let enabled: Bool
    private var last = Date.distantPast

    init(enabled: Bool) { self.enabled = enabled }

    /// Redraws with `text` at most ten times a second; builds the text only then.
    func update(_ text: @autoclosure () -> String) {
        guard enabled, Date().timeIntervalSince(last) > 0.1 else { return }
        last = Date()
        StandardStreams.output("\r\u{1B}[K\(text())")
    }

    func finish() {
        guard enabled else { return }
        StandardStreams.output("\n")
    }
}
