import FoundationEssentials
import Glibc

/// Starts `arguments` (found on PATH) with standard input from /dev/null, and the signals jaq
/// ignores (it takes SIGINT, SIGTERM and SIGHUP through dispatch sources) back to their
/// defaults with none blocked, so the program stops as it would from a shell.
/// - Parameters:
///   - output: a file for its standard output and error (created anew), or nil for jaq's own.
///   - newSession: a session and process group of its own (POSIX_SPAWN_SETSID), so the
///     terminal's signals reach jaq alone; else it is in jaq's process group, and Ctrl-C
///     reaches it too.
///   - closeOthers: every other descriptor open now is closed in it (pipes to whoever runs
///     jaq, sockets, files do not outlive jaq there).
///   - environment: variables set for it on top of jaq's own.
/// - Returns: its pid, and 0 or the `errno` of `posix_spawnp`.
func spawnProcess(_ arguments: [String], output: String?, newSession: Bool, closeOthers: Bool,
                  environment: [String: String] = [:]) -> (pid: pid_t, status: Int32) {
    var actions = posix_spawn_file_actions_t()
    var attributes = posix_spawnattr_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawnattr_init(&attributes)
    defer {
        posix_spawn_file_actions_destroy(&actions)
        posix_spawnattr_destroy(&attributes)
    }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    if let output {
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
    }
    if closeOthers {
        // glibc ignores a descriptor that is already closed by then.
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int32($0) } ?? []
        for descriptor in open where descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
    }
    // POSIX_SPAWN_SETSID is 0x80 (glibc 2.26).
    posix_spawnattr_setflags(&attributes, Int16((newSession ? 0x80 : 0) | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGXFSZ] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for word in argv { free(word) } }
    var pid: pid_t = 0
    guard !environment.isEmpty else {
        let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, environ)
        return (pid, status)
    }
    var inherited: [String] = []
    var entry = environ
    while let variable = entry.pointee {
        inherited.append(String(cString: variable))
        entry += 1
    }
    let kept = inherited.filter { variable in !environment.keys.contains { variable.hasPrefix($0 + "=") } }
    var envp: [UnsafeMutablePointer<CChar>?] = (kept + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
        .map { strdup($0) } + [nil]
    defer { for variable in envp { free(variable) } }
    let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, &envp)
    return (pid, status)
}

/// A child jaq started and stops (the private server): whether it still runs, reaping it once it ended.
struct ChildProcess {
    let pid: pid_t

    /// False once it has ended (or was never jaq's to wait for).
    var isRunning: Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// SIGKILL, and waits for it to end.
    func kill() {
        _ = Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
