import CJack
import Glibc
import QueueCore

extension JackCycleClock {
    /// How long a control thread sleeps at a time while the clock cannot say when this client
    /// runs next (no cycle yet, a cycle just begun, freewheel).
    public static let cyclePollSeconds = 0.0005

    /// One sleep of a control thread waiting for a client's realtime side (a queue's command
    /// applied, a client's first cycle): until a little after the server's next cycle is due, by its clock
    /// (`jack_get_cycle_times`), when this client has probably run once more; half a
    /// millisecond where the clock cannot say. Waiting out a period in half-millisecond steps
    /// woke the waiting thread about ten times per cycle, some thirty times per queue started
    /// and stopped (issue #29).
    public static func sleepTowardNextCycle(_ client: OpaquePointer) {
        guard let clock = JackCycleClock.read(client), clock.periodMicroseconds > 0 else {
            return HostClock.sleep(seconds: cyclePollSeconds)
        }
        let now = Int64(HostClock.nanoseconds() / 1000)
        let began = Int64(clock.microseconds) + clock.hostOffsetMicroseconds
        let due = Int64(clock.nextMicroseconds) + clock.hostOffsetMicroseconds
        let period = Int64(clock.periodMicroseconds)
        // A cycle runs its clients in its first part: in one that began less than a millisecond
        // ago this client may be running now. A due time past or more than two periods away is
        // a clock that says nothing useful (freewheel, a stalled server): poll.
        guard now - began >= 1000, due > now, due - now <= 2 * period else {
            return HostClock.sleep(seconds: cyclePollSeconds)
        }
        // The client runs shortly after the cycle begins (after the clients before it).
        HostClock.sleep(until: .after(nanoseconds: UInt64(due - now + 200) * 1000))
    }
}
