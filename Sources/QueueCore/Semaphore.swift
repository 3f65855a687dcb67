import Glibc

/// A counting semaphore (POSIX `sem_t`).
///
/// Thread safety: any thread. `post()` is async-signal-safe and never blocks,
/// so the realtime side may use it (through `RealtimeWake`) to wake a queue thread.
public final class Semaphore: @unchecked Sendable {
    let raw: UnsafeMutablePointer<sem_t>

    public init(value: UInt32 = 0) {
        raw = .allocate(capacity: 1)
        sem_init(raw, 0, value)
    }

    deinit {
        sem_destroy(raw)
        raw.deallocate()
    }

    /// Increments the count, waking one waiter.
    public func post() { sem_post(raw) }

    /// Waits until the count is positive or `seconds` pass; true if it was signalled.
    @discardableResult
    public func wait(timeout seconds: Double) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let whole = seconds.rounded(.down)
        deadline.tv_sec += Int(whole)
        deadline.tv_nsec += Int((seconds - whole) * 1e9)
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        while true {
            if sem_timedwait(raw, &deadline) == 0 { return true }
            if errno != EINTR { return false }
        }
    }

    /// Waits until the count is positive.
    public func wait() {
        while sem_wait(raw) != 0 && errno == EINTR {}
    }

    /// Takes every pending post without blocking.
    public func drain() {
        while sem_trywait(raw) == 0 {}
    }
}

/// Monotonic clock readings: CLOCK_MONOTONIC, which is what JACK's `jack_get_time` measures.
public enum HostClock {
    /// Nanoseconds of CLOCK_MONOTONIC: the `mHostTime` of this implementation.
    public static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// Sleeps the calling (non-realtime) thread.
    public static func sleep(seconds: Double) {
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
