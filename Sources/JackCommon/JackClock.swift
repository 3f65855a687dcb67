import CJack
import Glibc
import QueueCore

/// The server's cycle clock as `jack_get_cycle_times` reports it: the frame time of the
/// current cycle and the CLOCK_MONOTONIC microseconds at which it and the next one begin.
///
/// Under PipeWire's libjack (`pw-jack`) every conversion between frames and host time outside
/// the process callback goes through this one reading, with jaq's own arithmetic: it is the
/// clock call that jackd2 and PipeWire implement the same way from any thread. PipeWire 0.3.65
/// differs in the others:
/// - `jack_frame_time` on a client that has not been activated (or has not run a cycle yet)
///   returns CLOCK_MONOTONIC × sample rate, not a frame time (its position is all zeros);
/// - `jack_time_to_frames` for a time before the current cycle, and `jack_frames_to_time` for a
///   frame before it, subtract unsigned 64-bit values and return garbage (2^31 + frames,
///   2^63 µs);
/// - `jack_last_frame_time` and `jack_get_cycle_times` read 0 until the client runs cycles.
/// jackd2's `jack_time_to_frames` is `frames + rint((t - current) / (next - current) × period)`;
/// jaq computes the same, with PipeWire's exact `period_usecs` for `next - current` there.
public struct JackCycleClock: Sendable, Equatable {
    /// Frame time of the current cycle (`jack_last_frame_time` of the process thread).
    public var frames: UInt32
    /// The server's clock (`jack_get_time` microseconds) when the current cycle began.
    public var microseconds: UInt64
    /// The server's clock when the next cycle is due.
    public var nextMicroseconds: UInt64
    /// Frames in a cycle (the period, PipeWire's quantum).
    public var periodFrames: Int
    /// A period's length in the server's clock's microseconds: PipeWire's `period_usecs` (exact,
    /// where the two whole-microsecond cycle times are 1/5333 off at 256 frames and 48 kHz), and
    /// jackd2's next − current wake-up, as its `jack_time_to_frames` uses.
    public var periodMicroseconds: Double
    /// CLOCK_MONOTONIC minus the server's clock, in microseconds. PipeWire's clock is
    /// CLOCK_MONOTONIC (0 here); jackd2 1.9.21's is not (its `jack_get_time` ran 142 ms behind
    /// CLOCK_MONOTONIC on the test machine), so host times are converted through this.
    public var hostOffsetMicroseconds: Int64

    /// Reads the clock of `client`'s server; nil while it has no cycle to report (PipeWire
    /// before the client's first cycle: all zeros). The fields are read twice until two reads
    /// agree, so a cycle that begins during the read (PipeWire updates them in place, not
    /// atomically) never gives a torn reading.
    public static func read(_ client: OpaquePointer) -> JackCycleClock? {
        for _ in 0..<8 {
            guard var first = readOnce(client), let second = readOnce(client) else { return nil }
            if first.frames == second.frames && first.microseconds == second.microseconds
                && first.nextMicroseconds == second.nextMicroseconds && first.periodMicroseconds == second.periodMicroseconds {
                first.hostOffsetMicroseconds = min(first.hostOffsetMicroseconds, second.hostOffsetMicroseconds)
                return first
            }
        }
        return nil
    }

    private static func readOnce(_ client: OpaquePointer) -> JackCycleClock? {
        var frames: jack_nframes_t = 0
        var current: jack_time_t = 0
        var next: jack_time_t = 0
        var period: Float = 0
        guard jack_get_cycle_times(client, &frames, &current, &next, &period) == 0,
              current != 0, next > current else { return nil }
        let periodFrames = Int(jack_get_buffer_size(client))
        guard periodFrames > 0 else { return nil }
        let offset = hostOffsetMicroseconds()
        // PipeWire computes period_usecs from the quantum, the rate and its rate correction:
        // exact. jackd2's own conversions use next - current (its DLL's wake-ups), and under
        // load its frame clock really runs at that pace: use what each server's conversions use.
        let estimate = JackLibrary.isPipeWire && Double(period).isFinite && period > 0 ? Double(period) : Double(next - current)
        return JackCycleClock(frames: frames, microseconds: current, nextMicroseconds: next, periodFrames: periodFrames,
                              periodMicroseconds: estimate, hostOffsetMicroseconds: offset)
    }

