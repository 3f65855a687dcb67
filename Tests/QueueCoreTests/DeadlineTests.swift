import Glibc
import Testing
@testable import QueueCore

@Suite struct DeadlineTests {
    @Test func secondsCarryIntoTheTimespecsNanosecondsAndSeconds() {
        // 1.999999999 s + 0.5 s: the nanoseconds carry into a third second.
        let deadline = Deadline.after(seconds: 0.5, from: 1_999_999_999)
        #expect(deadline.nanoseconds == 2_499_999_999)
        #expect(deadline.timespec.tv_sec == 2)
        #expect(deadline.timespec.tv_nsec == 499_999_999)
        let exact = Deadline.after(seconds: 1.25, from: 3_750_000_000)
        #expect(exact.timespec.tv_sec == 5)
        #expect(exact.timespec.tv_nsec == 0)
        let fraction = Deadline.after(seconds: 0.000_000_001, from: 999_999_999)
        #expect(fraction.timespec.tv_sec == 1)
        #expect(fraction.timespec.tv_nsec == 0)
    }

    @Test func negativeAndNaNSecondsMeanNowAndInfinityDoesNotOverflow() {
        #expect(Deadline.after(seconds: -3, from: 42).nanoseconds == 42)
        #expect(Deadline.after(seconds: .nan, from: 42).nanoseconds == 42)
        let far = Deadline.after(seconds: .infinity, from: 42)
        #expect(far.nanoseconds > 42 + 100 * 365 * 86_400 * 1_000_000_000)
        #expect(far.timespec.tv_sec > 0)
    }

    @Test func remainingCountsDownToZero() {
        let deadline = Deadline.after(seconds: 10)
        #expect(deadline.remaining > 9 && deadline.remaining <= 10)
        #expect(!deadline.hasPassed)
        let past = Deadline(nanoseconds: HostClock.nanoseconds() - 1_000)
        #expect(past.remaining == 0)
        #expect(past.hasPassed)
    }

    /// Measures a wait on CLOCK_MONOTONIC (which the deadline must use: a CLOCK_REALTIME
    /// deadline read as monotonic would be decades away, and one the other way round long past).
    func expectWaitOf200ms(_ wait: (Deadline) -> Bool) {
        let start = HostClock.nanoseconds()
        let signalled = wait(.after(seconds: 0.2))
        let elapsed = Double(HostClock.nanoseconds() - start) / 1e9
        #expect(!signalled)
        #expect(elapsed >= 0.2)
        #expect(elapsed < 1)
    }

    @Test func aSemaphoreWaitWithA200msDeadlineTimesOutAfter200ms() {
        let semaphore = Semaphore()
        expectWaitOf200ms { semaphore.wait(until: $0) }
        // The seconds form is the same wait.
        let start = HostClock.nanoseconds()
        #expect(!semaphore.wait(timeout: 0.2))
        let elapsed = Double(HostClock.nanoseconds() - start) / 1e9
        #expect(elapsed >= 0.2 && elapsed < 1)
    }

    @Test func aPostedSemaphoreReturnsAtOnce() {
        let semaphore = Semaphore()
        semaphore.post()
        let start = HostClock.nanoseconds()
        #expect(semaphore.wait(until: .after(seconds: 5)))
        #expect(HostClock.nanoseconds() - start < 1_000_000_000)
    }

    @Test func aConditionWaitWithA200msDeadlineTimesOutAfter200ms() {
        let lock = ConditionLock()
        expectWaitOf200ms { deadline in lock.withLock { lock.wait(until: deadline) { false } } }
    }

    @Test func aSleepUntilADeadlineLastsUntilIt() {
        let start = HostClock.nanoseconds()
        HostClock.sleep(until: .after(seconds: 0.2))
        let elapsed = Double(HostClock.nanoseconds() - start) / 1e9
        #expect(elapsed >= 0.2 && elapsed < 1)
    }
}
