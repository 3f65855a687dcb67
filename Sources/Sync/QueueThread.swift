import Glibc

/// A joinable POSIX thread running a closure: each audio queue's internal thread, and the
/// command line tool's own (its writer, watchdog, hooks), which Foundation's `Thread` would
/// cost the whole of Foundation to load.
public final class QueueThread: @unchecked Sendable {
    private var thread = pthread_t()
    private var started = false

    private final class Box {
        let name: String
        let body: () -> Void
        init(_ name: String, _ body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Names the calling thread (visible in `top -H`, `ps -L`, perf and gdb), through /proc. The
    /// kernel keeps what is written byte for byte (up to 15), a newline too, so none is written.
    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// Starts `body` on a new thread named `name`.
    public init(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
        let result = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            QueueThread.nameCurrentThread(box.name)
            box.body()
            return nil
        }, box)
        if result == 0 {
            started = true
        } else {
            Unmanaged<Box>.fromOpaque(box).release()
        }
    }

    /// False if the thread could not be created (the process is out of threads): `body` never runs.
    public var isStarted: Bool { started }

    /// True when the calling thread is this thread.
    public var isCurrent: Bool { started && pthread_equal(pthread_self(), thread) != 0 }

    /// Waits for the thread to finish (never call from the thread itself).
    public func join() {
        guard started, !isCurrent else { return }
        pthread_join(thread, nil)
        started = false
    }

    /// Lets the thread finish on its own (when it disposes of its own queue).
    public func detach() {
        guard started else { return }
        pthread_detach(thread)
        started = false
    }
}