    /// Whether `client`'s jackd is freewheeling: its frame clock runs far faster than real
    /// time in two successive 2.5 ms windows (an xrun makes jackd 1.9.21's clock jump once, not
    /// twice). jackd runs no client that is activated during freewheel (its cycles never come,
    /// and the server waits 10 s for it every cycle), so a queue asks this before it activates.
    /// PipeWire's libjack: false (its freewheel is not jackd's).
    public static func serverIsFreewheeling(_ client: OpaquePointer) -> Bool {
        // The frame count alone: in freewheel a cycle takes microseconds, so its start and the
        // next one's often read the same microsecond, and two readings in a row rarely agree
        // (what `read` asks of a clock it extrapolates from).
        func frames() -> jack_nframes_t? {
            var frames: jack_nframes_t = 0
            var current: jack_time_t = 0
            var next: jack_time_t = 0
            var period: Float = 0
            guard jack_get_cycle_times(client, &frames, &current, &next, &period) == 0, current != 0 else { return nil }
            return frames
        }
        guard !JackLibrary.isPipeWire, let first = frames() else { return false }
        let rate = Double(jack_get_sample_rate(client))
        let periodFrames = Double(jack_get_buffer_size(client))
        var previous = (frames: first, at: HostClock.nanoseconds())
        for _ in 0..<2 {
            HostClock.sleep(seconds: 0.0025)
            guard let next = frames() else { return false }
            let now = HostClock.nanoseconds()
            let elapsed = Double(now - previous.at) / 1e9
            let advanced = Double(next &- previous.frames)
            guard advanced > 4 * elapsed * rate + 4 * periodFrames else { return false }
            previous = (next, now)
        }
        return true
    }

    /// CLOCK_MONOTONIC minus the server's clock (`jack_get_time`), in microseconds, now.
    public static func hostOffsetMicroseconds() -> Int64 {
        Int64(bitPattern: HostClock.nanoseconds() / 1000) &- Int64(bitPattern: jack_get_time())
    }

    /// Frames per microsecond, as the server's clock runs (its period over the period's length).
    var framesPerMicrosecond: Double { Double(periodFrames) / periodMicroseconds }

    /// Frames from the current cycle's start to the server's clock `time` (negative before it).
    public func frameOffset(atServerMicroseconds time: UInt64) -> Int64 {
        let elapsed = Double(Int64(bitPattern: time &- microseconds))
        return Int64((elapsed * framesPerMicrosecond).rounded())
    }

    /// Frames from the current cycle's start to CLOCK_MONOTONIC `hostTime` nanoseconds.
    public func frameOffset(atHostTime hostTime: UInt64) -> Int64 {
        frameOffset(atServerMicroseconds: UInt64(bitPattern: Int64(bitPattern: hostTime / 1000) &- hostOffsetMicroseconds))
    }

    /// CLOCK_MONOTONIC nanoseconds at which the frame `offset` frames after the current
    /// cycle's first begins (as jackd2's `jack_frames_to_time`, on the host clock).
    public func hostTime(atFrameOffset offset: Int64) -> UInt64 {
        let elapsed = Int64((Double(offset) / framesPerMicrosecond).rounded())
        let server = Int64(bitPattern: microseconds) &+ elapsed
        return UInt64(bitPattern: (server &+ hostOffsetMicroseconds) &* 1000)
    }

    /// The 32-bit frame time now (what jackd2's `jack_frame_time` gives).
    public var frameNow: UInt32 {
        frames &+ UInt32(truncatingIfNeeded: frameOffset(atServerMicroseconds: jack_get_time()))
    }

    /// Whether the reading can be extrapolated to now. On PipeWire, not one from before the
    /// server paused: PipeWire stops its driver while no client is active, and a client that
    /// joins reads the last cycle before the pause until the driver's first new cycle
    /// (extrapolating from it would count the pause as frames). jackd2's clock never pauses,
    /// and under load its cycles run late: its readings are always used.
    public var isCurrent: Bool {
        guard JackLibrary.isPipeWire else { return true }
        let now = jack_get_time()
        return now >= microseconds && now - microseconds <= 2 * (nextMicroseconds - microseconds)
    }
}

/// jackd is freewheeling: it runs no client that joins during freewheel (its cycles never
/// come, and the server waits 10 s for it every cycle), so none is opened.
public struct JackFreewheelError: Error, CustomStringConvertible {
    public init() {}
    public var description: String {
        "the JACK server is freewheeling, and jackd runs no client that joins during freewheel: start jaq before `jack_freewheel y`"
    }
}

/// Which libjack this process runs on.
public enum JackLibrary {
    /// libjack's version string: jackd2's "1.9.21", PipeWire's "3.0.0.0 (using PipeWire 0.3.65)".
    public static let version: String = {
        guard let string = jack_get_version_string() else { return "" }
        return String(cString: string)
    }()

    /// True when libjack is PipeWire's (`pw-jack`, Debian's pipewire-jack): there is no jackd,
    /// the server is the PipeWire daemon, clients report time only once they are active,
    /// and starting a private jackd would not help (PipeWire's libjack cannot reach it).
    /// (Found once: every clock reading asks.)
    public static let isPipeWire: Bool = version.contains("PipeWire")
}
