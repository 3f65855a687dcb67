import Glibc

/// The process's environment variables, read with `getenv`. Foundation's
/// `ProcessInfo.processInfo.environment` builds a dictionary of every variable at each use (and
/// the process info object at the first): seven looks on the way to a take's start cost about
/// 0.4 ms of CPU, a few microseconds here (issue #29).
enum Environment {
    /// The value of `name`, nil if it is not set.
    static subscript(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
