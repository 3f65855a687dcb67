import Glibc

/// A point in time on CLOCK_MONOTONIC, for every timed wait (the engine's and the CLI's): a wall-clock
/// jump (NTP, `date -s`) neither shortens nor lengthens a wait made with one.
///
/// Thread safety: a value type; plain arithmetic on the stack, no allocation or lock, so a
/// non-realtime wait loop reachable from the process callback (freewheel) may use it.
public struct Deadline: Sendable, Equatable, Comparable {
    /// Nanoseconds of CLOCK_MONOTONIC (`HostClock.nanoseconds()`) at which the deadline falls.
    public let nanoseconds: UInt64

    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// The deadline `seconds` from now (negative or NaN count as 0; an infinite one about 146 years).
    public static func after(seconds: Double) -> Deadline {
        after(seconds: seconds, from: HostClock.nanoseconds())
    }

    /// The deadline `seconds` after the monotonic instant `start` (nanoseconds).
    public static func after(seconds: Double, from start: UInt64) -> Deadline {
        let clamped = seconds.isNaN ? 0 : min(max(seconds, 0), Double(Int64.max / 2) / 1e9)
        return Deadline(nanoseconds: start &+ UInt64((clamped * 1e9).rounded()))
    }

    /// The deadline `nanoseconds` from now.
    public static func after(nanoseconds: UInt64) -> Deadline {
        Deadline(nanoseconds: HostClock.nanoseconds() &+ nanoseconds)
    }

    /// Seconds left until the deadline; 0 once it has passed.
    public var remaining: Double {
        let now = HostClock.nanoseconds()
        return now >= nanoseconds ? 0 : Double(nanoseconds - now) / 1e9
    }

    /// True once CLOCK_MONOTONIC has reached the deadline.
    public var hasPassed: Bool { HostClock.nanoseconds() >= nanoseconds }

    /// The deadline as an absolute CLOCK_MONOTONIC `timespec`, for `sem_clockwait`,
    /// `pthread_cond_timedwait` on a monotonic condition, and `clock_nanosleep(TIMER_ABSTIME)`.
    public var timespec: Glibc.timespec {
        Glibc.timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    }

    public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}
