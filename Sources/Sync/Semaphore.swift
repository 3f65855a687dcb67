import CQueueCore
import Glibc

/// A counting semaphore (POSIX `sem_t`).
///
/// Thread safety: any thread. `post()` is async-signal-safe and never blocks,
/// so the realtime side may use it (through `RealtimeWake`) to wake a queue thread.
public final class Semaphore: @unchecked Sendable {
    public let raw: UnsafeMutablePointer<sem_t>

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

    /// Waits until the count is positive or `seconds` pass (on CLOCK_MONOTONIC); true if it was signalled.
    @discardableResult
    public func wait(timeout seconds: Double) -> Bool {
        wait(until: .after(seconds: seconds))
    }

    /// Waits until the count is positive or `deadline` passes; true if it was signalled.
    @discardableResult
    public func wait(until deadline: Deadline) -> Bool {
        semaphoreWait(raw, until: deadline)
    }

    /// Waits until the count is positive.
    public func wait() {
        while sem_wait(raw) != 0 && errno == EINTR {}
    }

    /// Takes one pending post without blocking; false if there was none.
    public func tryWait() -> Bool { sem_trywait(raw) == 0 }

    /// True while a post is pending (taken by nobody yet).
    public var isPosted: Bool {
        var value: Int32 = 0
        sem_getvalue(raw, &value)
        return value > 0
    }

    /// Takes every pending post without blocking.
    public func drain() {
        while sem_trywait(raw) == 0 {}
    }
}

/// Waits on `semaphore` until it is posted or `deadline` (CLOCK_MONOTONIC) passes; true if
/// it was posted. `sem_timedwait` measures CLOCK_REALTIME, which a wall-clock change moves;
/// `sem_clockwait` (glibc 2.30) takes the clock. No allocation or lock: the non-realtime
/// waits of a process callback (freewheel, ManualDriver) may use it on the raw `sem_t`.
public func semaphoreWait(_ semaphore: UnsafeMutablePointer<sem_t>, until deadline: Deadline) -> Bool {
    var time = deadline.timespec
    while true {
        if cqc_sem_clockwait(semaphore, CLOCK_MONOTONIC, &time) == 0 { return true }
        if errno != EINTR { return false }
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
        sleep(until: .after(seconds: seconds))
    }

    /// Sleeps the calling (non-realtime) thread until `deadline`.
    public static func sleep(until deadline: Deadline) {
        var time = deadline.timespec
        // An absolute deadline: a signal's EINTR resumes without drift.
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
    }
}
